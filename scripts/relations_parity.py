"""Rule relations_parity: computed spatial relations against the official spatial_rels files."""

from regionbench.core import tables
from regionbench.io import layouts
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
layout = layouts.get(snakemake.params.layout)
official, problems = layout.read_official_relations(snakemake.params.root)
computed = tables.concat([tables.read_parquet(p) for p in snakemake.input.relations])
report = layout.relations_parity(official, computed) | {"files_not_used": problems}
tables.write_json(snakemake.output[0], report)
log.info(
    "%d pairs of %d images compared; agreement %s; %d files not used",
    report["pairs_compared"],
    report["images_compared"],
    {group: round(g["agreement"], 4) for group, g in report["groups"].items()},
    len(problems),
)
for problem in problems:
    log.warning("%(file)s: %(reason)s", problem)
