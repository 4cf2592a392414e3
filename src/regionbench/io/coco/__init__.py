"""The COCO layout of annotation-tool exports (docs/inputs.md): ``<root>/images/`` and one COCO
instances file per annotator, ``<root>/annotations/<annotator>.json``.

- ``ingest``: a shard of images with every annotator's regions, and the rejects;
- ``synthetic``: generated several-annotator collections (``regionbench synth --layout coco``).
"""

from regionbench.io.coco.ingest import (
    annotators,
    default_shard_size,
    detect_layout,
    image_id_of,
    ingest_shard,
    merge_reports,
    read_instances,
    shard_plan,
    tree_state,
)

__all__ = [
    "annotators",
    "default_shard_size",
    "detect_layout",
    "image_id_of",
    "ingest_shard",
    "merge_reports",
    "read_instances",
    "shard_plan",
    "tree_state",
]
