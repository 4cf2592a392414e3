"""SA-Co's files (SAM 3's promptable concept benchmark), read as a collection and written from any.

SA-Co/Gold distributes a subset as ``images/`` and ``annotations/gold_<subset>_merged_<a|b|c>_release_test.json``,
one COCO-shaped file an annotator, whose ``images`` are (image, noun phrase) pairs (``id``,
``file_name``, ``height``, ``width``, ``text_input``: the phrase, ``is_instance_exhaustive``)
and whose ``annotations`` are every instance of each pair's phrase (``image_id`` the pair, an RLE
``segmentation``); a pair without an instance is a negative.

- ``layout``: the ``saco`` layout (``LAYOUT``): such a tree read as a collection. A photo is an
  image, each phrase a label, each file an annotator, an instance a region of its pair's photo;
  the pairs stay in ``coverage`` (``pair_ids``, ``pair_category_ids``; negatives and pairs not
  annotated exhaustively as LVIS's federated lists), so a run names SA-Co's own pair ids.
- ``export``: ``regionbench export --format saco``: any release written as such files: its own
  pairs where it was read from them, else each image's labels and drawn absent ones (``pairs``).
"""

from regionbench.io.saco.export import NEGATIVES, SEED, file_name, files, pairs
from regionbench.io.saco.layout import SacoLayout

LAYOUT = SacoLayout()

__all__ = ["LAYOUT", "NEGATIVES", "SEED", "file_name", "files", "pairs"]
