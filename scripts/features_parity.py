"""Rule features_parity: computed features against the official features.txt files, over the
regions whose features were computed (those with a mask)."""

import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.io import layouts
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
layout = layouts.get(snakemake.params.layout)
official = layout.read_official_features(snakemake.input.raw)
computed = tables.concat([tables.read_parquet(p) for p in snakemake.input.features])
# A region without a mask (a folder released by labels only) carries the official values: no
# parity. Its area is null exactly when its mask is (io.shards.region_row), and far cheaper to read.
regions = tables.concat([pq.read_table(p, columns=[*tables.REGION_KEY, "area_px"]) for p in snakemake.input.regions])
masked = regions.filter(pc.is_valid(regions["area_px"])).select(tables.REGION_KEY)
unmasked = regions.filter(pc.is_null(regions["area_px"]))
left_out = set(zip(*(unmasked[c].to_pylist() for c in ("image_id", "region_id")), strict=True))
ours = computed.join(masked, tables.REGION_KEY, join_type="inner").sort_by(
    [(k, "ascending") for k in tables.REGION_KEY]
)
report = layout.features_parity({k: v for k, v in official.items() if k not in left_out}, ours)
report["rows_without_mask"] = unmasked.num_rows
tables.write_json(snakemake.output[0], report)
excess = {k: v["excess"] for k, v in report["columns"].items() if v["excess"]}
log.info("%d rows compared; values beyond num2str rounding: %s", report["rows_compared"], excess or "none")
