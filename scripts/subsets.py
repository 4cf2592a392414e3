"""Rule subsets: subsets A-H of the ingested regions with a seeded, stratified split."""

import json
import logging
from pathlib import Path

from regionbench import subsets, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
columns = ["image_id", "annotator", "region_id", "label"]
regions = tables.concat([tables.read_parquet(p).select(columns) for p in snakemake.input])
table, report = subsets.make_subsets(regions, seed=snakemake.params.seed, split_unit=snakemake.params.split_unit)
tables.write_parquet(table, snakemake.output.subsets)
Path(snakemake.output.report).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
for name, r in report["subsets"].items():
    logging.info(
        "%s: %d regions (%d train, %d test), %d labels", name, r["regions"], r["train"], r["test"], len(r["labels"])
    )
logging.info("images straddling the split: %d", report["straddling_images"])
