"""Rule agreement_summary: the collection's agreement, for the release and its card."""

from regionbench.core import tables
from regionbench.pipeline import agreement
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
inp = snakemake.input
coverage = [tables.read_parquet(p) for p in inp.coverage]
# Several annotators: the agreement jobs' samples, the largest input, one shard's in memory at a
# time. One annotator: no agreement job ran, and the coverage names the annotator.
pixels = tables.ParquetParts(inp.pixels) if inp.pairs else []
report = agreement.summary(
    [tables.read_parquet(p) for p in inp.pairs],
    pixels,
    [tables.read_parquet(p) for p in inp.labels],
    min_iou=snakemake.params.min_iou,
    coverage=coverage,
)
report["consensus"] = snakemake.params.consensus  # how the derived annotator's masks are voted
tables.write_json(snakemake.output[0], report)
log.info("%s", {k: v for k, v in report.items() if not isinstance(v, list | dict)})
