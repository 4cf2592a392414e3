"""Rule synth: write the synthetic collection (SAIAPR TC-12 or COCO layout)."""

from regionbench.io.coco import synthetic as coco_synthetic
from regionbench.io.saiapr import synthetic as saiapr_synthetic
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
params = snakemake.params
if params.layout == "coco":
    written = coco_synthetic.write_collection(
        snakemake.output[0],
        params.profile,
        seed=params.seed,
        annotators=params.annotators,
        disagreement=params.disagreement,
        workers=snakemake.threads,
        vocabulary=params.vocabulary,
    )
else:
    written = saiapr_synthetic.write_collection(
        snakemake.output[0],
        params.profile,
        seed=params.seed,
        quirks=params.quirks,
        workers=snakemake.threads,
        vocabulary=params.vocabulary,
    )
for part, regions in written:
    log.info("%s: %d regions written", part, regions)
