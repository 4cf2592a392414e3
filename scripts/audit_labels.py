"""Rule audit_labels: the reference annotator's labelled regions -> label-error candidates, ranked."""

import json
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from regionbench.audit import labels
from regionbench.core import tables
from regionbench.pipeline.classifiers import matrix
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
inp, params = snakemake.input, snakemake.params
made = json.loads(Path(inp.report).read_text(encoding="utf-8"))
subsets = tables.read_parquet(inp.subsets, ["subset", *tables.REGION_KEY, "label"])
# Subset H: every labelled region of the reference annotator whose label is frequent enough to learn.
keys = subsets.filter(pc.equal(subsets["subset"], "H")).drop_columns(["subset"])
if keys.num_rows == 0:
    table = labels.AUDIT.empty_table()
    report = {"skipped": made.get("skipped", "no labelled regions"), "regions": 0, "candidates": 0}
else:
    features = tables.concat([tables.read_parquet(p) for p in inp.features])
    joined = keys.join(features, keys=tables.REGION_KEY, join_type="inner").sort_by(
        [(k, "ascending") for k in tables.REGION_KEY]
    )
    said = {}
    for regions, coverage in zip(inp.regions, inp.coverage, strict=True):  # one shard's masks at a time
        found = tables.read_parquet(regions, ["image_id", "annotator", "region_id", "label", "mask"])
        said |= labels.annotator_evidence(found, tables.read_parquet(coverage), made["reference_annotator"])
    found = labels.audit(
        joined.select([*tables.REGION_KEY, "label"]),
        np.asarray(matrix(joined), dtype=np.float64),
        said,
        folds=params.folds,
        seed=params.seed,
        max_train=params.max_train,
    )
    table = found.table
    report = {"folds": params.folds, "reference_annotator": made["reference_annotator"]} | labels.summary(
        found, joined.num_rows
    )
    if found.too_little:
        log.info("label audit: %s; no region is listed", found.too_little)
tables.write_parquet(table, snakemake.output.table)
tables.write_json(snakemake.output.report, report)
log.info("%d of %d regions are label-error candidates", report["candidates"], report["regions"])
