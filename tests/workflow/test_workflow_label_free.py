"""Label-free and single-label collections, and classifiers switched off: the build skips what
does not apply and says why in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.io
from conftest import build, one_category_tree, regionbench_cli, site_shows_the_release, workflow_copy, write_config
from farm import Built

import regionbench
import regionbench.release
from regionbench import cli
from regionbench.pipeline import vocabulary
from regionbench.release.croissant import NO_LICENCE


def evaluate(folder: Path, predictions: str, *args: str) -> subprocess.CompletedProcess:
    """``regionbench evaluate`` of ``predictions`` against the release in ``folder``."""
    command = ["evaluate", "--release", str(folder), "--predictions", predictions, *args]
    return regionbench_cli(*command)


@pytest.mark.browser
@pytest.mark.parametrize("categories", [True, False], ids=["one-category", "no-category"])
def test_a_label_free_collection_skips_subsets_and_classifiers(
    browser, release: Callable[[str], Built], tmp_path: Path, categories: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """One category for every segment (its vocabulary written by `vocabulary from-coco`, which
    the build takes), or no category at all (annotations without category_id: the vocabulary
    the build derives has 'segment')."""
    built = release("free" if categories else "free-nocat")
    raw, project, folder = built.raw, built.project, built.folder
    if categories:  # what wrote the build's vocabulary tells the user what to set
        assert cli.main(["vocabulary", "from-coco", str(raw), "--out", str(tmp_path / "vocabulary")]) == 0
        assert "set vocabulary_dir" in capsys.readouterr().out
        assert sorted(p.read_text() for p in (tmp_path / "vocabulary").iterdir()) == sorted(
            p.read_text() for p in (raw.parent / "vocabulary").iterdir()
        )
    done = subprocess.CompletedProcess([], 0, built.stdout, built.stderr)
    report = json.loads((project / "results/free/ingest/report.json").read_text())
    assert all(c["rejected"] == 0 for a, c in report["annotators"].items() if a != "consensus")  # all labelled
    why = "subsets A-H and the reference classifiers skipped: every region of consensus carries the one label 'segment'"
    assert [line for line in done.stdout.splitlines() if "skipped" in line] == [
        f"  {why}, so there are no labels to tell apart"
    ]
    said = [line for line in done.stdout.splitlines() if line.startswith("  images: named by path")]
    assert len(said) == (0 if categories else 1) and all("set source.license" in line for line in said)
    assert not (project / "results/free/classifiers").exists()  # no classify job ran
    assert not (folder / "results/classifiers.parquet").exists()
    assert pq.read_table(folder / "data/subsets.parquet").num_rows == 0
    card = (folder / "README.md").read_text()
    assert why[0].upper() + why[1:] in card and "Reference classifiers" not in card
    summary = json.loads((folder / "results/agreement.json").read_text())
    assert summary["labelled"] is False and 0 < summary["label_free"]["pri"] < 1
    # one label: label agreement is 1 by construction and not on the card; the label-free measures are
    assert "same label, matched regions" not in card and "Fleiss' kappa" not in card
    free = summary["label_free"]
    assert f"| all | {free['pri']:.4f} | {free['vi_bits']:.4f} | {free['covering']:.4f} |" in card
    serves_what_it_holds(folder, raw, tmp_path, embedded=categories, capsys=capsys)
    site_shows_the_release(browser, folder, tmp_path / "site", None if categories else raw)


def serves_what_it_holds(
    folder: Path, raw: Path, tmp_path: Path, embedded: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release without subsets A-H: its card, Hugging Face configs, Croissant and ``show``
    describe and serve what it holds, and ``evaluate`` refuses in one line with exit 2."""
    import yaml

    card = (folder / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert 'subset("E"' not in card and "70/30" not in card and "has no subsets A-H" in card
    assert "language" not in front and "image-classification" not in front["task_categories"]  # no captions, no classes
    files = {c["config_name"]: c["data_files"] for c in front["configs"]}
    assert files["images"] == [{"split": "full", "path": "hf/images-full.parquet"}]
    assert all(pq.read_metadata(path).num_rows for path in (folder / "hf").glob("*.parquet"))  # no empty split
    croissant = json.loads((folder / "croissant.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["images"] == ("embedded" if embedded else "paths")
    if embedded:
        assert manifest["source"]["name"] == "Berkeley-like segments" and front["license"] == "cc-by-4.0"
        assert "- licence of the images: CC-BY-4.0" in card
        licences = croissant["license"] if isinstance(croissant["license"], list) else [croissant["license"]]
        assert licences == ["https://spdx.org/licenses/CC-BY-4.0.html"]  # the release takes the source's
    else:  # the files state no licence and the config sets none: paths only, and no licence claimed anywhere
        assert manifest["source"]["license"] is None and "licence of the images: not stated by the source" in card
        assert manifest["license"] == "unknown" and front["license"] == "unknown"
        assert croissant["license"] in (NO_LICENCE, [NO_LICENCE])
        assert "- licence of this release: unknown: not stated by the source" in card
    out = tmp_path / "show.png"
    shown = cli.main(["show", str(folder), "--count", "2", "--out", str(out)])
    assert shown == (0 if embedded else 2), capsys.readouterr().err
    if not embedded:
        assert "it names its images by path" in capsys.readouterr().err
        assert cli.main(["show", str(folder), "--count", "2", "--out", str(out), "--images", str(raw)]) == 0
    (tmp_path / "run.csv").write_text("image_id,region_id,label\n")
    done = evaluate(folder, str(tmp_path / "run.csv"), "--task", "region")
    assert done.returncode == 2 and "has no subsets A-H" in done.stderr, done.stderr


def test_a_build_that_accepts_nothing_stops_after_ingest(tmp_path: Path) -> None:
    """Every category unknown to the vocabulary: one line with the counts and the commonest
    reason, exit 2, and no stage after ingest ran."""
    raw = one_category_tree(tmp_path / "raw")
    project = workflow_copy(tmp_path / "wf")
    config = f"dataset: none\nraw_dir: {raw}\nvocabulary_dir: {vocabulary.DEFAULT_DIR}\n"  # no 'segment' there
    done = build(project, "--configfile", str(write_config(project, config)))
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    n = len(list((raw / "images").iterdir()))
    assert last.startswith(f"regionbench: ingest accepted no region: {n} images seen ({n} accepted), ")
    assert "commonest reasons: " in last and "category 'segment' is not a vocabulary label" in last
    assert "results/none/ingest/*/rejects.parquet" in last
    assert "Traceback" not in done.stderr and "Error" not in last
    results = project / "results/none"
    assert not (results / "vocabulary.parquet").exists() and not (results / "subsets.parquet").exists()
    assert not (results / "agreement").exists()


def test_one_annotator_scored_as_a_run_is_its_row_of_the_agreement(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """A several-annotator label-free collection: one annotator's segmentations, written as
    16-bit label-map PNGs and scored with ``--task segments`` against the other humans, give that
    annotator's PRI, VI and covering of the release's agreement summary, and so does the human
    ceiling of a run against every human."""
    import numpy as np
    from PIL import Image

    from regionbench.scoring.tasks.segments import segment_maps

    folder = release("free").folder
    data = regionbench.load(folder)
    run = tmp_path / "run"
    run.mkdir()
    for image_id, labels in segment_maps(data, "annotator-1", data.images).items():
        Image.fromarray(labels.astype(np.uint16)).save(run / f"{image_id}.png")
    out = tmp_path / "report.json"
    done = evaluate(folder, str(run), "--task", "segments", "--exclude-annotator", "annotator-1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "human ceiling" in done.stdout
    report = json.loads(out.read_text())
    row = json.loads((folder / "results/agreement.json").read_text())["label_free"]["per_annotator"]["annotator-1"]
    measures = report["measures"]
    assert report["truth"] == ["annotator-2", "annotator-3"] and report["images_without_prediction"] == 0
    assert measures["pri"]["ods"] == pytest.approx(row["pri"], rel=1e-5)  # six printed digits on the way
    assert measures["vi"]["ods"] == pytest.approx(row["vi_bits"], rel=1e-5)
    ceiling = report["human_ceiling"]["per_annotator"]["annotator-1"]
    assert ceiling["pri"] == pytest.approx(row["pri"], rel=1e-12) and ceiling["vi"] == pytest.approx(
        row["vi_bits"], rel=1e-12
    )
    assert ceiling["covering"] == pytest.approx(measures["covering"]["ods"], rel=1e-5)
    assert measures["covering"]["ods"] == pytest.approx(row["covering"], rel=1e-5)
    each = tmp_path / "each.json"
    done = evaluate(folder, str(run), "--task", "segments", "--all-annotators", "--out", str(each))
    assert done.returncode == 0, done.stderr
    found = json.loads(each.read_text())
    assert sorted(found["per_annotator"]) == ["annotator-1", "annotator-2", "annotator-3"]
    assert found["per_annotator"]["annotator-1"]["pri"] == pytest.approx(1.0)  # its own segmentation
    assert found["spread"]["pri"]["max"] == pytest.approx(1.0) and found["spread"]["pri"]["min"] < 1.0


def test_bsds500_as_distributed_builds_and_scores(release: Callable[[str], Built], tmp_path: Path) -> None:
    """A tree laid out as BSDS500 ships builds with no converter and no vocabulary folder: each
    human an annotator, label-free, a shard per split; its own ground truth, read
    back as BSDS .mat predictions, covers each human's segments exactly."""
    built = release("bsds")
    raw, folder = built.raw, built.folder
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["layout"] == "bsds500" and manifest["source"]["name"].startswith("BSDS500")
    images = pq.read_table(folder / "data/images.parquet", columns=["image_id", "split"]).to_pylist()
    expected = {(i, "train") for i in (11, 12, 13)} | {(i, "val") for i in (21, 22)}
    assert {(r["image_id"], r["split"]) for r in images} == expected
    summary = json.loads((folder / "results/agreement.json").read_text())
    assert summary["labelled"] is False and sorted(summary["label_free"]["per_annotator"]) == [
        "human-1",
        "human-2",
        "human-3",
    ]
    run = tmp_path / "segs"
    run.mkdir()
    for path in (raw / "data/groundTruth").glob("*/*.mat"):  # each human's map, as one scale
        cell = scipy.io.loadmat(path)["groundTruth"]
        segs = np.empty((1, 1), dtype=object)
        segs[0, 0] = cell[0, 0]["Segmentation"][0, 0]
        scipy.io.savemat(run / path.name, {"segs": segs})
    out = tmp_path / "report.json"
    scored = evaluate(
        folder, str(run), "--task", "segments", "--annotator", "human-1", "--split", "all", "--out", str(out)
    )
    assert scored.returncode == 0, scored.stderr
    found = json.loads(out.read_text())
    assert (
        found["images"] == 5 and found["measures"]["covering"]["ods"] == 1.0 and found["measures"]["pri"]["ods"] == 1.0
    )
    # human-2's maps as a run against human-1, per source split in one pass: each split's figures
    # are the benchmark's over that split's images alone (segments, boundaries)
    from regionbench.scoring.measures import bsds_boundaries as boundaries
    from regionbench.scoring.measures import bsds_regions as segments

    other, maps = tmp_path / "other", {}
    other.mkdir()
    for path in (raw / "data/groundTruth").glob("*/*.mat"):
        cell = scipy.io.loadmat(path)["groundTruth"]
        maps[int(path.stem)] = (cell[0, 0]["Segmentation"][0, 0], cell[0, 1]["Segmentation"][0, 0])
        segs = np.empty((1, 1), dtype=object)
        segs[0, 0] = maps[int(path.stem)][1]
        scipy.io.savemat(other / path.name, {"segs": segs})
    sides = {"train": [11, 12, 13], "val": [21, 22]}
    for task in ("segments", "boundaries"):
        scored = evaluate(
            folder, str(other), "--task", task, "--annotator", "human-1", "--split", "all", "--out", str(out)
        )
        assert scored.returncode == 0, scored.stderr
        split = json.loads(out.read_text())["per_source_split"]
        assert sorted(split) == ["train", "val"]
        for side, ids in sides.items():
            assert split[side]["images"] == len(ids)
            if task == "segments":
                alone = segments.collect([1.0], [segments.score_image([maps[i][1]], [maps[i][0]]) for i in ids])
                assert split[side]["covering"] == alone.covering["ods"] and split[side]["vi"] == alone.vi["ods"]
            else:
                counts = [
                    boundaries.score_image(
                        [boundaries.seg2bdry(maps[i][1])], [boundaries.thin(boundaries.seg2bdry(maps[i][0]))]
                    )
                    for i in ids
                ]
                alone_b = boundaries.collect([1.0], counts)
                assert split[side]["ods_f"] == alone_b.ods["f"] and split[side]["ap"] == alone_b.ap


def test_bsds500_gives_the_agreement_of_the_same_segments_as_coco_files(release: Callable[[str], Built]) -> None:
    """The same human segmentations built once from BSDS500's .mat files and once laid out as
    COCO files (a file per human, a segment an RLE annotation) give the same agreement table."""
    tables = {}
    for name in ("bsds-humans", "bsds-humans-coco"):
        table = pq.read_table(release(name).folder / "data/agreement.parquet")
        tables[name] = table.sort_by([(c, "ascending") for c in table.column_names if c != "geometry"])
    assert tables["bsds-humans"].num_rows > 0
    assert tables["bsds-humans"].equals(tables["bsds-humans-coco"])


def test_the_human_ceiling_pools_every_pair_as_the_agreement_table_does(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """A crowd of very unequal coverage (five humans on one image, two on the others): the
    segments task's human ceiling pools every (image, human, other human) and equals the release's
    agreement table (BSDS500's Human row), while the mean of the per-human means, kept beside it,
    does not."""
    from PIL import Image

    from regionbench.scoring.tasks.segments import segment_maps

    folder = release("bsds-crowd").folder
    data = regionbench.load(folder)
    run = tmp_path / "run"
    run.mkdir()
    for image_id, labels in segment_maps(data, "human-1", data.images).items():
        Image.fromarray(labels.astype(np.uint16)).save(run / f"{image_id}.png")
    out = tmp_path / "report.json"
    done = evaluate(folder, str(run), "--task", "segments", "--out", str(out))
    assert done.returncode == 0, done.stderr
    ceiling = json.loads(out.read_text())["human_ceiling"]
    table = json.loads((folder / "results/agreement.json").read_text())["label_free"]
    assert ceiling["pri"] == pytest.approx(table["pri"], rel=1e-12)
    assert ceiling["vi"] == pytest.approx(table["vi_bits"], rel=1e-12)
    assert ceiling["covering"] == pytest.approx(table["covering"], rel=1e-12)
    assert ceiling["pairs"] == 5 * 4 + 5 * 2 * 1
    assert abs(ceiling["annotator_mean"]["pri"] - ceiling["pri"]) > 1e-6  # unequal coverage: two answers


def test_a_licence_stated_in_words_builds_and_verifies(release: Callable[[str], Built]) -> None:
    """``source.license`` in words ("see the website"): the release's licence is "other", the
    card says so with the source's words, Croissant quotes them, and verify agrees with the build;
    HTML in the config's text is shown on the card as written, not rendered."""
    import yaml

    folder = release("free-words").folder
    assert regionbench.release.verify(folder) == []
    manifest = json.loads((folder / "manifest.json").read_text())
    card = (folder / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert manifest["license"] == "other" and front["license"] == "other" and front["license_name"]
    assert "- licence of the images: see the website" in card
    assert "- licence of this release's annotations: the source's terms, above" in card
    assert "- collection: &lt;b&gt;Streets&lt;/b&gt; &amp; more" in card and "<b>" not in card  # shown, not rendered
    croissant = json.loads((folder / "croissant.json").read_text())
    assert croissant["license"] in ("see the website", ["see the website"])


def test_an_spdx_licence_the_hub_does_not_list_is_named_other_and_verifies(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """``source.license: CC-BY-SA-2.5`` (an SPDX id the Hugging Face Hub does not list): the
    manifest and Croissant keep the id, the card names it "other" with its name and SPDX page,
    and verify agrees with the build."""
    import yaml

    folder = Path(shutil.copytree(release("free-spdx").folder, tmp_path / "v1.0.0"))  # its card is edited below
    manifest = json.loads((folder / "manifest.json").read_text())
    front = yaml.safe_load((folder / "README.md").read_text().split("---")[1])
    assert manifest["license"] == "CC-BY-SA-2.5"
    assert (front["license"], front["license_name"]) == ("other", "cc-by-sa-2.5")
    assert front["license_link"] == "https://spdx.org/licenses/CC-BY-SA-2.5.html"
    croissant = json.loads((folder / "croissant.json").read_text())
    assert croissant["license"] in (
        "https://spdx.org/licenses/CC-BY-SA-2.5.html",
        ["https://spdx.org/licenses/CC-BY-SA-2.5.html"],
    )
    card = folder / "README.md"  # the card edited to another licence no longer verifies
    card.write_text(card.read_text().replace("license_name: cc-by-sa-2.5", "license_name: cc-by-sa-4.0"))
    assert any("license_name" in problem for problem in regionbench.release.verify(folder))
