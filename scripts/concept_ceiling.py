"""Rule concept_ceiling: the assembled release -> results/<dataset>/concepts.json, its annotators'
human ceiling on its concepts (``scoring.tasks.concepts.human_ceiling``) for the card and the site."""

from pathlib import Path

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.pipeline.jobs import fail, log_to
from regionbench.release.loader import Release
from regionbench.scoring.tasks.concepts import human_ceiling

log = log_to(snakemake.log[0])
try:
    found = human_ceiling(Release(Path(snakemake.input.assembled)))
except InputError as exc:
    fail(f"concept_ceiling: {exc}")
if found is None:
    log.info("concept_ceiling: no (image, phrase) pair annotated exhaustively by every annotator")
    found = {"pairs": 0}
else:
    log.info("concept_ceiling: %d pairs, human cgF1 %s", found["pairs"], found.get("cgF1"))
tables.write_json(snakemake.output[0], found)
