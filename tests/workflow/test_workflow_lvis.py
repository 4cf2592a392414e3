"""An LVIS file enters through the COCO layout with its federated lists and category frequencies
kept, and ``evaluate --task instances --method lvis`` gives LVISEval's figures on that file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import evaluate_instances, regionbench_cli
from farm import Built
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lvis import lvis_eval

import regionbench
from regionbench.synthetic.coco import write_collection

DATASET = "lvis"
RELEASE = f"releases/{DATASET}/v1.0.0"
FREQUENCY = "rcf"


def lvis_tree(root: Path) -> dict:
    """A two-annotator COCO tree whose first file is made an LVIS file: each image verifies some
    categories absent and marks one of its own not exhaustive, every category has a frequency
    and synonyms. The second file stays plain COCO. The images lie in two source splits
    (``images/train/``, ``images/val/``). Returns the LVIS file's content."""
    for _ in write_collection(root, "tiny", annotators=2, disagreement=0.2, workers=1):
        pass
    folder = root / "annotations"
    (folder / "annotator-1.json").rename(folder / "lvis.json")
    (folder / "annotator-2.json").rename(folder / "plain.json")
    data = json.loads((folder / "lvis.json").read_text())
    rng = np.random.default_rng(7)
    ids = sorted(c["id"] for c in data["categories"])
    for k, c in enumerate(sorted(data["categories"], key=lambda c: c["id"])):
        c["frequency"], c["synonyms"] = FREQUENCY[k % 3], [c["name"], f"{c['name']} (other name)"]
    present: dict[int, set[int]] = {}
    for a in data["annotations"]:
        present.setdefault(a["image_id"], set()).add(a["category_id"])
    for entry in data["images"]:
        own = sorted(present.get(entry["id"], set()))
        absent = [c for c in ids if c not in own]
        entry["neg_category_ids"] = sorted(int(c) for c in rng.choice(absent, size=min(4, len(absent)), replace=False))
        entry["not_exhaustive_category_ids"] = own[:1] if own and rng.random() < 0.5 else []
    names = sorted(e["file_name"] for e in data["images"])
    split = {name: "train" if k % 2 else "val" for k, name in enumerate(names)}  # two source splits
    for name, side in split.items():
        (root / "images" / side).mkdir(exist_ok=True)
        (root / "images" / name).rename(root / "images" / side / name)
    plain = json.loads((folder / "plain.json").read_text())
    for document in (data, plain):
        for entry in document["images"]:
            entry["file_name"] = f"{split[entry['file_name']]}/{entry['file_name']}"
    (folder / "plain.json").write_text(json.dumps(plain))
    (folder / "lvis.json").write_text(json.dumps(data))
    return data


@pytest.fixture(scope="module")
def lvis_release(release: Callable[[str], Built]) -> tuple[Path, dict]:
    """(the built release, the LVIS file's content)."""
    built = release("lvis")
    return built.folder, built.tree_info


def test_the_federated_lists_and_frequencies_are_kept(lvis_release: tuple[Path, dict]) -> None:
    """coverage holds each image's lists under the LVIS file's annotator (none under the plain
    file's), source_categories each category's frequency and synonyms; card and Croissant
    describe the columns, and Croissant reads them back as arrays."""
    folder, data = lvis_release
    coverage = pq.read_table(folder / "data/coverage.parquet").to_pylist()
    mine = {r["source_image_id"]: r for r in coverage if r["annotator"] == "lvis"}
    assert mine and set(mine) <= {e["id"] for e in data["images"]}
    for entry in data["images"]:
        if entry["id"] in mine:
            assert mine[entry["id"]]["neg_category_ids"] == entry["neg_category_ids"]
            assert mine[entry["id"]]["not_exhaustive_category_ids"] == entry["not_exhaustive_category_ids"]
    assert all(r["neg_category_ids"] is None for r in coverage if r["annotator"] == "plain")
    named = pq.read_table(folder / "data/source_categories.parquet").to_pylist()
    given = {c["id"]: c for c in data["categories"]}
    for row in named:
        if row["annotator"] == "lvis":
            assert (row["frequency"], row["synonyms"]) == (given[row["category_id"]]["frequency"],
                                                         given[row["category_id"]]["synonyms"])  # fmt: skip
        else:
            assert row["frequency"] is None and row["synonyms"] is None
    card = (folder / "README.md").read_text()
    assert "`neg_category_ids`" in card and "`frequency`" in card and "`synonyms`" in card
    import mlcroissant as mlc

    dataset = mlc.Dataset(jsonld=folder / "croissant.json")
    read = [r for _, r in zip(range(400), dataset.records("coverage"), strict=False)]
    lists = [r["coverage/neg_category_ids"] for r in read if r["coverage/annotator"] == b"lvis"]
    assert lists and all(len(v) for v in lists)


def _results(data: dict, seed: int) -> list[dict]:
    """The LVIS file's instances as detections, moved, relabelled, doubled and invented."""
    rng = np.random.default_rng(seed)
    ids = sorted(c["id"] for c in data["categories"])
    out = []
    for a in data["annotations"]:
        x, y, w, h = a["bbox"]
        for _ in range(int(rng.integers(0, 3))):
            category = int(rng.choice(ids)) if rng.random() < 0.3 else a["category_id"]
            dx, dy = float(rng.integers(-4, 5)), float(rng.integers(-4, 5))
            out.append(
                {"image_id": a["image_id"], "category_id": category, "bbox": [max(x + dx, 0), max(y + dy, 0), w, h],
                 "segmentation": a["segmentation"], "score": float(rng.random())}
            )  # fmt: skip
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), iou_type=st.sampled_from(["bbox", "segm"]))
def test_the_lvis_method_is_lvis_eval_s(
    lvis_release: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory, seed: int, iou_type: str
) -> None:
    """``--method lvis`` against the LVIS file's annotator: LVISEval's 13 figures on that file,
    to 1e-9."""
    folder, data = lvis_release
    run = _results(data, seed)
    path = tmp_path_factory.mktemp("run") / "results.json"
    path.write_text(json.dumps(run))
    ours = regionbench.evaluate(
        regionbench.load(folder), path, "instances", split="all", method="lvis", iou_type=iou_type
    )
    theirs = lvis_eval(data, run, iou_type, 300)
    assert list(ours["measures"]) == list(theirs)
    assert np.allclose(list(ours["measures"].values()), list(theirs.values()), rtol=0, atol=1e-9)
    assert ours["settings"]["max_dets"] == 300 and any("LVIS's federated" in c for c in ours["conventions"])
    # each source split's figures: LVISEval on that split's images alone, from the same evaluation
    assert sorted(ours["per_source_split"]) == ["train", "val"]
    for side, figures in ours["per_source_split"].items():
        part = [e for e in data["images"] if e["file_name"].startswith(f"{side}/")]
        ids = {e["id"] for e in part}
        alone = {
            "images": part,
            "annotations": [a for a in data["annotations"] if a["image_id"] in ids],
            "categories": data["categories"],
        }
        expected = lvis_eval(alone, [d for d in run if d["image_id"] in ids], iou_type, 300)
        assert figures["images"] == len(part)
        assert np.allclose([figures[k] for k in expected], list(expected.values()), rtol=0, atol=1e-9)


def test_a_file_without_lvis_lists_is_refused_in_one_line(lvis_release: tuple[Path, dict], tmp_path: Path) -> None:
    folder, data = lvis_release
    (tmp_path / "run.json").write_text(json.dumps(_results(data, 0)))
    for extra in (["--annotator", "plain"], ["--tide"]):
        done = evaluate_instances(folder, str(tmp_path / "run.json"), "--method", "lvis", "--split", "all", *extra)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert ("neg_category_ids" if "plain" in extra else "--tide") in done.stderr


def test_export_coco_writes_the_lvis_file_back(lvis_release: tuple[Path, dict], tmp_path: Path) -> None:
    """``export-coco`` writes the LVIS file's lists and category frequencies and synonyms back:
    LVISEval scores a run on the export as on the source file."""
    from regionbench import cli

    folder, data = lvis_release
    assert cli.main(["export-coco", str(folder), str(tmp_path / "out"), "--annotator", "lvis"]) == 0
    written = json.loads((tmp_path / "out/annotations/lvis.json").read_text())
    source = {e["id"]: e for e in data["images"]}
    for entry in written["images"]:
        for key in ("neg_category_ids", "not_exhaustive_category_ids"):
            assert entry[key] == source[entry["id"]][key]
    given = {c["id"]: c for c in data["categories"]}
    assert all(
        (c["frequency"], c["synonyms"]) == (given[c["id"]]["frequency"], given[c["id"]]["synonyms"])
        for c in written["categories"]
    )
    run = _results(data, 3)
    assert lvis_eval(written, run, "segm", 300) == pytest.approx(lvis_eval(data, run, "segm", 300), abs=1e-12)


def test_the_worked_lvis_example_runs(lvis_release: tuple[Path, dict]) -> None:
    """docs/scoring.md's LVIS example: the output it shows is this release's."""
    from conftest import readme_blocks
    from test_readme import command, matches

    folder, data = lvis_release
    project = folder.parents[2]
    (block,) = [b for b in readme_blocks() if (b.by or "").endswith("::test_the_worked_lvis_example_runs")]
    lines = block.body.splitlines()
    (project / "detections.json").write_text(json.dumps(_results(data, 0)))
    done = regionbench_cli(*command(lines[0].removeprefix("$ ")), cwd=project)
    assert done.returncode == 0, done.stderr
    assert matches(lines[1:], (done.stderr + done.stdout).splitlines()), done.stderr + done.stdout
