"""Rule relation_stats: count and share of each spatial relation (paper Table 3)."""

import logging

from regionbench import relations, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
stats = relations.relation_stats([tables.read_parquet(p) for p in snakemake.input])
tables.write_parquet(stats, snakemake.output[0])
for row in stats.to_pylist():
    logging.info("%(group)s %(relation)s: %(count)d (%(share).2f%%)", {**row, "share": 100 * row["share"]})
