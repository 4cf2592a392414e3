"""Coverage: an annotator absent from an image is not an annotator who drew nothing on it.

Every collection here is generated: small COCO trees whose annotators each list only some of the
images (``write_partial_tree``), the figures then checked against computations made directly
from the masks written.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import WHOLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from sklearn.metrics import rand_score

from regionbench.core import geometry
from regionbench.io import imageclef
from regionbench.io.shards import image_id_of
from regionbench.pipeline import agreement
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.vocabulary import DEFAULT_DIR, Registry
from regionbench.synthetic.plans import load_hierarchy

HIERARCHY = load_hierarchy()
CODES = Registry.read(DEFAULT_DIR / "label_ids.tsv").ids()
LABELS = ("sky", "man", "grass")
H, W = 10, 12
Drawing = list[tuple[str, np.ndarray]]  # (label, mask) regions of one annotator on one image


def random_regions(rng: np.random.Generator, most: int = 3) -> Drawing:
    """0 to ``most`` rectangles with labels."""
    out = []
    for _ in range(rng.integers(0, most + 1)):
        mask = np.zeros((H, W), dtype=bool)
        y0, x0 = rng.integers(0, H - 2), rng.integers(0, W - 2)
        mask[y0 : rng.integers(y0 + 1, H + 1), x0 : rng.integers(x0 + 1, W + 1)] = True
        out.append((LABELS[rng.integers(len(LABELS))], mask))
    return out


def write_partial_tree(root: Path, drawings: dict[str, dict[str, Drawing]], images: list[str]) -> Path:
    """A COCO tree: ``images`` on disk, and per annotator an instances file listing exactly the
    images of ``drawings[annotator]`` (its coverage) with their regions as compressed RLE."""
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    for k, name in enumerate(images):  # as many photographs as files: one colour each
        Image.new("RGB", (W, H), (90, 140, k % 256)).save(root / "images" / name)
    categories = [{"id": k, "name": label, "supercategory": ""} for k, label in enumerate(LABELS, start=1)]
    for annotator, drawn in drawings.items():
        listed = [{"id": k, "file_name": name, "width": W, "height": H} for k, name in enumerate(sorted(drawn), 1)]
        ids = {entry["file_name"]: entry["id"] for entry in listed}
        annotations = [
            {
                "id": 1000 * ids[name] + n,
                "image_id": ids[name],
                "category_id": LABELS.index(label) + 1,
                "segmentation": {"size": [H, W], "counts": geometry.encode_rle(mask)},
            }
            for name in sorted(drawn)
            for n, (label, mask) in enumerate(drawn[name])
        ]
        info = {"contributor": annotator}  # as tools write it: two annotators are two files
        data = {"info": info, "images": listed, "annotations": annotations, "categories": categories}
        (root / "annotations" / f"{annotator}.json").write_text(json.dumps(data))
    return root


def segments(drawing: Drawing) -> np.ndarray:
    """Segment ids: region k where it is the last region drawn over the pixel, 0 elsewhere."""
    out = np.zeros((H, W), dtype=np.int64)
    for k, (_, mask) in enumerate(drawing, start=1):
        out[mask] = k
    return out


def covered_pairs(drawings: dict[str, dict[str, Drawing]], name: str) -> list[tuple[str, str]]:
    """Pairs of annotators who both covered image ``name`` and not both drew nothing there."""
    present = sorted(a for a in drawings if name in drawings[a])
    return [(a, b) for a, b in itertools.combinations(present, 2) if drawings[a][name] or drawings[b][name]]


def summarise(root: Path) -> tuple[dict, object]:
    shard = ingest_shard(root, "00", CODES, hierarchy=HIERARCHY, settings=IngestSettings(shard_size=WHOLE))
    rows, ratings, labels = agreement.shard_agreement(shard.images, shard.regions, shard.coverage, HIERARCHY, CODES)
    report = agreement.summary([rows], [ratings.table()], [labels], coverage=[shard.coverage])
    return report, shard


coverage_patterns = st.tuples(
    st.integers(1, 4),  # images
    st.integers(2, 9),  # annotators
    st.integers(0, 2**32 - 1),  # the drawings' seed
    st.floats(0.2, 1.0),  # each annotator's chance to cover an image
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(coverage_patterns)
def test_summary_is_the_mean_over_covered_pairs(tmp_path_factory: pytest.TempPathFactory, pattern) -> None:
    n_images, n_annotators, seed, share = pattern
    rng = np.random.default_rng(seed)
    images = [f"{k + 1}.png" for k in range(n_images)]
    drawings = {f"a{k}": {} for k in range(n_annotators)}
    for name in images:
        for annotator in drawings:
            if rng.random() < share:
                drawings[annotator][name] = random_regions(rng)
    root = write_partial_tree(tmp_path_factory.mktemp("coco"), drawings, images)
    report, shard = summarise(root)

    pairs = [(name, a, b) for name in images for a, b in covered_pairs(drawings, name)]
    covered = [{k: r[k] for k in ("image_id", "annotator")} for r in shard.coverage.to_pylist()]
    assert sorted(covered, key=lambda r: (r["image_id"], r["annotator"])) == sorted(
        ({"image_id": image_id_of(n), "annotator": a} for a in drawings for n in drawings[a]),
        key=lambda r: (r["image_id"], r["annotator"]),
    )
    assert report["image_pairs"] == len(pairs)
    if not pairs:
        return
    direct = [
        rand_score(segments(drawings[a][name]).ravel(), segments(drawings[b][name]).ravel()) for name, a, b in pairs
    ]
    assert report["label_free"]["pri"] == pytest.approx(np.mean(direct), abs=1e-12)
    # Each annotator's PRI: its covered pairs only.
    for annotator, figures in report["label_free"]["per_annotator"].items():
        mine = [d for (_, a, b), d in zip(pairs, direct, strict=True) if annotator in (a, b)]
        assert figures["pri"] == pytest.approx(np.mean(mine), abs=1e-12)
    # Matched share: regions of covered pairs only, matched one to one by IoU >= 0.5.
    matched = unmatched = 0
    for name, a, b in pairs:
        found = agreement.match([m for _, m in drawings[a][name]], [m for _, m in drawings[b][name]])
        matched += len(found)
        unmatched += len(drawings[a][name]) + len(drawings[b][name]) - 2 * len(found)
    assert report["matched_share"] == pytest.approx(2 * matched / (2 * matched + unmatched))
    counts = report["coverage"]["images_by_annotators"]
    assert sum(counts.values()) == report["coverage"]["images"]


def test_eight_annotators_covering_four_or_five_slots(tmp_path: Path) -> None:
    """Eight annotators, each image given to four or five of them, all tracing the same scene:
    the covered pairs agree perfectly; counting the absent as empty would report far less."""
    rng = np.random.default_rng(3)
    images = [f"{k + 1}.png" for k in range(6)]
    drawings = {f"a{k}": {} for k in range(8)}
    for name in images:
        scene = random_regions(rng, most=3) or [("sky", np.ones((H, W), dtype=bool))]
        for annotator in rng.permutation(sorted(drawings))[: rng.integers(4, 6)]:
            drawings[annotator][name] = scene
    report, _ = summarise(write_partial_tree(tmp_path / "coco", drawings, images))
    assert report["label_free"]["pri"] == 1.0 and report["matched_share"] == 1.0
    assert report["fleiss_kappa"] == report["krippendorff_alpha"] == 1.0
    assert report["coverage"]["complete"] is False
    assert set(report["coverage"]["images_by_annotators"]) <= {"4", "5"}
    assert report["coverage"]["quorum"] == {n: int(n) // 2 + 1 for n in report["coverage"]["images_by_annotators"]}
    # What the absent-as-empty reading gives: every uncovered slot compared as "drew nothing".
    empty = [
        rand_score(segments(drawings[a].get(n, [])).ravel(), segments(drawings[b].get(n, [])).ravel())
        for n in images
        for a, b in itertools.combinations(sorted(drawings), 2)
        if drawings[a].get(n) or drawings[b].get(n)
    ]
    assert np.mean(empty) < 0.9


def test_consensus_counts_the_votes_of_covering_annotators(tmp_path: Path) -> None:
    """Five annotators; image 1.png is given to three of them. Two of the three draw the same
    square: a consensus region (quorum 2 of 3), though two of five would be no majority. On
    2.png all five cover it and only two draw: no consensus (quorum 3 of 5), because the three
    who drew nothing voted."""
    square = np.zeros((H, W), dtype=bool)
    square[2:8, 3:9] = True
    drawn = [("sky", square)]
    drawings = {
        "a0": {"1.png": drawn, "2.png": drawn},
        "a1": {"1.png": drawn, "2.png": drawn},
        "a2": {"1.png": [], "2.png": []},
        "a3": {"2.png": []},
        "a4": {"2.png": []},
    }
    _, shard = summarise(write_partial_tree(tmp_path / "coco", drawings, ["1.png", "2.png"]))
    agreed = [r for r in shard.regions.to_pylist() if r["annotator"] == "consensus"]
    assert [(r["image_id"], r["label"]) for r in agreed] == [(1, "sky")]
    assert geometry.from_rle(agreed[0]["mask"]).tolist() == square.tolist()


def test_imageclef_files_hold_the_votes_of_covering_annotators(tmp_path: Path) -> None:
    """Raw concept files list one judgment per covering annotator (a variable number per image),
    the clean files the majority of those present; read back, nothing is lost."""
    judgments = {
        "a0": {"1": {"sky"}, "2": {"man"}},
        "a1": {"1": {"sky"}, "2": set()},
        "a2": {"1": set(), "2": set()},
        "a3": {"2": {"man"}},
        "a4": {"2": {"man"}},
    }
    imageclef.write_files(tmp_path / "out", judgments, ["man", "sky"], ["1", "2"])
    assert imageclef.read_files(tmp_path / "out") == (judgments, ["man", "sky"], ["1", "2"])
    raw = (tmp_path / "out" / "concepts" / "raw" / "sky.txt").read_text().splitlines()
    assert raw == ["1 1 1 0", "2 0 0 0 0 0"]
    assert (tmp_path / "out" / "concepts" / "clean" / "man.txt").read_text().split() == ["2"]
    assert (tmp_path / "out" / "concepts" / "clean" / "sky.txt").read_text().split() == ["1"]
    assert (tmp_path / "out" / "annotations" / "raw" / "2.txt").read_text().splitlines()[0] == "man 0.600000"


def test_imageclef_files_as_the_task_published_them(tmp_path: Path) -> None:
    """No concepts.txt, annotators.txt or judges.txt: concepts from the raw files' names, the
    judgments anonymous by position, their number free to vary per image (three or more)."""
    raw = tmp_path / "clef" / "concepts" / "raw"
    raw.mkdir(parents=True)
    (raw / "sky.txt").write_text("10 1 1 0\n11 0 0 0 1\n")
    (raw / "man.txt").write_text("10 0 0 0\n11 1 1 1 0\n")
    judgments, concepts, images = imageclef.read_files(tmp_path / "clef")
    assert concepts == ["man", "sky"] and images == ["10", "11"]
    assert judgments == {
        "judge1": {"10": {"sky"}, "11": {"man"}},
        "judge2": {"10": {"sky"}, "11": {"man"}},
        "judge3": {"10": set(), "11": {"man"}},
        "judge4": {"11": {"sky"}},
    }
    (raw / "man.txt").write_text("10 0 0 0 1\n11 1 1 1 0\n")  # image 10: four judgments here, three in sky.txt
    with pytest.raises(imageclef.ImageClefError, match=r"sky.txt:1: 3 judgments of image 10, but 4"):
        imageclef.read_files(tmp_path / "clef")
    (raw / "man.txt").write_text("10 0 0\n11 1 1 1 0\n")
    with pytest.raises(imageclef.ImageClefError, match=r"man.txt:1: expected an image id and at least 3"):
        imageclef.read_files(tmp_path / "clef")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.integers(3, 7), st.integers(1, 5))
def test_imageclef_round_trip_of_any_coverage(tmp_path_factory, seed: int, annotators: int, n_images: int) -> None:
    rng = np.random.default_rng(seed)
    names = [f"a{k}" for k in range(annotators)]
    judgments: dict = {a: {} for a in names}
    for image in map(str, range(n_images)):
        for a in rng.permutation(names)[: rng.integers(3, annotators + 1)]:
            judgments[a][image] = {c for c in ("man", "sky", "grass") if rng.random() < 0.5}
    out = tmp_path_factory.mktemp("clef") / "out"
    images = [str(i) for i in range(n_images)]
    imageclef.write_files(out, judgments, ["grass", "man", "sky"], images)
    assert imageclef.read_files(out) == ({a: j for a, j in judgments.items() if j}, ["grass", "man", "sky"], images)
