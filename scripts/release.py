"""Rule release: the assembled release with the stage results, card and Croissant ->
releases/<dataset>/v<version>/, moved into place whole."""

import shutil
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
assembled = Path(snakemake.input.assembled)
try:
    manifest = release.publish(assembled, Path(params.folder), results, workers=snakemake.threads)
except release.DamagedAssembly as exc:
    shutil.rmtree(assembled, ignore_errors=True)  # the next run assembles it again, and scores it again
    fail(f"release refused: {exc}; it was removed: run the same command again to assemble it anew")
except release.ReleaseError as exc:
    fail(f"release refused: {exc}")
log.info("release %s v%s: digest %s", manifest["dataset"], manifest["version"], manifest["digest"][:16])
receipt = {"dataset": params.dataset, "version": params.version, "folder": params.folder, "digest": manifest["digest"]}
tables.write_json(snakemake.output[0], receipt)
