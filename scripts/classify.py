"""Rule classify: one classifier on every subset; test-split predictions and fit times."""

from regionbench.core import tables
from regionbench.pipeline import classifiers
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
params, out = snakemake.params, snakemake.output
features = tables.concat([tables.read_parquet(p) for p in snakemake.input.features])
subsets = tables.read_parquet(snakemake.input.subsets)
done = classifiers.run_subsets(
    snakemake.wildcards.classifier,
    subsets,
    features,
    params.subsets,
    dict(params.params),
    seed=params.seed,
    max_train=params.max_train,
    workers=snakemake.threads,
)
for subset, (predictions, seconds), predictions_path, timing_path in zip(
    params.subsets, done, out.predictions, out.timings, strict=True
):
    tables.write_parquet(predictions, predictions_path)
    # Timing varies run to run, so it stays out of the deterministic tables.
    tables.write_json(timing_path, {"fit_seconds": round(seconds, 3)})
    log.info("%s: %d test regions predicted; fit %.2f s", subset, predictions.num_rows, seconds)
