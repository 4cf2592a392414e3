"""Rule near_duplicates: every image's perceptual hashes -> groups of near-copies and a report."""

from regionbench.audit import duplicates
from regionbench.core import tables
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
params = snakemake.params
images = tables.concat(
    [tables.read_parquet(p, ["image_id", "split", "phash", "dhash"]) for p in snakemake.input.images]
)
groups = duplicates.duplicate_groups(images, params.threshold)
splits = dict(zip(images["image_id"].to_pylist(), images["split"].to_pylist(), strict=True))
report = {"threshold": params.threshold, "images_hashed": images.num_rows} | duplicates.summary(groups, splits)
tables.write_parquet(groups, snakemake.output.groups)
tables.write_json(snakemake.output.report, report)
log.info(
    "%d images hashed: %d near-duplicate groups of %d images (threshold %d of 128 bits); %d cross the collection's own splits",
    report["images_hashed"], report["groups"], report["images"], params.threshold, report["groups_across_source_splits"],
)  # fmt: skip
