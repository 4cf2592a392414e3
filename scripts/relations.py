"""Rule relations: spatial relations of every ordered pair of regions of one shard."""

from regionbench import relations, tables
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
table = relations.shard_relations(
    tables.read_parquet(snakemake.input.images),
    tables.read_parquet(snakemake.input.regions),
    tau=snakemake.params.tau,
    adjacency_px=snakemake.params.adjacency_px,
)
tables.write_parquet(table, snakemake.output[0])
log.info("%d ordered pairs", table.num_rows)
