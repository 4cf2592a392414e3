"""A COCO tree as tools export it, built without a vocabulary: category names with spaces, a crowd
region with an uncompressed RLE, a self-intersecting polygon; the card speaks of the collection,
and export-coco writes files whose ingest gives the release's regions again."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import evaluate_instances
from farm import Built
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench import cli
from regionbench.core import geometry, tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.io.layouts import CREDITS
from regionbench.pipeline import plots
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.vocabulary import Registry
from regionbench.synthetic.coco import uncompressed_rle, write_collection

DATASET = "exports"
RELEASE = f"releases/{DATASET}/v1.0.0"
COMPARED = [
    "image_id", "annotator", "region_id", "label", "iscrowd", "annotation_id", "category_id",
    "bbox_x", "bbox_y", "bbox_w", "bbox_h", "area_px", "mask",
]  # fmt: skip


def spelled(label: str) -> str:
    """A label as a tool's category name: words apart, capitalised ("sky-blue" -> "Sky Blue")."""
    return label.replace("-", " ").title()


def exported_tree(root: Path) -> dict:
    """A two-annotator COCO tree whose categories are spelled as people name them, with one crowd
    region (uncompressed RLE) and one bow-tie polygon; returns what was changed."""
    for _ in write_collection(root, "tiny", annotators=2, disagreement=0.2, workers=1):
        pass
    one, two = (root / "annotations" / f"annotator-{k}.json" for k in (1, 2))
    first, second = json.loads(one.read_text()), json.loads(two.read_text())
    used = {a["category_id"] for a in first["annotations"]}
    renamed = {
        c["name"]: spelled(c["name"])
        for c in first["categories"]
        if c["id"] in used and "-" in c["name"] and c["name"].replace("-", "").isalpha()
    }
    assert renamed, "the tiny collection has labels of several words"
    for data in (first, second):
        for c in data["categories"]:
            c["name"] = renamed.get(c["name"], c["name"])
            c["supercategory"] = spelled(c["supercategory"]) if c["supercategory"] else ""
    itself = next(c for c in first["categories"] if c["id"] in used and c["name"] not in renamed.values())
    for data in (first, second):  # COCO's person is its own supercategory
        next(c for c in data["categories"] if c["id"] == itself["id"])["supercategory"] = itself["name"]
    for ann in first["annotations"]:  # areas and boxes as tools write them: fractional
        ann["area"] = float(ann.get("area", 100)) + 0.25
        ann["bbox"] = [v + 0.125 for v in ann.get("bbox", [1, 1, 2, 2])]
    crowd = first["annotations"][0]
    image = next(im for im in first["images"] if im["id"] == crowd["image_id"])
    mask = geometry.from_rle({"size": crowd["segmentation"]["size"], "counts": crowd["segmentation"]["counts"]})
    crowd["segmentation"], crowd["iscrowd"] = uncompressed_rle(mask), 1
    crowd["area"] = float(mask.sum()) + 100.5  # COCO's crowd areas are not their pixel counts
    w, h = image["width"], image["height"]
    bow_tie = {
        "id": max(a["id"] for a in second["annotations"]) + 1,
        "image_id": second["annotations"][0]["image_id"],
        "category_id": second["annotations"][0]["category_id"],
        "segmentation": [[1, 1, w - 2, h - 2, w - 2, 1, 1, h - 2]],
        "iscrowd": 0,
    }
    second["annotations"].append(bow_tie)
    credit(first, second)
    one.write_text(json.dumps(first))
    two.write_text(json.dumps(second))
    return {"renamed": renamed, "crowd": crowd, "crowd_file": image["file_name"], "bow_tie": bow_tie}


LICENCES = [
    {"id": 1, "name": "Attribution-NonCommercial-ShareAlike License", "url": "http://creativecommons.org/licenses/by-nc-sa/2.0/"},
    {"id": 2, "name": "Attribution License", "url": "http://creativecommons.org/licenses/by/2.0/"},
    {"id": 7, "name": "No known copyright restrictions", "url": "http://flickr.com/commons/usage/"},
]  # fmt: skip


def credit(*files: dict) -> None:
    """Images of different licences as COCO's files give them (a licence id of the file's table,
    coco_url, flickr_url), one image in four with none; the files agree on each image."""
    for data in files:
        data["licenses"] = LICENCES
        for im in data["images"]:
            k = im["id"] % 4
            if k:
                im["license"] = LICENCES[k - 1]["id"]
                im["coco_url"] = f"http://images.cocodataset.org/val2017/{im['file_name']}"
            if k % 2:
                im["flickr_url"] = f"http://farm{k}.staticflickr.com/{im['id']}/{im['id']}_z.jpg"


@pytest.fixture(scope="module")
def exports(release: Callable[[str], Built]) -> tuple[Path, Path, dict]:
    """(raw tree, built project, what the tree changed) of a build with no vocabulary_dir."""
    built = release("coco-exports")
    return built.raw, built.project, built.tree_info


def test_the_vocabulary_comes_from_the_categories(exports: tuple[Path, Path, dict]) -> None:
    raw, project, changed = exports
    derived = project / f"results/{DATASET}/categories"
    listed = (derived / "category_names.tsv").read_text().splitlines()
    for label, name in changed["renamed"].items():
        assert f"{name}\t{label}" in listed  # "Sky Blue" maps back to the label sky-blue
    tree = Hierarchy.from_yaml(derived / "hierarchy.yaml")
    categories = json.loads((raw / "annotations/annotator-1.json").read_text())["categories"]
    for c in categories:
        parent = c["supercategory"].lower().replace(" ", "-") or "entity"
        assert tree.parent(c["name"].lower().replace(" ", "-")) in {parent, "entity"}
    vocabulary = pq.read_table(project / RELEASE / "data/vocabulary.parquet").to_pylist()
    assert {v["label"] for v in vocabulary} == set(tree.nodes) - {"entity"}  # the root is no label
    report = json.loads((project / f"results/{DATASET}/ingest/report.json").read_text())
    assert report["quirks"]["self_intersecting_polygons"] == 1
    assert all(c["rejected"] == 0 for a, c in report["annotators"].items() if a != "consensus")


def test_coco_ids_and_crowd_are_columns_and_crowd_stays_out_of_subsets(exports: tuple[Path, Path, dict]) -> None:
    _, project, changed = exports
    regions = pq.read_table(project / RELEASE / "data/regions.parquet").to_pylist()
    crowd = [r for r in regions if r["iscrowd"]]
    assert [(r["annotator"], r["annotation_id"], r["category_id"]) for r in crowd] == [
        ("annotator-1", changed["crowd"]["id"], changed["crowd"]["category_id"])
    ]
    assert all(
        r["annotation_id"] is None and r["category_id"] is None for r in regions if r["annotator"] == "consensus"
    )
    subsets = pq.read_table(project / RELEASE / "data/subsets.parquet").to_pylist()
    keys = {(s["image_id"], s["annotator"], s["region_id"]) for s in subsets}
    assert {s["annotator"] for s in subsets} == {"annotator-1"}
    assert (crowd[0]["image_id"], "annotator-1", crowd[0]["region_id"]) not in keys
    report = json.loads((project / RELEASE / "results/subsets.json").read_text())
    assert report["crowd_regions"] == {"count": 1, "in_subsets": False}


def test_the_card_speaks_of_the_collection(exports: tuple[Path, Path, dict]) -> None:
    _, project, _ = exports
    folder = project / RELEASE
    card = (folder / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["source_datasets"] == ["original"] and "coco" in front["tags"] and "saiapr-tc-12" not in front["tags"]
    assert "in the layout of the segmented and annotated IAPR TC-12" not in card
    assert "or annotation-tool exports in the COCO layout" in card and "escalante2010saiapr" not in card
    assert not re.search(r"\bnan\b", card, re.IGNORECASE)
    regions_config = next(c for c in front["configs"] if c["config_name"] == "regions")
    assert {f["split"] for f in regions_config["data_files"]} == {"train", "test", "full"}
    full = next(f["path"] for f in regions_config["data_files"] if f["split"] == "full")
    annotators = set(pq.read_table(folder / full, columns=["annotator"])["annotator"].to_pylist())
    assert annotators == {"annotator-1", "annotator-2", "consensus"}  # every annotator's regions
    croissant = json.loads((folder / "croissant.json").read_text())
    assert "isBasedOn" not in croissant and "COCO" in croissant["keywords"] and "IAPR" not in croissant["citeAs"]
    assert json.loads((folder / "manifest.json").read_text())["layout"] == "coco"


def test_export_coco_round_trips(exports: tuple[Path, Path, dict], tmp_path: Path) -> None:
    raw, project, _ = exports
    folder, out = project / RELEASE, tmp_path / "coco"
    assert cli.main(["export-coco", str(folder), str(out), "--images", str(raw)]) == 0
    assert sorted(p.name for p in (out / "annotations").iterdir()) == ["annotator-1.json", "annotator-2.json"]
    for image in pq.read_table(folder / "data/images.parquet").to_pylist():
        data = (out / "images" / Path(image["path"]).name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == image["sha256"]
    vocab = project / f"results/{DATASET}/categories"
    words, tree = Registry.read(vocab / "label_ids.tsv").ids(), Hierarchy.from_yaml(vocab / "hierarchy.yaml")
    again = ingest_shard(out, "00", words, hierarchy=tree, settings=IngestSettings(shard_size=1000))
    assert set(again.rejects["source"].to_pylist()) <= {"consensus"}
    assert again.report["quirks"] == {"crowd_area_not_its_pixels": 1}  # kept, as in the source

    def rows(table: list[dict]) -> list[tuple]:
        return sorted(tuple(json.dumps(r[c], sort_keys=True) for c in COMPARED) for r in table)

    released = pq.read_table(folder / "data/regions.parquet").to_pylist()
    assert rows(again.regions.to_pylist()) == rows(released)
    # Each image's licence and addresses, as the collection gave them, every one kept.
    credited = ["image_id", *CREDITS]
    before = pq.read_table(folder / "data/images.parquet", columns=credited).sort_by("image_id")
    assert len(set(before["license"].to_pylist())) == len(LICENCES) + 1  # three licences, and none
    assert again.images.select(credited).sort_by("image_id").to_pylist() == before.to_pylist()
    written = json.loads((out / "annotations" / "annotator-1.json").read_text())
    assert {(x["name"], x["url"]) for x in written["licenses"]} == {(x["name"], x["url"]) for x in LICENCES}
    key = ["image_id", "annotator", "region_id"]
    ours = again.features.sort_by([(k, "ascending") for k in key])
    theirs = pq.read_table(folder / "data/regions.parquet", columns=[*key, *tables.FEATURE_NAMES])
    theirs = theirs.sort_by([(k, "ascending") for k in key])
    for name in tables.FEATURE_NAMES:
        np.testing.assert_array_equal(ours[name].to_numpy(), theirs[name].to_numpy())
    for name in ("annotator-1.json", "annotator-2.json"):
        assert_same_for_pycocotools(raw / "annotations" / name, out / "annotations" / name)
    one = tmp_path / "one"
    assert cli.main(["export-coco", str(folder), str(one), "--annotator", "consensus"]) == 0
    assert [p.name for p in (one / "annotations").iterdir()] == ["derived-consensus.json"]
    assert cli.main(["export-coco", str(folder), str(one)]) == 2  # an existing folder: one line


@pytest.mark.parametrize("format_name", ["coco-panoptic", "saiapr", "classmap"])
def test_every_export_keeps_each_image_s_licence(
    exports: tuple[Path, Path, dict], tmp_path: Path, format_name: str
) -> None:
    """A format with a place for them (COCO panoptic's images entries and licenses) carries each
    image's licence and addresses; any other gets image_credits.csv beside its files: all kept."""
    _, project, _ = exports
    folder, out = project / RELEASE, tmp_path / format_name
    images = pq.read_table(folder / "data/images.parquet", columns=["image_id", "path", *CREDITS]).to_pylist()
    said = {r["image_id"]: {c: r[c] for c in CREDITS} for r in images if any(r[c] for c in CREDITS)}
    assert len(said) > len(images) // 2
    assert cli.main(["export", str(folder), str(out), "--format", format_name, "--annotator", "annotator-1"]) == 0
    if format_name == "coco-panoptic":
        by_name = {Path(r["path"]).name: r["image_id"] for r in images}
        found = {}
        for document in (json.loads(f.read_text()) for f in sorted(out.rglob("panoptic_*.json"))):
            licences = {x["id"]: x for x in document["licenses"]}
            for entry in document["images"]:
                licence = licences.get(entry.get("license"), {})
                found[by_name[entry["file_name"]]] = {
                    "license": licence.get("name"), "license_url": licence.get("url"), "url": entry.get("coco_url"),
                    "original_url": entry.get("flickr_url"), "attribution": None,
                }  # fmt: skip
        assert {i: v for i, v in found.items() if any(v.values())} == said
        assert not (out / "image_credits.csv").exists()
    else:
        with (out / "image_credits.csv").open(encoding="utf-8") as f:
            rows = {int(r["image_id"]): {c: r[c] or None for c in CREDITS} for r in csv.DictReader(f)}
        assert rows == said


def test_show_titles_images_without_captions_by_id(
    exports: tuple[Path, Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw, project, _ = exports
    drawn: list[dict] = []
    monkeypatch.setattr(plots, "release_images", lambda panels, out: drawn.extend(panels))
    out = tmp_path / "show.png"
    assert cli.main(["show", str(project / RELEASE), "--images", str(raw), "--count", "3", "--out", str(out)]) == 0
    assert [p["title"] for p in drawn] == [str(i) for i in sorted(image_ids(project / RELEASE))[:3]]


def image_ids(folder: Path) -> list[int]:
    return pq.read_table(folder / "data/images.parquet", columns=["image_id"])["image_id"].to_pylist()


def assert_same_for_pycocotools(source: Path, exported: Path) -> None:
    """Every field pycocotools reads has the source's value in the export: images (id, file name,
    size), categories (id, name, supercategory), annotations (image, category, crowd flag, area,
    box, and the mask ``annToMask`` draws); a field the source lacks is the build's measure."""
    from pycocotools.coco import COCO

    a, b = COCO(str(source)), COCO(str(exported))
    assert sorted(a.imgs) == sorted(b.imgs)
    for i in a.imgs:
        assert [a.imgs[i][k] for k in ("file_name", "width", "height")] == [
            b.imgs[i][k] for k in ("file_name", "width", "height")
        ]
    assert a.cats == b.cats
    assert sorted(a.anns) == sorted(b.anns)
    for i, ann in a.anns.items():
        other = b.anns[i]
        for field in ("image_id", "category_id", "iscrowd", "area", "bbox"):  # where the source has it
            assert ann.get(field, other[field]) == other[field], (i, field)
        np.testing.assert_array_equal(a.annToMask(ann), b.annToMask(other))


@pytest.mark.parametrize("iou_type", ["segm", "bbox", "boundary"])
def test_instances_are_scored_as_cocoeval_scores_the_exported_files(
    exports: tuple[Path, Path, dict], tmp_path: Path, iou_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evaluate --task instances`` against annotator-1 gives COCOeval's 12 figures on the files
    ``export coco`` writes of the same release (crowd region, source areas and ids included), to
    1e-12; detections are the other annotator's regions, some twice, with scores."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    _, project, _ = exports
    folder, out = project / RELEASE, tmp_path / "coco"
    assert cli.main(["export-coco", str(folder), str(out)]) == 0
    mine = json.loads((out / "annotations/annotator-1.json").read_text())
    other = json.loads((out / "annotations/annotator-2.json").read_text())
    rng = np.random.default_rng(0)
    ids = {im["file_name"]: im["id"] for im in mine["images"]}
    theirs = {im["id"]: im["file_name"] for im in other["images"]}
    detections = [
        {"image_id": ids[theirs[a["image_id"]]], "category_id": a["category_id"], "segmentation": a["segmentation"],
         "bbox": a["bbox"], "score": float(rng.random())}
        for a in other["annotations"] for _ in range(1 + (a["id"] % 3 == 0))
        if theirs[a["image_id"]] in ids
    ]  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps(detections))
    report = tmp_path / "report.json"
    scored = ["--annotator", "annotator-1", "--split", "all", "--iou-type", iou_type]
    done = evaluate_instances(folder, str(tmp_path / "results.json"), *scored, "--out", str(report))
    assert done.returncode == 0, done.stderr
    ours = json.loads(report.read_text())
    if iou_type == "boundary":  # pycocotools has no Boundary IoU: faster-coco-eval's (boundary-iou-api's)
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(out / "annotations/annotator-1.json"))
        evaluation = COCOeval(gt, gt.loadRes(str(tmp_path / "results.json")), iou_type)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    assert ours["crowd"] == 1
    from regionbench.scoring.measures.average_precision import STATS

    assert np.allclose([ours["measures"][k] for k in STATS], evaluation.stats[:12], rtol=0, atol=1e-12)
    # per image (view --run sorts by it): the F1 at IoU 0.5 on the exported files, by the release's ids
    from regionbench.scoring import results
    from regionbench.scoring.measures import average_precision as instances

    paths = pq.read_table(folder / "data/images.parquet", columns=["image_id", "path"]).to_pylist()
    release_id = {
        im["id"]: next(p["image_id"] for p in paths if p["path"].endswith(im["file_name"])) for im in mine["images"]
    }
    checked = results.check_results(tmp_path / "results.json", detections, mine, {})
    whole = instances.Engine(iou_type, 100, instances.area_bounds(None)).evaluate(mine, checked)
    expected = {release_id[i]: v for i, v in instances.per_image_f1(whole.per_image).items()}
    assert {int(i): v for i, v in ours["per_image"].items()} == expected and set(expected.values()) - {0.0, 1.0}
    import regionbench

    release_ = regionbench.load(folder)
    run = {"annotator": "annotator-1", "split": "all", "iou_type": iou_type}
    same = regionbench.evaluate(release_, tmp_path / "results.json", "instances", **run)
    assert same["measures"] == ours["measures"] and same["settings"] == ours["settings"]  # the command's
    # what the score was computed on, and the breakdown by hierarchy level from the same figures
    assert ours["release"]["digest"] == json.loads((folder / "manifest.json").read_text())["digest"]
    from regionbench.scoring.measures.confusion import at_level
    from regionbench.scoring.tasks import release_hierarchy

    tree = release_hierarchy(release_)
    named = pq.read_table(folder / "data/source_categories.parquet").to_pylist()
    label = {r["name"]: r["label"] for r in named if r["annotator"] == "annotator-1" and r["label"]}
    scored = [c for c in ours["per_category_ap"].values() if c["ap"] is not None]
    for depth, nodes in ours["per_level_ap"].items():
        under = at_level(tree, [label.get(c["name"], c["name"]) for c in scored], int(depth))
        for node, value in nodes.items():
            members = [c["ap"] for c, u in zip(scored, under, strict=True) if u == node]
            assert value == pytest.approx(float(np.mean(members)), abs=1e-12)
    assert ours["per_level_ap"] and ours["conventions"]
    # a range of 5 images at a time, 40 detections held before spilling, on two processes: the same report
    from regionbench.scoring import runner
    from regionbench.scoring.tasks import instances as task

    monkeypatch.setattr(task, "RANGE", 5)
    monkeypatch.setattr(runner, "HELD", 40)
    ranged = regionbench.evaluate(release_, tmp_path / "results.json", "instances", cores=2, **run)
    assert json.dumps(ranged, sort_keys=True) == json.dumps(same, sort_keys=True)
    monkeypatch.undo()
    each = regionbench.evaluate(release_, tmp_path / "results.json", "instances", **(run | {"annotator": None,
                                                                                          "all_annotators": True}))  # fmt: skip
    assert sorted(each["per_annotator"]) == ["annotator-1", "annotator-2"]
    assert each["per_annotator"]["annotator-1"] == ours["measures"]
    for name, value in each["measures"].items():  # the headline: the mean over the annotators
        assert value == pytest.approx(np.mean([each["per_annotator"][a][name] for a in each["per_annotator"]]))
    assert set(each["human_ceiling"]["per_annotator"]) == {"annotator-1", "annotator-2"}
    labels = set(pq.read_table(folder / "data/vocabulary.parquet", columns=["label"])["label"].to_pylist())
    names = {c["name"] for c in ours["per_category_ap"].values()}
    assert names and names <= labels  # named by the release's labels, keyed by the file's ids
    # the file's categories without an instance among the scored images: named, no AP, in no mean
    present = {c["name"] for c in ours["per_category_ap"].values() if c["ap"] is not None}
    assert {c["name"] for c in ours["per_category_ap"].values() if c["ap"] is None} == set(ours["categories_absent"])
    assert ours["categories_absent"] and present.isdisjoint(ours["categories_absent"])
    assert f"note: {len(ours['categories_absent'])} of the truth's categories have no instance" in done.stdout


def named_run(folder: Path, out: Path) -> tuple[list[dict], dict[int, str], dict[int, str]]:
    """annotator-2's regions as detections against annotator-1's truth, by the truth's category
    ids; with the release label and the source's own name of each id (they differ: the source
    spells "Sky Blue", the release says sky-blue, and its label ids are not the file's ids)."""
    import regionbench
    from regionbench.scoring.tasks import _coco_truth as coco_truth
    from regionbench.scoring.tasks import _masks
    from regionbench.scoring.tasks import instances as instances_task

    data = regionbench.load(folder)
    images = _masks.scored_images(data, "all")
    _, truth = instances_task.whole_truth(data, images, "annotator-1")
    numbering = coco_truth.numbering(data.table("coverage"), "annotator-1")
    detections = coco_truth.as_detections(data.regions, "annotator-2", truth, numbering)
    for k, d in enumerate(detections):
        d["score"] = round((k * 7919 % 97 + 1) / 98, 4)
    label = {c["id"]: c["name"] for c in truth["categories"]}
    named = data.table("source_categories")
    mine = named[named["annotator"] == "annotator-1"]
    source = dict(zip(mine["category_id"].astype(int), mine["name"], strict=True))
    label_ids = dict(zip(data.vocabulary["label"], data.vocabulary["label_id"].astype(int), strict=True))
    assert any(label_ids[label[d["category_id"]]] != d["category_id"] for d in detections)  # ids differ
    assert any(source[d["category_id"]] != label[d["category_id"]] for d in detections)  # names differ
    return detections, label, source


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_run_scores_the_same_whichever_way_it_names_categories(
    exports: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """A detection names its category by the truth's id, by the release's label, by the source's
    own name, or by an id and a name that agree: each run, however mixed, scores as the run by id."""
    import regionbench

    _, project, _ = exports
    folder = project / RELEASE
    out = tmp_path_factory.mktemp("named")
    detections, label, source = named_run(folder, out)
    ways = data.draw(st.lists(st.sampled_from(["id", "key", "source", "id+key", "id+source"]),
                              min_size=len(detections), max_size=len(detections)))  # fmt: skip
    given = []
    for d, way in zip(detections, ways, strict=True):
        c = d["category_id"]
        item = {k: v for k, v in d.items() if k != "category_id"}
        if "id" in way:
            item["category_id"] = c
        if "key" in way:
            item["label"] = label[c]
        if "source" in way:
            item["label"] = source[c]
        given.append(item)
    release_ = regionbench.load(folder)

    def report(run: list[dict], name: str) -> dict:
        (out / name).write_text(json.dumps(run))
        found = regionbench.evaluate(release_, out / name, "instances", annotator="annotator-1", split="all")
        return {k: v for k, v in found.items() if k not in ("predictions", "predictions_sha256")}

    assert report(given, "mixed.json") == report(detections, "by-id.json")


OPENED: list[str] = []  # the files opened while a test watches (``watch_opens``)
WATCHING: list[bool] = []
HOOKED: list[bool] = []  # an audit hook cannot be removed: added once a process


def watch_opens(event: str, args: tuple) -> None:
    """An audit hook (PEP 578): every file Python opens (``open``, ``os.open``, ``Path.open``)."""
    if WATCHING and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        OPENED.append(os.fsdecode(args[0]))


def test_a_results_file_is_opened_once_whatever_the_truths(exports: tuple[Path, Path, dict], tmp_path: Path) -> None:
    """``--all-annotators`` scores a run against each human from one reading of its file: the
    results file is opened twice (its reading, its digest) however many truths it is scored
    against, and each truth's figures are those ``--annotator`` gives (the later truths read the
    detections the first reading kept)."""
    import regionbench

    _, project, _ = exports
    folder = project / RELEASE
    detections, _, _ = named_run(folder, tmp_path)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(detections))
    data = regionbench.load(folder)
    if not HOOKED:
        sys.addaudithook(watch_opens)
        HOOKED.append(True)
    OPENED.clear()
    WATCHING.append(True)
    try:
        each = regionbench.evaluate(data, run, "instances", all_annotators=True, split="all")
    finally:
        WATCHING.clear()
    assert OPENED.count(str(run)) == 2, OPENED
    assert sorted(each["per_annotator"]) == ["annotator-1", "annotator-2"]
    for who, figures in each["per_annotator"].items():
        assert regionbench.evaluate(data, run, "instances", annotator=who, split="all")["measures"] == figures
    assert set(each["intervals"]) == {"AP", "AP50", "AP75"}  # the mean's: tests/workflow/test_evaluation.py


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d, label, source: d | {"label": label[d["category_id"]] + "-x"}, "names no category of the truth"),
        (lambda d, label, source: d | {"category_id": max(label) + 1}, "is not a category of the truth"),
        (lambda d, label, source: {k: v for k, v in d.items() if k != "category_id"}, "no category_id or label"),
        (
            lambda d, label, source: d | {"label": next(v for k, v in label.items() if k != d["category_id"])},
            "disagree; give one",
        ),
    ],
)
def test_a_detection_of_no_category_of_the_truth_is_one_line(
    exports: tuple[Path, Path, dict], tmp_path: Path, change, said: str
) -> None:

    _, project, _ = exports
    folder = project / RELEASE
    detections, label, source = named_run(folder, tmp_path)
    detections[3] = change(detections[3], label, source)
    (tmp_path / "run.json").write_text(json.dumps(detections))
    done = evaluate_instances(
        folder, str(tmp_path / "run.json"), "--annotator", "annotator-1", "--split", "all", "--strict"
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "detection 3: " in lines[0] and said in lines[0], done.stderr


def test_detections_of_categories_the_truth_lacks_are_left_out_and_counted(
    exports: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    """Without --strict, a detection whose category_id names no category of the truth is left
    out as COCOeval leaves it out: the figures are those of the run without it, and the report
    counts what was left out by id, in a note too."""
    import regionbench

    _, project, _ = exports
    folder = project / RELEASE
    detections, label, _ = named_run(folder, tmp_path)
    unknown = max(label) + 1
    extra = [d | {"category_id": unknown, "score": 0.99} for d in detections[:4]]
    (tmp_path / "plain.json").write_text(json.dumps(detections))
    (tmp_path / "more.json").write_text(json.dumps(detections[:2] + extra + detections[2:]))
    data = regionbench.load(folder)
    plain = regionbench.evaluate(data, tmp_path / "plain.json", "instances", annotator="annotator-1", split="all")
    more = regionbench.evaluate(data, tmp_path / "more.json", "instances", annotator="annotator-1", split="all")
    assert more["measures"] == plain["measures"] and more["per_image"] == plain["per_image"]
    assert plain["detections_left_out"] == {} and more["detections_left_out"] == {str(unknown): 4}
    assert any("left out" in n and f"category_id {unknown} (4)" in n for n in more["notes"]), more["notes"]


@pytest.mark.parametrize(("iou_type", "tied"), [("segm", False), ("bbox", False), ("segm", True), ("bbox", True)])
def test_tide_errors_are_tidecv_s_on_the_exported_files(
    exports: tuple[Path, Path, dict], tmp_path: Path, iou_type: str, tied: bool
) -> None:
    """``evaluate --task instances --tide`` against annotator-1: TIDE's AP50 and every error type's
    dAP equal tidecv's on the files ``export coco`` writes (crowd region included) to 1e-6, with
    detections relabelled and duplicated; ``tied``: scores rounded to 0.1 (ties within and across
    images) and each duplicate an exact copy, score and all."""
    import contextlib
    import io

    from tidecv import TIDE, datasets

    _, project, _ = exports
    folder, out = project / RELEASE, tmp_path / "coco"
    assert cli.main(["export-coco", str(folder), str(out)]) == 0
    mine = json.loads((out / "annotations/annotator-1.json").read_text())
    other = json.loads((out / "annotations/annotator-2.json").read_text())
    rng = np.random.default_rng(1)
    ids = {im["file_name"]: im["id"] for im in mine["images"]}
    theirs = {im["id"]: im["file_name"] for im in other["images"]}
    categories = sorted(c["id"] for c in mine["categories"])
    detections = []

    def score() -> float:
        return round(float(rng.random()), 1) if tied else float(rng.random())

    for a in other["annotations"]:
        if theirs[a["image_id"]] not in ids:
            continue
        d = {"image_id": ids[theirs[a["image_id"]]], "category_id": a["category_id"], "segmentation": a["segmentation"],
             "bbox": a["bbox"], "score": score()}  # fmt: skip
        detections.append(d)
        if rng.random() < 0.3:  # another class
            detections.append(d | {"category_id": int(rng.choice(categories)), "score": score()})
        if rng.random() < 0.2:  # a duplicate
            detections.append(dict(d) if tied else d | {"score": score()})
    (tmp_path / "results.json").write_text(json.dumps(detections))
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator = TIDE()
        mode = TIDE.BOX if iou_type == "bbox" else TIDE.MASK
        run = evaluator.evaluate(
            datasets.COCO(str(out / "annotations/annotator-1.json")),
            datasets.COCOResult(str(tmp_path / "results.json")),
            mode=mode,
            name="run",
        )
        main, special = evaluator.get_main_errors()["run"], evaluator.get_special_errors()["run"]
    report = tmp_path / "report.json"
    scored = ["--annotator", "annotator-1", "--split", "all", "--iou-type", iou_type, "--tide"]
    done = evaluate_instances(folder, str(tmp_path / "results.json"), *scored, "--out", str(report))
    assert done.returncode == 0, done.stderr
    whole = json.loads(report.read_text())
    found = whole["tide"]
    assert found["ap"] == pytest.approx(run.ap, abs=1e-6)
    assert found["coco_ap50"] == pytest.approx(100 * whole["measures"]["AP50"], abs=1e-9)
    said = [n for n in whole["notes"] if n.startswith("TIDE's AP50")]
    assert bool(said) == (abs(found["ap"] - found["coco_ap50"]) > 1e-6), whole["notes"]
    assert {k: pytest.approx(v, abs=1e-6) for k, v in main.items()} == found["main"]
    assert {k: pytest.approx(v, abs=1e-6) for k, v in special.items()} == found["special"]
    assert sum(found["counts"].values()) > 0 and "tide.main.Cls" in done.stdout
    # against each human: the same TIDE each --annotator gives, in one run
    import regionbench

    data = regionbench.load(folder)
    options = {"split": "all", "iou_type": iou_type, "tide": True}
    each = regionbench.evaluate(data, tmp_path / "results.json", "instances", all_annotators=True, **options)
    assert sorted(each["per_annotator_tide"]) == ["annotator-1", "annotator-2"]
    assert each["per_annotator_tide"]["annotator-1"] == found
    alone = regionbench.evaluate(data, tmp_path / "results.json", "instances", annotator="annotator-2", **options)
    assert each["per_annotator_tide"]["annotator-2"] == alone["tide"] != found


def test_the_human_ceiling_of_boundary_ap_takes_the_run_s_band(
    exports: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    """Under ``--iou-type boundary`` the humans are scored against each other with the run's band:
    a narrower band gives a lower ceiling (every edge pixel counts), and the report keeps it."""

    _, project, _ = exports
    folder = project / RELEASE
    detections = tmp_path / "none.json"
    detections.write_text("[]")
    ceilings = {}
    for ratio in ("0.005", "0.2"):
        out = tmp_path / f"{ratio}.json"
        done = evaluate_instances(
            folder,
            str(detections),
            "--split",
            "all",
            "--iou-type",
            "boundary",
            "--dilation-ratio",
            ratio,
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(out.read_text())
        assert report["settings"]["dilation_ratio"] == float(ratio)
        ceilings[ratio] = report["human_ceiling"]["AP"]
    assert ceilings["0.005"] < ceilings["0.2"]


def test_each_region_says_who_drew_it_and_runs_score_by_source(
    exports: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    """The config names annotator-2 a model: its regions say so (regions.drawn_by), the card and
    Croissant count them, and --by-source scores against each kind apart, each figure what
    --annotator gives for that annotator alone."""
    _, project, _ = exports
    folder = project / RELEASE
    regions = pq.read_table(folder / "data/regions.parquet", columns=["image_id", "annotator", "drawn_by"]).to_pylist()
    expected = {"annotator-1": "human", "annotator-2": "model:sam-vit-h@1.0", "consensus": "consensus"}
    assert all(r["drawn_by"] == expected[r["annotator"]] for r in regions)
    counts = {kind: sum(r["drawn_by"] == kind for r in regions) for kind in set(expected.values())}
    assert all(counts.values())
    croissant = json.loads((folder / "croissant.json").read_text())
    assert croissant["rai:machineAnnotationTools"] == "sam-vit-h@1.0"
    card = (folder / "README.md").read_text()
    for kind, n in counts.items():
        assert f"{kind} {n:,} region" in card
    # a run: annotator-1's regions, by the ids its file gave the images and the labels, scored
    truth = pq.read_table(folder / "data/regions.parquet", columns=["image_id", "annotator", "label", "mask"])
    coverage = pq.read_table(folder / "data/coverage.parquet", columns=["image_id", "annotator", "source_image_id"])
    source_id = {c["image_id"]: c["source_image_id"] for c in coverage.to_pylist() if c["annotator"] == "annotator-1"}
    detections = [
        {
            "image_id": source_id[r["image_id"]],
            "label": r["label"],
            "segmentation": r["mask"],
            "score": 0.5 + 0.01 * (k % 40),
        }
        for k, r in enumerate(truth.to_pylist())
        if r["annotator"] == "annotator-1" and r["mask"] is not None and r["label"] is not None
    ]
    run = tmp_path / "run.json"
    run.write_text(json.dumps(detections))
    report = tmp_path / "report.json"
    done = evaluate_instances(folder, str(run), "--split", "all", "--by-source", "--out", str(report))
    assert done.returncode == 0, done.stderr
    grouped = json.loads(report.read_text())
    assert grouped["release"]["tag"] == "exports-v1.0.0" and grouped["release"]["digest"]
    assert set(grouped["by_source"]) == set(expected.values())
    for annotator, kind in expected.items():
        alone = tmp_path / f"{annotator}.json"
        done = evaluate_instances(folder, str(run), "--split", "all", "--annotator", annotator, "--out", str(alone))
        assert done.returncode == 0, done.stderr
        assert grouped["by_source"][kind][annotator] == json.loads(alone.read_text())["measures"]
    shown = evaluate_instances(folder, str(run), "--split", "all", "--by-source").stdout
    assert "against the regions drawn by model:sam-vit-h@1.0:" in shown and "  annotator-2.AP " in shown
    assert (
        grouped["by_source"]["human"]["annotator-1"]["AP"]
        > grouped["by_source"]["model:sam-vit-h@1.0"]["annotator-2"]["AP"]
    )
