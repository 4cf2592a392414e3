"""Looks: every label's colour, texture and place in a scene (skies on top, ground at the
bottom, backdrops on the horizon, persons and objects in front, persons nested in group
regions), so a generated image reads as a photo at a glance."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline.vocabulary import DEFAULT_DIR

# A vocabulary folder (hierarchy.yaml, label_ids.tsv) as a string, so caches can key on it.
DEFAULT_VOCABULARY = str(DEFAULT_DIR)


@cache
def load_hierarchy(vocabulary: str = DEFAULT_VOCABULARY) -> Hierarchy:
    """The hierarchy of the vocabulary folder ``vocabulary``."""
    return Hierarchy.from_yaml(Path(vocabulary) / "hierarchy.yaml")


_SKY_BANDS = {"sky", "sky-blue", "sky-light", "sky-night", "sky-red"}
_GROUND_BANDS = {
    "ground", "sand", "sand-beach", "sand-desert", "field", "snow", "ice", "grass", "flowerbed",
    "water", "ocean", "lake", "river", "wave", "water-reflection", "beach", "desert", "arctic",
    "shore", "floor", "floor-carpet", "floor-court", "floor-wood", "floor-other", "road",
    "street", "highway", "sidewalk", "railroad", "swimming-pool",
}  # fmt: skip
_BACKDROPS = {
    "mountain", "hill", "volcano", "glacier", "island", "forest", "trees", "vegetation", "city",
    "rock", "bush", "wall", "building", "edifice", "construction", "church", "castle", "house",
    "tower", "ancient-building", "ruin-archeological", "monument", "pyramid", "pagoda",
    "lighthouse", "cabin", "hut", "bridge", "waterfall", "tree", "palm", "construction-other",
    "church-interior", "curtain", "painting", "mural-carving", "fence", "train", "ship",
}  # fmt: skip
_CONTAINERS = {"group-of-persons": "humans", "couple-of-persons": "humans", "herd": "mammal"}
_PARTS = {"face", "hand", "head", "window", "door", "roof", "chimney", "trunk", "branch", "leaf",
          "tire", "horn", "column", "nest", "shell"}  # fmt: skip

_COLOURS = {
    "sky-blue": (92, 146, 218), "sky": (150, 184, 222), "sky-light": (206, 218, 236),
    "sky-night": (22, 28, 62), "sky-red": (222, 122, 84), "cloud": (236, 236, 242),
    "sun": (255, 236, 170), "ground": (150, 118, 84), "grass": (84, 142, 58),
    "rock": (128, 122, 116), "vegetation": (52, 96, 44), "trees": (40, 82, 36),
    "tree": (46, 90, 40), "palm": (70, 112, 52), "forest": (30, 66, 30), "bush": (66, 104, 48),
    "man": (176, 132, 108), "woman": (190, 120, 130), "person": (170, 136, 116),
    "group-of-persons": (120, 104, 96), "couple-of-persons": (132, 110, 100),
    "child-boy": (96, 120, 170), "child-girl": (214, 150, 170), "face": (222, 180, 150),
    "hand": (216, 172, 142), "head": (90, 70, 58), "water": (60, 110, 150), "ocean": (34, 86, 140),
    "lake": (70, 120, 140), "river": (84, 118, 120), "wave": (200, 220, 230),
    "sand-beach": (222, 204, 160), "sand-desert": (214, 178, 120), "sand": (206, 186, 140),
    "snow": (240, 242, 246), "ice": (210, 230, 240), "mountain": (110, 104, 120),
    "hill": (106, 126, 76), "wall": (196, 180, 150), "building": (176, 164, 150),
    "house": (200, 160, 120), "window": (60, 70, 84), "door": (110, 70, 44), "roof": (150, 64, 46),
    "street": (104, 104, 108), "road": (92, 92, 96), "sidewalk": (168, 164, 158),
    "floor-other": (150, 140, 128), "floor-wood": (150, 104, 64), "city": (150, 146, 150),
    "fabric": (170, 60, 70), "public-sign": (220, 200, 40), "car": (180, 30, 30),
}  # fmt: skip


@dataclass(frozen=True)
class Look:
    kind: str  # sky | ground | backdrop | container | person | object | part
    colour: tuple[int, int, int]
    texture: float  # amplitude of the smooth texture
    grain: float  # amplitude of the per-pixel grain
    size: float  # typical radius as a fraction of the image's shorter side


def hash_unit(text: str, salt: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{salt}:{text}".encode()).digest()[:8], "big") / 2**64


@cache
def look(label: str, vocabulary: str = DEFAULT_VOCABULARY) -> Look:
    """How ``label`` is drawn: its kind of place in a scene, colour, texture and size."""
    h = load_hierarchy(vocabulary)
    branch = h.branch(label)
    if label in _SKY_BANDS:
        kind = "sky"
    elif label in _GROUND_BANDS:
        kind = "ground"
    elif label in _BACKDROPS or (branch == "landscape-nature" and label not in {"cloud", "sun"}):
        kind = "backdrop"
    elif label in _CONTAINERS:
        kind = "container"
    elif branch == "humans" and label not in _PARTS:
        kind = "person"
    elif label in _PARTS:
        kind = "part"
    else:
        kind = "object"
    base = {"animal": (120, 96, 70), "man-made": (140, 130, 150), "food": (200, 120, 60),
            "other": (110, 110, 110), "humans": (170, 130, 110), "landscape-nature": (110, 130, 90)}  # fmt: skip
    if label in _COLOURS:
        colour = _COLOURS[label]
    else:
        jitter = [int(90 * (hash_unit(label, c) - 0.5)) for c in "rgb"]
        red, green, blue = (int(np.clip(b + j, 10, 245)) for b, j in zip(base[branch], jitter, strict=True))
        colour = (red, green, blue)
    texture = {"sky": 6.0, "ground": 16.0, "backdrop": 20.0}.get(kind, 12.0) * (0.6 + hash_unit(label, "t"))
    grain = 3.0 + 5.0 * hash_unit(label, "g")
    size = {"backdrop": 0.32, "container": 0.3, "person": 0.16, "object": 0.09, "part": 0.05}.get(kind, 0.12)
    if label in {"cloud"}:
        size = 0.14
    if label == "sun":
        size = 0.05
    return Look(kind, colour, texture, grain, size * (0.8 + 0.4 * hash_unit(label, "s")))
