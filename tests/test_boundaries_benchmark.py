"""The BSDS500 boundary benchmark against its own test data (``tests/data/bsds500-bench``):
every figure of its published ``eval_bdry*.txt`` comes back within 0.002: the summary within
0.0005, the curve within 0.001, each image's best within 0.002 (a few pixels of one image's
matching); the matching is the least-cost one of the outlier graph ``correspondPixels`` solves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from regionbench.scoring.measures import bsds_boundaries as boundaries

DATA = Path(__file__).parent / "data" / "bsds500-bench"
IDS = sorted(p.stem for p in (DATA / "groundTruth").glob("*.mat"))
CLOSE = 5e-4


def humans(image: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The image's human segmentations and the boundaries the benchmark ships with them."""
    cell = scipy.io.loadmat(DATA / "groundTruth" / f"{image}.mat")["groundTruth"]
    people = [cell[0, k] for k in range(cell.shape[1])]
    return [p["Segmentation"][0, 0] for p in people], [p["Boundaries"][0, 0].astype(bool) for p in people]


def test_a_human_s_boundaries_are_its_segmentation_s_thinned() -> None:
    """BSDS's ``Boundaries`` are ``seg2bdry`` of the ``Segmentation``, thinned: pixel for pixel on
    every human of the five images (so a release, which keeps the segmentations, has them)."""
    for image in IDS:
        for segmentation, shipped in zip(*humans(image), strict=True):
            assert np.array_equal(boundaries.thin(boundaries.seg2bdry(segmentation)), shipped)


def scored(test: str) -> boundaries.Benchmark:
    """``test_1``: the ucm2 at 5 thresholds; ``test_4``: the five segs scales."""
    images = []
    for image in IDS:
        _, truth = humans(image)
        if test == "test_1":
            soft = scipy.io.loadmat(DATA / "ucm2" / f"{image}.mat")["ucm2"].astype(float)[2::2, 2::2]
            levels = boundaries.thresholds(5)
            maps = [soft >= t for t in levels]
        else:
            cell = scipy.io.loadmat(DATA / "segs" / f"{image}.mat")["segs"]
            maps = [boundaries.seg2bdry(cell[0, k]) for k in range(cell.shape[1])]
            levels = np.arange(1, len(maps) + 1, dtype=float)
        images.append(boundaries.score_image(maps, truth))
    return boundaries.collect(levels, images)


def table(path: Path) -> np.ndarray:
    return np.array([[float(v) for v in line.split()] for line in path.read_text().splitlines() if line.strip()])


@pytest.mark.parametrize("test", ["test_1", "test_4"])
def test_the_published_boundary_figures_come_back(test: str) -> None:
    found, folder = scored(test), DATA / test
    o, s = found.ods, found.ois
    ours = [o["threshold"], o["recall"], o["precision"], o["f"], s["recall"], s["precision"], s["f"], found.ap]
    assert np.allclose(ours, table(folder / "eval_bdry.txt")[0], rtol=0, atol=CLOSE)
    curve = np.column_stack([found.thresholds, found.curve["recall"], found.curve["precision"], found.curve["f"]])
    assert np.allclose(curve, table(folder / "eval_bdry_thr.txt"), rtol=0, atol=2 * CLOSE)
    per_image = [[k + 1, e["threshold"], e["recall"], e["precision"], e["f"]] for k, e in enumerate(found.per_image)]
    assert np.allclose(per_image, table(folder / "eval_bdry_img.txt"), rtol=0, atol=4 * CLOSE)


def test_the_benchmark_differs_from_itself_more_than_from_us() -> None:
    """``test_1`` and ``test_4`` score the same boundary maps (the ucm2 at 1/6 is the first scale's
    boundaries): ours are equal, the published ones differ in the fourth decimal, the random
    outlier wiring of ``correspondPixels``."""
    one, four = scored("test_1"), scored("test_4")
    assert one.curve == four.curve and one.ap == four.ap
    published = table(DATA / "test_1" / "eval_bdry.txt")[0][1:], table(DATA / "test_4" / "eval_bdry.txt")[0][1:]
    assert 0 < np.abs(published[0] - published[1]).max() < 2e-4


def least_cost(machine: np.ndarray, human: np.ndarray, radius: float) -> float:
    """The outlier graph's least cost, solved whole and dense: each pixel to one of the other map
    within ``radius`` at their distance, or to an outlier at 100 ``radius``."""
    a, b = np.argwhere(machine), np.argwhere(human)
    outlier = 100 * radius
    n1, n2 = len(a), len(b)
    cost = np.full((n1 + n2, n2 + n1), 1e9)
    if n1 and n2:
        d = np.hypot(*(a[:, None, :] - b[None, :, :]).transpose(2, 0, 1))
        cost[:n1, :n2] = np.where(d <= radius, d, 1e9)
        near = np.transpose(d) <= radius  # two outliers pair where their pixels could
        cost[n1:, n2:] = np.where(near, 0.0, 1e9)
    cost[:n1, n2:] = np.where(np.eye(n1, dtype=bool), outlier, 1e9)
    cost[n1:, :n2] = np.where(np.eye(n2, dtype=bool), outlier, 1e9)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    density=st.floats(0.02, 0.3),
    size=st.sampled_from([(9, 13), (20, 20), (6, 30)]),
    dense_up_to=st.sampled_from([boundaries.DENSE_UP_TO, 0]),
)
def test_the_matching_is_the_outlier_graph_s_cheapest(
    seed: int, density: float, size: tuple[int, int], dense_up_to: int
) -> None:
    """On random pixel sets, the matching per component costs what the whole graph's optimum
    costs, matches one to one and only within the distance, each component solved dense or
    sparse (``DENSE_UP_TO`` 0: every one sparse)."""
    rng = np.random.default_rng(seed)
    machine, human = rng.random(size) < density, rng.random(size) < density
    max_dist = 2.5 / float(np.hypot(*size))
    mine, theirs = boundaries.correspond(machine, human, max_dist)
    assert mine.sum() == theirs.sum() and not (mine & ~machine).any() and not (theirs & ~human).any()
    radius = max_dist * float(np.hypot(*size))
    a, b = np.flatnonzero(machine), np.flatnonzero(human)
    saved, boundaries.DENSE_UP_TO = boundaries.DENSE_UP_TO, dense_up_to
    try:
        partner = boundaries._cheapest_matching(*_pairs(machine, human, radius), a.size, b.size, 100 * radius)
    finally:
        boundaries.DENSE_UP_TO = saved
    pairs = [(a[i], b[j]) for i, j in enumerate(partner) if j >= 0]
    distance = sum(float(np.hypot(*np.subtract(divmod(p, size[1]), divmod(q, size[1])))) for p, q in pairs)
    ours = distance + 100 * radius * (a.size + b.size - 2 * len(pairs))
    assert ours == pytest.approx(least_cost(machine, human, radius), abs=1e-6)


def _pairs(machine: np.ndarray, human: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (machine pixel, human pixel, distance) within ``radius``, by their indices."""
    a, b = np.argwhere(machine), np.argwhere(human)
    if not len(a) or not len(b):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    d = np.hypot(*(a[:, None, :] - b[None, :, :]).transpose(2, 0, 1))
    i, j = np.nonzero(d <= radius)
    return i, j, d[i, j]


@settings(max_examples=150, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    density=st.floats(0.05, 0.95),
    blobs=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_thinning_is_scikit_image_s_pixel_for_pixel(
    shape: tuple[int, int], density: float, blobs: bool, seed: int
) -> None:
    """The compiled thinning, deciding again only what a deletion touched, gives scikit-image's
    ``thin`` on any map: noise, or thick blobs and bands as a low threshold of a soft map gives
    (the map's border included)."""
    from scipy import ndimage
    from skimage.morphology import thin as reference

    rng = np.random.default_rng(seed)
    image = rng.random(shape) < density
    if blobs:
        image = ndimage.binary_dilation(image & (rng.random(shape) < 0.1), iterations=int(rng.integers(1, 4)))
    assert np.array_equal(boundaries.thin(image), reference(image))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), images=st.integers(1, 12), levels=st.integers(2, 9))
def test_each_resample_is_the_benchmark_of_its_drawn_images(seed: int, images: int, levels: int) -> None:
    """The boundary task's bootstrap: on every resample (images drawn as ``rng.integers(0, n,
    size=n)``), its ODS F, OIS F and AP are ``collect`` of the drawn images' counts, each drawn
    image counted as often as drawn."""
    from regionbench.scoring.measures import bootstrap
    from regionbench.scoring.tasks import boundaries as task

    rng = np.random.default_rng(seed)
    counts = []
    for _ in range(images):
        sum_r, sum_p = rng.integers(0, 50, size=levels), np.sort(rng.integers(0, 60, size=levels))[::-1].copy()
        counts.append(boundaries.ImageCounts(rng.integers(0, sum_r + 1), sum_r, rng.integers(0, sum_p + 1), sum_p))
    thresholds = list(np.linspace(0.1, 0.9, levels))
    stacked = np.stack([task.image_counts(c) for c in counts]).astype(float)
    found = bootstrap.additive(stacked, task.benchmark_figures, 15, 4)
    for b, drawn in enumerate(bootstrap.draws(images, 15, 4)):
        expected = boundaries.collect(thresholds, [counts[j] for j in drawn])
        assert found["ods.f"][b] == pytest.approx(expected.ods["f"], abs=1e-12)
        assert found["ois.f"][b] == pytest.approx(expected.ois["f"], abs=1e-12)
        assert found["ap"][b] == pytest.approx(expected.ap, abs=1e-12)
