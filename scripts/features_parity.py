"""Rule features_parity: computed features against the official features.txt files."""

import json
import logging
from pathlib import Path

from regionbench import features, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
official = features.read_official(snakemake.input.raw)
computed = [tables.read_parquet(p) for p in snakemake.input.features]
report = features.parity(official, tables.concat(computed))
Path(snakemake.output[0]).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
excess = {k: v["excess"] for k, v in report["columns"].items() if v["excess"]}
logging.info("%d rows compared; values beyond num2str rounding: %s", report["rows_compared"], excess or "none")
