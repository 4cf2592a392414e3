from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import geometry, relations, tables
from regionbench.io.matlab import read_mat
from regionbench.io.saiapr import spatial
from regionbench.pipeline.ingest import ingest_shard


def box(shape: tuple[int, int], r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    m = np.zeros(shape, dtype=bool)
    m[r0:r1, c0:c1] = True
    return m


@pytest.mark.parametrize(
    ("second", "r", "expected"),
    [
        ((5, 8, 5, 8), 1, "adjacent"),  # touches (2..4, 2..4) only at a corner
        ((3, 7, 3, 7), 1, "adjacent"),  # overlapping
        ((3, 4, 3, 4), 1, "adjacent"),  # nested inside
        ((2, 5, 6, 8), 1, "disjoint"),  # one-pixel gap (column 5 free)
        ((2, 5, 6, 8), 2, "adjacent"),  # ... within reach of r = 2
        ((2, 5, 5, 8), 0, "disjoint"),  # side by side, r = 0 needs overlap
        ((2, 5, 5, 8), 1, "adjacent"),  # side by side
    ],
)
def test_adjacency_cases(second: tuple[int, int, int, int], r: int, expected: str) -> None:
    a = box((12, 12), 2, 5, 2, 5)
    b = box((12, 12), *second)
    pairs = relations.pairwise([a, b], (12, 12), adjacency_px=r)
    assert list(pairs.topological) == [expected, expected]


def test_alignment_and_direction() -> None:
    shape = (100, 200)
    top = box(shape, 0, 10, 0, 10)  # centroid (4.5, 4.5)
    low = box(shape, 80, 90, 15, 25)  # centroid (19.5, 84.5): dx 15 <= 20, dy 80 > 10
    far = box(shape, 3, 8, 150, 160)  # centroid (154.5, 5): dy 0.5
    p = relations.pairwise([top, low, far], shape, tau=0.1)
    got = {(int(i), int(j)): (h, v) for i, j, h, v in zip(p.i, p.j, p.horizontal, p.vertical, strict=True)}
    assert got[(0, 1)] == ("x_aligned", "above") and got[(1, 0)] == ("x_aligned", "below")
    assert got[(0, 2)] == ("beside", "y_aligned") and got[(2, 0)] == ("beside", "y_aligned")


def test_properties_on_random_images() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(1, 7))
        masks = []
        for _ in range(n):
            m = rng.random((20, 30)) < 0.05
            m[rng.integers(20), rng.integers(30)] = True
            masks.append(m)
        p = relations.pairwise(masks, (20, 30))
        assert len(p.i) == n * (n - 1) and (p.i != p.j).all()
        assert len({(int(i), int(j)) for i, j in zip(p.i, p.j, strict=True)}) == n * (n - 1)
        v = {(int(i), int(j)): (t, vert) for i, j, t, vert in zip(p.i, p.j, p.topological, p.vertical, strict=True)}
        for (i, j), (t, vert) in v.items():
            assert t == v[(j, i)][0]  # adjacency is symmetric
            assert (vert == "above") == (v[(j, i)][1] == "below")
            assert (vert == "y_aligned") == (v[(j, i)][1] == "y_aligned")
        for group, values in (
            (p.topological, relations.TOPOLOGICAL),
            (p.horizontal, relations.HORIZONTAL),
            (p.vertical, relations.VERTICAL),
        ):
            assert set(group) <= set(values)


def test_ingest_relations_and_stats(demo_ingest: Path) -> None:
    regions = tables.read_parquet(demo_ingest / "00" / "regions.parquet")
    table = tables.read_parquet(demo_ingest / "00" / "relations.parquet")
    per_image = np.bincount(regions.column("image_id").to_numpy())
    expected = int(sum(n * (n - 1) for n in per_image))
    assert table.num_rows == expected
    stats = {r["relation"]: r for r in relations.relation_stats([table]).to_pylist()}
    assert stats["above"]["count"] == stats["below"]["count"]
    for group in (relations.TOPOLOGICAL, relations.HORIZONTAL, relations.VERTICAL):
        assert sum(stats[v]["count"] for v in group) == expected
    assert sum(r["share"] for r in stats.values()) == pytest.approx(1.0)


def test_generated_spatial_rels_match(tiny_raw: Path) -> None:
    from regionbench.core.geometry import from_rle

    shard = ingest_shard(tiny_raw, "00")
    regions = shard.regions.to_pylist()
    image = shard.images.to_pylist()[0]
    mine = [r for r in regions if r["image_id"] == image["image_id"]]
    masks = [from_rle(r["mask"]) for r in mine]
    official = read_mat(tiny_raw / "00" / "spatial_rels" / f"{image['image_id']}.mat")
    computed = spatial.pair_matrices(relations.pairwise(masks, (image["height"], image["width"])), len(masks))
    assert sorted(official) == ["topo", "x_rels", "y_rels"]
    for name in official:
        np.testing.assert_array_equal(official[name], computed[name])


def relation_rows(image_id: int, pairs: list[tuple[int, int, str, str, str]]) -> pa.Table:

    names = ["region_id", "other_region_id", "topological", "horizontal", "vertical"]
    columns = {name: [p[k] for p in pairs] for k, name in enumerate(names)}
    return pa.table({"image_id": [image_id] * len(pairs), "annotator": ["saiapr"] * len(pairs), **columns})


def test_parity_by_hand() -> None:
    computed = relation_rows(
        7,
        [(1, 2, "adjacent", "beside", "above"), (2, 1, "adjacent", "beside", "below"),
         (1, 3, "disjoint", "x_aligned", "y_aligned"), (3, 1, "disjoint", "x_aligned", "y_aligned")],
    )  # fmt: skip
    # The official file of image 7 has two regions (pairs with region 3 are ours only); its
    # vertical relation of (2, 1) says y_aligned, and image 8 is not computed at all.
    official = {
        7: {"topo": np.array([[0, 1], [1, 0]]), "x_rels": np.array([[0, 3], [3, 0]]), "y_rels": np.array([[0, 5], [7, 0]])},
        8: {name: np.zeros((3, 3)) for name in ("topo", "x_rels", "y_rels")},
    }  # fmt: skip
    report = spatial.parity(official, computed)
    assert (report["pairs_compared"], report["pairs_only_computed"], report["pairs_only_official"]) == (2, 2, 6)
    assert report["groups"]["topological"]["agreement"] == report["groups"]["horizontal"]["agreement"] == 1.0
    assert report["groups"]["vertical"]["agreement"] == 0.5
    assert report["groups"]["vertical"]["confusion"] == [
        {"official": "above", "computed": "above", "pairs": 1},
        {"official": "y_aligned", "computed": "below", "pairs": 1},
    ]
    assert report["worst_images"] == [{"image_id": 7, "disagreements": 1}]
    # A code outside the official ones is named as such, not dropped.
    official[7]["topo"] = np.array([[0, 9], [1, 0]])
    confusion = spatial.parity(official, computed)["groups"]["topological"]["confusion"]
    assert {"official": "code 9", "computed": "adjacent", "pairs": 1} in confusion


def test_code_matrices_round_trip_through_parity(demo_ingest: Path) -> None:
    """A shard's relations written as official matrices agree with themselves on every pair."""
    regions = tables.read_parquet(demo_ingest / "00" / "regions.parquet")
    table = tables.read_parquet(demo_ingest / "00" / "relations.parquet")
    sizes: dict[int, int] = {}
    for image_id, region_id in zip(regions["image_id"].to_pylist(), regions["region_id"].to_pylist(), strict=True):
        sizes[image_id] = max(sizes.get(image_id, 0), region_id)
    report = spatial.parity(spatial.image_matrices(table, sizes), table)
    assert report["pairs_compared"] == table.num_rows > 0
    assert report["pairs_only_computed"] == report["pairs_only_official"] == 0
    assert all(g["agreement"] == 1.0 for g in report["groups"].values())


def test_reading_official_relations_names_every_unusable_file(tiny_copy: Path) -> None:
    from regionbench.io.matlab import write_mat
    from regionbench.io.saiapr import read_spatial_relations

    folder = tiny_copy / "00" / "spatial_rels"
    files = sorted(folder.glob("*.mat"))
    official, problems = read_spatial_relations(tiny_copy)
    everything = sorted(int(p.stem) for p in tiny_copy.glob("*/spatial_rels/*.mat"))
    assert problems == [] and sorted(official) == everything and len(files) > 5
    files[0].write_bytes(b"not a MAT file")
    write_mat(files[1], {"topo": np.zeros((2, 2))})
    write_mat(files[2], {"topo": np.zeros((2, 3)), "x_rels": np.zeros((2, 3)), "y_rels": np.zeros((2, 3))})
    (folder / f"0{files[3].name}").write_bytes(files[3].read_bytes())
    other = tiny_copy / "01" / "spatial_rels"
    other.mkdir(parents=True, exist_ok=True)
    (other / files[4].name).write_bytes(files[4].read_bytes())
    official, problems = read_spatial_relations(tiny_copy)
    reasons = {p["file"]: p["reason"] for p in problems}
    assert reasons.pop(f"00/spatial_rels/{files[0].name}").startswith("unreadable MAT file: ")
    assert reasons == {
        f"00/spatial_rels/{files[1].name}": "no variable x_rels, y_rels (found: topo)",
        f"00/spatial_rels/{files[2].name}": "topo, x_rels and y_rels must be square matrices of one size",
        f"00/spatial_rels/0{files[3].name}": "the file name is not an image id (ASCII digits, no leading zero)",
        f"00/spatial_rels/{files[4].name}": f"image {files[4].stem} has relations in several folders",
        f"01/spatial_rels/{files[4].name}": f"image {files[4].stem} has relations in several folders",
    }
    assert len(official) == len(everything) - 4


def _instances(draw_seed: int, n: int, shape: tuple[int, int]) -> list[np.ndarray]:
    """``n`` small rectangles and speckles at random places in ``shape``: a crowded image."""
    rng = np.random.default_rng(draw_seed)
    masks = []
    for _ in range(n):
        h, w = (int(v) for v in rng.integers(1, 6, 2))
        y, x = int(rng.integers(0, shape[0] - h + 1)), int(rng.integers(0, shape[1] - w + 1))
        m = box(shape, y, y + h, x, x + w)
        m &= rng.random(shape) < 0.9  # holes and split parts, as traced instances have
        m[y, x] = True
        masks.append(m)
    return masks


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), r=st.integers(0, 3), cap=st.integers(2, 12))
def test_a_crowded_image_keeps_its_near_pairs_and_every_adjacency(seed: int, n: int, r: int, cap: int) -> None:
    """Above ``max_regions`` an image relates exactly the pairs whose boxes come within r, with
    the values every-pair relating gives them; no adjacent pair is left out; at or below the cap
    nothing changes."""
    shape = (24, 32)
    masks = _instances(seed, n, shape)
    full = relations.pairwise(masks, shape, adjacency_px=r, max_regions=None)
    capped = relations.pairwise(masks, shape, adjacency_px=r, max_regions=cap)
    rows = lambda p: {  # noqa: E731
        (int(i), int(j)): (t, h, v)
        for i, j, t, h, v in zip(p.i, p.j, p.topological, p.horizontal, p.vertical, strict=True)
    }
    every, kept = rows(full), rows(capped)
    if n <= cap:
        assert kept == every and capped.i.tolist() == full.i.tolist() and capped.j.tolist() == full.j.tolist()
        return
    boxes = geometry.bboxes(masks)
    near = {
        (a, b)
        for a in range(n)
        for b in range(n)
        if a != b
        and max(boxes[a, 1] - r, boxes[b, 1]) < min(boxes[a, 1] + boxes[a, 3] + r, boxes[b, 1] + boxes[b, 3])
        and max(boxes[a, 0] - r, boxes[b, 0]) < min(boxes[a, 0] + boxes[a, 2] + r, boxes[b, 0] + boxes[b, 2])
    }
    assert set(kept) == near and kept == {k: every[k] for k in near}
    assert {k for k, v in every.items() if v[0] == "adjacent"} <= set(kept)
    assert sorted(kept) == list(zip(capped.i.tolist(), capped.j.tolist(), strict=True))  # ordered by i, then j


def test_the_cap_reaches_ingest_and_its_report(demo_quirks: Path) -> None:
    every = ingest_shard(demo_quirks, "01", relations=relations.RelationSettings(max_regions=None))
    capped = ingest_shard(demo_quirks, "01", relations=relations.RelationSettings(max_regions=2))
    per_image = np.bincount(every.regions.column("image_id").to_numpy())
    crowded = int((per_image > 2).sum())
    assert crowded and capped.report["relations_near_pairs_only"] == crowded
    assert "relations_near_pairs_only" not in every.report
    assert 0 < capped.relations.num_rows < every.relations.num_rows
    key = ["image_id", "annotator", "region_id", "other_region_id"]
    kept = capped.relations.join(every.relations.select(key), key, join_type="left semi")
    assert kept.num_rows == capped.relations.num_rows  # every row kept is a row of every-pair relating
