"""Scoring runs against a release: strict run files, the three tasks, the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import regionbench_cli, truth_label_maps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import regionbench
from regionbench.scoring import results, runner, tasks
from regionbench.scoring.tasks import _labels, _masks
from regionbench.scoring.tasks import image as image_task
from regionbench.scoring.tasks import imageclef as imageclef_task
from regionbench.scoring.tasks import instances as instances_task
from regionbench.scoring.tasks import segments as segments_task
from regionbench.scoring.tasks import semantic as semantic_task

VERSION = "releases/tiny/v1.0.0"


@pytest.fixture(scope="module")
def task(tiny_build: Path) -> _labels.Subset:
    return _labels.subset_truth(regionbench.load(tiny_build / VERSION), "H")


def run_line(image: int, pairs: list[tuple[str, str]]) -> str:
    return str(image) + "".join(f" {c} {b}" for c, b in pairs)


def perfect_run(task: _labels.Subset) -> list[str]:
    return [
        run_line(i, [("1" if c in task.test[i] else "0", "1" if c in task.test[i] else "0") for c in task.labels])
        for i in sorted(task.test)
    ]


def evaluate_cli(*args: str) -> subprocess.CompletedProcess:
    return regionbench_cli("evaluate", *args)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: [*lines[:1], lines[1] + " 0.5 1", *lines[2:]], "line 2: 133 fields, expected 131"),
        (lambda lines: [lines[0].replace(" ", "  ", 1), *lines[1:]], "line 1: 132 fields"),
        (
            lambda lines: ["9999" + lines[0][lines[0].index(" ") :], *lines[1:]],
            "line 1: image '9999' is no scored image of the subset",
        ),
        (lambda lines: [*lines, lines[0]], "image {first} already given on line 1"),
        (lambda lines: lines[1:], "1 scored images have no line"),
        (
            lambda lines: [lines[0].split(" ", 1)[0] + " 1.5 1" + lines[0].split(" ", 1)[1][3:], *lines[1:]],
            "confidence '1.5' for concept 0",
        ),
        (
            lambda lines: [lines[0].split(" ", 1)[0] + " x 1" + lines[0].split(" ", 1)[1][3:], *lines[1:]],
            "confidence 'x' for concept 0",
        ),
        (
            lambda lines: [lines[0].split(" ", 1)[0] + " 1 2" + lines[0].split(" ", 1)[1][3:], *lines[1:]],
            "binary '2' for concept 0",
        ),
    ],
)
def test_malformed_run_files_name_the_line(task: _labels.Subset, tmp_path: Path, damage, message: str) -> None:
    assert len(task.labels) == 65  # 1 + 2 x 65 = 131 fields per line
    lines = damage(perfect_run(task))
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(tasks.TaskError) as failed:
        results.read_imageclef_run(path, sorted(task.test), task.labels)
    assert message.format(first=sorted(task.test)[0]) in str(failed.value)
    assert str(failed.value).startswith(f"{path}: ")


def score(release: Path, predictions: Path, task: str, *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``regionbench evaluate`` and return the process and its JSON report."""
    out = predictions.with_suffix(".report.json")
    done = evaluate_cli(
        "--release", str(release), "--predictions", str(predictions), "--task", task, "--out", str(out), *options
    )
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text())


def test_perfect_runs_score_one(tiny_build: Path, task: _labels.Subset, tmp_path: Path) -> None:
    release = tiny_build / VERSION
    run = tmp_path / "run.txt"
    run.write_text("\n".join(perfect_run(task)) + "\n")
    done, report = score(release, run, "imageclef")
    measures = report["measures"]
    assert all(v == pytest.approx(1.0) for k, v in measures.items() if k != "concepts_scored")
    assert "mnap" in done.stdout and "1.0000" in done.stdout

    regions = task.regions[["image_id", "region_id", "label"]]
    regions.to_csv(tmp_path / "regions.csv", index=False)
    _, report = score(release, tmp_path / "regions.csv", "region")
    assert report["measures"]["any"] == {"e_hard": 1.0, "soft": 1.0, "mean_e": 0.0}
    assert np.trace(np.array(report["confusion"]["matrix"])) == len(task.regions)

    rows = [(i, c, 1.0 if c in task.test[i] else 0.0) for i in task.test for c in task.labels]
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_parquet(tmp_path / "scores.parquet")
    k = max(len(t) for t in task.test.values())
    _, report = score(release, tmp_path / "scores.parquet", "image", "--k", str(k), "--semantic-threshold", "0.5")
    assert report["measures"]["top_k"]["r_i"] == 1.0 and report["measures"]["example_based"]["recall"] == 1.0
    assert report["measures"]["semantic"]["example_based"]["recall"] == 1.0
    assert set(report["diagnostics"]["baselines"]) == {"rarest", "most_frequent", "random"}


@pytest.mark.parametrize("subset", list("ABCDEFGH"))
def test_a_perfect_image_level_run_scores_one_on_every_measure(tiny_build: Path, tmp_path: Path, subset: str) -> None:
    data = regionbench.load(tiny_build / VERSION)
    spec = _labels.subset_truth(data, subset)
    # The image split: every image of the subset on one side, its truth all of its labels.
    members = data.subsets[data.subsets["subset"] == subset]
    assert (members.groupby("image_id")["image_split"].nunique() == 1).all()
    assert not set(spec.test) & set(spec.train) and set(spec.test) | set(spec.train) == set(members["image_id"])
    for image_id, labels in spec.test.items():
        assert labels == set(members.loc[members["image_id"] == image_id, "label"])

    tree = tasks.release_hierarchy(data)
    rows = [(i, c, 1.0) for i in spec.test for c in sorted(spec.test[i])]
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(tmp_path / "scores.csv", index=False)
    k = max(len(t) for t in spec.test.values())
    image = tasks.evaluate(data, tmp_path / "scores.csv", "image", tree, subset=subset, k=k, semantic_threshold=0.5)
    run = tmp_path / "run.txt"
    run.write_text("\n".join(perfect_run(spec)) + "\n")
    clef = tasks.evaluate(data, run, "imageclef", tree, subset=subset)
    measures = [
        (f"image.{family}.{name}", value)
        for family, values in image["measures"].items()
        for name, value in (values.items() if family != "semantic" else values["example_based"].items())
        if name not in ("n_plus", "threshold")
    ]
    measures += [
        (f"image.semantic.label_based.{n}", v) for n, v in image["measures"]["semantic"]["label_based"].items()
    ]
    measures += [(f"imageclef.{n}", v) for n, v in clef["measures"].items() if n != "concepts_scored"]
    measures += [
        (f"image.overlap.{part}.{n}", image["overlap"][f"{part}_overlapping"][n])
        for part in ("most", "least")
        for n in ("p_l", "r_l", "f1_l", "p_i", "r_i", "f1_i")
        if "overlap" in image
    ]
    assert measures and [name for name, value in measures if value != pytest.approx(1.0)] == []
    assert image["measures"]["top_k"]["n_plus"] == image["concepts_in_test"]


def test_image_scores_outside_the_vocabulary_are_refused(task: _labels.Subset, tmp_path: Path) -> None:
    image = sorted(task.test)[0]
    rows = [(image, "sky-blue", 0.9), (image, "unicorn", 0.5)]
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(tmp_path / "scores.csv", index=False)
    with pytest.raises(tasks.TaskError, match=r"row 3: label 'unicorn' is not in the release's vocabulary"):
        image_task.read_image_scores(tmp_path / "scores.csv", task)


def test_region_predictions_must_cover_the_test_split(tiny_build: Path, task: _labels.Subset, tmp_path: Path) -> None:
    regions = task.regions[["image_id", "region_id", "label"]]
    pd.concat([regions.iloc[1:], regions.iloc[2:3]]).to_csv(tmp_path / "bad.csv", index=False)
    done = evaluate_cli(
        "--release", str(tiny_build / VERSION), "--predictions", str(tmp_path / "bad.csv"), "--task", "region"
    )
    assert done.returncode == 2
    assert "predicted twice" in done.stderr and "1 scored regions have no prediction" in done.stderr


def test_semantic_similarity_is_a_python_hook(
    tiny_build: Path, task: _labels.Subset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_similarity.py").write_text("def factory(tree):\n    return lambda true, predicted: 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = regionbench.load(tiny_build / VERSION)
    # Every image gets the same wrong-ish labels: the hook calls every pair similar, so each
    # prediction takes one truth, where the hierarchy similarity takes few.
    rows = [(i, label, 1.0) for i in task.test for label in task.labels[:3]]
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(tmp_path / "scores.csv", index=False)
    tree = tasks.release_hierarchy(data)
    hooked = tasks.evaluate(data, tmp_path / "scores.csv", "image", tree, semantic_threshold=0.5,
                            similarity="my_similarity:factory")  # fmt: skip
    plain = tasks.evaluate(data, tmp_path / "scores.csv", "image", tree, semantic_threshold=0.5)
    assert hooked["measures"]["semantic"]["similarity"] == "my_similarity:factory"
    # One to one: an image's three predictions take min(3, |T|) of its truths.
    recall = np.mean([min(3, len(t)) / len(t) for t in task.test.values()])
    assert hooked["measures"]["semantic"]["example_based"]["recall"] == pytest.approx(recall)
    assert plain["measures"]["semantic"]["example_based"]["recall"] < recall
    with pytest.raises(tasks.TaskError, match="cannot load the hook"):
        image_task.similarity_function("my_similarity:missing", tree)
    with pytest.raises(tasks.TaskError, match="use 'hierarchy' or a hook"):
        image_task.similarity_function("embedding", tree)


def test_imageclef_results_per_concept_category(tiny_build: Path, task: _labels.Subset, tmp_path: Path) -> None:
    data = regionbench.load(tiny_build / VERSION)
    run = tmp_path / "run.txt"
    run.write_text("\n".join(perfect_run(task)) + "\n")
    categories = tmp_path / "categories.txt"
    named = task.labels[:10]
    categories.write_text(
        "# concept category\n" + "".join(f"{c} {'even' if n % 2 else 'odd'}\n" for n, c in enumerate(named))
    )
    report = tasks.evaluate(data, run, "imageclef", categories=categories)
    groups = report["per_category"]
    assert list(groups) == ["even", "odd", "uncategorised"]
    assert [groups[g]["concepts"] for g in groups] == [5, 5, len(task.labels) - 10]
    # A perfect run: every concept with a relevant test image has AP 1 in its category.
    assert all(groups[g]["mnap"] == pytest.approx(1.0) for g in groups if groups[g]["concepts_scored"])
    assert sum(groups[g]["concepts_scored"] for g in groups) == report["measures"]["concepts_scored"]
    assert "per_category.even.mnap" in tasks.render(report)

    categories.write_text(f"{named[0]} a\n{named[0]} b\nunicorn a\n{named[1]}\n")
    with pytest.raises(tasks.TaskError) as failed:
        imageclef_task.read_categories(categories, task.labels)
    assert str(failed.value).splitlines() == [
        f"{categories}: line 2: concept {named[0]!r} already has category 'a'",
        f"{categories}: line 3: concept 'unicorn' is not a concept of the subset",
        f"{categories}: line 4: 1 fields, expected '<concept> <category>'",
    ]


def test_overlap_analysis_by_hand() -> None:
    # Two training images at 0 and 2 on one axis (mean 1, std 1): standardised to -1 and 1.
    descriptors = np.array([[0.0], [2.0], [0.0], [10.0], [1.0], [-4.0], [2.0]])
    truth = [{"a"}, {"b"}, {"a"}, {"b"}, {"a", "b"}]
    ranked = [["a"], ["a"], ["b"], ["b"], ["a"]]
    report = image_task.overlap_analysis(descriptors, 2, truth, ranked, ["a", "b"], neighbours=1, share=0.4)
    # Standardised test images -1, 9, 0, -5, 1: nearest-train distances 0, 8, 1, 4, 0. The two
    # most overlapping are positions 0 and 4, the two least positions 1 and 3.
    assert report["neighbours"] == 1 and report["share"] == 0.4
    most, least = report["most_overlapping"], report["least_overlapping"]
    assert most["images"] == 2 and most["mean_distance"] == pytest.approx(0.0)
    assert least["mean_distance"] == pytest.approx(6.0)
    # Most: truths {a}, {a, b}, predictions a, a: label a P 1 R 1, label b P 0 R 0.
    assert (most["p_l"], most["r_l"], most["n_plus"]) == (0.5, 0.5, 1)
    assert (most["p_i"], most["r_i"]) == (1.0, 0.75)
    # Least: truths {b}, {b}, predictions a, b: only b is present (P 1, R 1/2); per image the
    # false positive a counts.
    assert (least["p_l"], least["r_l"], least["p_i"], least["r_i"]) == (1.0, 0.5, 0.5, 0.5)


def test_the_image_task_reports_train_overlap(tiny_build: Path, task: _labels.Subset, tmp_path: Path) -> None:
    data = regionbench.load(tiny_build / VERSION)
    rows = [(i, c, 1.0) for i in task.test for c in sorted(task.test[i])]
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(tmp_path / "scores.csv", index=False)
    tree = tasks.release_hierarchy(data)
    k = max(len(t) for t in task.test.values())
    report = tasks.evaluate(data, tmp_path / "scores.csv", "image", tree, subset="H", k=k)
    overlap = report["overlap"]
    size = max(1, round(0.2 * len(task.test)))
    assert overlap["descriptors"] == "regions"
    assert overlap["most_overlapping"]["images"] == overlap["least_overlapping"]["images"] == size
    assert overlap["most_overlapping"]["mean_distance"] <= overlap["least_overlapping"]["mean_distance"]
    assert overlap["most_overlapping"]["r_i"] == overlap["least_overlapping"]["r_i"] == 1.0

    # Features from a file: one numeric column per dimension; train images first-come by id.
    everyone = sorted(task.train) + sorted(task.test)
    features = pd.DataFrame({"image_id": everyone, "f": [float(i in task.test) * i for i in everyone]})
    features.to_csv(tmp_path / "features.csv", index=False)
    done = evaluate_cli(
        "--release", str(tiny_build / VERSION), "--predictions", str(tmp_path / "scores.csv"),
        "--task", "image", "--k", str(k), "--image-features", str(tmp_path / "features.csv"),
        "--out", str(tmp_path / "report.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    from_file = json.loads((tmp_path / "report.json").read_text())["overlap"]
    assert from_file["descriptors"] == "features.csv"
    assert "overlap.most_overlapping.p_i" in done.stdout
    features.iloc[1:].to_csv(tmp_path / "short.csv", index=False)
    done = evaluate_cli(
        "--release", str(tiny_build / VERSION), "--predictions", str(tmp_path / "scores.csv"),
        "--task", "image", "--image-features", str(tmp_path / "short.csv"),
    )  # fmt: skip
    assert (
        done.returncode == 2
        and f"short.csv: 1 train or test images of the subset have no row, e.g. {everyone[0]}" in done.stderr
    )


def test_the_imageclef_export_writes_each_subsets_run_order(tiny_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "clef"
    done = regionbench_cli("export-imageclef", str(tiny_build / VERSION), str(out))
    assert done.returncode == 0, done.stderr
    assert "no concept or annotation files: they need the judgments of at least 3 annotators" in done.stdout
    assert sorted(p.name for p in (out / "runs").iterdir()) == list("ABCDEFGH")
    # A run written from the exported order alone, with each image's labels, scores 1.0.
    data = regionbench.load(tiny_build / VERSION)
    concepts = (out / "runs/E/concepts.txt").read_text().split()
    images = [int(i) for i in (out / "runs/E/images.txt").read_text().split()]
    truth = {
        i: set(data.subsets[(data.subsets["subset"] == "E") & (data.subsets["image_id"] == i)]["label"]) for i in images
    }
    lines = [run_line(i, [("1", "1") if c in truth[i] else ("0", "0") for c in concepts]) for i in images]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    _, report = score(tiny_build / VERSION, tmp_path / "run.txt", "imageclef", "--subset", "E")
    assert report["measures"]["mnap"] == 1.0 and report["measures"]["f1_photo_instance"] == 1.0
    again = regionbench_cli("export-imageclef", str(tiny_build / VERSION), str(out))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_label_maps_of_the_truth_score_one_and_a_missing_one_counts(tiny_build: Path, tmp_path: Path) -> None:
    folder = tiny_build / VERSION
    written = truth_label_maps(folder, tmp_path / "maps")
    report = tmp_path / "semantic.json"
    done = evaluate_cli(
        "--release", str(folder), "--predictions", str(tmp_path / "maps"), "--task", "semantic", "--out", str(report)
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    assert found["images"] == len(written) and found["images_without_prediction"] == 0
    assert found["measures"]["pixel_accuracy"] == 1.0 and found["measures"]["miou"] == 1.0
    assert all(level["pixel_accuracy"] == 1.0 for level in found["levels"].values())
    (tmp_path / "maps" / f"{written[0]}.png").unlink()
    done = evaluate_cli("--release", str(folder), "--predictions", str(tmp_path / "maps"), "--task", "semantic")
    assert done.returncode == 2 and f"1 of the {len(written)} scored images have no prediction" in done.stderr
    assert "--allow-missing" in done.stderr and done.stderr.count("\n") == 1
    done = evaluate_cli(
        "--release",
        str(folder),
        "--predictions",
        str(tmp_path / "maps"),
        "--task",
        "semantic",
        "--allow-missing",
        "--out",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    assert found["images_without_prediction"] == 1 and found["measures"]["pixel_accuracy"] < 1.0
    for task in ("semantic", "segments"):  # a run of no file never scores, allowed or not
        empty = tmp_path / f"empty-{task}"
        empty.mkdir()
        for allowed in ([], ["--allow-missing"]):
            done = evaluate_cli("--release", str(folder), "--predictions", str(empty), "--task", task, *allowed)
            assert done.returncode == 2 and "no prediction for any of the" in done.stderr, done.stderr


@pytest.mark.parametrize("first", [1, 0])
def test_segments_of_the_truth_cover_it_exactly(tiny_build: Path, tmp_path: Path, first: int) -> None:
    """The truth's segmentations as a run score 1 whether numbered from 1 or from 0; BSDS's
    reading of label 0 as no region is kept on request and said in the report."""
    from PIL import Image

    folder = tiny_build / VERSION
    data = regionbench.load(folder)
    run = tmp_path / "run"
    run.mkdir()
    for image_id, labels in segments_task.segment_maps(data, "saiapr", _masks.scored_images(data, "test")).items():
        Image.fromarray((labels - 1 + first).astype(np.uint16)).save(run / f"{image_id}.png")
    report = tmp_path / "segments.json"
    done = evaluate_cli("--release", str(folder), "--predictions", str(run), "--task", "segments", "--out", str(report))
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    assert found["truth"] == ["saiapr"] and found["label_zero"] == "a segment, as every other label"
    measures = found["measures"]
    assert (
        measures["covering"]["ods"] == 1.0
        and measures["pri"]["ods"] == 1.0
        and measures["vi"]["ods"] == pytest.approx(0, abs=1e-12)
    )
    args = ("--release", str(folder), "--predictions", str(run), "--task", "segments", "--out", str(report))
    done = evaluate_cli(*args, "--zero-is-unlabelled")
    found = json.loads(report.read_text())
    assert found["label_zero"].startswith("no region") and found["settings"]["zero_is_unlabelled"] is True
    assert (found["measures"]["covering"]["ods"] < 1.0) == (first == 0)
    assert found["measures"]["pri"]["ods"] == 1.0  # the Rand index counts label 0 either way


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda p, shape: __import__("PIL.Image").Image.new("L", (shape[1] + 1, shape[0])).save(p),
            "differs from its image's",
        ),
        (lambda p, shape: __import__("PIL.Image").Image.new("RGB", (shape[1], shape[0])).save(p), "a PNG in mode RGB"),
        (lambda p, shape: p.write_bytes(b"not a png"), "unreadable"),
    ],
)
def test_label_maps_that_cannot_be_scored_are_one_line(tiny_build: Path, tmp_path: Path, make, said: str) -> None:

    folder = tiny_build / VERSION
    data = regionbench.load(folder)
    images = _masks.scored_images(data, "test")
    first = images.iloc[0]
    (tmp_path / "maps").mkdir()
    make(tmp_path / "maps" / f"{int(first['image_id'])}.png", (int(first["height"]), int(first["width"])))
    for task in ("semantic", "segments"):
        done = evaluate_cli(
            "--release", str(folder), "--predictions", str(tmp_path / "maps"), "--task", task, "--allow-missing"
        )
        assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(skipped=st.sets(st.integers(0, 1000)))
def test_an_image_run_must_score_every_test_image(task: _labels.Subset, tmp_path: Path, skipped: set[int]) -> None:
    """As the region and ImageCLEF tasks refuse a run that leaves out regions or images, the
    image task refuses one that leaves out test images: it would be scored on those it chose."""
    images = sorted(task.test)
    gone = {images[k % len(images)] for k in skipped}
    rows = [(i, "sky-blue", 0.5) for i in images if i not in gone]
    path = tmp_path / f"scores-{len(gone)}-{min(gone, default=0)}.csv"
    pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(path, index=False)
    if not gone:
        assert len(image_task.read_image_scores(path, task)) == len(images)
        return
    with pytest.raises(tasks.TaskError, match=rf"{len(gone)} scored images have no row, e\.g\. {min(gone)}"):
        image_task.read_image_scores(path, task)


@pytest.mark.parametrize(("batch", "cores"), [(1, 1), (5, 1), (2, 2), (3, 2)])
def test_label_maps_scored_a_batch_at_a_time_score_as_a_whole(
    coco_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, cores: int
) -> None:
    """The label-map task holds a batch of images at a time, on the runner's workers; its report,
    against each annotator and with the human ceiling, is the one of all images held at once in
    one process."""
    from conftest import COCO_RELEASE

    folder = coco_build / COCO_RELEASE
    truth_label_maps(folder, tmp_path / "maps")
    (tmp_path / "maps" / sorted((tmp_path / "maps").iterdir())[0].name).unlink()  # one image without a map
    data = regionbench.load(folder)
    whole = tasks.evaluate(data, tmp_path / "maps", "semantic", all_annotators=True, allow_missing=True)
    monkeypatch.setattr(runner, "BATCH", batch)
    again = tasks.evaluate(data, tmp_path / "maps", "semantic", cores=cores, all_annotators=True, allow_missing=True)
    assert again == whole
    assert whole["human_ceiling"] and whole["images_without_prediction"] == 1
    if batch != 1:
        return
    # the headline's resamples: each annotator's figures on the same images, averaged
    alone = [
        tasks.evaluate(data, tmp_path / "maps", "semantic", annotator=who, allow_missing=True)["resampled"]["values"]
        for who in whole["per_annotator"]
    ]
    assert (
        set(whole["intervals"]) == set(whole["measures"]) == {"pixel_accuracy", "mean_class_accuracy", "miou", "fwiou"}
    )
    for name, values in whole["resampled"]["values"].items():
        assert np.allclose(values, np.mean([a[name] for a in alone], axis=0), atol=1e-12), name


def mmseg_figures(
    truth: list[np.ndarray], predicted: list[np.ndarray], labels: set[int], ignore: int = 255
) -> dict[str, float]:
    """mmseg's ``intersect_and_union`` summed over images, its classes the release's label ids
    (``labels``): the truth's ignore value leaves a pixel out; a predicted value that is no
    class (the ignore value included) is a wrong pixel and no class's prediction."""
    classes = max(labels) + 1
    inter = union_pred = union_label = np.zeros(classes)
    for t, p in zip(truth, predicted, strict=True):
        keep = t != ignore
        t, p = t[keep], p[keep]
        p = np.where(np.isin(p, list(labels)), p, classes)  # out of the class table
        hits = p[p == t]
        inter = inter + np.bincount(hits, minlength=classes)[:classes]
        union_pred = union_pred + np.bincount(p[p < classes], minlength=classes)[:classes]
        union_label = union_label + np.bincount(t, minlength=classes)[:classes]
    union = union_pred + union_label - inter
    return {
        "pixel_accuracy": inter.sum() / union_label.sum(),
        "miou": float(np.mean(inter[union > 0] / union[union > 0])),
    }


@pytest.mark.parametrize("abstain", ["all but a corner", "a third", "values naming no label", "zeros"])
def test_an_abstaining_label_map_is_wrong_where_the_truth_is_labelled(
    tiny_build: Path, tmp_path: Path, abstain: str
) -> None:
    """The ignore value (and a value naming no label) in a prediction is no way out: where the
    truth is labelled it is a wrong pixel, counted in ``abstained_pixels``, as mmseg counts it.
    (The tiny release has a label of id 255: the ignore value here is 65535.)"""
    from PIL import Image

    folder, ignore = tiny_build / VERSION, 65535
    written = truth_label_maps(folder, tmp_path / "truth", ignore=ignore)
    (tmp_path / "run").mkdir()
    truth, predicted = [], []
    for image_id in written:
        t = np.asarray(Image.open(tmp_path / "truth" / f"{image_id}.png")).astype(np.int64)
        p = t.copy()
        if abstain == "all but a corner":
            p[10:, :] = ignore
            p[:, 10:] = ignore
        elif abstain == "a third":
            p[: p.shape[0] // 3] = ignore
        else:  # no label has id 60000; 0 is ADE20K's "other"
            p[: p.shape[0] // 3] = 60000 if abstain == "values naming no label" else 0
        Image.fromarray(p.astype(np.uint16)).save(tmp_path / "run" / f"{image_id}.png")
        truth.append(t)
        predicted.append(p)
    report = tmp_path / "semantic.json"
    done = evaluate_cli(
        "--release", str(folder), "--predictions", str(tmp_path / "run"), "--task", "semantic",
        "--ignore", str(ignore), "--out", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(report.read_text())
    labels = set(regionbench.load(folder).vocabulary["label_id"].astype(int))
    expected = mmseg_figures(truth, predicted, labels, ignore)
    assert found["measures"]["pixel_accuracy"] == pytest.approx(expected["pixel_accuracy"], abs=1e-12)
    assert found["measures"]["miou"] == pytest.approx(expected["miou"], abs=1e-12)
    assert found["measures"]["pixel_accuracy"] < 0.8
    wrong = sum(int(((t != ignore) & (p != t)).sum()) for t, p in zip(truth, predicted, strict=True))
    assert found["abstained_pixels"] == wrong > 0
    assert f"abstained_pixels            {wrong}" in done.stdout
    if abstain == "values naming no label":
        assert list(found["unknown_values"]) == ["60000"] and "60000" in done.stdout and "--label-names" in done.stdout
    elif abstain == "zeros":
        assert list(found["unknown_values"]) == ["0"] and "--ignore 0 names it" in done.stdout
    else:
        assert found["unknown_values"] == {}


def test_an_ignore_value_that_is_a_label_id_is_said(tiny_build: Path, tmp_path: Path) -> None:
    """The default ignore value 255 is a label id of the tiny release: its pixels in a map would
    read as abstaining, and the output says so."""
    folder = tiny_build / VERSION
    truth_label_maps(folder, tmp_path / "maps", ignore=65535)
    done = evaluate_cli("--release", str(folder), "--predictions", str(tmp_path / "maps"), "--task", "semantic")
    assert done.returncode == 0, done.stderr
    assert "note: the ignore value 255 is the id of label trash" in done.stdout and "--ignore" in done.stdout


def perfect_predictions(folder: Path, task: str, out: Path) -> tuple[Path, int]:
    """A run of ``task`` that gives the reference truth on both sides of the split (every image,
    every region of subset H); returns its path and how many of its items (rows, lines,
    detections, files) lie outside the test side."""
    from PIL import Image

    from regionbench.scoring.measures import confusion as confusion
    from regionbench.scoring.tasks import _coco_truth as coco_truth

    data = regionbench.load(folder)
    if task in ("region", "image", "imageclef"):
        spec, test = _labels.subset_truth(data, "H", split="all"), _labels.subset_truth(data, "H")
        left = test.left_out()
        if task == "region":
            path = out / "regions.csv"
            spec.regions.to_csv(path, index=False)
            return path, len(spec.regions) - len(test.regions)
        if task == "image":
            path = out / "scores.csv"
            rows = [(i, c, 1.0 if c in spec.test[i] else 0.0) for i in spec.test for c in spec.labels]
            pd.DataFrame(rows, columns=["image_id", "label", "score"]).to_csv(path, index=False)
            return path, sum(1 for r in rows if r[0] in left)
        path = out / "run.txt"
        path.write_text("\n".join(perfect_run(spec)) + "\n")
        return path, len(left)
    images = _masks.scored_images(data, "all")
    test = set(_masks.scored_images(data, "test")["image_id"].astype(int))
    who = _masks.reference(data)
    if task == "instances":
        _, truth = instances_task.whole_truth(data, images, who)
        detections = coco_truth.as_detections(
            data.regions, who, truth, coco_truth.numbering(data.table("coverage"), who)
        )
        path = out / "detections.json"
        path.write_text(json.dumps(detections))
        return path, sum(d["image_id"] not in test for d in detections)
    path = out / task
    path.mkdir()
    if task == "segments":
        maps = segments_task.segment_maps(data, who, images)
    else:
        _, index = confusion.label_codes(dict(zip(data.vocabulary["label_id"], data.vocabulary["label"], strict=True)))
        ids = np.array([*sorted(index, key=index.get), 65535])  # class index -> label id; -1: the ignore value
        maps = {i: ids[np.where(label >= len(index), -1, label.astype(np.int64))] for i, label in semantic_task.class_maps(
            data, who, images, index).items()}  # fmt: skip
    for image_id, values in maps.items():
        Image.fromarray(values.astype(np.uint16)).save(path / f"{image_id}.png")
    return path, sum(i not in test for i in maps)


@pytest.mark.parametrize("task", ["region", "image", "imageclef", "instances", "segments", "semantic"])
def test_every_task_names_what_it_scores_and_refuses_what_lies_outside(
    tiny_build: Path, tmp_path: Path, task: str
) -> None:
    """One rule for the six tasks: predictions for items outside the scored (test) side are
    refused in one line that says which side is scored, how many fall outside and --split all;
    with --split all the same run is scored, and the first line says what was."""
    folder = tiny_build / VERSION
    path, outside = perfect_predictions(folder, task, tmp_path)
    assert outside > 0
    own = {"image": ["--k", "50"], "semantic": ["--ignore", "65535"]}.get(task, [])
    args = ["--release", str(folder), "--predictions", str(path), "--task", task, *own]
    done = evaluate_cli(*args)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{path}: {outside} " in lines[0] and "outside the scored side (the test side of the" in lines[0]
    assert "--split all" in lines[0] and "Traceback" not in done.stderr
    done = evaluate_cli(*args, "--split", "all", "--out", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    report = json.loads((tmp_path / "report.json").read_text())
    scored = report["scored"]
    assert scored["split"] == "all" and scored["count"] == scored["total"] > 0
    assert first == f"scored: {scored['count']} of {scored['count']} {scored['unit']}, both sides of the " + (
        "region split" if task == "region" else "image split"
    )
    headline = {"region": ("any", "e_hard"), "image": ("top_k", "r_i"), "imageclef": ("mnap",),
                "instances": ("AP50",), "segments": ("covering", "ods"), "semantic": ("pixel_accuracy",)}  # fmt: skip
    value = report["measures"]
    for key in headline[task]:
        value = value[key]
    assert value == pytest.approx(1.0)


def test_a_label_map_run_s_intervals_are_the_bootstrap_a_numpy_loop_computes(tiny_build: Path, tmp_path: Path) -> None:
    """Each resample's mIoU and pixel accuracy are mmseg's sums over its drawn images (images
    sorted by their files' stems, ``rng.integers(0, n, size=n)`` in order, a drawn image counted
    as often as drawn), and the interval is numpy's 2.5 and 97.5 percentiles of them."""
    from PIL import Image

    folder, ignore = tiny_build / VERSION, 65535
    written = truth_label_maps(folder, tmp_path / "truth", ignore=ignore)
    (tmp_path / "run").mkdir()
    data = regionbench.load(folder)
    for k, image_id in enumerate(written):  # every third image a third wrong: images differ
        p = np.asarray(Image.open(tmp_path / "truth" / f"{image_id}.png")).astype(np.int64)
        if k % 3 == 0:
            p[: p.shape[0] // 3] = 0
        Image.fromarray(p.astype(np.uint16)).save(tmp_path / "run" / f"{image_id}.png")
    found = tasks.evaluate(data, tmp_path / "run", "semantic", ignore=ignore, resamples=50, seed=7)
    scored = _masks.scored_images(data, "test")
    order = [
        i for _, i in sorted((Path(p).stem, int(i)) for i, p in zip(scored["image_id"], scored["path"], strict=True))
    ]
    assert sorted(order) == sorted(written)
    truth = [np.asarray(Image.open(tmp_path / "truth" / f"{i}.png")).astype(np.int64) for i in order]
    predicted = [np.asarray(Image.open(tmp_path / "run" / f"{i}.png")).astype(np.int64) for i in order]
    labels = set(data.vocabulary["label_id"].astype(int))
    rng = np.random.default_rng(7)
    for b in range(50):
        drawn = rng.integers(0, len(order), size=len(order))
        expected = mmseg_figures([truth[j] for j in drawn], [predicted[j] for j in drawn], labels, ignore)
        for name in ("miou", "pixel_accuracy"):
            assert found["resampled"]["values"][name][b] == pytest.approx(expected[name], abs=1e-12), (name, b)
    for name in ("miou", "pixel_accuracy"):
        low, high = np.percentile(found["resampled"]["values"][name], [2.5, 97.5])
        assert found["intervals"][name] | {"low": low, "high": high} == found["intervals"][name]
        assert found["intervals"][name]["low"] < found["measures"][name] < found["intervals"][name]["high"]
    assert tasks.evaluate(data, tmp_path / "run", "semantic", ignore=ignore, resamples=0).get("intervals") is None


def test_compare_pairs_two_runs_resamples_and_refuses_runs_that_do_not_pair(tiny_build: Path, tmp_path: Path) -> None:
    """``compare A B``: B - A of each headline measure, its paired interval and p-value from the
    two reports' resamples (the same images drawn for both); a run against itself differs by 0
    with p = 1; runs resampled otherwise are refused in one line."""
    from PIL import Image

    from regionbench.core import tables
    from regionbench.scoring import compare

    folder, ignore = tiny_build / VERSION, 65535
    written = truth_label_maps(folder, tmp_path / "truth", ignore=ignore)
    (tmp_path / "worse").mkdir()
    for k, image_id in enumerate(written):  # a known share of images made worse
        p = np.asarray(Image.open(tmp_path / "truth" / f"{image_id}.png")).astype(np.int64)
        if k % 2 == 0:
            p[: p.shape[0] // 2] = 0
        Image.fromarray(p.astype(np.uint16)).save(tmp_path / "worse" / f"{image_id}.png")
    data = regionbench.load(folder)
    reports = {}
    for name in ("truth", "worse"):
        reports[name] = tasks.evaluate(data, tmp_path / name, "semantic", ignore=ignore, resamples=200)
        tables.write_json(tmp_path / f"{name}.json", reports[name])
    same = compare.compare(reports["truth"], reports["truth"])
    assert all(row["difference"] == 0 and row["p"] == 1 for row in same["measures"].values())
    found = compare.compare(reports["truth"], reports["worse"])
    a, b = (np.array(reports[n]["resampled"]["values"]["miou"]) for n in ("truth", "worse"))
    observed = reports["worse"]["measures"]["miou"] - reports["truth"]["measures"]["miou"]
    row = found["measures"]["miou"]
    assert row["difference"] == observed < 0
    assert row["p"] == (1 + np.count_nonzero(b - a >= 0)) / 201
    assert (row["low"], row["high"]) == tuple(np.percentile(b - a, [2.5, 97.5]))
    done = regionbench_cli("compare", str(tmp_path / "truth.json"), str(tmp_path / "worse.json"))
    assert done.returncode == 0, done.stderr
    assert f"worse.json is worse than truth.json on miou: {observed:+.4f}" in done.stdout
    other = tasks.evaluate(data, tmp_path / "worse", "semantic", ignore=ignore, resamples=200, seed=1)
    tables.write_json(tmp_path / "seed1.json", other)
    done = regionbench_cli("compare", str(tmp_path / "truth.json"), str(tmp_path / "seed1.json"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "--seed" in done.stderr


def test_the_label_tasks_intervals_are_their_measures_on_the_drawn_images(
    tiny_build: Path, task: _labels.Subset, tmp_path: Path
) -> None:
    """Region, image and ImageCLEF runs, a share of them wrong: each resample's headline figures
    equal the task's own measures on the drawn images (region: its regions' e_hard, soft
    accuracy and mean e_hierarchy; ImageCLEF: MnAP, MiAP and their geometric means), images
    drawn in id order, and each report says its intervals."""
    from regionbench.scoring.measures import bootstrap, label_sets

    data = regionbench.load(tiny_build / VERSION)
    regions = task.regions.copy()
    labels = sorted(task.labels)
    regions["label"] = [labels[(labels.index(x) + 1) % len(labels)] if k % 3 == 0 else x
                        for k, x in enumerate(regions["label"])]  # fmt: skip
    regions.to_csv(tmp_path / "regions.csv", index=False)
    found = tasks.evaluate(data, tmp_path / "regions.csv", "region", resamples=30, seed=2)
    truth = task.regions.sort_values(["image_id", "region_id"]).reset_index(drop=True)
    given = regions.set_index(["image_id", "region_id"]).loc[
        list(zip(truth["image_id"], truth["region_id"], strict=True))
    ]
    images = sorted(set(truth["image_id"]))
    tree = tasks.release_hierarchy(data)
    for b, drawn in enumerate(bootstrap.draws(len(images), 30, 2)):
        rows = np.concatenate([np.flatnonzero(truth["image_id"].to_numpy() == images[i]) for i in drawn])
        for direction in ("any", "general"):
            expected = label_sets.region_scores(
                tree, truth["label"].to_numpy()[rows].tolist(), given["label"].to_numpy()[rows].tolist(), direction
            )
            for name, value in expected.items():
                assert found["resampled"]["values"][f"{direction}.{name}"][b] == pytest.approx(value, abs=1e-12)
    run = perfect_run(task)
    run = [line if k % 2 else line.replace(" 1 1", " 0 0", 2) for k, line in enumerate(run)]
    (tmp_path / "run.txt").write_text("\n".join(run) + "\n")
    clef = tasks.evaluate(data, tmp_path / "run.txt", "imageclef", resamples=30, seed=2)
    confidence = np.array([[float(v) for v in line.split()[1::2]] for line in run])
    relevant = np.array([[c in task.test[i] for c in task.labels] for i in sorted(task.test)])
    for b, drawn in enumerate(bootstrap.draws(len(run), 30, 2)):
        expected = label_sets.imageclef(relevant[drawn], confidence[drawn], np.zeros_like(relevant[drawn]))
        for name in ("mnap", "miap", "gmnap", "gmiap"):
            assert clef["resampled"]["values"][name][b] == pytest.approx(expected[name], abs=1e-12)
    scores = perfect_predictions(tiny_build / VERSION, "image", tmp_path)[0]
    image_report = tasks.evaluate(data, scores, "image", split="all", resamples=30)
    assert set(image_report["intervals"]) == {"top_k.f1_l", "top_k.f1_i", "ranking.map_l"}
    assert image_report["resampled"]["images"] == image_report["images"] > len(task.test)
    assert found["resampled"]["images"] == len(images) and clef["resampled"]["images"] == len(task.test)


def test_against_every_annotator_an_instance_run_s_resamples_are_each_annotator_s_averaged(
    coco_build: Path, tmp_path: Path
) -> None:
    """``--all-annotators``: the headline AP is the mean over the annotators, and so is each of
    its resamples: every annotator's AP on the same drawn images (here the files number the images
    in the release's order, so each scored alone, by its file's ids, draws them in the same order)."""
    from conftest import COCO_RELEASE

    folder = coco_build / COCO_RELEASE
    path, _ = perfect_predictions(folder, "instances", tmp_path)
    data = regionbench.load(folder)
    whole = tasks.evaluate(data, path, "instances", all_annotators=True, split="all", resamples=40, seed=4)
    assert len(whole["per_annotator"]) > 1 and set(whole["intervals"]) == {"AP", "AP50", "AP75"}
    alone = [
        tasks.evaluate(data, path, "instances", annotator=who, split="all", resamples=40, seed=4)["resampled"]
        for who in whole["per_annotator"]
    ]
    coverage = data.table("coverage")  # each file's ids in the release's order: the same draws
    for who in whole["per_annotator"]:
        own = coverage[coverage["annotator"] == who].sort_values("image_id")
        assert own["source_image_id"].is_monotonic_increasing, who
    for name, values in whole["resampled"]["values"].items():
        expected = np.mean([np.array(a["values"][name], dtype=float) for a in alone], axis=0)
        assert np.allclose(np.array(values, dtype=float), expected, atol=1e-12, equal_nan=True), name
