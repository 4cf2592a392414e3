"""Agreement measures against independent computations and on synthetic disagreement."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path

import krippendorff
import numpy as np
import pyarrow as pa
import pytest
from conftest import WHOLE, one_category_tree
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import agreement
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.vocabulary import DEFAULT_DIR, Registry, derive
from regionbench.synthetic.coco import write_collection
from regionbench.synthetic.plans import load_hierarchy

HIERARCHY = load_hierarchy()
CODES = Registry.read(DEFAULT_DIR / "label_ids.tsv").ids()


def brute_force(iou: np.ndarray) -> float:
    """The largest total IoU of any one-to-one assignment, by trying them all."""
    n, m = iou.shape
    best = 0.0
    for rows in itertools.permutations(range(n), min(n, m)):
        for cols in itertools.permutations(range(m), min(n, m)):
            best = max(best, sum(iou[r, c] for r, c in zip(rows, cols, strict=True)))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_matching_maximises_the_total_iou(n: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = [rng.random((6, 6)) < 0.4 for _ in range(n)]
    b = [rng.random((6, 6)) < 0.4 for _ in range(m)]
    pairs = agreement.match(a, b, min_iou=0.0)
    assert len({i for i, _, _ in pairs}) == len(pairs) == len({j for _, j, _ in pairs})
    assert sum(iou for _, _, iou in pairs) == pytest.approx(brute_force(agreement.iou_matrix(a, b)))


def test_pixel_kappa_is_cohens_kappa() -> None:
    rng = np.random.default_rng(1)
    masks = [rng.random((20, 30)) < p for p in (0.5, 0.3, 0.2)]
    a = [("sky", masks[0]), ("man", masks[1])]
    b = [("sky", masks[0]), ("woman", masks[2])]
    row = agreement.pair_agreement(a, b, HIERARCHY, CODES)
    expected = cohen_kappa_score(
        agreement.label_map(a, CODES, (20, 30)).ravel(), agreement.label_map(b, CODES, (20, 30)).ravel()
    )
    assert row["pixel_kappa"] == pytest.approx(expected)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 6), st.integers(1, 200))
def test_cohen_kappa_is_scikit_learns(seed: int, ka: int, kb: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, ka, n) * 7  # sparse codes, as label ids are
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, kb, n) * 7)
    ours = agreement.cohen_kappa(a, b)
    if np.array_equal(a, b):
        assert ours == 1.0
    else:
        assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_pair_measures_on_a_hand_worked_case() -> None:
    square = np.zeros((10, 10), dtype=bool)
    square[:5, :5] = True  # 25 px
    shifted = np.zeros((10, 10), dtype=bool)
    shifted[:5, 1:6] = True  # 25 px, 20 shared: IoU 20/30
    far = np.zeros((10, 10), dtype=bool)
    far[8:, 8:] = True
    a = [("tree", square), ("sky", far)]
    b = [("trees", shifted)]
    row = agreement.pair_agreement(a, b, HIERARCHY, CODES)
    assert (row["matched"], row["unmatched_a"], row["unmatched_b"]) == (1, 1, 0)
    assert row["mean_iou"] == pytest.approx(2 / 3) and row["mean_dice"] == pytest.approx(0.8)
    assert row["exact_label"] == 0.0 and row["hierarchical_label"] == 1.0  # tree lies under trees


def test_fleiss_kappa_of_the_textbook_case() -> None:
    """Fleiss (1971) as worked in the literature: 10 subjects, 14 raters, 5 categories, kappa 0.210."""
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]  # fmt: skip
    units = np.array([[c for c, n in enumerate(row) for _ in range(n)] for row in table]).T  # raters x subjects
    assert agreement.collection_agreement(units)["fleiss_kappa"] == pytest.approx(0.210, abs=5e-4)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 6), st.integers(1, 40), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_fleiss_kappa_is_statsmodels_with_equal_raters(raters: int, n_units: int, values: int, seed: int) -> None:
    units = np.random.default_rng(seed).integers(0, values, size=(raters, n_units))
    counts = agreement.value_counts(agreement.Ratings.from_matrix(units))
    if counts.shape[1] < 2:
        return
    reference = statsmodels_fleiss_kappa(counts.dense(), method="fleiss")
    assert agreement.fleiss_kappa(counts) == pytest.approx(reference, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 6), st.integers(2, 40), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_units_of_annotators_who_did_not_cover_them_are_missing(
    raters: int, n_units: int, values: int, seed: int
) -> None:
    """An absent annotator is no rater: alpha equals the reference with the absences as missing
    values, and Fleiss' kappa drops them from the unit's raters (a unit of two or more)."""
    rng = np.random.default_rng(seed)
    units = rng.integers(0, values, size=(raters, n_units))
    units[rng.random(units.shape) < 0.4] = agreement.NOT_COVERED
    rated = (units != agreement.NOT_COVERED).sum(axis=0) >= 2
    kept = units[:, rated]
    if kept.shape[1] == 0 or len(np.unique(kept[kept != agreement.NOT_COVERED])) < 2:
        return
    figures = agreement.collection_agreement(units)
    missing = np.where(kept == agreement.NOT_COVERED, np.nan, kept.astype(float))
    expected = krippendorff.alpha(reliability_data=missing, level_of_measurement="nominal")
    assert figures["units"] == kept.shape[1]
    assert figures["krippendorff_alpha"] == pytest.approx(expected, abs=1e-9)
    counts = agreement.value_counts(agreement.Ratings.from_matrix(kept)).dense()
    n = counts.sum(axis=1)
    p_i = ((counts * (counts - 1)).sum(axis=1) / (n * (n - 1))).mean()
    p_e = ((counts.sum(axis=0) / n.sum()) ** 2).sum()
    assert figures["fleiss_kappa"] == pytest.approx((p_i - p_e) / (1 - p_e), abs=1e-9)


def _dense_figures(units: np.ndarray) -> tuple[float, float]:
    """Fleiss' kappa and Krippendorff's alpha by the textbook matrix formulas over the dense
    units x values counts (floats summed in numpy's and BLAS's order)."""
    present = units != agreement.NOT_COVERED
    codes = np.unique(units[present])
    counts = np.stack([(units == c).sum(axis=0) for c in codes], axis=1).astype(np.float64)
    n = counts.sum(axis=1)
    shares = counts.sum(axis=0) / n.sum()
    p_e = float((shares**2).sum())
    kappa = float(((counts * (counts - 1)).sum(axis=1) / (n * (n - 1))).mean() - p_e) / (1 - p_e)
    weighted = counts * (1.0 / (n - 1))[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=0)
    alpha = 1.0 - (n_c.sum() - 1) * (o.sum() - np.trace(o)) / (n_c.sum() ** 2 - (n_c**2).sum())
    return kappa, float(alpha)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 7), st.integers(1, 60), st.integers(2, 9), st.floats(0, 0.6), st.integers(0, 2**32 - 1))
def test_the_sparse_counts_give_the_dense_matrix_s_figures(
    raters: int, n_units: int, values: int, absent: float, seed: int
) -> None:
    """Counts held per unit give the figures of the dense matrix: the same bits up to three
    raters (each unit's weight 1/(m - 1) is then 1 or 1/2, exact, so every order sums the same),
    and within rounding beyond; and the entries are exactly the matrix's."""
    rng = np.random.default_rng(seed)
    units = rng.integers(0, values, size=(raters, n_units)) * 7 - 3  # codes need not be dense
    units[rng.random(units.shape) < absent] = agreement.NOT_COVERED
    units = units[:, (units != agreement.NOT_COVERED).sum(axis=0) >= 2]
    counts = agreement.value_counts(agreement.Ratings.from_matrix(units))
    codes = np.unique(units[units != agreement.NOT_COVERED])
    assert counts.shape == (units.shape[1], len(codes))
    expected = np.array([[(column == c).sum() for c in codes] for column in units.T]).reshape(counts.shape)
    assert np.array_equal(counts.dense(), expected)
    if counts.shape[1] < 2:
        return
    kappa, alpha = _dense_figures(units)
    ours = agreement.fleiss_kappa(counts), agreement.krippendorff_alpha_nominal(counts)
    if raters <= 3:
        assert ours == (kappa, alpha)
    else:
        assert ours == pytest.approx((kappa, alpha), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 5), st.integers(1, 40), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_alpha_is_the_reference_implementation(raters: int, n_units: int, values: int, seed: int) -> None:
    units = np.random.default_rng(seed).integers(0, values, size=(raters, n_units))
    if (units == units[0]).all() or len(np.unique(units)) < 2:
        return
    expected = krippendorff.alpha(reliability_data=units, level_of_measurement="nominal")
    ours = agreement.krippendorff_alpha_nominal(agreement.value_counts(agreement.Ratings.from_matrix(units)))
    assert ours == pytest.approx(expected, abs=1e-9)


def test_identical_annotators_agree_perfectly() -> None:
    rng = np.random.default_rng(2)
    regions = [("sky", rng.random((12, 12)) < 0.5), ("man", rng.random((12, 12)) < 0.2)]
    row = agreement.pair_agreement(regions, regions, HIERARCHY, CODES)
    assert row == {
        "matched": 2, "unmatched_a": 0, "unmatched_b": 0, "mean_iou": 1.0, "mean_dice": 1.0,
        "exact_label": 1.0, "hierarchical_label": 1.0, "pixel_kappa": 1.0,
        "rand_index": 1.0, "vi_bits": 0.0, "covering_of_a": 1.0, "covering_of_b": 1.0,
    }  # fmt: skip
    maps = np.stack([agreement.label_map(regions, CODES, (12, 12)).ravel()] * 3)
    summary = agreement.collection_agreement(maps)
    assert summary["fleiss_kappa"] == summary["krippendorff_alpha"] == 1.0


def _measures(root: Path) -> dict[str, float]:
    shard = ingest_shard(root, "00", CODES, settings=IngestSettings(shard_size=WHOLE))
    rows, units, _ = agreement.shard_agreement(shard.images, shard.regions, shard.coverage, HIERARCHY, CODES)
    per_pair = {
        k: float(np.mean(rows.column(k).to_numpy()))
        for k in ("mean_iou", "exact_label", "pixel_kappa", "rand_index", "covering_of_a")
    } | {"minus_vi": -float(np.mean(rows.column("vi_bits").to_numpy()))}
    matched = rows.column("matched").to_numpy().sum()
    unmatched = rows.column("unmatched_a").to_numpy().sum() + rows.column("unmatched_b").to_numpy().sum()
    return {**per_pair, "matched_share": matched / (matched + unmatched / 2), **{
        k: v for k, v in agreement.collection_agreement(units).items() if k in ("fleiss_kappa", "krippendorff_alpha")
    }}  # fmt: skip


def test_every_figure_falls_as_disagreement_grows(tmp_path: Path) -> None:
    levels = (0.0, 0.25, 0.5, 0.9)
    figures = []
    for d in levels:
        root = tmp_path / f"d{d}"
        for _ in write_collection(root, "tiny", annotators=3, disagreement=d, workers=1):
            pass
        figures.append(_measures(root))
    assert all(v == (0.0 if k == "minus_vi" else 1.0) for k, v in figures[0].items()), figures[0]
    for name in figures[0]:
        values = [f[name] for f in figures]
        assert all(x > y for x, y in itertools.pairwise(values)), (name, values)


def brute_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.ravel(), b.ravel()
    pairs = [(i, j) for i in range(len(x)) for j in range(i + 1, len(x))]
    return sum((x[i] == x[j]) == (y[i] == y[j]) for i, j in pairs) / len(pairs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 5))
def test_label_free_measures_against_independent_computations(seed: int, ka: int, kb: int) -> None:
    from skimage.metrics import variation_of_information

    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, ka, size=(5, 6)), rng.integers(0, kb, size=(5, 6))
    assert agreement.rand_index(a, b) == pytest.approx(brute_rand_index(a, b))
    assert agreement.variation_of_information(a, b) == pytest.approx(sum(variation_of_information(a, b)), abs=1e-9)
    c = rng.integers(0, 3, size=(5, 6))
    assert agreement.probabilistic_rand_index(a, [b, c]) == pytest.approx(
        (brute_rand_index(a, b) + brute_rand_index(a, c)) / 2
    )


def test_covering_hand_worked() -> None:
    reference = np.array([[1, 1, 2, 2]] * 2)  # two segments of 4 pixels
    segmentation = np.array([[1, 1, 1, 2]] * 2)  # 6 and 2 pixels
    # Segment 1 of the reference: best IoU 4/6 with S1; segment 2: best IoU max(2/8, 2/4) = 1/2.
    assert agreement.covering(segmentation, reference) == pytest.approx((4 * 4 / 6 + 4 * 0.5) / 8)
    regions = [("sky", reference == 1), ("grass", reference == 2)]
    row = agreement.pair_agreement(regions, regions, HIERARCHY, CODES)
    assert (row["rand_index"], row["vi_bits"], row["covering_of_a"], row["covering_of_b"]) == (1.0, 0.0, 1.0, 1.0)


def test_specific_agreement_per_label_hand_worked() -> None:
    left, right = np.zeros((6, 6), dtype=bool), np.zeros((6, 6), dtype=bool)
    left[:, :3], right[:, 3:] = True, True
    a = [("sky", left), ("man", right)]
    b = [("sky", left), ("woman", right), ("car", np.eye(6, dtype=bool))]
    pairs = agreement.match([m for _, m in a], [m for _, m in b])
    tally = agreement.label_tally(a, b, pairs)
    assert dict(tally) == {
        ("sky", "regions"): 2, ("sky", "agreed"): 2, ("man", "regions"): 1, ("woman", "regions"): 1,
        ("car", "regions"): 1,
    }  # fmt: skip


def test_summary_of_a_collection_without_labels(tmp_path: Path) -> None:
    """Every segment under one category, as in the Berkeley benchmarks: the label measures are
    trivial, the label-free ones carry the agreement and rank the worst images."""
    root = one_category_tree(tmp_path / "coco", disagreement=0.4)
    derive("coco", root, tmp_path / "vocabulary")  # the collection's own one-label vocabulary
    codes = Registry.read(tmp_path / "vocabulary/label_ids.tsv").ids()
    tree = Hierarchy.from_yaml(tmp_path / "vocabulary/hierarchy.yaml")
    shard = ingest_shard(root, "00", codes, hierarchy=tree, settings=IngestSettings(shard_size=WHOLE))
    rows, ratings, labels = agreement.shard_agreement(shard.images, shard.regions, shard.coverage, tree, codes)
    report = agreement.summary([rows], [ratings.table()], [labels])
    names = list(ratings.names)
    assert report["labelled"] is False and report["exact_label"] == 1.0
    assert [r["label"] for r in report["per_label"]] == ["segment"] and names == sorted(shard.report["annotators"])[:3]
    free = report["label_free"]
    assert 0 < free["pri"] < 1 and free["vi_bits"] > 0 and 0 < free["covering"] < 1
    assert sorted(free["per_annotator"]) == names
    per_image = {}
    for r in rows.to_pylist():
        per_image.setdefault(r["image_id"], []).append(r["rand_index"])
    worst = sorted((float(np.mean(v)), i) for i, v in per_image.items())[: agreement.WORST_IMAGES]
    assert [(r["rand_index"], r["image_id"]) for r in report["worst_images"]] == worst
    # PRI of one annotator is its mean Rand index against the others, image by image.
    mine = [r["rand_index"] for r in rows.to_pylist() if names[0] in (r["annotator_a"], r["annotator_b"])]
    assert free["per_annotator"][names[0]]["pri"] == pytest.approx(np.mean(mine))


def test_one_annotator_decodes_nothing_and_reports_as_before(demo_ingest: Path, monkeypatch) -> None:
    from regionbench.core import geometry, tables

    images = tables.read_parquet(demo_ingest / "00" / "images.parquet")
    regions = tables.read_parquet(demo_ingest / "00" / "regions.parquet")
    coverage = tables.read_parquet(demo_ingest / "00" / "coverage.parquet")
    monkeypatch.setattr(geometry, "decode_rle", lambda *a: pytest.fail("decoded a mask with one annotator"))
    codes = Registry.read(DEFAULT_DIR / "label_ids.tsv").ids()
    rows, ratings, labels = agreement.shard_agreement(images, regions, coverage, load_hierarchy(), codes)
    assert (rows.num_rows, ratings.size, ratings.names, labels.num_rows) == (0, 0, ("saiapr",), 0)
    report = agreement.summary([rows], [ratings.table()], [labels], coverage=[coverage])
    report.pop("coverage")
    assert report == {
        "annotators": ["saiapr"], "image_pairs": 0, "min_iou": 0.5, "note": "fewer than two annotators: nothing to compare"
    }  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["solo", "consensus"])), unique=True, max_size=8),
        min_size=1,
        max_size=4,
    )
)
def test_one_annotator_s_summary_from_coverage_is_the_agreement_jobs(shards: list) -> None:
    """A collection with one annotator (its consensus aside), any shards, any of them covering
    nothing: the summary from the coverage alone, as when no agreement job runs, is the summary
    of what each shard's agreement job would have written."""
    from regionbench.core import tables

    coverage = [
        pa.Table.from_pylist([{"image_id": i, "annotator": a} for i, a in s], schema=tables.COVERAGE) for s in shards
    ]
    jobs = []
    for table in coverage:
        images = pa.table({"image_id": pa.array(sorted(set(table["image_id"].to_pylist())), pa.int64())})
        images = images.append_column("height", pa.array([4] * images.num_rows, pa.int64()))
        images = images.append_column("width", pa.array([4] * images.num_rows, pa.int64()))
        jobs.append(agreement.shard_agreement(images, tables.REGIONS.empty_table(), table, load_hierarchy(), {}))
    expected = agreement.summary(
        [rows for rows, *_ in jobs],
        [ratings.table() for _, ratings, _ in jobs],
        [labels for *_, labels in jobs],
        coverage=coverage,
    )
    assert agreement.summary([], [], coverage=coverage) == expected


@settings(max_examples=60, deadline=None)
@given(
    shards=st.lists(
        st.tuples(st.integers(0, 40), st.sets(st.sampled_from("abc"), min_size=1), st.integers(0, 2**32 - 1)),
        min_size=1,
        max_size=6,
    ),
    max_units=st.integers(1, 50),
)
def test_the_summary_samples_shard_by_shard_as_the_whole_collection(shards, max_units) -> None:
    """Taken one shard at a time, the collection's units, their stride and both statistics equal
    those of every shard's sample stacked into one matrix, whatever the shards' sizes, the
    annotators each shard lacks and the cap on units."""
    names = sorted({a for _, present, _ in shards for a in present})
    parts, whole = [], []
    for size, present, seed in shards:
        rng = np.random.default_rng(seed)
        codes = rng.integers(agreement.NOT_COVERED, 3, (len(present), size)).astype(np.int32)
        parts.append(agreement.Ratings.from_matrix(codes, sorted(present)).table())
        rows = {a: codes[k] for k, a in enumerate(sorted(present))}
        whole.append(np.stack([rows.get(a, np.full(size, agreement.NOT_COVERED, np.int32)) for a in names]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agreement, "MAX_UNITS", max_units)
        expected = agreement.collection_agreement(np.concatenate(whole, axis=1))
        units, step = agreement.sampled_units(parts)
        assert agreement.measure_units(units, step) == expected


@settings(max_examples=10, deadline=None)
@given(st.integers(8, 16), st.integers(50_000, 100_000), st.integers(1, 400), st.integers(0, 2**32 - 1))
def test_the_sample_holds_about_one_shard_whatever_the_shards(shards: int, per_shard: int, cap: int, seed: int) -> None:
    """The summary's pass over the shards' pixel samples keeps, from each shard, only its share of
    the sample (not a view that holds the shard): the memory it allocates is a few shards' worth
    and the sample's, however many shards there are (numpy's allocations, as tracemalloc counts:
    about five shards' worth, against four plus one per shard when each kept its rated units)."""
    names = ["a", "b", "c"]

    class Shards(list):  # read when used, as tables.ParquetParts: nothing held between reads
        def __getitem__(self, index: int) -> pa.Table:
            local = np.random.default_rng([seed, index])
            return agreement.Ratings.from_matrix(local.integers(0, 5, (3, per_shard)).astype(np.int32), names).table()

        def __iter__(self):
            return (self[k] for k in range(len(self)))

    pixels = Shards(range(shards))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agreement, "MAX_UNITS", cap)
        agreement.sampled_units([pixels[0]])  # the first call's one-off allocations are not the pass's
        tracemalloc.start()
        units, step = agreement.sampled_units(pixels)
        found = list(units.names)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    one_shard = 3 * per_shard * 16  # an entry: its unit (8 bytes), annotator and code (4 each)
    sample = units.unit.nbytes + units.annotator.nbytes + units.code.nbytes
    assert found == names and units.size <= cap and step == -(-shards * per_shard // cap)
    assert peak < 7 * one_shard + sample, (peak / one_shard, shards)


@settings(max_examples=40, deadline=None)
@given(
    images=st.integers(1, 8),
    crowd=st.integers(2, 400),
    per_image=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_crowd_s_sample_follows_the_coverage_not_the_annotators(
    images: int, crowd: int, per_image: int, seed: int
) -> None:
    """Hundreds of annotators, each covering a few images: a shard's sampled pixels hold one
    entry per grid pixel and annotator who covered its image, never the crowd x the pixels, and
    give the figures of the annotators x units matrix with every absence written out."""
    from regionbench.core import geometry, tables

    rng = np.random.default_rng(seed)
    names = [f"crowd-{k:03d}" for k in range(crowd)]
    h, w = 9, 13
    sizes, coverage, regions = [], [], []
    present_of = {}
    for image_id in range(1, images + 1):
        present = sorted(rng.choice(names, size=min(per_image, crowd), replace=False).tolist())
        present_of[image_id] = present
        sizes.append({"image_id": image_id, "height": h, "width": w})
        for annotator in present:
            coverage.append({"image_id": image_id, "annotator": annotator})
            for _ in range(rng.integers(0, 3)):
                mask = np.zeros((h, w), dtype=bool)
                y, x = rng.integers(0, h - 1), rng.integers(0, w - 1)
                mask[y : y + rng.integers(1, h), x : x + rng.integers(1, w)] = True
                label = ["sky", "man", "grass"][rng.integers(3)]
                regions.append(
                    {"image_id": image_id, "annotator": annotator, "label": label, "mask": geometry.rle(mask)}
                )
    regions_table = pa.Table.from_pylist(
        regions,
        schema=pa.schema(
            [(f.name, f.type) for f in tables.REGIONS if f.name in ("image_id", "annotator", "label", "mask")]
        ),
    )
    _, ratings, _ = agreement.shard_agreement(
        pa.Table.from_pylist(sizes),
        regions_table,
        pa.Table.from_pylist(coverage, schema=tables.COVERAGE),
        HIERARCHY,
        CODES,
    )
    grid = len(range(0, h, agreement.PIXEL_STRIDE)) * len(range(0, w, agreement.PIXEL_STRIDE))
    covered = sorted({a for p in present_of.values() for a in p})
    if len(covered) < 2:
        assert len(ratings.unit) == 0
        return
    assert len(ratings.unit) == grid * sum(len(p) for p in present_of.values())
    assert ratings.size == grid * images and list(ratings.names) == covered
    # The matrix written out from the drawings: every annotator's row, NOT_COVERED where absent.
    dense = np.full((len(covered), ratings.size), agreement.NOT_COVERED, np.int32)
    for image_id, present in present_of.items():
        for annotator in present:
            drawn = [
                (r["label"], geometry.from_rle(r["mask"]))
                for r in regions
                if (r["image_id"], r["annotator"]) == (image_id, annotator)
            ]
            codes = agreement.label_map(drawn, CODES, (h, w))[:: agreement.PIXEL_STRIDE, :: agreement.PIXEL_STRIDE]
            dense[covered.index(annotator), (image_id - 1) * grid : image_id * grid] = codes.ravel()
    written = agreement.Ratings.from_matrix(dense, covered)
    assert all(np.array_equal(getattr(written, k), getattr(ratings, k)) for k in ("unit", "annotator", "code"))
    assert agreement.collection_agreement(ratings) == agreement.collection_agreement(dense)
