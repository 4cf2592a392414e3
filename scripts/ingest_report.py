"""Rule ingest_report: merge the per-shard ingest reports into one."""

import json
import logging
from pathlib import Path

from regionbench.io.saiapr import merge_reports

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
report = merge_reports([json.loads(Path(p).read_text()) for p in snakemake.input])
Path(snakemake.output[0]).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
for conflict in report["parent_conflicts"]:
    logging.warning(
        "node %s has several parents %s; using %s", conflict["node"], conflict["parents"], conflict["chosen"]
    )
