"""Rule agreement_summary: the collection's agreement, for the release and its card."""

from regionbench import agreement, tables
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
report = agreement.summary(
    [tables.read_parquet(p) for p in snakemake.input.pairs],
    tables.ParquetParts(snakemake.input.pixels),  # the largest: one shard's sample in memory at a time
    [tables.read_parquet(p) for p in snakemake.input.labels],
    min_iou=snakemake.params.min_iou,
    coverage=[tables.read_parquet(p) for p in snakemake.input.coverage],
)
tables.write_json(snakemake.output[0], report)
log.info("%s", {k: v for k, v in report.items() if not isinstance(v, list | dict)})
