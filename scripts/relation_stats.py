"""Rule relation_stats: count and share of each spatial relation (paper Table 3), and their figure."""

from regionbench.core import relations, tables
from regionbench.pipeline import plots
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
stats = relations.relation_stats(tables.read_parquet(p, list(relations.GROUPS)) for p in snakemake.input.relations)
tables.write_parquet(stats, snakemake.output.table)
plots.relation_figure(stats, snakemake.output.png, snakemake.output.svg)
for row in stats.to_pylist():
    log.info("%(group)s %(relation)s: %(count)d (%(share).2f%%)", {**row, "share": 100 * row["share"]})
