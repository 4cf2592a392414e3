"""Rule classify: one classifier on one subset; test-split predictions and the fit time."""

import json
import logging
from pathlib import Path

from regionbench import classifiers, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
features = tables.concat([tables.read_parquet(p) for p in snakemake.input.features])
predictions, seconds = classifiers.run(
    snakemake.wildcards.classifier,
    tables.read_parquet(snakemake.input.subsets),
    features,
    snakemake.wildcards.subset,
    dict(snakemake.params.params),
    seed=snakemake.params.seed,
)
tables.write_parquet(predictions, snakemake.output.predictions)
# Timing varies run to run, so it stays out of the deterministic tables.
Path(snakemake.output.timing).write_text(json.dumps({"fit_seconds": round(seconds, 3)}) + "\n")
logging.info("%d test regions predicted; fit %.2f s", predictions.num_rows, seconds)
