"""Rule synth: write the synthetic SAIAPR-layout collection."""

import logging

from regionbench import synth

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
params = snakemake.params
folders = synth.write_collection(
    snakemake.output[0], params.profile, seed=params.seed, quirks=params.quirks, workers=snakemake.threads
)
for folder, regions in folders:
    logging.info("folder %s: %d regions written", folder, regions)
