"""A COCO export gives back what came in: the files the source gave (one per split in COCO's own
tree, under their names), each file's ``info`` and ``licenses`` as given, every image's licence
id as its entry gave it (a table or none), and image, category and annotation ids as they came,
sparse, unsorted or unused as they may be; and the same of COCO panoptic files. Ingest and export
run in-process on generated files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layouts.in_process import Released, released
from PIL import Image

from regionbench.core import geometry, tables
from regionbench.io import panoptic
from regionbench.io.coco import split
from regionbench.io.coco.export import export_release
from regionbench.synthetic import panoptic as panoptic_synth

H, W = 12, 16
NAMES = ["cat", "dog", "bird", "fish"]
IDS = st.integers(1, 10**9)


@st.composite
def collections(draw: st.DrawFn) -> dict[str, Any]:
    """A COCO tree's files: an export's (one or two annotators) or COCO's own (train and val
    files), with sparse unsorted ids, unused categories and licences, a licences table or none."""
    distributed = draw(st.booleans())
    images = draw(st.integers(2, 5))
    names = [f"{100 + 7 * k:012d}.jpg" for k in range(images)]
    category_ids = draw(st.lists(IDS, min_size=len(NAMES), max_size=len(NAMES), unique=True))
    categories = [{"id": i, "name": n, "supercategory": "animal"} for i, n in zip(category_ids, NAMES, strict=True)]
    with_table = draw(st.booleans())
    licence_ids = draw(st.lists(IDS, min_size=3, max_size=3, unique=True))
    licences = [{"id": i, "name": f"licence {i}", "url": f"http://example.org/{i}"} for i in licence_ids]
    info = draw(
        st.none() | st.fixed_dictionaries({"description": st.just("a collection"), "year": st.integers(1990, 2030)})
    )
    annotation_ids = iter(draw(st.lists(IDS, min_size=4 * images, max_size=4 * images, unique=True)))
    files = {}
    groups = (
        {"annotations/instances_train2017.json": names[::2], "annotations/instances_val2017.json": names[1::2]}
        if distributed
        else {f"annotations/{who}.json": names for who in ["alice", "bob"][: draw(st.integers(1, 2))]}
    )
    for path, group in groups.items():
        image_ids = draw(st.lists(IDS, min_size=len(group), max_size=len(group), unique=True))
        entries = []
        for image_id, name in zip(image_ids, group, strict=True):
            entry: dict[str, Any] = {"id": image_id, "file_name": name, "width": W, "height": H}
            given_licence = draw(st.none() | st.sampled_from(licence_ids) if with_table else st.none() | IDS)
            if given_licence is not None:
                entry["license"] = given_licence
            entries.append(entry)
        annotations = [
            {
                "id": next(annotation_ids),
                "image_id": entry["id"],
                "category_id": draw(st.sampled_from(category_ids[:3])),  # the fourth: unused
                "segmentation": {"size": [H, W], "counts": geometry.encode_rle(_box(k))},
                "iscrowd": 0,
            }
            for entry in draw(st.permutations(entries))
            for k in range(draw(st.integers(0, 2)))
        ]
        document = {"images": draw(st.permutations(entries)), "annotations": annotations}
        document["categories"] = draw(st.permutations(categories))
        if with_table:
            document["licenses"] = draw(st.permutations(licences))
        if info is not None:
            document["info"] = info
        files[path] = document
    return {"distributed": distributed, "names": names, "files": files}


def _box(k: int) -> np.ndarray:
    mask = np.zeros((H, W), bool)
    mask[1 + k : 6 + 2 * k, 2 + 3 * k : 8 + 3 * k] = True
    return mask


def _write(root: Path, collection: dict[str, Any]) -> None:
    for path, document in collection["files"].items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(json.dumps(document))
        for entry in document["images"]:
            folder = Path(path).stem.removeprefix("instances_") if collection["distributed"] else "images"
            k = collection["names"].index(entry["file_name"])
            (root / folder).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (W, H), (30 * k, 200 - 20 * k, 90)).save(root / folder / entry["file_name"])


def _released(root: Path, words: dict[str, int] | None = None) -> Released:
    """The release's tables of the tree at ``root`` as the build makes them, in-process: every
    image and region accepted."""
    found = released(root, "coco", words or {name: k for k, name in enumerate(NAMES, 1)})
    assert found.arrow("rejects").num_rows == 0, found.arrow("rejects").to_pylist()
    return found


def _as_given(document: dict[str, Any]) -> dict[str, Any]:
    """What an export must give back of a file: its statements, and ids, names and licence ids."""
    return {
        "info": document.get("info"),
        "licenses": document.get("licenses"),
        "images": sorted(
            (e["id"], e["file_name"], e["width"], e["height"], e.get("license", -1)) for e in document["images"]
        ),
        "categories": sorted((c["id"], c["name"], c["supercategory"]) for c in document["categories"]),
        "annotations": sorted((a["id"], a["image_id"], a["category_id"]) for a in document["annotations"]),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collection=collections())
def test_a_coco_export_gives_back_the_files_ids_and_licences_that_came_in(
    tmp_path_factory: Any, collection: dict[str, Any]
) -> None:
    root = tmp_path_factory.mktemp("coco") / "raw"
    _write(root, collection)
    out = root.parent / "export"
    counts = export_release(_released(root), out)
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.json"))
    assert written == sorted(collection["files"]) and counts["files"] == len(written)
    for path, document in collection["files"].items():
        assert _as_given(json.loads((out / path).read_text())) == _as_given(document), path
    assert split.shape(out).distributed == collection["distributed"]  # the tree's shape as it came
    assert tables.CONSENSUS not in {Path(p).stem for p in written}


@pytest.fixture(scope="module")
def panoptic_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("panoptic") / "coco"
    list(panoptic_synth.write_tree(root, 4, 3, "coco", 2))
    return root


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_panoptic_export_gives_back_each_file_s_info_and_licences(
    panoptic_tree: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """The same for COCO panoptic files: each file where it came, with its ``info``, its licences
    table (or none) and every image's licence id as given."""
    root = tmp_path_factory.mktemp("tree") / "coco"
    shutil.copytree(panoptic_tree, root)
    given_files = {}
    for file in panoptic.sources(root):
        document = json.loads((root / file.json).read_text())
        table = data.draw(st.booleans())
        ids = data.draw(st.lists(IDS, min_size=3, max_size=3, unique=True))
        for entry in document["images"]:
            entry.pop("license", None)
            chosen = data.draw(st.none() | (st.sampled_from(ids) if table else IDS))
            if chosen is not None:
                entry["license"] = chosen
        document.pop("licenses", None)
        if table:
            document["licenses"] = [{"id": i, "name": f"licence {i}", "url": ""} for i in reversed(ids)]
        document.pop("info", None)
        if data.draw(st.booleans()):
            document["info"] = {"description": "panoptic", "version": data.draw(st.sampled_from(["1.0", "2"]))}
        (root / file.json).write_text(json.dumps(document))
        given_files[file.json] = document
    found = released(root, "coco-panoptic")
    out = root.parent / "export"
    panoptic.export_release(found, out)
    for path, document in given_files.items():
        again = json.loads((out / path).read_text())
        assert again.get("info") == document.get("info") and again.get("licenses") == document.get("licenses")
        licences = lambda d: sorted((e["id"], e.get("license", -1)) for e in d["images"])  # noqa: E731
        assert licences(again) == licences(document), path


def test_the_real_coco_subset_exports_as_it_came(real_data: Any, tmp_path: Path) -> None:
    """COCO 2017 as distributed: instances_train2017.json and instances_val2017.json come back
    under their names, their images in train2017/ and val2017/ under their file names, with
    every image's licence id (the subset keeps the ids, not the table: image 532481 names
    licence 3), its addresses, and the category and annotation ids as given."""
    from regionbench.io.coco.categories import write_vocabulary

    root = real_data("coco-tiny")
    labels = write_vocabulary(root, tmp_path / "vocabulary").labels
    out = tmp_path / "export"
    export_release(_released(root, {label: k for k, label in enumerate(sorted(labels), 1)}), out)
    for split_name in ("train2017", "val2017"):
        given = json.loads((root / f"annotations/instances_{split_name}.json").read_text())
        again = json.loads((out / f"annotations/instances_{split_name}.json").read_text())
        entry = lambda e: (e["id"], e["file_name"], e.get("license"), e.get("coco_url"), e.get("flickr_url"))  # noqa: E731
        assert sorted(map(entry, again["images"])) == sorted(map(entry, given["images"]))
        assert _as_given(again) == _as_given(given)
        assert (out / split_name).is_dir() and set(again) == set(given)
    val = json.loads((out / "annotations/instances_val2017.json").read_text())
    assert [e["license"] for e in val["images"] if e["id"] == 532481] == [3]
