"""The COCO layout of annotation-tool exports (docs/inputs.md): ``<root>/images/`` and one COCO
instances file per annotator, ``<root>/annotations/<annotator>.json``.

- ``ingest``: a shard of images read with every annotator's regions, and the rejects;
- ``layout``: the layout (``LAYOUT``) that ``regionbench.io.layouts`` finds;
- ``categories``: the vocabulary from the files' categories;
- ``export``: a release written back as COCO files;
- ``synthetic``: generated several-annotator collections (``regionbench synth --layout coco``).
"""

from regionbench.io.coco.ingest import (
    ShardReader,
    annotators,
    default_shard_size,
    image_id_of,
    read_instances,
    tree_state,
)
from regionbench.io.coco.layout import CocoLayout

LAYOUT = CocoLayout()

__all__ = [
    "LAYOUT",
    "ShardReader",
    "annotators",
    "default_shard_size",
    "image_id_of",
    "read_instances",
    "tree_state",
]
