"""Rule challenge: the release -> challenges/<dataset>/v<version>/ (public/, codabench/,
codabench.zip), the hosted benchmark ``regionbench challenge`` makes (docs/publishing.md)."""

from pathlib import Path

from regionbench.challenge import hosting
from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
settings = params.settings
done = Path(snakemake.input.baselines[0]) if snakemake.input.baselines else None
try:
    record = hosting.host(
        Path(params.release), Path(params.out), settings["hidden"], settings["tasks"], done, Path(params.root),
        None, settings["end"], settings["max_mib"], log.info,
    )  # fmt: skip
except InputError as exc:
    fail(f"challenge: {exc}")
log.info("challenge: %s, public release digest %s", params.out, record["public"]["digest"][:16])
tables.write_json(snakemake.output[0], record)
