"""Rule categories: a COCO tree's categories -> a vocabulary folder (hierarchy, ids, lists)."""

from regionbench.io.coco.categories import write_vocabulary
from regionbench.io.shards import IngestError
from regionbench.jobs import fail, log_to

log = log_to(snakemake.log[0])
try:
    counts = write_vocabulary(snakemake.params.root, snakemake.params.out)
except IngestError as exc:
    fail(f"categories: {exc}")
log.info("%(labels)d labels under %(supercategories)d supercategories, %(renamed)d names renamed", counts)
