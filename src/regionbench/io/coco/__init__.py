"""The COCO layout of annotation-tool exports (docs/inputs.md): ``<root>/images/`` and one COCO
instances file per annotator, ``<root>/annotations/<annotator>.json``.

- ``ingest``: a shard of images with every annotator's regions, and the rejects.
"""

from regionbench.io.coco.ingest import (
    annotators,
    detect_layout,
    image_id_of,
    ingest_shard,
    read_instances,
    shard_count,
)

__all__ = ["annotators", "detect_layout", "image_id_of", "ingest_shard", "read_instances", "shard_count"]
