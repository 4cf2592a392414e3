"""Rule categories: the categories a raw tree's files name -> a vocabulary folder (hierarchy, ids, lists)."""

from regionbench.core.errors import InputError
from regionbench.pipeline import vocabulary
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
try:
    counts = vocabulary.derive(params.layout, params.root, params.out)
except InputError as exc:
    fail(f"categories: {exc}")
log.info("vocabulary from the tree's categories: %s", ", ".join(f"{n} {what}" for what, n in counts.items()))
