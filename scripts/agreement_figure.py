"""Rule agreement_figure: specific agreement per label and the images agreed on least."""

import json
from pathlib import Path

from regionbench.pipeline import plots
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
report = json.loads(Path(snakemake.input[0]).read_text())
plots.agreement_figure(report, snakemake.output.png, snakemake.output.svg)
log.info("%d labels, %d images plotted", len(report["per_label"]), len(report["worst_images"]))
