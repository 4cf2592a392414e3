"""Rule features_parity: computed features against the official features.txt files."""

from regionbench import tables
from regionbench.io.saiapr import features_parity, read_official_features
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
official = read_official_features(snakemake.input.raw)
computed = [tables.read_parquet(p) for p in snakemake.input.features]
report = features_parity(official, tables.concat(computed))
tables.write_json(snakemake.output[0], report)
excess = {k: v["excess"] for k, v in report["columns"].items() if v["excess"]}
log.info("%d rows compared; values beyond num2str rounding: %s", report["rows_compared"], excess or "none")
