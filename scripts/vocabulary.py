"""Rule vocabulary: candidate lists and annotations -> vocabulary.parquet and branch statistics."""

import json
import logging
import sys
from pathlib import Path

from regionbench import tables, vocabulary

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
captions, used, images_per_label = vocabulary.annotations_from_shards(snakemake.input.images, snakemake.input.regions)
try:
    built = vocabulary.build(snakemake.params.config_dir, captions, used, images_per_label)
except ValueError as exc:
    logging.error("%s", exc)
    sys.exit(f"vocabulary: {exc}")
tables.write_parquet(built.vocabulary, snakemake.output.vocabulary)
tables.write_parquet(built.branches, snakemake.output.branches)
Path(snakemake.output.procedure).write_text(json.dumps(built.procedure, indent=1, sort_keys=True) + "\n")
for row in built.branches.to_pylist():
    logging.info("branch %(branch)s: frequency %(frequency)d, descendants %(descendants)d, leaves %(leaves)d", row)
