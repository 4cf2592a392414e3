"""The BSDS500 region benchmark against its own test data (``tests/data/bsds500-bench``, the
``bench/data`` folder of the BIDS/BSDS500 repository): every figure its code printed comes back
to the printed digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.scoring.measures import bsds_regions as segments

DATA = Path(__file__).parent / "data" / "bsds500-bench"
IDS = sorted(p.stem for p in (DATA / "groundTruth").glob("*.mat"))


def humans(image: str) -> list[np.ndarray]:
    cell = scipy.io.loadmat(DATA / "groundTruth" / f"{image}.mat")["groundTruth"]
    return [cell[0, k]["Segmentation"][0, 0] for k in range(cell.shape[1])]


def scored(test: str) -> segments.Benchmark:
    """The benchmark of ``test_1`` (the ucm2 at 5 thresholds) or ``test_4``/``test_5`` (segs)."""
    images = []
    if test == "test_1":
        levels = segments.thresholds(5)
        for image in IDS:
            ucm2 = scipy.io.loadmat(DATA / "ucm2" / f"{image}.mat")["ucm2"]
            images.append(segments.score_image([segments.cut_ucm(ucm2, t) for t in levels], humans(image)))
        return segments.collect(levels, images)
    for image in IDS:
        cell = scipy.io.loadmat(DATA / "segs" / f"{image}.mat")["segs"]
        images.append(segments.score_image([cell[0, k] for k in range(cell.shape[1])], humans(image)))
    return segments.collect(list(range(1, 6)), images)


def rows(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def g(value: float) -> str:
    return f"{value:g}"


@pytest.mark.parametrize("test", ["test_1", "test_4", "test_5"])
def test_the_published_outputs_come_back_to_their_printed_digits(test: str) -> None:
    found, folder = scored(test), DATA / test
    c, ri, vi = found.covering, found.pri, found.vi
    assert rows(folder / "eval_cover.txt") == [[g(c["ods_threshold"]), g(c["ods"]), g(c["ois"]), g(c["best"])]]
    assert rows(folder / "eval_RI_VOI.txt") == [
        [g(ri["ods_threshold"]), g(ri["ods"]), g(ri["ois"]), g(vi["ods_threshold"]), g(vi["ods"]), g(vi["ois"])]
    ]
    per = found.per_threshold
    assert rows(folder / "eval_cover_th.txt") == [
        [g(t), g(x)] for t, x in zip(found.thresholds, per["covering"], strict=True)
    ]
    assert rows(folder / "eval_RI_VOI_thr.txt") == [
        [g(t), g(a), g(b)] for t, a, b in zip(found.thresholds, per["pri"], per["vi"], strict=True)
    ]
    assert rows(folder / "eval_cover_img.txt") == [
        [g(i["image"]), g(i["threshold"]), g(i["covering"]), g(i["precision"])] for i in found.per_image
    ]


def test_exact_figures_differ_from_the_printed_only_past_their_digits() -> None:
    """The published code rounds each image's figures to six digits on the way; the exact
    collection is within that rounding."""
    images = []
    for image in IDS:
        cell = scipy.io.loadmat(DATA / "segs" / f"{image}.mat")["segs"]
        images.append(segments.score_image([cell[0, k] for k in range(cell.shape[1])], humans(image)))
    exact, printed = segments.collect(range(1, 6), images, as_published=False), segments.collect(range(1, 6), images)
    for part in ("covering", "pri", "vi"):
        for key, value in getattr(exact, part).items():
            assert value == pytest.approx(getattr(printed, part)[key], rel=5e-6), (part, key)


def test_bsds_inputs_are_read_and_bad_ones_named(tmp_path: Path) -> None:
    """A folder of BSDS ``.mat`` files scores as the benchmark does; a ucm2 without
    ``--thresholds``, an unreadable file and a segs entry of another size are one line each."""
    import shutil

    import pandas as pd

    from regionbench.scoring.tasks import TaskError
    from regionbench.scoring.tasks.segments import read_segmentations

    shape = humans(IDS[0])[0].shape
    images = pd.DataFrame(
        {
            "image_id": [int(i) for i in IDS],
            "path": [f"images/{i}.jpg" for i in IDS],
            "height": shape[0],
            "width": shape[1],
        }
    )
    for kind in ("segs", "ucm2"):
        shutil.copytree(DATA / kind, tmp_path / kind)
    levels, found = read_segmentations(tmp_path / "segs", images.iloc[:1], None)
    assert levels == [1.0, 2.0, 3.0, 4.0, 5.0] and len(found[int(IDS[0])]) == 5
    with pytest.raises(TaskError, match="a ucm2 needs --thresholds N"):
        read_segmentations(tmp_path / "ucm2", images.iloc[:1], None)
    levels, found = read_segmentations(tmp_path / "ucm2", images.iloc[:1], 5)
    assert levels == pytest.approx(list(segments.thresholds(5)))
    (tmp_path / "segs" / f"{IDS[0]}.mat").write_bytes(b"MATLAB 5.0 garbage")
    with pytest.raises(TaskError, match="unreadable MAT file"):
        read_segmentations(tmp_path / "segs", images.iloc[:1], None)
    wrong = images.iloc[1:2].assign(height=shape[0] + 1)
    with pytest.raises(TaskError, match="differs from the image's size"):
        read_segmentations(tmp_path / "segs", wrong, None)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_partition_scores_the_same_whatever_its_first_label(data: st.DataObject) -> None:
    """A segmentation's labels name segments: the same partition numbered from 0, from 1 or from
    any other start gives the same figures, covering included. BSDS's own reading (label 0 is
    no region for covering) is kept on request and differs where a segment is labelled 0."""
    height, width = data.draw(st.integers(2, 12)), data.draw(st.integers(2, 12))
    cells = st.lists(st.integers(0, 4), min_size=height * width, max_size=height * width)
    machine = [np.array(data.draw(cells)).reshape(height, width) for _ in range(data.draw(st.integers(1, 3)))]
    humans = [np.array(data.draw(cells)).reshape(height, width) + 1 for _ in range(data.draw(st.integers(1, 3)))]
    start = data.draw(st.integers(-3, 5))

    def figures(maps: list[np.ndarray], zero: bool = False) -> list[float]:
        found = segments.score_image(maps, humans, zero)
        return [*found.cnt_r, *found.cnt_p, *found.sum_p, *found.ri, *found.vi, found.cnt_r_best]

    def renumbered(first: int) -> list[np.ndarray]:
        return [np.unique(m, return_inverse=True)[1].reshape(m.shape) + first for m in machine]

    one_based = figures(renumbered(1))
    assert figures(renumbered(0)) == pytest.approx(one_based, abs=1e-12)
    assert figures(renumbered(start)) == pytest.approx(one_based, abs=1e-12)
    assert figures(renumbered(1), zero=True) == pytest.approx(one_based, abs=1e-12)  # no 0: BSDS's rule agrees
    # BSDS's reading drops the segment labelled 0 from covering: no human region is covered better
    bsds, named = segments.score_image(renumbered(0), humans, True), segments.score_image(renumbered(0), humans)
    assert np.all(bsds.cnt_r <= named.cnt_r + 1e-9) and bsds.ri.tolist() == named.ri.tolist()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), images=st.integers(1, 12), levels=st.integers(1, 6))
def test_each_resample_is_the_region_benchmark_of_its_drawn_images(seed: int, images: int, levels: int) -> None:
    """The segments task's bootstrap: on every resample (images drawn as ``rng.integers(0, n,
    size=n)``), its covering, PRI and VI (ODS, OIS) are ``collect`` of the drawn images' scores,
    each drawn image counted as often as drawn."""
    from regionbench.scoring.measures import bootstrap
    from regionbench.scoring.tasks import segments as task

    rng = np.random.default_rng(seed)
    scored = []
    for _ in range(images):
        sum_r = np.full(levels, float(rng.integers(100, 5000)))
        cnt_r = np.round(sum_r * rng.uniform(0, 1, levels), 3)
        ri, vi = rng.uniform(0.5, 1, levels), rng.uniform(0.5, 3, levels)
        scored.append(segments.ImageScores(cnt_r, sum_r, cnt_r * 1.1, sum_r * 1.2, ri, vi, float(cnt_r.max() * 1.05)))
    thresholds = list(np.linspace(0.1, 0.9, levels))
    stacked = np.stack([task.image_sums(s) for s in scored])
    found = bootstrap.additive(stacked, lambda sums: task.benchmark_figures(sums, levels), 15, 2)
    for b, drawn in enumerate(bootstrap.draws(images, 15, 2)):
        expected = segments.collect(thresholds, [scored[j] for j in drawn])
        for name in ("covering", "pri", "vi"):
            for kind in ("ods", "ois"):
                value = getattr(expected, name)[kind]
                assert found[f"{name}.{kind}"][b] == pytest.approx(value, rel=1e-12, abs=1e-12), (name, kind, b)
