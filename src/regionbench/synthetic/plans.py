"""Planned collections: the profiles (how many images and regions, in which folders, with
which label counts) and each image's plan (its labels, their looks and its scene), fast and
image-free; the figures the paper reports of the full collection.

Profiles:
- ``paper``: 20,000 images in folders 00-40 whose label counts meet every figure the paper
  reports (docs/subsets.md): 99,555 regions over 255 labels, the ten named top counts, the cumulative
  subset sizes of Table 5, and 26 / 122 / 147 labels above 1000 / 100 / 50 regions.
- ``demo``: 300 images and 1,500 regions in two folders, the paper's counts scaled down.
- ``tiny``: 24 images in two folders, for tests.
- ``coco-demo``: 200 images and 1,000 regions, traced by several annotators (``traces``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from regionbench.core.errors import InputError
from regionbench.synthetic.looks import DEFAULT_VOCABULARY, Look, hash_unit, load_hierarchy, look

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
# A rendering worker process costs about what 25 images cost (its start, its imports and the
# compiled kernels' cache load): one is worth starting per this many images.
IMAGES_PER_WORKER = 50


def workers_for(requested: int | None, images: int, jobs: int) -> int:
    """The rendering processes worth starting: at most ``requested`` (None: every core), one per
    ``IMAGES_PER_WORKER`` of the ``images`` to render and one per job of the ``jobs``; at least 1.
    A tiny collection renders in the calling process, where a pool would cost more than it saves."""
    import os

    return max(1, min(requested or os.cpu_count() or 1, jobs, images // IMAGES_PER_WORKER))


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
        key=lambda x: (hash_unit(x, "rank") + 0.4 * (h.branch(x) == "animal"), x),
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
