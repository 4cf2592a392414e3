"""Rule subsets: subsets A-H of the ingested regions with a seeded, stratified split."""

from regionbench import subsets, tables
from regionbench.jobs import log_to

log = log_to(snakemake.log[0])
columns = [*tables.REGION_KEY, "label"]
regions = tables.concat([tables.read_parquet(p).select(columns) for p in snakemake.input])
table, report = subsets.make_subsets(regions, seed=snakemake.params.seed, split_unit=snakemake.params.split_unit)
tables.write_parquet(table, snakemake.output.subsets)
tables.write_json(snakemake.output.report, report)
for name, r in report["subsets"].items():
    log.info(
        "%s: %d regions (%d train, %d test), %d labels", name, r["regions"], r["train"], r["test"], len(r["labels"])
    )
log.info("images straddling the split: %d", report["straddling_images"])
