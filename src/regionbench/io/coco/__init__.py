"""The COCO layout (docs/inputs.md): an annotation tool's export, ``<root>/images/`` and one COCO
instances file per annotator, ``<root>/annotations/<annotator>.json``; or the collection as COCO
and LVIS distribute it, ``train2017/``, ``val2017/`` and ``annotations/instances_<split>.json``
(``lvis_v1_<split>.json``), each split file one annotator's (``coco``, ``lvis``).

- ``split``: the tree's shape, and each instances file read once, streamed, into per-shard pieces;
- ``ingest``: a shard of images read from its piece with every annotator's regions, and the rejects;
- ``layout``: the layout (``LAYOUT``) that ``regionbench.io.layouts`` finds;
- ``categories``: the vocabulary from the files' categories;
- ``export``: a release written back as COCO files;
- generated several-annotator collections: ``regionbench.synthetic.coco`` (``regionbench synth --layout coco``).
"""

from regionbench.io.coco.ingest import ShardReader, annotators
from regionbench.io.coco.layout import CocoLayout
from regionbench.io.shards import default_shard_size

LAYOUT = CocoLayout()

__all__ = [
    "LAYOUT",
    "ShardReader",
    "annotators",
    "default_shard_size",
]
