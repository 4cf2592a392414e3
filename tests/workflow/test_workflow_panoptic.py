"""Panoptic trees as published build, verify and export back pixel-exact, and a panoptic run
scores as the COCO panoptic API scores it (``pq_compute``), on releases the workflow builds."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import regionbench_cli
from farm import Built
from panopticapi.evaluation import pq_compute
from PIL import Image
from test_readme import matches

import regionbench
from regionbench import release
from regionbench.io import panoptic

RELEASE = "releases/panoptic-demo/v1.0.0"


@pytest.fixture(scope="module")
def coco(release: Callable[[str], Built]) -> Path:
    """The tiny profile as a COCO panoptic tree of two annotators, built (the farm's project)."""
    return release("panoptic-coco").project


def _quiet_pq(gt_json: Path, pred_json: Path) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        return pq_compute(str(gt_json), str(pred_json), str(gt_json.with_suffix("")), str(pred_json.with_suffix("")))


def _merged(documents: list[Path], out: Path) -> Path:
    """One panoptic JSON and folder of several (the splits of one annotator): what a run is."""
    merged: dict = {"images": [], "annotations": []}
    out.with_suffix("").mkdir(parents=True)
    for path in documents:
        document = json.loads(path.read_text())
        merged["images"] += document["images"]
        merged["annotations"] += document["annotations"]
        merged["categories"] = document["categories"]
        for png in path.with_suffix("").iterdir():
            shutil.copy(png, out.with_suffix("") / png.name)
    out.write_text(json.dumps(merged))
    return out


def _evaluate(folder: Path, run: Path, *extra: str) -> subprocess.CompletedProcess:
    return regionbench_cli(
        "evaluate", "--release", str(folder), "--predictions", str(run), "--task", "panoptic", "--split", "all", *extra
    )


def test_the_built_release_exports_back_to_what_the_pq_api_calls_identical(coco: Path, tmp_path: Path) -> None:
    """Each annotator's export scores PQ 1.0 against its source files (things and stuff), and
    each exported PNG holds the source's segment ids pixel for pixel."""
    folder = coco / RELEASE
    assert release.verify(folder) == []
    raw = coco / "resources/raw/panoptic-demo"
    if not raw.is_dir():
        raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    for who in ("annotator1", "annotator2"):
        out = tmp_path / who
        done = regionbench_cli(
            "export", str(folder), str(out), "--format", "coco-panoptic", "--annotator", who, "--images", str(raw)
        )
        assert done.returncode == 0, done.stderr
        for split in ("train2017", "val2017"):
            source = raw / f"annotations/{who}/panoptic_{split}.json"
            exported = out / f"annotations/panoptic_{split}.json"
            result = _quiet_pq(source, exported)
            assert result["All"]["pq"] == 1.0 and result["All"]["n"] > 0
            assert result["Things"]["pq"] == 1.0 and result["Stuff"]["pq"] == 1.0
            for png in source.with_suffix("").iterdir():
                ours = panoptic.rgb_to_id(np.asarray(Image.open(exported.with_suffix("") / png.name)))
                assert np.array_equal(ours, panoptic.rgb_to_id(np.asarray(Image.open(png))))
        assert sorted(p.name for p in (out / "images/val2017").iterdir()) == sorted(
            p.name for p in (raw / "images/val2017").iterdir()
        )


def _annotators_as_run_and_truth(coco: Path, tmp_path: Path) -> tuple[Path, Path]:
    """annotator2's files merged as a run, and annotator1's regions exported and merged as the
    truth the COCO panoptic API scores it against."""
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "panoptic_run.json")
    truth_export = tmp_path / "truth"
    done = regionbench_cli(
        "export", str(coco / RELEASE), str(truth_export), "--format", "coco-panoptic", "--annotator", "annotator1"
    )
    assert done.returncode == 0, done.stderr
    return run, _merged(sorted((truth_export / "annotations").glob("*.json")), tmp_path / "gt" / "panoptic_gt.json")


def test_a_panoptic_run_scores_as_the_coco_panoptic_api_scores_it(coco: Path, tmp_path: Path) -> None:
    """annotator2's files as a run against annotator1's regions: PQ, SQ, RQ (all, things, stuff)
    and per class equal ``pq_compute`` of the same files against annotator1's export, to 1e-12;
    with two annotators the human ceiling is the same pair both ways."""
    folder = coco / RELEASE
    run, truth = _annotators_as_run_and_truth(coco, tmp_path)
    expected = _quiet_pq(truth, run)
    report = tmp_path / "report.json"
    done = _evaluate(folder, run, "--annotator", "annotator1", "--out", str(report))
    assert done.returncode == 0, done.stderr
    ours = json.loads(report.read_text())
    for theirs, mine in (("All", "all"), ("Things", "things"), ("Stuff", "stuff")):
        for key in ("pq", "sq", "rq"):
            assert abs(ours["measures"][mine][key] - expected[theirs][key]) <= 1e-12, (mine, key)
        assert ours["measures"][mine]["n"] == expected[theirs]["n"]
    names = {c["id"]: c["name"] for c in json.loads(truth.read_text())["categories"]}
    for category_id, figures in expected["per_class"].items():
        label = names[category_id].lower()
        if label in ours["per_class"]:
            assert all(abs(ours["per_class"][label][k] - figures[k]) <= 1e-12 for k in ("pq", "sq", "rq"))
        else:
            assert figures == {"pq": 0.0, "sq": 0.0, "rq": 0.0}  # counted nothing: in neither mean
    assert ours["conventions"] and set(ours["levels"]) == {"1"}
    assert set(ours["per_image"]) <= {str(i) for i in range(1, 25)}
    ceiling = ours["human_ceiling"]
    assert abs(ceiling["per_annotator"]["annotator2"]["pq"] - expected["All"]["pq"]) <= 1e-12


def test_a_panoptic_run_s_intervals_resample_the_api_s_per_image_statistics(coco: Path, tmp_path: Path) -> None:
    """Each resample's PQ, SQ and RQ (all, things, stuff) are ``pq_compute``'s per-image
    statistics (``pq_compute_single_core`` of one image) summed over the drawn images, images
    sorted by their files' stems and drawn as ``rng.integers(0, n, size=n)`` in order; and the
    interval is numpy's 2.5 and 97.5 percentiles of them."""
    from panopticapi.evaluation import PQStat, pq_compute_single_core

    from regionbench.scoring import tasks

    folder = coco / RELEASE
    run, truth = _annotators_as_run_and_truth(coco, tmp_path)
    ours = tasks.evaluate(regionbench.load(folder), run, "panoptic", split="all", annotator="annotator1", resamples=40,
                          seed=3)  # fmt: skip
    gt, pred = json.loads(truth.read_text()), json.loads(run.read_text())
    categories = {c["id"]: c for c in gt["categories"]}
    by_name = {a["file_name"]: a for a in pred["annotations"]}
    per_image = {}
    for annotation in gt["annotations"]:
        with contextlib.redirect_stdout(io.StringIO()):
            per_image[Path(annotation["file_name"]).stem] = pq_compute_single_core(
                0, [(annotation, by_name[annotation["file_name"]])], str(truth.with_suffix("")),
                str(run.with_suffix("")), categories,
            )  # fmt: skip
    order = sorted(per_image)
    assert ours["resampled"]["images"] == len(order)
    rng = np.random.default_rng(3)
    for b in range(40):
        total = PQStat()
        for j in rng.integers(0, len(order), size=len(order)):
            total += per_image[order[j]]
        for group, isthing in (("all", None), ("things", True), ("stuff", False)):
            expected, _ = total.pq_average(categories, isthing=isthing)
            for key in ("pq", "sq", "rq"):
                found = ours["resampled"]["values"].get(f"{group}.{key}")
                if found is not None and found[b] is not None:
                    assert abs(found[b] - expected[key]) <= 1e-12, (group, key, b)
    values = ours["resampled"]["values"]["all.pq"]
    low, high = np.percentile(values, [2.5, 97.5])
    assert (ours["intervals"]["all.pq"]["low"], ours["intervals"]["all.pq"]["high"]) == (low, high)


def test_the_worked_panoptic_example_runs(coco: Path) -> None:
    """docs/scoring.md's panoptic example: the output it shows is this release's."""
    from conftest import readme_blocks

    (block,) = [b for b in readme_blocks() if (b.by or "").endswith("::test_the_worked_panoptic_example_runs")]
    lines = block.body.splitlines()
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    merged = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), coco / "run-files" / "run.json")
    (coco / "run").mkdir()
    for path in [merged, *merged.with_suffix("").iterdir()]:  # one folder: the JSON and its PNGs
        shutil.copy(path, coco / "run" / path.name)
    done = regionbench_cli(*shlex.split(lines[0].removeprefix("$ "))[1:], cwd=coco)
    assert done.returncode == 0, done.stderr
    assert matches(lines[1:], (done.stderr + done.stdout).splitlines()), done.stderr + done.stdout


@pytest.mark.parametrize("flavour", ["cityscapes", "ade20k"])
def test_cityscapes_and_ade20k_panoptic_trees_build_verify_and_export_back(
    release: Callable[[str], Built], tmp_path: Path, flavour: str
) -> None:
    built = release(f"panoptic-{flavour}")
    raw, folder = built.raw, built.folder
    out = tmp_path / "export"
    done = regionbench_cli("export", str(folder), str(out), "--format", "coco-panoptic")
    assert done.returncode == 0, done.stderr
    for source in panoptic.sources(raw):
        exported = out / source.json  # the file where the source had it
        assert _quiet_pq(raw / source.json, exported)["All"]["pq"] == 1.0
        names = {a["file_name"].removesuffix("_gtFine_panoptic.png").removesuffix(".png") for a in
                 json.loads((raw / source.json).read_text())["annotations"]}  # fmt: skip
        for png in (raw / source.folder).iterdir():
            stem = png.name.removesuffix("_gtFine_panoptic.png").removesuffix(".png")
            assert stem in names
            mine = next(exported.with_suffix("").glob(f"{stem}*.png"))
            ours = panoptic.rgb_to_id(np.asarray(Image.open(mine)))
            assert np.array_equal(ours, panoptic.rgb_to_id(np.asarray(Image.open(png))))
    # a run of every split, a third of its segments relabelled: each source split's figures in one
    # pass, the val split's those of a run scored on val alone (the release's test side is val)
    runs = {}
    for side, splits in (("all", ("train", "val")), ("test", ("val",))):  # the test side's files only
        chosen = [raw / source.json for source in panoptic.sources(raw) if source.split in splits]
        run = runs[side] = _merged(chosen, tmp_path / f"run-{side}" / "run.json")
        document = json.loads(run.read_text())
        ids = [c["id"] for c in document["categories"]]
        for entry in document["annotations"]:
            for j, segment in enumerate(entry["segments_info"]):
                if (len(entry["file_name"]) + j) % 3 == 0:  # the same segments in both runs
                    segment["category_id"] = ids[(ids.index(segment["category_id"]) + 1) % len(ids)]
        run.write_text(json.dumps(document))
    reports = {}
    for side, run in runs.items():
        done = regionbench_cli(
            "evaluate",
            "--release",
            str(folder),
            "--predictions",
            str(run),
            "--task",
            "panoptic",
            "--split",
            side,
            "--out",
            str(tmp_path / f"{side}.json"),
        )
        assert done.returncode == 0, done.stderr
        reports[side] = json.loads((tmp_path / f"{side}.json").read_text())
    split = reports["all"]["per_source_split"]
    assert sorted(split) == ["train", "val"] and split["val"]["all"]["pq"] < 1
    assert split["val"] == {"images": reports["test"]["images"]} | reports["test"]["measures"]


@pytest.mark.browser
def test_a_panoptic_run_is_drawn_beside_the_truth_stuff_apart_from_things(browser, coco: Path, tmp_path: Path) -> None:
    """``view`` of a scored panoptic run: every predicted segment drawn with its outcome, the
    outcomes summing to the report's TP and FP per class; stuff (the source's isthing 0) dotted
    apart from things, in the truth's layers and the run's, in Chromium."""
    from conftest import open_page, view

    folder = coco / RELEASE
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "run.json")
    report = tmp_path / "report.json"
    done = _evaluate(folder, run, "--annotator", "annotator1", "--out", str(report))
    assert done.returncode == 0, done.stderr
    scored = json.loads(report.read_text())
    site = tmp_path / "site"
    done = view(str(folder), "--out", str(site), "--images", str(raw), "--run", str(report), "--predictions", str(run))
    assert done.returncode == 0, done.stderr
    stuff = {c["name"] for c in json.loads(run.read_text())["categories"] if not c["isthing"]}
    outcomes: dict[str, dict[str, int]] = {}
    for image_id in scored["per_image"]:
        text = (site / "data" / "img" / f"{image_id}.js").read_text()
        page = json.loads(text[len('RB.load("image",') : -len(");\n")])
        for shape in page["drawn"]:
            assert shape["path"] and (shape["facts"]["kind"] == "stuff") == (shape["label"] in stuff)
            counted = outcomes.setdefault(shape["label"], {"matched": 0, "unmatched": 0, "left out": 0})
            counted[shape["facts"]["outcome"]] += 1
        for regions in page["layers"].values():
            assert all(region["stuff"] == (region["label"] in stuff) for region in regions)
    for label, figures in scored["per_class"].items():
        assert outcomes.get(label, {}).get("matched", 0) == figures["tp"]
        assert outcomes.get(label, {}).get("unmatched", 0) == figures["fp"]
    errors: list[str] = []
    first = next(iter(scored["per_image"]))
    page = open_page(browser, f"file://{site}/image.html?id={first}", errors)
    page.wait_for_selector("#outlines g.run path")
    assert page.locator("#outlines g[data-annotator='annotator1'] path.stuff").count() > 0
    assert page.locator("#outlines g.run path.stuff").count() > 0
    assert page.locator("#outlines g.run path:not(.stuff)").count() > 0
    assert "(stuff)" in page.inner_text("#regions")
    assert errors == []


def test_against_every_annotator_each_is_its_own_truth(coco: Path, tmp_path: Path) -> None:
    """``--all-annotators``: the run against each annotator gives what ``--annotator`` gives for
    it, the headline their mean."""
    folder = coco / RELEASE
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "run.json")
    every = tmp_path / "every.json"
    assert _evaluate(folder, run, "--all-annotators", "--out", str(every)).returncode == 0
    report = json.loads(every.read_text())
    assert set(report["per_annotator"]) == {"annotator1", "annotator2"}
    for who in ("annotator1", "annotator2"):
        one = tmp_path / f"{who}.json"
        assert _evaluate(folder, run, "--annotator", who, "--out", str(one)).returncode == 0
        assert report["per_annotator"][who] == json.loads(one.read_text())["measures"]["all"]
    assert report["per_annotator"]["annotator2"]["pq"] == 1.0  # the run is annotator2's own files
    assert report["measures"]["all"]["pq"] == pytest.approx(
        np.mean([v["pq"] for v in report["per_annotator"].values()])
    )
    # the headline's resamples: "all" each annotator's on the same images averaged, the groups the first's
    alone = {who: json.loads((tmp_path / f"{who}.json").read_text()) for who in ("annotator1", "annotator2")}
    for name, values in report["resampled"]["values"].items():
        mine = [np.array(r["resampled"]["values"][name], dtype=float) for r in alone.values()]
        expected = np.mean(mine, axis=0) if name.startswith("all.") else mine[0]
        assert np.allclose(np.array(values, dtype=float), expected, atol=1e-12, equal_nan=True), name


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("unknown category", "unknown category_id 999"),
        ("id not in png", "have no pixels in the PNG"),
        ("png id not in json", "are in the map but not in its segments"),
        ("wrong size", "its image 160x120"),
        ("unknown image", "name no image of the release"),
        ("second entry", "has a second entry"),
        ("segment id 0", "0 is VOID"),
    ],
)
def test_a_run_the_task_cannot_score_is_one_line(coco: Path, tmp_path: Path, damage: str, said: str) -> None:
    folder = coco / RELEASE
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "run.json")
    document = json.loads(run.read_text())
    entry = document["annotations"][0]
    png = run.with_suffix("") / entry["file_name"]
    if damage == "unknown category":
        entry["segments_info"][0]["category_id"] = 999
    elif damage == "id not in png":
        entry["segments_info"].append({"id": 4242, "category_id": entry["segments_info"][0]["category_id"]})
    elif damage == "png id not in json":
        entry["segments_info"].pop()
    elif damage == "wrong size":
        Image.open(png).resize((20, 10)).save(png)
    elif damage == "unknown image":
        document["annotations"].append(dict(entry, image_id=999999, file_name="nothing.png"))
    elif damage == "second entry":
        document["annotations"].append(dict(entry))
    elif damage == "segment id 0":
        entry["segments_info"][0]["id"] = 0
    run.write_text(json.dumps(document))
    done = _evaluate(folder, run)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(("batch", "cores"), [(3, 1), (2, 2)])
def test_a_panoptic_run_scored_in_batches_on_workers_is_the_run_scored_whole(
    coco: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, cores: int
) -> None:
    """The runner's batches and workers change no figure: against each annotator and with the
    human ceiling, a run scored a few images at a time on worker processes is the run scored in
    one batch in one process (the tallies' floats added image by image in order)."""
    from regionbench.scoring import runner, tasks

    folder = coco / RELEASE
    raw = next(p.parent for p in coco.glob("resources/**/annotations") if p.is_dir())
    run = _merged(sorted((raw / "annotations/annotator2").glob("*.json")), tmp_path / "run" / "panoptic_run.json")
    data = regionbench.load(folder)
    whole = tasks.evaluate(data, run, "panoptic", split="all", all_annotators=True)
    monkeypatch.setattr(runner, "BATCH", batch)
    assert tasks.evaluate(data, run, "panoptic", split="all", all_annotators=True, cores=cores) == whole
    assert whole["human_ceiling"]
