"""Rule vocabulary: candidate lists and annotations -> vocabulary.parquet and branch statistics."""

from regionbench.core import tables
from regionbench.pipeline import vocabulary
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
captions, used, images_per_label = vocabulary.annotations_from_shards(snakemake.input.images, snakemake.input.regions)
try:
    built = vocabulary.build(snakemake.params.config_dir, captions, used, images_per_label)
except ValueError as exc:
    fail(f"vocabulary: {exc}")
tables.write_parquet(built.vocabulary, snakemake.output.vocabulary)
tables.write_parquet(built.branches, snakemake.output.branches)
tables.write_json(snakemake.output.procedure, built.procedure)
for row in built.branches.to_pylist():
    log.info("branch %(branch)s: frequency %(frequency)d, descendants %(descendants)d, leaves %(leaves)d", row)
