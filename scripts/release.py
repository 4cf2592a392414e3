"""Rule release: the assembled release with the stage results, card and Croissant ->
releases/<dataset>/v<version>/, moved into place whole."""

from pathlib import Path

from regionbench import release
from regionbench.core import tables
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
results = {k: Path(v) for k, v in params.results.items()}
for folder in snakemake.input.baselines:  # each baseline's reports (its predictions stay behind)
    for report in sorted(Path(folder).glob("*/*.json")):
        results[f"baselines/{report.relative_to(folder).as_posix()}"] = report
try:
    manifest = release.publish(Path(snakemake.input.assembled), Path(params.folder), results, workers=snakemake.threads)
except release.ReleaseError as exc:
    fail(f"release refused: {exc}")
log.info("release %s v%s: digest %s", manifest["dataset"], manifest["version"], manifest["digest"][:16])
receipt = {"dataset": params.dataset, "version": params.version, "folder": params.folder, "digest": manifest["digest"]}
tables.write_json(snakemake.output[0], receipt)
