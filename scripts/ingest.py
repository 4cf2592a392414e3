"""Rule ingest: one shard of the raw tree (SAIAPR folder or COCO image run) -> images, regions,
rejects, and the features and relations measured on the decoded pixels and masks."""

import json

from regionbench import tables, vocabulary
from regionbench.hierarchy import Hierarchy
from regionbench.io import coco, saiapr
from regionbench.io.shards import IngestError
from regionbench.jobs import fail, log_to

log = log_to(snakemake.log[0])
params, out = snakemake.params, snakemake.output
try:
    if params.layout == "coco":
        shard = coco.ingest_shard(
            params.root,
            int(snakemake.wildcards.shard),
            vocabulary.Registry.read(snakemake.input.registry).ids(),
            category_map=params.category_map,
            shard_size=params.shard_size,
            max_image_pixels=params.max_image_pixels,
            strict=params.strict,
            hierarchy=Hierarchy.from_yaml(snakemake.input.hierarchy),
            min_iou=params.min_iou,
            consensus_method=params.consensus,
            tau=params.tau,
            adjacency_px=params.adjacency_px,
        )
    else:
        shard = saiapr.ingest_folder(
            params.root,
            snakemake.wildcards.shard,
            max_image_pixels=params.max_image_pixels,
            strict=params.strict,
            tau=params.tau,
            adjacency_px=params.adjacency_px,
        )
except IngestError as exc:
    fail(f"ingest failed (strict mode or unusable input):\n{exc}")
tables.write_parquet(shard.images, out.images)
tables.write_parquet(shard.regions, out.regions)
tables.write_parquet(shard.rejects, out.rejects)
tables.write_json(out.report, shard.report)
tables.write_parquet(shard.features, out.features)
tables.write_parquet(shard.relations, out.relations)
tables.write_parquet(shard.coverage, out.coverage)
log.info("%s", json.dumps({k: shard.report[k] for k in ("images", "regions")}))
