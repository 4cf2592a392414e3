"""Rule agreement: per image and pair of annotators, how far their regions agree; sampled pixels;
per-label tallies."""

from regionbench.core import tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import agreement
from regionbench.pipeline.jobs import log_to
from regionbench.pipeline.vocabulary import Registry

log = log_to(snakemake.log[0])
inp = snakemake.input
rows, ratings, labels = agreement.shard_agreement(
    tables.read_parquet(inp.images),
    tables.read_parquet(inp.regions),
    tables.read_parquet(inp.coverage),
    Hierarchy.from_yaml(inp.hierarchy),
    Registry.read(inp.registry).ids(),
    min_iou=snakemake.params.min_iou,
)
tables.write_parquet(rows, snakemake.output.pairs)
tables.write_parquet(ratings.table(), snakemake.output.pixels)
tables.write_parquet(labels, snakemake.output.labels)
log.info("%d image pairs compared over %d annotators", rows.num_rows, len(ratings.names))
