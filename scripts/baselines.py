"""Rule baselines: the assembled release -> results/<dataset>/baselines/<method>/<task>.json, each
reference method's predictions scored through the evaluate door users score theirs by."""

from pathlib import Path

from regionbench import baselines
from regionbench.core.errors import InputError
from regionbench.pipeline.jobs import fail, log_to
from regionbench.release.loader import Release

log = log_to(snakemake.log[0])
params = snakemake.params
out = Path(snakemake.output[0])
out.mkdir(parents=True, exist_ok=True)
try:
    baselines.stage(
        Release(snakemake.input.assembled),
        params.methods,
        out,
        root=Path(params.root),
        cores=snakemake.threads,
        progress=log.info,
    )
except InputError as exc:
    fail(f"baselines: {exc}")
