"""Rule source: what the collection is (name, home page, citation, licence of its images) and its
annotation files' own statements (``files``: what exports write back)."""

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.pipeline import source
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
try:
    found = source.describe(params.layout, params.root, params.configured, params.generated, params.license)
    files = source.files(params.layout, params.root, params.generated)
except InputError as exc:
    fail(f"source: {exc}")
tables.write_json(snakemake.output[0], found | {"files": files})
log.info("%s", ", ".join(f"{k}: {v if v is None else repr(v[:60])}" for k, v in found.items()))
