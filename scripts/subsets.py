"""Rule subsets: subsets A-H of the reference annotator's regions with a seeded, stratified split
(none for a label-free collection: the report says why)."""

import pyarrow.compute as pc

from regionbench.core import tables
from regionbench.pipeline import subsets
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
columns = [*tables.REGION_KEY, "label", "iscrowd"]
everyone = tables.concat([tables.read_parquet(p, columns) for p in snakemake.input.regions])
try:
    regions, reference, split_unit = subsets.reference_regions(
        everyone, params.reference_annotator, params.split_unit, params.crowd
    )
except ValueError as exc:
    fail(f"subsets: {exc}")
crowd = pc.sum(pc.and_(pc.equal(everyone["annotator"], reference), everyone["iscrowd"])).as_py() or 0
del everyone  # every annotator's regions: only the reference annotator's are needed from here
if skipped := subsets.skip_reason(regions, reference):
    table, report = tables.SUBSETS.empty_table(), {"skipped": skipped, "split_unit": split_unit, "subsets": {}}
    log.warning("%s", skipped)
else:
    sides, fallback = None, None
    images = tables.concat([tables.read_parquet(p, ["image_id", "split"]) for p in snakemake.input.images])
    split_of = dict(zip(images["image_id"].to_pylist(), images["split"].to_pylist(), strict=True))
    split_of = {i: split_of[i] for i in set(regions["image_id"].to_pylist())}
    try:
        test_split, fallback = subsets.chosen_test_split(
            params.split, split_of.values(), params.test_split, params.evaluation_splits
        )
    except ValueError as exc:
        fail(f"subsets: {exc}")
    if test_split is not None:
        sides = subsets.source_sides(split_of, test_split)
        log.info("the collection's own split: %s is the test side", test_split)
    elif fallback:
        log.warning("%s", fallback)
    groups = {}
    for path in snakemake.input.duplicate_groups:  # none when the duplicate audit is off
        found = tables.read_parquet(path, ["image_id", "group_id"])
        groups = dict(zip(found["image_id"].to_pylist(), found["group_id"].to_pylist(), strict=True))
    table, report = subsets.make_subsets(
        regions, seed=params.seed, split_unit=split_unit, fixed_sides=sides, groups=groups
    )
    if sides is not None:
        report["source_split"] = {"test": test_split, "splits": sorted(set(split_of.values()))}
    elif fallback:
        report["source_split_not_taken"] = fallback
report["reference_annotator"] = reference
report["crowd_regions"] = {"count": crowd, "in_subsets": params.crowd}
tables.write_parquet(table, snakemake.output.subsets)
tables.write_json(snakemake.output.report, report)
for name, r in report["subsets"].items():
    log.info(
        "%s: %d regions (%d train, %d test), %d labels", name, r["regions"], r["train"], r["test"], len(r["labels"])
    )
if cut := report.get("near_duplicates", {}).get("groups_across_sides"):
    log.warning("the collection's own split cuts %d near-duplicate groups (kept as the collection has it)", cut)
log.info(
    "reference annotator %s, split by %s; images straddling the split: %s",
    reference,
    split_unit,
    report.get("straddling_images", "none (no subsets)"),
)
