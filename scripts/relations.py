"""Rule relations: spatial relations of every ordered pair of regions of one shard."""

import logging

from regionbench import relations, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
table = relations.shard_relations(
    tables.read_parquet(snakemake.input.images),
    tables.read_parquet(snakemake.input.regions),
    tau=snakemake.params.tau,
    adjacency_px=snakemake.params.adjacency_px,
)
tables.write_parquet(table, snakemake.output[0])
logging.info("%d ordered pairs", table.num_rows)
