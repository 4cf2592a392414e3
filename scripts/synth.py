"""Rule synth: write the synthetic SAIAPR-layout collection."""

from regionbench.io.saiapr.collection import write_collection
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
params = snakemake.params
folders = write_collection(
    snakemake.output[0],
    params.profile,
    seed=params.seed,
    quirks=params.quirks,
    workers=snakemake.threads,
    vocabulary=params.vocabulary,
)
for folder, regions in folders:
    log.info("folder %s: %d regions written", folder, regions)
