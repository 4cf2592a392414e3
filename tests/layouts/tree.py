"""A tree of the label-map layout of ``labelmap.py``: images and their label maps."""

from pathlib import Path

import numpy as np
from PIL import Image

LAYOUT_FILE = Path(__file__).resolve().parent / "labelmap.py"
# The test layout's shards() with its shard_size parameter dropped: a layout breaking the contract.
WRONG = ("def shards(self, root: Path, shard_size: int | None)", "def shards(self, root: Path)")


def wrong_copy(folder: Path) -> Path:
    """The test layout with ``WRONG`` applied, written to ``folder``."""
    text = LAYOUT_FILE.read_text()
    assert WRONG[0] in text
    path = folder / "labelmap.py"
    path.write_text(text.replace(*WRONG))
    return path


LABELS = {1: "sky", 2: "grass", 3: "water"}
IMAGES = 12


def write_tree(root: Path) -> Path:
    """Label-map images: sky above grass, a pond of water in some."""
    (root / "images").mkdir(parents=True)
    (root / "maps").mkdir()
    (root / "labelmap.txt").write_text("".join(f"{v}\t{label}\n" for v, label in LABELS.items()))
    rng = np.random.default_rng(0)
    for k in range(1, IMAGES + 1):
        labels = np.ones((24, 32), np.uint8)
        labels[10 + k % 4 :] = 2
        if k % 3:
            labels[16:22, 4 + k : 12 + k] = 3
        pixels = rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / "images" / f"{k}.png")
        Image.fromarray(labels).save(root / "maps" / f"{k}.png")
    return root
