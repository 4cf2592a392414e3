"""Rule features: the saiapr27 features of every region of one shard."""

from regionbench import features, tables
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
table = features.shard_features(
    snakemake.params.root,
    tables.read_parquet(snakemake.input.images),
    tables.read_parquet(snakemake.input.regions),
)
tables.write_parquet(table, snakemake.output[0])
log.info("%d regions measured", table.num_rows)
