"""Rule ingest: one shard of the raw tree, any layout -> images, regions, rejects, and the
features and relations measured on the decoded pixels and masks."""

import json

from regionbench.core import tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.core.relations import RelationSettings
from regionbench.io.shards import IngestError
from regionbench.pipeline import ingest, vocabulary
from regionbench.pipeline.consensus import ConsensusSettings
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params, out = snakemake.params, snakemake.output
try:
    shard = ingest.ingest_shard(
        params.root,
        snakemake.wildcards.shard,
        vocabulary.Registry.read(snakemake.input.registry).ids(),
        Hierarchy.from_yaml(snakemake.input.hierarchy),
        layout=params.layout,
        settings=ingest.IngestSettings.from_config(params.settings["ingest"], params.settings["category_map"]),
        relations=RelationSettings.from_config(params.settings["relations"]),
        agreement=ConsensusSettings.from_config(params.settings["agreement"]),
        pieces=params.pieces or None,
        copies=params.copies,
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
