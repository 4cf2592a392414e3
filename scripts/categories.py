"""Rule categories: the categories a raw tree's files name -> a vocabulary folder (hierarchy, ids, lists)."""

from regionbench.io.shards import IngestError
from regionbench.pipeline import vocabulary
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
try:
    counts = vocabulary.derive(params.layout, params.root, params.out)
except IngestError as exc:
    fail(f"categories: {exc}")
log.info("%(labels)d labels under %(supercategories)d supercategories, %(renamed)d names renamed", counts)
