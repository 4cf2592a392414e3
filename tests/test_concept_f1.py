"""Concepts are scored as SA-Co scores them: every figure equals SAM 3's own ``CGF1Evaluator``
(``sam3/eval/cgf1_eval.py``, loaded by its path: the package itself pulls the model) on
generated SA-Co files, one annotator and the oracle over three, masks and boxes, with negative
phrases, detections under the score threshold, tied scores, crowd truth, empty pairs and pairs
exhaustive in one file only."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sysconfig
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as coco_mask

from regionbench.scoring.measures import concept_f1

H, W = 32, 40


def reference() -> ModuleType:
    """SAM 3's evaluator, from the one file (``pip install --no-deps sam3``)."""
    path = Path(sysconfig.get_paths()["purelib"]) / "sam3/eval/cgf1_eval.py"
    if not path.is_file():
        pytest.fail(f"{path}: SAM 3's evaluator is not installed; make test installs it (sam3, no dependencies)")
    spec = importlib.util.spec_from_file_location("cgf1_eval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rle(x: int, y: int, w: int, h: int, uncompressed: bool = False) -> dict:
    """A box's mask as RLE: compressed, or (``uncompressed``) its runs as a list, as some tools write it."""
    mask = np.zeros((H, W), dtype=np.uint8)
    mask[y : y + h, x : x + w] = 1
    if uncompressed:
        from regionbench.synthetic.coco import uncompressed_rle

        return uncompressed_rle(mask)
    encoded = coco_mask.encode(np.asfortranarray(mask))
    return {"size": [H, W], "counts": encoded["counts"].decode()}


def saco_files(seed: int, pairs: int, folder: Path) -> tuple[list[Path], list[dict]]:
    """Three annotators' files of ``pairs`` (image, phrase) pairs and a run: instances as boxes
    and masks, a crowd now and then, negatives, pairs a file does not annotate exhaustively; the
    run's detections near instances or anywhere, scores of few values (ties, some under 0.5)."""
    rng = np.random.default_rng(seed)
    images = [
        {"id": p + 1, "file_name": f"{p // 2}.jpg", "height": H, "width": W, "text_input": f"thing {p % 3}"}
        for p in range(pairs)
    ]
    base = [[tuple(int(v) for v in rng.integers([0, 0, 4, 4], [W - 8, H - 8, 16, 16])) for _ in range(int(rng.integers(0, 4)))] for _ in range(pairs)]  # fmt: skip
    paths = []
    for who in "abc":
        annotations = []
        entries = []
        for p, image in enumerate(images):
            entries.append(image | {"is_instance_exhaustive": bool(rng.random() < 0.85)})
            for x, y, w, h in base[p]:
                if rng.random() < 0.2:  # this annotator missed it
                    continue
                dx, dy = (int(v) for v in rng.integers(-2, 3, 2))
                x, y = max(0, x + dx), max(0, y + dy)
                annotations.append({
                    "id": len(annotations) + 1, "image_id": p + 1, "category_id": 1,
                    "segmentation": rle(x, y, w, h, uncompressed=who == "b"),  # as some tools write RLE
                    "bbox": [x, y, w, h], "area": float(w * h), "iscrowd": int(rng.random() < 0.08),
                })  # fmt: skip
        path = folder / f"gold_test_merged_{who}_release_test.json"
        path.write_text(json.dumps({"images": entries, "annotations": annotations,
                                    "categories": [{"id": 1, "name": "object"}]}))  # fmt: skip
        paths.append(path)
    run = []
    for p in range(pairs):
        for x, y, w, h in base[p]:
            if rng.random() < 0.75:
                dx, dy = (int(v) for v in rng.integers(-3, 4, 2))
                x, y = max(0, x + dx), max(0, y + dy)
                run.append({"image_id": p + 1, "category_id": 1, "segmentation": rle(x, y, w, h, bool(p % 5 == 0)),
                            "bbox": [x, y, w, h], "score": float(rng.choice([0.3, 0.5, 0.7, 0.9]))})  # fmt: skip
        for _ in range(int(rng.poisson(0.6))):
            x, y, w, h = (int(v) for v in rng.integers([0, 0, 4, 4], [W - 8, H - 8, 16, 16]))
            run.append({"image_id": p + 1, "category_id": 1, "segmentation": rle(x, y, w, h), "bbox": [x, y, w, h],
                        "score": float(rng.choice([0.2, 0.6, 0.9]))})  # fmt: skip
    return paths, run


def compressed(shape: dict) -> dict:
    """An instance or detection whose RLE is a list of runs, compressed as pycocotools' loaders do."""
    segmentation = shape["segmentation"]
    if isinstance(segmentation["counts"], list):
        return shape | {"segmentation": coco_mask.frPyObjects(segmentation, *segmentation["size"])}
    return shape


def ours(paths: list[Path], run: list[dict], iou_type: str) -> dict:
    """Our figures: the pairs exhaustive in the first file and in no other not so, each scored
    against each file, the oracle over them."""
    files = [json.loads(p.read_text()) for p in paths]
    partial = {e["id"] for f in files[1:] for e in f["images"] if not e["is_instance_exhaustive"]}
    chosen = [e["id"] for e in files[0]["images"] if e["is_instance_exhaustive"] and e["id"] not in partial]
    scored = []
    for image in chosen:
        # as COCO's loaders read an uncompressed RLE (counts a list of runs): compressed first
        found = [compressed(d) for d in run if d["image_id"] == image and d["score"] >= concept_f1.SCORE]
        each = []
        for f in files:
            truth = [compressed(a) for a in f["annotations"] if a["image_id"] == image and not a["iscrowd"]]
            shape = "segmentation" if iou_type == "segm" else "bbox"
            ious = (
                np.asarray(coco_mask.iou([d[shape] for d in found], [a[shape] for a in truth], [0] * len(truth)))
                if found and truth
                else np.zeros((len(found), len(truth)))
            )
            each.append(concept_f1.pair(ious.reshape(len(found), len(truth))))
        scored.append(concept_f1.oracle(each))
    return concept_f1.summary(concept_f1.figures(scored))


NAMES = {"positive_micro_F1": "pmF1"}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), pairs=st.integers(1, 14), annotators=st.sampled_from([1, 3]),
       iou_type=st.sampled_from(["segm", "bbox"]))  # fmt: skip
def test_every_figure_is_sam3_s_cgf1_evaluator_s(
    tmp_path_factory: pytest.TempPathFactory, seed: int, pairs: int, annotators: int, iou_type: str
) -> None:
    folder = tmp_path_factory.mktemp("saco")
    paths, run = saco_files(seed, pairs, folder)
    paths = paths[:annotators]
    (folder / "run.json").write_text(json.dumps(run))
    cgf1 = reference()
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = cgf1.CGF1Evaluator(gt_path=[str(p) for p in paths], iou_type=iou_type)
        if not evaluator.eval_img_ids:
            return  # no pair exhaustive in every file: nothing to score
        theirs = evaluator.evaluate(str(folder / "run.json"))
    mine = ours(paths, run, iou_type)
    prefix = f"cgF1_eval_{iou_type}_"
    assert theirs
    for key, value in theirs.items():
        name = key.removeprefix(prefix)
        base, _, at = name.partition("@")
        ours_name = NAMES.get(base, base) + (f"@{at}" if at else "")
        expected = None if value == -1 else value
        assert mine[ours_name] == (None if expected is None else pytest.approx(expected, abs=1e-9)), (
            key,
            mine[ours_name],
            value,
        )


def files_of(folder: Path, pairs: list[dict], truths: list[list[dict]]) -> list[Path]:
    """SA-Co files of ``pairs`` (each an images entry's fields), one a truth (its annotations)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, drawn in enumerate(truths):
        entries = [{"id": p["id"], "file_name": "0.jpg", "height": H, "width": W, "text_input": "thing",
                    "is_instance_exhaustive": p.get("exhaustive", [True] * len(truths))[k]} for p in pairs]  # fmt: skip
        rows = [a | {"id": n + 1, "category_id": 1, "area": float(a["bbox"][2] * a["bbox"][3]),
                     "segmentation": rle(*a["bbox"]), "iscrowd": a.get("iscrowd", 0)} for n, a in enumerate(drawn)]  # fmt: skip
        path = folder / f"gold_edge_merged_{'abc'[k]}_release_test.json"
        path.write_text(
            json.dumps({"images": entries, "annotations": rows, "categories": [{"id": 1, "name": "object"}]})
        )
        paths.append(path)
    return paths


def box(image: int, x: int, y: int, score: float | None = None, crowd: int = 0) -> dict:
    found = {"image_id": image, "bbox": [x, y, 10, 10], "iscrowd": crowd}
    return found if score is None else found | {"category_id": 1, "segmentation": rle(x, y, 10, 10), "score": score}


# a negative phrase (pair 2) with a prediction
NEGATIVE = ([{"id": 1}, {"id": 2}], [[box(1, 2, 2)]], [box(1, 2, 2, 0.9), box(2, 5, 5, 0.8)])


def test_a_negative_s_detection_costs_the_image_level_only(tmp_path: Path) -> None:
    """A prediction on a negative phrase is an image-level false positive and leaves pmF1 as it
    was (the six edge cases against SAM 3's evaluator are the conformance corpus' concepts family)."""
    pairs, truths, run = NEGATIVE
    mine = ours(files_of(tmp_path / "both", pairs, truths), run, "segm")
    alone = ours(files_of(tmp_path / "one", pairs[:1], [[a for a in truths[0] if a["image_id"] == 1]]), run[:1], "segm")
    assert mine["pmF1"] == pytest.approx(alone["pmF1"], abs=1e-12) and mine["IL_MCC"] < alone["IL_MCC"] + 1e-12
    assert mine["IL_FP"] == 1 and alone["IL_FP"] == 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), annotators=st.sampled_from([1, 3]), iou_type=st.sampled_from(["segm", "bbox"]))
def test_the_command_scores_sa_co_files_as_sam3_s_evaluator(
    tmp_path_factory: pytest.TempPathFactory, seed: int, annotators: int, iou_type: str
) -> None:
    """``regionbench concepts``: the files read and checked, the pairs chosen by SA-Co's rule,
    each figure the reference's."""
    from regionbench.scoring import concept_files as concepts

    folder = tmp_path_factory.mktemp("saco-cli")
    paths, run = saco_files(seed, 10, folder)
    paths = paths[:annotators]
    (folder / "run.json").write_text(json.dumps(run))
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = reference().CGF1Evaluator(gt_path=[str(p) for p in paths], iou_type=iou_type)
        if not evaluator.eval_img_ids:
            return
        theirs = evaluator.evaluate(str(folder / "run.json"))
    report = concepts.score(paths, folder / "run.json", iou_type)
    assert report["pairs"] == len(evaluator.eval_img_ids)
    for key, value in theirs.items():
        base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
        name = NAMES.get(base, base) + (f"@{at}" if at else "")
        found = report["measures"][name]
        assert found == (None if value == -1 else pytest.approx(value, abs=1e-9)), key


DAMAGES = {
    "a pair without a phrase": (lambda f, run: f["images"][0].pop("text_input"), "pair 1: no text_input"),
    "a pair listed twice": (lambda f, run: f["images"].append(dict(f["images"][0])), "pair 1 is listed twice"),
    "an RLE of another size": (
        lambda f, run: f["annotations"][0]["segmentation"].update(size=[H + 1, W]),
        "its RLE is of size",
    ),
    "an RLE whose runs do not fit": (
        lambda f, run: run[0]["segmentation"].update(counts=[5, 3]),
        "RLE counts cover 8 pixels",
    ),
    "an instance of no pair": (lambda f, run: f["annotations"][0].update(image_id=999), "image_id 999 names no pair"),
    # SAM 3's evaluator indexes instances by id: a repeated one scores one instance in place of another
    "an instance id given twice": (
        lambda f, run: f["annotations"][1].update(id=f["annotations"][0]["id"]),
        "is the id of annotations[0] too",
    ),
    "a detection of no pair": (lambda f, run: run[0].update(image_id=999), "detection 0: image_id 999 names no pair"),
    "a detection without a score": (lambda f, run: run[0].pop("score"), "detection 0: no finite score"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path, damage: str) -> None:
    from conftest import regionbench_cli

    change, said = DAMAGES[damage]
    paths, run = saco_files(7, 6, tmp_path)
    found = json.loads(paths[0].read_text())
    assert found["annotations"] and run
    change(found, run)
    paths[0].write_text(json.dumps(found))
    (tmp_path / "run.json").write_text(json.dumps(run))
    done = regionbench_cli("concepts", "--annotations", *map(str, paths), "--predictions", str(tmp_path / "run.json"))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_prints_the_oracle_s_figures_and_writes_its_report(tmp_path: Path) -> None:
    from conftest import regionbench_cli

    paths, run = saco_files(3, 8, tmp_path)
    (tmp_path / "run.json").write_text(json.dumps(run))
    done = regionbench_cli("concepts", "--annotations", *map(str, paths), "--predictions", str(tmp_path / "run.json"),
                           "--out", str(tmp_path / "report.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert done.stdout.startswith(f"the oracle over the files  segm  {report['pairs']} pairs")
    assert f"cgF1                              {report['measures']['cgF1']:.4f}" in done.stdout


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), iou_type=st.sampled_from(["segm", "bbox"]))
def test_the_human_ceiling_is_each_annotator_scored_by_sam3_against_the_others(
    tmp_path_factory: pytest.TempPathFactory, seed: int, iou_type: str
) -> None:
    """Each file's instances as a run (score 1) against the oracle over the other two: its
    cgF1, pmF1 and IL_MCC are SAM 3's evaluator's on the same pairs, and the ceiling their mean."""
    from regionbench.scoring import concept_files as concepts

    folder = tmp_path_factory.mktemp("saco-ceiling")
    paths, run = saco_files(seed, 10, folder)
    for path in paths:  # every pair exhaustive: the pairs scored are the same whoever is the run
        found = json.loads(path.read_text())
        path.write_text(json.dumps(found | {"images": [e | {"is_instance_exhaustive": True} for e in found["images"]]}))
    (folder / "run.json").write_text(json.dumps(run))
    report = concepts.score(paths, folder / "run.json", iou_type)
    for k, path in enumerate(paths):
        drawn = [a | {"score": 1.0} for a in json.loads(path.read_text())["annotations"] if not a["iscrowd"]]
        (folder / "human.json").write_text(json.dumps(drawn))
        others = [str(p) for j, p in enumerate(paths) if j != k]
        with contextlib.redirect_stdout(io.StringIO()):
            theirs = reference().CGF1Evaluator(gt_path=others, iou_type=iou_type).evaluate(str(folder / "human.json"))
        mine = report["human_ceiling"]["per_annotator"][path.name]
        for name, key in (
            ("cgF1", "cgF1"),
            ("pmF1", "positive_micro_F1"),
            ("IL_MCC", "IL_MCC"),
            ("cgF1@0.5", "cgF1@0.5"),
        ):
            assert mine[name] == pytest.approx(theirs[f"cgF1_eval_{iou_type}_{key}"], abs=1e-9), (path.name, name)
    each = report["human_ceiling"]["per_annotator"].values()
    assert report["human_ceiling"]["cgF1"] == pytest.approx(np.mean([e["cgF1"] for e in each]), abs=1e-12)


def real_saco(truth: dict, rng: np.random.Generator, folder: Path) -> tuple[list[Path], Path]:
    """SA-Co files made from a real COCO instances file: each image's categories its positive
    pairs, two categories it lacks its negatives; three annotators drawn from the truth (a tenth of
    the instances dropped, each moved by up to three pixels, a tenth merged into another of its
    pair), crowds kept; a run from the truth (a sixth missed, the rest moved, a false detection a
    pair now and then), scores rounded to 0.1 (ties, some under 0.5). Returns the files and the run."""
    size = {e["id"]: (e["height"], e["width"]) for e in truth["images"]}
    names = {c["id"]: c["name"] for c in truth["categories"]}
    masks: dict[tuple[int, int], list[tuple[np.ndarray, int]]] = {}
    for a in truth["annotations"]:
        segmentation = a["segmentation"]
        h, w = size[a["image_id"]]
        if isinstance(segmentation, list):
            segmentation = coco_mask.merge(coco_mask.frPyObjects(segmentation, h, w))
        elif isinstance(segmentation["counts"], list):
            segmentation = coco_mask.frPyObjects(segmentation, h, w)
        masks.setdefault((a["image_id"], a["category_id"]), []).append((coco_mask.decode(segmentation), a["iscrowd"]))
    pairs, absent = [], []
    for image in sorted(size):
        present = sorted(c for i, c in masks if i == image)
        lacking = sorted(set(names) - set(present))
        absent = [int(c) for c in rng.choice(lacking, 2, replace=False)]
        for category in [*present, *absent]:
            pairs.append((len(pairs) + 1, image, category))
    entries = [{"id": p, "file_name": f"{image:012d}.jpg", "height": size[image][0], "width": size[image][1],
                "text_input": names[category], "is_instance_exhaustive": True} for p, image, category in pairs]  # fmt: skip

    def encoded(mask: np.ndarray) -> dict:
        rle = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
        return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode()}

    def moved(mask: np.ndarray, most: int) -> np.ndarray:
        dy, dx = (int(v) for v in rng.integers(-most, most + 1, 2))
        return np.roll(mask, (dy, dx), axis=(0, 1))

    def instance(p: int, mask: np.ndarray, crowd: int, n: int) -> dict:
        rle = encoded(mask)
        return {"id": n, "image_id": p, "category_id": 1, "segmentation": rle, "iscrowd": crowd,
                "bbox": [float(v) for v in coco_mask.toBbox(rle)], "area": float(mask.sum())}  # fmt: skip

    paths = []
    for who in "abc":
        rows: list[dict] = []
        for p, image, category in pairs:
            drawn = [(m, c) for m, c in masks.get((image, category), []) if rng.random() >= 0.1]
            if len(drawn) > 1 and rng.random() < 0.1:  # two instances drawn as one
                (first, crowd), (second, _) = drawn[0], drawn[1]
                drawn = [(np.logical_or(first, second).astype(np.uint8), crowd), *drawn[2:]]
            for m, c in drawn:
                rows.append(instance(p, moved(m, 3), c, len(rows) + 1))
        path = folder / f"gold_coco_merged_{who}_release_test.json"
        path.write_text(
            json.dumps({"images": entries, "annotations": rows, "categories": [{"id": 1, "name": "object"}]})
        )
        paths.append(path)
    run = []
    for p, image, category in pairs:
        for mask, crowd in masks.get((image, category), []):
            if not crowd and rng.random() >= 1 / 6:
                run.append(instance(p, moved(mask, 4), 0, 0) | {"score": round(float(rng.random()), 1)})
        if rng.random() < 0.2:
            h, w = size[image]
            false = np.zeros((h, w), dtype=np.uint8)
            false[h // 4 : h // 2, w // 4 : w // 2] = 1
            run.append(instance(p, false, 0, 0) | {"score": round(float(rng.random()), 1)})
    for d in run:
        d.pop("id"), d.pop("iscrowd"), d.pop("area")
    (folder / "run.json").write_text(json.dumps(run))
    return paths, folder / "run.json"


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_a_collection_made_from_real_coco_scores_as_sam3_s_evaluator(real_data, tmp_path: Path, iou_type: str) -> None:
    """COCO's real val2017 subset made SA-Co files (three annotators drawn from its truth, negatives,
    tied scores): one annotator and the oracle over three, every figure SAM 3's to 1e-9."""
    from regionbench.scoring import concept_files as concepts

    truth = json.loads((real_data("coco-tiny") / "annotations/instances_val2017.json").read_text())
    paths, run = real_saco(truth, np.random.default_rng(7), tmp_path)
    for chosen in (paths[:1], paths):
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator = reference().CGF1Evaluator(gt_path=[str(p) for p in chosen], iou_type=iou_type)
            theirs = evaluator.evaluate(str(run))
        report = concepts.score(chosen, run, iou_type)
        assert report["pairs"] == len(evaluator.eval_img_ids) == 484
        assert report["measures"]["IL_TN"] > 100 and report["measures"]["IL_FP"] > 0  # negatives, and some hit
        for key, value in theirs.items():
            base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
            name = NAMES.get(base, base) + (f"@{at}" if at else "")
            found = report["measures"][name]
            assert found == (None if value == -1 else pytest.approx(value, abs=1e-9)), (len(chosen), key)
