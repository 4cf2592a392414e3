"""Rule evaluate_classifiers: measures per (subset, classifier), metrics for DVC, the figure."""

import json
from pathlib import Path

from regionbench.core import tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import classifiers, plots
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
tree = Hierarchy.from_yaml(snakemake.input.hierarchy)
sizes = json.loads(Path(snakemake.input.subsets).read_text())["subsets"]
predictions = {(Path(p).parent.name, Path(p).stem): tables.read_parquet(p) for p in snakemake.input.predictions}
summary = classifiers.summary(tree, predictions, sizes, snakemake.params.max_train)
tables.write_parquet(summary, snakemake.output.table)
for name, values in classifiers.metrics(summary).items():
    tables.write_json(Path(snakemake.output.metrics[0]).parent / name, values)
# Fit times vary run to run: they go to their own file, outside the deterministic outputs.
timings = {
    f"{Path(p).parent.name}/{Path(p).stem}": json.loads(Path(p).read_text())["fit_seconds"]
    for p in snakemake.input.timings
}
tables.write_json(snakemake.output.timings, timings)
summary.to_pandas().to_csv(snakemake.output.plot, index=False, float_format="%.6f")
plots.classifier_figure(summary, snakemake.output.png, snakemake.output.svg)
tables.write_json(snakemake.output.soft, classifiers.soft_confusions(tree, predictions))
for row in summary.to_pylist():
    log.info("%(subset)s %(classifier)s: hard %(e_hard).3f soft %(soft).3f mean e %(mean_e).3f", row)
