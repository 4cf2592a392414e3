"""Rule copies: the raw tree's image files that hold an earlier one's bytes, per shard, before
any shard is read (one image under two ids would otherwise pass, each shard seeing one of them)."""

from pathlib import Path

from regionbench.core import tables
from regionbench.io import layouts
from regionbench.pipeline.ingest import write_copies
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
params = snakemake.params
index = Path(snakemake.output.index)
counts = write_copies(params.root, layouts.get(params.layout), params.shard_size, params.shards, index.parent)
tables.write_json(index, {"copies": counts})
log.info("%d image files hold an earlier one's bytes", sum(counts.values()))
