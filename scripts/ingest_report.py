"""Rule ingest_report: merge the per-shard ingest reports into one; stop the build when ingest
accepted no region (every later stage waits for this report)."""

import json
from pathlib import Path

from regionbench.core import tables
from regionbench.io.shards import nothing_accepted
from regionbench.pipeline.ingest import merge_reports
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
report = merge_reports([json.loads(Path(p).read_text()) for p in snakemake.input.reports])
rejects = (tables.read_parquet(p, ["reason"]) for p in snakemake.input.rejects)
if message := nothing_accepted(report, rejects, snakemake.params.rejects):
    fail(message)
tables.write_json(snakemake.output[0], report)
for line in report.get("alike_annotator_files", []):
    log.warning("%s", line)
if left := report.get("files_left_alone"):
    log.warning("not instances files, left alone: %s", ", ".join(left))
if folders := report.get("labels_only_folders"):
    log.warning("no segmentation_masks/ in %s: those regions are released by label and official features", folders)
for conflict in report["parent_conflicts"]:
    log.warning("node %s has several parents %s; using %s", conflict["node"], conflict["parents"], conflict["chosen"])
