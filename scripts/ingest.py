"""Rule ingest: one SAIAPR folder shard -> images, regions and rejects tables."""

import json
import sys

from regionbench import tables
from regionbench.io.saiapr import LayoutError, ingest_folder
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
params, out = snakemake.params, snakemake.output
try:
    shard = ingest_folder(
        params.root, snakemake.wildcards.shard, max_image_pixels=params.max_image_pixels, strict=params.strict
    )
except LayoutError as exc:
    log.error("%s", exc)
    sys.exit(f"ingest failed (strict mode or unusable input):\n{exc}")
tables.write_parquet(shard.images, out.images)
tables.write_parquet(shard.regions, out.regions)
tables.write_parquet(shard.rejects, out.rejects)
tables.write_json(out.report, shard.report)
log.info("%s", json.dumps({k: shard.report[k] for k in ("images", "regions")}))
