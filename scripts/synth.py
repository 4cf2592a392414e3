"""Rule synth: write the synthetic collection in the configured layout."""

from regionbench import synthetic
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
params = snakemake.params
options = synthetic.Options(
    params.seed, params.quirks, params.annotators, params.disagreement, params.vocabulary, snakemake.threads
)
for part, regions in synthetic.generate(params.layout, snakemake.output[0], params.profile, options):
    log.info("%s: %d regions written", part, regions)
