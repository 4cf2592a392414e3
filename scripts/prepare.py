"""Rule prepare: a layout's files read once into per-shard pieces (COCO: each annotator file,
streamed), so each ingest job reads only its shard's."""

from pathlib import Path

from regionbench.io import layouts
from regionbench.io.shards import IngestError
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
try:
    index = layouts.get(params.layout).prepare(
        Path(params.root), Path(snakemake.output.index).parent, params.shard_size
    )
except IngestError as exc:
    fail(f"prepare failed (unusable input):\n{exc}")
log.info("%d shards, %d annotators", len(index["pieces"]), len(index["annotators"]))
