"""Rule ingest: one SAIAPR folder shard -> images, regions and rejects tables."""

import json
import logging
import sys
from pathlib import Path

from regionbench import tables
from regionbench.io.saiapr import IngestError, ingest_folder

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
params, out = snakemake.params, snakemake.output
try:
    shard = ingest_folder(
        params.root, snakemake.wildcards.shard, max_image_pixels=params.max_image_pixels, strict=params.strict
    )
except IngestError as exc:
    logging.error("%s", exc)
    sys.exit(f"ingest failed (strict mode or unusable input):\n{exc}")
tables.write_parquet(shard.images, out.images)
tables.write_parquet(shard.regions, out.regions)
tables.write_parquet(shard.rejects, out.rejects)
Path(out.report).write_text(json.dumps(shard.report, indent=1, sort_keys=True) + "\n")
logging.info("%s", json.dumps({k: shard.report[k] for k in ("images", "regions")}))
