import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from regionbench import synthetic
from regionbench.io import images as images_io
from regionbench.io.matlab import read_mat
from regionbench.io.saiapr import parse_caption
from regionbench.synthetic import captions, looks, rendering
from regionbench.synthetic import plans as planning
from regionbench.synthetic.saiapr import official_path, write_collection


@pytest.fixture(scope="module")
def paper() -> dict[str, int]:
    return planning.label_counts("paper")


def test_paper_totals(paper: dict[str, int]) -> None:
    assert sum(paper.values()) == 99_555
    assert len(paper) == 255 and all(c > 0 for c in paper.values())
    assert planning.regions_per_image(sum(paper.values()), planning.get_profile("paper").n_images) == 4.97


def test_paper_top_ten(paper: dict[str, int]) -> None:
    expected = {"sky-blue": 5722, "man": 4330, "group-of-persons": 4232, "ground": 3785, "grass": 3211,
                "cloud": 3128, "rock": 3071, "vegetation": 2763, "trees": 2638, "sky": 2637}  # fmt: skip
    ranked = sorted(paper.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert dict(ranked) == expected
    assert [label for label, _ in ranked] == list(expected)


@pytest.mark.parametrize(
    ("k", "size"),
    [(2, 10_052), (3, 14_284), (4, 18_069), (5, 21_280), (10, 35_517), (25, 59_759), (50, 77_631), (100, 93_167)],
)
def test_paper_subset_sizes(paper: dict[str, int], k: int, size: int) -> None:
    ranked = sorted(paper.items(), key=lambda kv: (-kv[1], kv[0]))
    assert sum(c for _, c in ranked[:k]) == size
    # The k-th and (k+1)-th labels differ, so the subset does not hang on a tie.
    assert ranked[k - 1][1] > ranked[k][1]


@pytest.mark.parametrize(("threshold", "n"), [(1000, 26), (100, 122), (50, 147)])
def test_paper_labels_above(paper: dict[str, int], threshold: int, n: int) -> None:
    assert sum(1 for c in paper.values() if c > threshold) == n


def test_unused_labels_come_from_animals_and_instruments(paper: dict[str, int]) -> None:
    tree = planning.load_hierarchy()
    unused = set(tree.labels) - set(paper)
    assert {tree.branch(x) for x in unused} <= {"animal", "man-made"}
    assert all(tree.branch(x) == "animal" or tree.parent(x) == "musical-instrument" for x in unused)


def test_fill_meets_bounds_and_sum() -> None:
    values = planning._fill(20, 777, hi=90, lo=5)
    assert sum(values) == 777 and max(values) <= 90 and min(values) >= 5
    assert values == sorted(values, reverse=True)
    with pytest.raises(ValueError):
        planning._fill(3, 1000, hi=10, lo=1)


@pytest.mark.parametrize("profile", ["demo", "tiny"])
def test_plan_realises_label_counts(profile: str) -> None:
    plans = planning.plan_collection(profile, seed=1)
    p = planning.get_profile(profile)
    assert len(plans) == p.n_images
    assert Counter(label for plan in plans for label in plan.labels) == Counter(planning.label_counts(profile))
    assert sorted({plan.folder for plan in plans}) == list(p.folders)
    assert all(int(plan.folder) == plan.image_id // 1000 for plan in plans)
    assert len({plan.image_id for plan in plans}) == len(plans)


def test_demo_size() -> None:
    counts = planning.label_counts("demo")
    assert sum(counts.values()) == 1500 and planning.get_profile("demo").n_images == 300


def test_plan_is_seeded() -> None:
    assert planning.plan_collection("tiny", seed=4) == planning.plan_collection("tiny", seed=4)
    assert planning.plan_collection("tiny", seed=4) != planning.plan_collection("tiny", seed=5)


def test_render_gives_non_empty_masks_and_scene_layout() -> None:
    plans = planning.plan_collection("tiny", seed=0)
    sky_rows, ground_rows = [], []
    for plan in plans:
        pixels, masks = rendering.render(plan)
        assert pixels.shape == (plan.height, plan.width, 3) and pixels.dtype == np.uint8
        assert len(masks) == len(plan.labels) and all(m.any() for m in masks)
        for label, m in zip(plan.labels, masks, strict=True):
            rows = np.nonzero(m)[0].mean() / plan.height
            if looks.look(label).kind == "sky":
                sky_rows.append(rows)
            elif looks.look(label).kind == "ground":
                ground_rows.append(rows)
    assert np.mean(sky_rows) < 0.35 < 0.6 < np.mean(ground_rows)


def test_group_contains_its_persons() -> None:
    plans = [p for p in planning.plan_collection("tiny", seed=0) if "group-of-persons" in p.labels]
    nested = 0
    for plan in plans:
        _, masks = rendering.render(plan)
        group = masks[plan.labels.index("group-of-persons")]
        for label, m in zip(plan.labels, masks, strict=True):
            if looks.look(label).kind == "person" and (m & group).sum() == m.sum():
                nested += 1
    assert nested > 0


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def test_collection_is_deterministic(tiny_raw: Path, tmp_path: Path) -> None:
    for _ in write_collection(tmp_path / "again", "tiny", seed=0, quirks=False, workers=1):
        pass
    assert _tree_digest(tmp_path / "again") == _tree_digest(tiny_raw)


def test_layout_matches_saiapr(tiny_raw: Path) -> None:
    words = dict(line.split("\t") for line in (tiny_raw / "wlist.txt").read_text().splitlines())
    assert words["1"] == "n.a." and len(words) == len(planning.load_hierarchy().labels) + 1
    rows = [line.split("\t") for line in (tiny_raw / "00" / "labels.txt").read_text().splitlines()]
    for image_id, region_id, label_id in rows:
        assert words[label_id] in planning.load_hierarchy().nodes
        seg = read_mat(tiny_raw / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat")["segimg_t"]
        assert seg.dtype == np.float64 and set(np.unique(seg)) <= {0.0, -1.0} and (seg == 0).any()
        with Image.open(tiny_raw / "00" / "images" / f"{image_id}.jpg") as im:
            assert im.size in {(480, 360), (360, 480)} and seg.shape == (im.height, im.width)
    ids = [r[0] for r in rows]
    assert ids == sorted(ids)  # string order of image ids, as in the official files


def test_captions_are_cp1252_and_mention_labels(tiny_raw: Path) -> None:
    plans = {p.image_id: p for p in planning.plan_collection("tiny", seed=0)}
    for path in sorted((tiny_raw / "annotations_complete_eng").rglob("*.eng")):
        data = path.read_bytes()
        assert not data.startswith(b"<?xml")
        fields, _ = parse_caption(data)
        text = fields["description"].lower()
        counts = Counter(plans[int(path.stem)].labels)
        assert all(captions.caption_phrase(label, n).lower() in text for label, n in counts.items())
    assert any(b"\xfa" in p.read_bytes() or b"\xe1" in p.read_bytes() for p in tiny_raw.rglob("*.eng"))


def test_quirks_are_in_the_files(demo_quirks: Path) -> None:
    labels = (demo_quirks / "00" / "labels.txt").read_text()
    paths = (demo_quirks / "00" / "ontology_path.txt").read_text()
    assert labels.endswith("\n\n\n") and paths.endswith("\n\n\n")
    rows = [line.split("\t") for line in paths.splitlines() if line]
    assert any(r[2] == "entity->" for r in rows)
    assert all(r[2].endswith("  ") for r in rows if r[2] != "entity->")
    assert any(r[2].startswith("entity->->") and "->_" in r[2] for r in rows)
    all_paths = [
        line.split("\t")[2]
        for f in demo_quirks.glob("*/ontology_path.txt")
        for line in f.read_text().splitlines()
        if line
    ]
    assert any(p.strip().endswith("generic-objects->lamp") for p in all_paths)
    assert any(p.strip().endswith("furniture->lamp") for p in all_paths)
    modes = Counter(Image.open(p).mode for p in demo_quirks.glob("*/images/*.jpg"))
    assert modes["L"] > 0 and modes["RGB"] > modes["L"]
    whole = 0
    for f in demo_quirks.glob("00/segmentation_masks/*.mat"):
        whole += bool((read_mat(f)["segimg_t"] == 0).all())
    assert whole > 0


def test_ontology_path_spelling() -> None:
    assert official_path("group-of-persons", planning.load_hierarchy()) == "entity->->humans->_group-of-persons  "
    assert official_path("humans", planning.load_hierarchy()) == "entity->->humans  "


@pytest.mark.parametrize("layout", sorted(synthetic.writers()))
def test_a_generated_tree_holds_each_image_once(layout: str, tmp_path: Path) -> None:
    """A build does not compare a generated tree's image files (``RawTree.copies``): every
    layout's generator draws each image apart, quirks and all."""
    from regionbench.io import layouts
    from regionbench.io.rawtree import RawTree

    for _ in synthetic.generate(layout, tmp_path / "raw", "tiny", synthetic.Options(quirks=True, workers=1)):
        pass
    root = tmp_path / "raw" / "BSDS500" if layout == "bsds500" else tmp_path / "raw"  # as BSDS500 unpacks
    tree = RawTree(str(root), layouts.get(layout))
    listed = [p for paths in tree.layout.shard_images(root, tree.shards, None).values() for p in paths]
    assert len(listed) > 1 and images_io.copies(root, listed) == {}


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1), st.integers(1, 255))
def test_distinct_colours_counts_as_a_row_wise_unique(height: int, width: int, seed: int, levels: int) -> None:
    """The ADE20K-full generator's region count: distinct RGB colours of a mask, packed in one
    integer each, the number a row-wise ``np.unique`` finds."""
    from regionbench.synthetic.ade20k_full import distinct_colours

    rng = np.random.default_rng(seed)
    mask = (rng.integers(0, levels + 1, size=(height, width, 3)) * (255 // levels)).astype(np.uint8)
    assert distinct_colours(mask) == len(np.unique(mask.reshape(-1, 3), axis=0))
