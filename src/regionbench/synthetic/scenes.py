"""Synthetic scenes: the images and region masks of a generated collection.

A collection is planned first (which image holds which labels, fast and image-free) and then
rendered folder by folder. Every label has a look (colour, texture, where it sits in a scene)
so the images read as photos at a glance: skies on top, ground at the bottom, backdrops on the
horizon, persons and objects in front, persons nested in group regions.

Profiles:
- ``paper``: 20,000 images in folders 00-40 whose label counts meet every figure the paper
  reports (docs/subsets.md): 99,555 regions over 255 labels, the ten named top counts, the cumulative
  subset sizes of Table 5, and 26 / 122 / 147 labels above 1000 / 100 / 50 regions.
- ``demo``: 300 images and 1,500 regions in two folders, the paper's counts scaled down.
- ``tiny``: 24 images in two folders, for tests.
- ``coco-demo``: 200 images and 1,000 regions, traced by several annotators (``trace``).

Several annotators: ``trace`` gives one annotator's reading of a rendered scene. At
disagreement d in [0, 1] an annotator misses small regions, merges touching regions, splits
large ones, moves boundaries by a pixel or two and picks a neighbouring label in the hierarchy
(parent, child or sibling: ``tree``/``trees``, ``man``/``person``), each with a probability
that grows with d; at d = 0 every annotator traces the scene exactly.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline.vocabulary import DEFAULT_DIR

# A vocabulary folder (hierarchy.yaml, label_ids.tsv) as a string, so caches can key on it.
DEFAULT_VOCABULARY = str(DEFAULT_DIR)

# The ten most frequent labels and their region counts in the full collection (paper §3.4).
# The paper writes `group-persons` for the label the ontology calls `group-of-persons`.
PAPER_TOP10 = {
    "sky-blue": 5722,
    "man": 4330,
    "group-of-persons": 4232,
    "ground": 3785,
    "grass": 3211,
    "cloud": 3128,
    "rock": 3071,
    "vegetation": 2763,
    "trees": 2638,
    "sky": 2637,
}
PAPER_REGIONS = 99_555
PAPER_IMAGES = 20_000
PAPER_LABELS_USED = 255
# Cumulative region counts of the k most frequent labels (paper Table 5, subsets A-H).
PAPER_SUBSET_SIZES = {2: 10_052, 3: 14_284, 4: 18_069, 5: 21_280, 10: 35_517, 25: 59_759, 50: 77_631, 100: 93_167}
# Labels used in more than 1000 / 100 / 50 regions (paper §3.4).
PAPER_LABELS_ABOVE = {1000: 26, 100: 122, 50: 147}

# Labels that follow the top ten in frequency, in order: what tourist photos mostly show.
_COMMON = [
    "wall",
    "window",
    "building",
    "mountain",
    "woman",
    "tree",
    "ocean",
    "floor-other",
    "street",
    "house",
    "city",
    "person",
    "road",
    "sidewalk",
    "hill",
    "fabric",
    "plant",
    "public-sign",
    "sand-beach",
    "water",
    "bush",
    "river",
    "lake",
    "couple-of-persons",
    "child-boy",
    "child-girl",
    "door",
    "car",
    "roof",
    "column",
    "fence",
    "statue",
    "flowerbed",
    "palm",
    "lamp",
    "floor-wood",
    "edifice",
    "construction-other",
    "stairs",
    "sky-light",
    "church",
    "highway",
    "boat",
    "bench",
    "table",
    "chair",
    "flower",
    "trunk",
    "forest",
    "field",
    "snow",
    "sky-red",
    "sand-desert",
    "bottle",
    "railroad",
    "bridge",
    "face",
    "hand",
]

# The 26 labels no region uses (the paper: only labels of the animal and musical-instrument
# branches went unused).
_UNUSED = [
    "ape",
    "mandril",
    "coyote",
    "bobcat",
    "cougar",
    "lynx",
    "koala",
    "beaver",
    "caribou",
    "elk",
    "hedgehog",
    "rhinoceros",
    "dragonfly",
    "caterpillar",
    "scorpion",
    "seahorse",
    "octopus",
    "lobster",
    "starfish",
    "iguana",
    "cello",
    "viola",
    "trombone",
    "saxophone",
    "trumpet",
    "violin",
]


@cache
def load_hierarchy(vocabulary: str = DEFAULT_VOCABULARY) -> Hierarchy:
    """The hierarchy of the vocabulary folder ``vocabulary``."""
    return Hierarchy.from_yaml(Path(vocabulary) / "hierarchy.yaml")


def _fill(n: int, total: int, hi: int, lo: int) -> list[int]:
    """``n`` non-increasing integers in [lo, hi] summing to ``total``, decaying geometrically.

    The decay rate is found by bisection so the real-valued curve has the right sum; rounding
    is then repaired one unit at a time from the top (adding) or the bottom (removing).
    """
    if not n * lo <= total <= n * hi:
        raise ValueError(f"cannot fit {total} into {n} values in [{lo}, {hi}]")

    def curve(rate: float) -> np.ndarray:
        return lo + (hi - lo) * np.exp(-rate * np.arange(n) / max(n - 1, 1))

    low, high = 0.0, 60.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if curve(mid).sum() > total else (low, mid)
    values = np.clip(np.round(curve(low)), lo, hi).astype(int)
    diff = total - int(values.sum())
    step = 1 if diff > 0 else -1
    order = range(n) if step > 0 else range(n - 1, -1, -1)
    while diff:
        for i in order:
            if diff == 0:
                break
            v = values[i] + step
            left_ok = i == 0 or v <= values[i - 1]
            right_ok = i == n - 1 or v >= values[i + 1]
            if lo <= v <= hi and left_ok and right_ok:
                values[i] = v
                diff -= step
    return values.tolist()


def paper_label_order(vocabulary: str = DEFAULT_VOCABULARY) -> list[str]:
    """The 255 used labels from most to least frequent in the paper profile."""
    h = load_hierarchy(vocabulary)
    head = list(PAPER_TOP10) + _COMMON
    # The rest interleaves the branches, animals leaning to the tail as in the paper's Table 2.
    rest = sorted(
        set(h.labels) - set(head) - set(_UNUSED),
        key=lambda x: (_hash_unit(x, "rank") + 0.4 * (h.branch(x) == "animal"), x),
    )
    order = head + rest
    if len(order) != PAPER_LABELS_USED or len(set(order)) != len(order):
        raise AssertionError(f"paper label order has {len(order)} labels, expected {PAPER_LABELS_USED}")
    return order


def _paper_counts() -> list[int]:
    top = list(PAPER_TOP10.values())
    s = PAPER_SUBSET_SIZES
    counts = top[:]
    counts += _fill(15, s[25] - s[10], hi=2600, lo=1090)  # ranks 11-25, all above 1000
    counts += [1050, *_fill(24, s[50] - s[25] - 1050, hi=990, lo=420)]  # rank 26 is the last above 1000
    counts += _fill(50, s[100] - s[50], hi=410, lo=210)  # ranks 51-100
    tail = PAPER_REGIONS - s[100]
    below_50, below_100 = 1500, 1800  # ranks 148-255 (108 labels) and 123-147 (25 labels)
    counts += _fill(22, tail - below_50 - below_100, hi=200, lo=101)  # ranks 101-122
    counts += _fill(25, below_100, hi=100, lo=51)
    counts += _fill(108, below_50, hi=50, lo=1)
    return counts


@dataclass(frozen=True)
class Profile:
    name: str
    n_images: int
    folders: tuple[str, ...]
    n_regions: int


PROFILES = {
    "paper": Profile("paper", PAPER_IMAGES, tuple(f"{i:02d}" for i in range(41)), PAPER_REGIONS),
    "demo": Profile("demo", 300, ("00", "01"), 1_500),
    "tiny": Profile("tiny", 24, ("00", "01"), 110),
    "coco-demo": Profile("coco-demo", 200, ("00", "01"), 1_000),
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise InputError(f"unknown synth profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[name]


def label_counts(profile: str, vocabulary: str = DEFAULT_VOCABULARY) -> dict[str, int]:
    """Label -> number of regions the profile realises (no images are made).

    ``paper`` is the full collection; smaller profiles scale it to their region total by
    largest remainders, keeping each label's rank order.
    """
    order = paper_label_order(vocabulary)
    counts = _paper_counts()
    p = get_profile(profile)
    if p.n_regions == PAPER_REGIONS:
        return dict(zip(order, counts, strict=True))
    exact = np.array(counts, dtype=float) * p.n_regions / PAPER_REGIONS
    scaled = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - scaled), kind="stable")[: p.n_regions - scaled.sum()]:
        scaled[i] += 1
    return {label: int(c) for label, c in zip(order, scaled, strict=True) if c > 0}


# ---------------------------------------------------------------------------------------------
# Looks: how each label is drawn.

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


def _hash_unit(text: str, salt: str) -> float:
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
        jitter = [int(90 * (_hash_unit(label, c) - 0.5)) for c in "rgb"]
        red, green, blue = (int(np.clip(b + j, 10, 245)) for b, j in zip(base[branch], jitter, strict=True))
        colour = (red, green, blue)
    texture = {"sky": 6.0, "ground": 16.0, "backdrop": 20.0}.get(kind, 12.0) * (0.6 + _hash_unit(label, "t"))
    grain = 3.0 + 5.0 * _hash_unit(label, "g")
    size = {"backdrop": 0.32, "container": 0.3, "person": 0.16, "object": 0.09, "part": 0.05}.get(kind, 0.12)
    if label in {"cloud"}:
        size = 0.14
    if label == "sun":
        size = 0.05
    return Look(kind, colour, texture, grain, size * (0.8 + 0.4 * _hash_unit(label, "s")))


_DRAW_ORDER = {"sky": 0, "ground": 1, "backdrop": 2, "container": 3, "object": 4, "person": 4, "part": 5}


# ---------------------------------------------------------------------------------------------
# Planning: which image holds which labels.

_SCENES = ("nature", "urban", "people", "interior", "animals")


def _affinity(label: str, vocabulary: str) -> np.ndarray:
    h = load_hierarchy(vocabulary)
    branch, kind = h.branch(label), look(label, vocabulary).kind
    if label.startswith("floor") or label in {"wall", "window", "door", "curtain", "painting", "lamp"}:
        a = (0.1, 0.6, 0.6, 1.0, 0.05)
    elif branch == "landscape-nature":
        a = (1.0, 0.5, 0.6, 0.03, 0.8) if kind in {"sky", "ground"} or label == "cloud" else (1.0, 0.3, 0.4, 0.03, 0.7)
    elif branch == "humans":
        a = (0.4, 0.8, 1.0, 0.6, 0.2)
    elif branch == "animal":
        a = (0.3, 0.05, 0.1, 0.02, 1.0)
    elif branch == "man-made" and "vehicle" in "".join([*h.ancestors(label), label]):
        a = (0.2, 1.0, 0.3, 0.05, 0.1)
    elif branch == "man-made" and "construction" in [*h.ancestors(label), label]:
        a = (0.2, 1.0, 0.5, 0.3, 0.05)
    elif branch in {"man-made", "food"}:
        a = (0.05, 0.3, 0.6, 1.0, 0.02)
    else:
        a = (0.3, 0.3, 0.3, 0.3, 0.3)
    return np.array(a)


@dataclass(frozen=True)
class ImagePlan:
    image_id: int
    folder: str
    width: int
    height: int
    grayscale: bool
    scene: str
    labels: tuple[str, ...] = field(default=())
    looks: tuple[Look, ...] = field(default=())  # one per label


def _regions_per_image(n_images: int, n_regions: int, rng: np.random.Generator) -> np.ndarray:
    """Region counts per image: 1 + Poisson, at most 16, adjusted to the exact total."""
    sizes = np.clip(1 + rng.poisson(n_regions / n_images - 1, n_images), 1, 16)
    while (diff := n_regions - int(sizes.sum())) != 0:
        i = rng.integers(n_images)
        if diff > 0 and sizes[i] < 16:
            sizes[i] += 1
        elif diff < 0 and sizes[i] > 1:
            sizes[i] -= 1
    return sizes


def _image_ids(profile: Profile, rng: np.random.Generator) -> list[tuple[str, int]]:
    per_folder = np.full(len(profile.folders), profile.n_images // len(profile.folders))
    per_folder[: profile.n_images % len(profile.folders)] += 1
    ids = []
    for folder, k in zip(profile.folders, per_folder, strict=True):
        base = int(folder) * 1000
        pool = np.arange(1, 1000)
        ids += [(folder, base + int(i)) for i in np.sort(rng.choice(pool, size=int(k), replace=False))]
    return ids


def plan_collection(profile: str, seed: int = 0, vocabulary: str = DEFAULT_VOCABULARY) -> list[ImagePlan]:
    """Every image of a profile with its labels and their looks; the label multiset equals
    ``label_counts``. ``vocabulary`` is the folder whose hierarchy places the labels."""
    p = get_profile(profile)
    rng = np.random.default_rng([seed, 1])
    counts = label_counts(profile, vocabulary)
    labels = sorted(counts)
    remaining = np.array([counts[x] for x in labels], dtype=float)
    affinity = np.stack([_affinity(x, vocabulary) for x in labels], axis=1)  # scenes x labels
    ids = _image_ids(p, rng)
    sizes = _regions_per_image(p.n_images, p.n_regions, rng)
    plans = []
    for (folder, image_id), n in zip(ids, sizes, strict=True):
        scene = int(rng.integers(len(_SCENES)))
        chosen = []
        damp = np.ones(len(labels))  # a label already in the image is less likely again
        for _ in range(n):
            w = remaining * (affinity[scene] + 1e-3) * damp
            k = int(rng.choice(len(labels), p=w / w.sum()))
            remaining[k] -= 1
            damp[k] *= 0.2
            chosen.append(labels[k])
        portrait = rng.random() < 0.2
        drawn = tuple(sorted(chosen, key=lambda x: (_DRAW_ORDER[look(x, vocabulary).kind], x)))
        plans.append(
            ImagePlan(
                image_id=image_id,
                folder=folder,
                width=360 if portrait else 480,
                height=480 if portrait else 360,
                grayscale=bool(rng.random() < 0.05),
                scene=_SCENES[scene],
                labels=drawn,
                looks=tuple(look(x, vocabulary) for x in drawn),
            )
        )
    return plans


# ---------------------------------------------------------------------------------------------
# Rendering.


def photograph(plan: ImagePlan, pixels: np.ndarray) -> bytes:
    """The rendered scene as the collection stores it: a JPEG (quality 90), gray when planned so."""
    picture = Image.fromarray(pixels)
    if plan.grayscale:
        picture = picture.convert("L")
    jpeg = io.BytesIO()
    picture.save(jpeg, format="JPEG", quality=90)
    return jpeg.getvalue()


def _blob(shape: tuple[int, int], cx: float, cy: float, rx: float, ry: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth irregular closed shape: an ellipse whose radius wobbles with a few harmonics."""
    height, width = shape
    mask = np.zeros(shape, dtype=bool)
    reach = 1.5
    r0, r1 = max(int(cy - reach * ry), 0), min(int(cy + reach * ry) + 1, height)
    c0, c1 = max(int(cx - reach * rx), 0), min(int(cx + reach * rx) + 1, width)
    if r0 >= r1 or c0 >= c1:
        return mask
    dx = ((np.arange(c0, c1, dtype=np.float32) + 0.5 - cx) / rx)[None, :]
    dy = ((np.arange(r0, r1, dtype=np.float32) + 0.5 - cy) / ry)[:, None]
    # cos(k*theta + phase) = Re(e^{i phase} u^k) with u = e^{i theta}: powers, no trigonometry.
    z = dx + 1j * dy
    u = z / np.maximum(np.abs(z), 1e-6)
    radius = np.ones(z.shape, dtype=np.float32)
    power = u
    for k in range(2, 6):
        power = power * u
        radius += rng.uniform(0, 0.22 / k) * (np.exp(1j * rng.uniform(0, 2 * np.pi)) * power).real
    mask[r0:r1, c0:c1] = dx**2 + dy**2 < radius**2
    return mask


def _curve(width: int, level: float, amplitude: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth horizon-like curve y(x) over the image columns."""
    x = np.arange(width) / width
    y = np.full(width, level)
    for k in (1, 2, 3, 5):
        y += amplitude / k * np.sin(2 * np.pi * k * x + rng.uniform(0, 2 * np.pi))
    return y


def _person(shape: tuple[int, int], cx: float, cy: float, ry: float, rng: np.random.Generator) -> np.ndarray:
    body = _blob(shape, cx, cy + 0.15 * ry, 0.32 * ry, 0.85 * ry, rng)
    head = _blob(shape, cx, cy - 0.85 * ry, 0.18 * ry, 0.2 * ry, rng)
    return body | head


def render(plan: ImagePlan, seed: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """Draw one planned image: the RGB pixels and one boolean mask per label, in plan order.

    Regions are drawn back to front into an owner map; a container region (a group of
    persons) keeps the pixels of its members. Every mask is non-empty: a shape that would
    hide too much of the regions behind it is redrawn smaller elsewhere.
    """
    rng = np.random.default_rng([seed, plan.image_id])
    h, w = plan.height, plan.width
    shape = (h, w)
    n = len(plan.labels)
    owner = np.full(shape, -1, dtype=np.int32)
    drawn: list[np.ndarray] = []
    if n == 1:  # a lone region covers the whole image, as in the official collection
        owner[:] = 0
        drawn.append(np.ones(shape, dtype=bool))
    else:
        drawn = _layout(plan, owner, rng)
    masks = [owner == i for i in range(n)]
    for i in range(n):
        if plan.looks[i].kind == "container":
            members = [j for j in range(n) if j != i and plan.looks[j].kind == "person"]
            for j in members:
                masks[i] |= masks[j] & drawn[i]
    image = _paint(plan, owner, rng)
    return image, masks


def _layout(plan: ImagePlan, owner: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    h, w = owner.shape
    shape = (h, w)
    kinds = [x.kind for x in plan.looks]
    horizon = rng.uniform(0.32, 0.55) * h
    skies = [i for i, k in enumerate(kinds) if k == "sky"]
    grounds = [i for i, k in enumerate(kinds) if k == "ground"]
    yy = np.arange(h)[:, None]
    drawn: list[np.ndarray] = [np.zeros(shape, bool) for _ in plan.labels]
    # Bands: skies split the area above the horizon, grounds the area below it.
    top = np.zeros(w)
    for k, i in enumerate(skies):
        bottom = _curve(w, horizon * (k + 1) / len(skies), 0.03 * h, rng)
        drawn[i] = (yy >= top[None, :]) & (yy < bottom[None, :])
        top = bottom
    # Without a sky, the ground still starts low: walls or backdrops fill the top.
    start = _curve(w, horizon + 0.08 * h if skies else 0.7 * horizon, 0.04 * h, rng)
    for k, i in enumerate(grounds):
        stop = (
            np.full(w, float(h))
            if k == len(grounds) - 1
            else _curve(w, start.mean() + (h - start.mean()) / (len(grounds) - k), 0.03 * h, rng)
        )
        drawn[i] = (yy >= start[None, :]) & (yy < stop[None, :])
        start = stop
    for i in skies + grounds:
        owner[drawn[i]] = i
    container_box: tuple[float, float, float, float] | None = None
    for i, label in enumerate(plan.labels):
        kind = kinds[i]
        if kind in {"sky", "ground"}:
            continue
        size = plan.looks[i].size * min(h, w)
        for attempt in range(12):
            scale = size * (0.75**attempt) * rng.uniform(0.7, 1.3)
            if kind == "backdrop":
                cx, cy = rng.uniform(0.1, 0.9) * w, horizon + rng.uniform(-0.05, 0.15) * h
                cand = _blob(shape, cx, cy, scale * rng.uniform(1.0, 1.8), scale * rng.uniform(0.6, 1.1), rng)
            elif kind == "container":
                cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.6, 0.75) * h
                cand = _blob(shape, cx, cy, scale * 1.4, scale * 0.7, rng)
                container_box = (cx, cy, scale * 1.1, scale * 0.5)
            elif kind == "person":
                if container_box is not None and attempt < 8:
                    bx, by, bw, bh = container_box
                    cx, cy, ry = bx + rng.uniform(-bw, bw), by + rng.uniform(-0.3, 0.3) * bh, bh * 0.9
                else:
                    cx, cy, ry = rng.uniform(0.1, 0.9) * w, rng.uniform(0.55, 0.8) * h, scale
                cand = _person(shape, cx, cy, ry, rng)
            elif label in {"cloud", "sun"}:
                cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.05, 0.3) * h
                cand = _blob(shape, cx, cy, scale * 1.6, scale * 0.8, rng)
            else:
                cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.35, 0.9) * h
                cand = _blob(shape, cx, cy, scale, scale * rng.uniform(0.7, 1.3), rng)
            if cand.any() and _keeps_others_visible(owner, drawn, cand, i, plan):
                break
        else:
            cand = _fallback_shape(owner, drawn, cand, i)
        drawn[i] = cand
        owner[cand] = i
    return drawn


def _keeps_others_visible(
    owner: np.ndarray, drawn: list[np.ndarray], cand: np.ndarray, i: int, plan: ImagePlan
) -> bool:
    """True when, after drawing ``cand``, every earlier region keeps a fair share of itself."""
    covered = owner[cand]
    covered = covered[covered >= 0]
    if covered.size == 0:
        return True
    lost = np.bincount(covered, minlength=len(drawn))
    for j in np.flatnonzero(lost):
        if plan.looks[j].kind == "container" and plan.looks[i].kind == "person":
            continue  # members sit inside their group and do not hide it
        visible = int((owner == j).sum())
        if visible - lost[j] < max(12, 0.3 * drawn[j].sum()):
            return False
    return True


def _fallback_shape(owner: np.ndarray, drawn: list[np.ndarray], cand: np.ndarray, i: int) -> np.ndarray:
    """Shrink a shape to the pixels of regions that can spare them; never empty."""
    visible = np.bincount(owner[owner >= 0], minlength=len(drawn))
    rich = np.flatnonzero(visible > 64)
    allowed = cand & (np.isin(owner, rich) | (owner < 0))
    if allowed.sum() >= 4:
        return allowed
    # Take a small square from the largest visible region (or any free pixel).
    donor = int(np.argmax(visible)) if visible.any() else -1
    rows, cols = np.nonzero(owner == donor)
    mid = len(rows) // 2
    r, c = rows[mid], cols[mid]
    square = np.zeros_like(cand)
    square[r : r + 2, c : c + 2] = owner[r : r + 2, c : c + 2] == donor
    return square


def _smooth_noise(shape: tuple[int, int], cell: int, rng: np.random.Generator) -> np.ndarray:
    h, w = shape
    coarse = rng.standard_normal((h // cell + 2, w // cell + 2)).astype(np.float32)
    return np.asarray(Image.fromarray(coarse, mode="F").resize((w, h), Image.Resampling.BILINEAR))


def _paint(plan: ImagePlan, owner: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    shape = owner.shape
    n = len(plan.labels)
    colour = np.zeros((n + 1, 3), np.float32)
    texture = np.zeros(n + 1, np.float32)
    grain = np.zeros(n + 1, np.float32)
    colour[n] = (118, 108, 96)  # unlabelled background
    texture[n], grain[n] = 14.0, 5.0
    for i, lk in enumerate(plan.looks):
        # Instances vary as much as lighting and objects do in photos, so labels overlap.
        colour[i] = np.clip(np.array(lk.colour) + rng.normal(0, 28, 3), 0, 255)
        texture[i], grain[i] = lk.texture, lk.grain
    index = np.where(owner < 0, n, owner)
    smooth = _smooth_noise(shape, 24, rng)
    fine = _smooth_noise(shape, 3, rng)
    grain_field = rng.standard_normal(shape, dtype=np.float32)
    shade = texture[index] * smooth + 0.6 * texture[index] * fine + grain[index] * grain_field
    light = np.linspace(12, -12, shape[0], dtype=np.float32)[:, None]  # light from above
    pixels = colour[index] + (shade + light)[..., None]
    return np.clip(pixels, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Captions: what an IAPR TC-12 annotator would write about a scene.

_LOCATIONS = ["Cusco, Perú", "Bogotá, Colombia", "São Paulo, Brasil", "Zürich, Switzerland",
              "Córdoba, Argentina", "Cancún, México", "Melbourne, Australia", "Puerto Montt, Chile",
              "Quito, Ecuador", "La Paz, Bolivia"]  # fmt: skip
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]  # fmt: skip
_IRREGULAR = {"man": "men", "woman": "women", "child": "children", "person": "persons", "fish": "fish",
              "sheep": "sheep", "deer": "deer", "leaf": "leaves", "wolf": "wolves", "shelf": "shelves"}  # fmt: skip
_NUMBERS = ["", "", "two", "three", "four", "five", "six"]


def _plural(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def caption_phrase(label: str, count: int) -> str:
    """How a caption mentions ``count`` regions of ``label`` (label words, hyphens as spaces)."""
    words = label.split("-")
    if count == 1:
        return ("an " if words[0][0] in "aeiou" else "a ") + " ".join(words)
    head = 0 if "of" in words else len(words) - 1  # "groups of persons", "blue skies"
    words[head] = _plural(words[head])
    return f"{_NUMBERS[min(count, 6)] or 'many'} {' '.join(words)}"


def _and(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def caption_fields(plan: ImagePlan) -> dict[str, str]:
    """The caption of one image as IAPR TC-12 fields (title, description, notes, location, date)."""
    rng = np.random.default_rng([plan.image_id, 7])
    counts: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for label, lk in zip(plan.labels, plan.looks, strict=True):
        counts[label] = counts.get(label, 0) + 1
        kinds[label] = lk.kind
    front = [caption_phrase(x, c) for x, c in counts.items() if kinds[x] != "backdrop"]
    back = [caption_phrase(x, c) for x, c in counts.items() if kinds[x] == "backdrop"]
    described = _and(front or back)
    if front and back:
        described += f" with {_and(back)} in the background"
    location = _LOCATIONS[int(rng.integers(len(_LOCATIONS)))]
    date = f"{_MONTHS[int(rng.integers(12))]} {int(rng.integers(1995, 2006))}"
    return {
        "title": f"{plan.scene.capitalize()} scene in {location.split(',')[0]}",
        "description": f"{described[0].upper() + described[1:]}; the photo was taken on a trip.",
        "notes": "",
        "location": location,
        "date": date,
    }


# ---------------------------------------------------------------------------------------------
# Annotators: how several people trace one scene.


def _neighbour_label(label: str, hierarchy: Hierarchy, words: set[str], rng: np.random.Generator) -> str:
    """A label next to ``label`` in the hierarchy (parent, child or sibling) that is a word."""
    parent = hierarchy.parent(label)
    siblings = [x for x in hierarchy.children.get(parent, []) if x != label] if parent else []
    near = [parent] if parent and hierarchy.depth(parent) > 1 else []
    near += hierarchy.children.get(label, []) + siblings
    near = sorted(x for x in near if x in words)
    return str(rng.choice(near)) if near else label


def trace(
    plan: ImagePlan,
    masks: list[np.ndarray],
    annotator: int,
    disagreement: float,
    seed: int,
    hierarchy: Hierarchy,
    words: set[str],
) -> list[tuple[str, np.ndarray]]:
    """Annotator ``annotator``'s regions (label, mask) of a rendered scene at ``disagreement`` d.

    Per region, each with probability proportional to d: dropped when it covers under 2 % of
    the image (0.8 d); merged into the next region when the two touch (0.3 d); split in two at
    its median column when it covers over 10 % (0.3 d); dilated or eroded by one pixel (d); given
    a neighbouring label (0.5 d). Masks never come out empty. Seeded by (seed, image, annotator).
    """
    if disagreement <= 0:
        return [(label, mask.copy()) for label, mask in zip(plan.labels, masks, strict=True)]
    rng = np.random.default_rng([seed, plan.image_id, 1_000 + annotator])
    d = float(disagreement)
    size = masks[0].size
    regions = [(label, mask.copy()) for label, mask in zip(plan.labels, masks, strict=True)]
    out: list[tuple[str, np.ndarray]] = []
    i = 0
    while i < len(regions):
        label, mask = regions[i]
        i += 1
        if mask.sum() < 0.02 * size and len(regions) > 1 and rng.random() < 0.8 * d:
            continue  # missed
        if i < len(regions) and rng.random() < 0.3 * d:
            other = regions[i][1]
            if (ndimage.binary_dilation(mask) & other).any():
                mask = mask | other  # merged with the region it touches
                i += 1
        if mask.sum() > 0.1 * size and rng.random() < 0.3 * d:
            cols = np.flatnonzero(mask.any(axis=0))
            cut = int(np.median(cols))
            left = mask.copy()
            left[:, cut:] = False
            if left.any() and (mask & ~left).any():
                out.append((label, left))
                mask = mask & ~left
        if rng.random() < d:
            moved = ndimage.binary_dilation(mask) if rng.random() < 0.5 else ndimage.binary_erosion(mask)
            mask = moved if moved.any() else mask
        if rng.random() < 0.5 * d:
            label = _neighbour_label(label, hierarchy, words, rng)
        out.append((label, mask))
    return out or [(plan.labels[0], masks[0].copy())]


def folders(profile: str) -> list[str]:
    """Folder names a profile writes, known without generating anything."""
    return list(get_profile(profile).folders)


def summary(counts: dict[str, int]) -> dict[str, float | int]:
    """The paper's headline figures of a label -> count table."""
    ordered = sorted(counts.values(), reverse=True)
    return {
        "regions": sum(ordered),
        "labels_used": sum(1 for c in ordered if c > 0),
        **{f"top_{k}": sum(ordered[:k]) for k in PAPER_SUBSET_SIZES},
        **{f"labels_above_{t}": sum(1 for c in ordered if c > t) for t in PAPER_LABELS_ABOVE},
    }


def regions_per_image(n_regions: int, n_images: int) -> float:
    """Mean regions per image truncated to two decimals, as the paper reports it (4.97)."""
    return math.floor(100 * n_regions / n_images) / 100
