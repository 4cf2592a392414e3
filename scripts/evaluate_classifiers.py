"""Rule evaluate_classifiers: measures per (subset, classifier), metrics for DVC, the figure."""

import json
import logging
from pathlib import Path

from regionbench import classifiers, plots, tables
from regionbench.hierarchy import Hierarchy

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
tree = Hierarchy.from_yaml(snakemake.input.hierarchy)
sizes = json.loads(Path(snakemake.input.subsets).read_text())["subsets"]
predictions = {(Path(p).parent.name, Path(p).stem): tables.read_parquet(p) for p in snakemake.input.predictions}
summary = classifiers.summary(tree, predictions, sizes)
tables.write_parquet(summary, snakemake.output.table)
Path(snakemake.output.metrics).write_text(json.dumps(classifiers.metrics(summary), indent=1, sort_keys=True) + "\n")
# Fit times vary run to run: they go to their own file, outside the deterministic outputs.
timings = {
    f"{Path(p).parent.name}/{Path(p).stem}": json.loads(Path(p).read_text())["fit_seconds"]
    for p in snakemake.input.timings
}
Path(snakemake.output.timings).write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
summary.to_pandas().to_csv(snakemake.output.plot, index=False, float_format="%.6f")
plots.classifier_figure(summary, snakemake.output.png, snakemake.output.svg)
for row in summary.to_pylist():
    logging.info("%(subset)s %(classifier)s: hard %(e_hard).3f soft %(soft).3f mean e %(mean_e).3f", row)
