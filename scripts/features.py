"""Rule features: the saiapr27 features of every region of one shard."""

import logging

from regionbench import features, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
table = features.shard_features(
    snakemake.params.root,
    tables.read_parquet(snakemake.input.images),
    tables.read_parquet(snakemake.input.regions),
)
tables.write_parquet(table, snakemake.output[0])
logging.info("%d regions measured", table.num_rows)
