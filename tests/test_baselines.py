"""The reference methods' registry: every baseline keeps the contract, is deterministic and gives
what its kind promises; a module that breaks the contract is named in one line."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import baselines
from regionbench.baselines import _learnt


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    """A real photograph (scikit-image's ``chelsea``), a third of its size: the methods' cost
    and segments are a photograph's, not a flat picture's."""
    from skimage import data

    return np.ascontiguousarray(data.chelsea()[::3, ::3])


@pytest.mark.parametrize("name", sorted(baselines.registry()))
def test_every_baseline_is_deterministic_and_gives_its_kind(name: str, photo: np.ndarray) -> None:
    """Twice the same output; a segmentation's hierarchy goes from fine to coarse (its coarsest
    level has fewer segments than its finest); a soft map lies in [0, 1] and marks some pixels."""
    module = baselines.get(name)
    if module.KIND == "labels":  # learnt: fitted twice on the photograph's two halves of brightness
        truth = (photo.mean(axis=2) > np.median(photo.mean(axis=2))).astype(np.int64)
        truth[:4] = 2  # no class: left out of the fit
        (first, sure), (again, _) = (module.train([(photo, truth)], 2)(photo) for _ in range(2))
        assert np.array_equal(first, again) and set(np.unique(first)) <= {0, 1}
        assert (first == truth)[4:].mean() > 0.9  # it learns what it is shown
        assert sure.shape == first.shape and sure.min() >= 0.5 and sure.max() <= 1  # two classes: the winner's share
        return
    first, again = baselines.predictions(module, photo), baselines.predictions(module, photo)
    assert np.array_equal(first, again)
    if module.KIND == "segmentation":
        counts = [len(np.unique(level)) for level in first]
        assert counts[-1] < counts[0] and counts[-1] >= 1, counts
    else:
        assert 0 < first.max() <= 1 and first.min() >= 0


def test_a_module_that_breaks_the_contract_is_named() -> None:
    """A module without its docstring line, kind, sweep or ``predict(image)``: each lack named."""
    broken = types.ModuleType("regionbench.baselines.broken", "``other``: a summary")
    broken.KIND = "pixels"  # type: ignore[attr-defined]
    broken.predict = lambda image, scale: image  # type: ignore[attr-defined]
    problems = baselines.contract_problems(broken)
    assert any("``broken``" in p for p in problems)
    assert any("KIND" in p for p in problems) and any("SWEEP" in p for p in problems)
    broken.KIND = "edges"  # type: ignore[attr-defined]
    assert any("predict(image)" in p for p in baselines.contract_problems(broken))
    assert baselines.contract_problems(baselines.get("canny")) == []
    learnt = types.ModuleType("regionbench.baselines.learnt", "``learnt``: a summary")
    learnt.KIND, learnt.SWEEP = "labels", (1,)  # type: ignore[attr-defined]
    learnt.predict = lambda image: image  # type: ignore[attr-defined]
    assert baselines.contract_problems(learnt) == ["train(examples, classes) missing"]
    with pytest.raises(baselines.BaselineError, match="use canny, felzenszwalb"):
        baselines.get("nothing")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), shape=st.sampled_from([(48, 68), (96, 36), (61, 57)]))
def test_quick_shift_s_sweep_is_each_distance_s_own_run(seed: int, shape: tuple[int, int]) -> None:
    """The tree grown once and cut at each distance gives, at every level, the partition of
    scikit-image's ``quickshift`` of the reduced image run at that distance alone, each pixel in
    its reduced pixel's segment."""
    from skimage.segmentation import quickshift

    module = baselines.get("quickshift")
    rng = np.random.default_rng(seed)
    image = (rng.random((*shape, 3)) * 255).astype(np.uint8)
    image[: shape[0] // 2] //= 3  # two halves, so that modes gather
    levels = module.predict(image)
    small = module.reduced(image)
    assert small.shape[:2] == tuple(round(n / module.FACTOR) for n in shape)
    for level, d in zip(levels, module.SWEEP, strict=True):
        alone = quickshift(small, ratio=0.5, kernel_size=module.KERNEL, max_dist=d, rng=0, convert2lab=True)
        alone = module.expanded(alone, image.shape)
        pairs = set(zip(level.ravel().tolist(), alone.ravel().tolist(), strict=True))
        assert len(pairs) == len(np.unique(level)) == len(np.unique(alone))


def test_a_reduced_map_expands_to_blocks_of_its_pixels() -> None:
    """Each reduced pixel covers a block of about ``FACTOR`` x ``FACTOR`` pixels of the image,
    the blocks in order, none left out."""
    module = baselines.get("quickshift")
    labels = np.arange(4 * 6).reshape(4, 6)
    full = module.expanded(labels, (15, 23, 3))
    assert full.shape == (15, 23) and np.array_equal(np.unique(full), labels.ravel())
    assert (np.diff(full, axis=0) >= 0).all() and (np.diff(full, axis=1) >= 0).all()
    assert full[0, 0] == 0 and full[-1, -1] == labels[-1, -1]


def test_auto_chooses_the_methods_of_the_release_s_kind() -> None:
    """auto: the segmenters and edges for humans' segmentations, the learnt labels for label maps,
    none for labelled regions; a list is taken as given, an unknown name refused."""
    kinds = {name: baselines.get(name).KIND for name in baselines.registry()}
    segmenting = baselines.chosen("auto", "segmentation")
    assert segmenting and {kinds[n] for n in segmenting} == {"segmentation", "edges"}
    assert {kinds[n] for n in baselines.chosen("auto", "labels")} == {"labels"}
    assert baselines.chosen("auto", None) == []
    assert baselines.chosen(["slic", "canny"], None) == ["slic", "canny"]
    with pytest.raises(baselines.BaselineError, match="baseline 'sobel': use canny"):
        baselines.chosen(["sobel"], "segmentation")


def test_the_card_s_table_puts_the_humans_first_and_leaves_unscored_figures_blank(tmp_path) -> None:
    """Rows from each method's reports: its figures by task, the humans' ceiling in a row of its
    own (one figure for ODS and OIS), blank where a method was not scored by a task."""
    import json

    from regionbench.release.card import baseline_table

    def report(folder: str, task: str, measures: dict, ceiling: dict | None) -> None:
        path = tmp_path / "baselines" / folder / f"{task}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"measures": measures, "human_ceiling": ceiling}))

    report("canny", "boundaries", {"ods": {"f": 0.61}, "ois": {"f": 0.63}, "ap": 0.58}, {"f": 0.8})
    segments = {
        "covering": {"ods": 0.52, "ois": 0.57},
        "pri": {"ods": 0.8, "ois": 0.82},
        "vi": {"ods": 2.21, "ois": 1.87},
    }
    report("felzenszwalb", "segments", segments, {"covering": 0.72, "pri": 0.88, "vi": 1.17})
    header, rows = baseline_table(tmp_path / "baselines")
    assert header[0] == "method" and header.index("covering ODS") < header.index("boundary F ODS")
    by = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert [row[0] for row in rows] == ["Human", "canny", "felzenszwalb"]
    assert by["Human"]["boundary F ODS"] == by["Human"]["boundary F OIS"] == 0.8 and by["Human"]["boundary AP"] == ""
    assert by["Human"]["VI OIS"] == 1.17 and by["canny"]["covering ODS"] == "" and by["felzenszwalb"]["VI ODS"] == 2.21
    assert baseline_table(tmp_path / "none") == ([], [])


def test_a_class_is_written_as_the_first_value_the_benchmark_reads_as_it() -> None:
    """A learnt map's class k is written as the smallest pixel value the benchmark maps to k
    (a value counted wrong, mapped past the classes, is never written)."""
    from types import SimpleNamespace

    coding = SimpleNamespace(classes=3, values={7: 0, 2: 0, 5: 1, 9: 2, 4: 3, 255: 3})
    assert _learnt.class_values(coding).tolist() == [2, 5, 9]


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    shape=st.sampled_from([(9, 13), (24, 31), (40, 17)]),
    flat=st.booleans(),
)
def test_felzenszwalb_s_sweep_is_scikit_image_s_at_each_scale(seed: int, shape: tuple[int, int], flat: bool) -> None:
    """The graph sorted once and merged at each scale gives, pixel for pixel, scikit-image's
    ``felzenszwalb`` run at that scale alone (ties among costs included: a flat image's are many)."""
    from skimage.segmentation import felzenszwalb

    rng = np.random.default_rng(seed)
    image = (rng.integers(0, 4, (*shape, 3)) * 60 if flat else rng.random((*shape, 3)) * 255).astype(np.uint8)
    image[: shape[0] // 2] //= 3  # two halves, so that segments gather
    module = baselines.get("felzenszwalb")
    for level, k in zip(module.predict(image), module.SWEEP, strict=True):
        assert np.array_equal(level, felzenszwalb(image, scale=k, sigma=0.8, min_size=module.MIN_SIZE))
    for k in (1.0, 10.0):  # scales small enough that the merge of small segments does the work
        edges, costs = module.graph(image)
        ours = module._labels(module._merged(edges, costs, k / 255.0, 20, shape[0] * shape[1]), *shape)
        assert np.array_equal(ours, felzenszwalb(image, scale=k, sigma=0.8, min_size=20))
