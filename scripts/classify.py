"""Rule classify: one classifier on one subset; test-split predictions and the fit time."""

from regionbench import classifiers, tables
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
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
tables.write_json(snakemake.output.timing, {"fit_seconds": round(seconds, 3)})
log.info("%d test regions predicted; fit %.2f s", predictions.num_rows, seconds)
