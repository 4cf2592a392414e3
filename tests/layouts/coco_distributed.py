"""COCO and LVIS collections as their makers distribute them, written from a generated COCO tree.

- ``coco_tree``: ``train2017/``, ``val2017/``, ``annotations/instances_{train,val}2017.json``
  (bare file names, images listed in no id order, as in COCO's zips) and, beside them, files that hold no instances
  (``captions_val2017.json``, ``person_keypoints_val2017.json``);
- ``lvis_tree``: the same folders and ``annotations/lvis_v1_{train,val}.json``, whose images
  are named by ``coco_url`` alone (no ``file_name``) and whose val file lists images of both
  COCO folders, as LVIS v1's does.

Each returns what the tests check against: every image's folder and split, and the annotations.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from regionbench.synthetic.coco import write_collection

URL = "http://images.cocodataset.org"


def _generated(root: Path) -> dict:
    """A tiny one-annotator COCO tree under ``root/.export`` (removed after); its file's content,
    the image files moved to ``root/<folder>/`` by turns (train2017, val2017)."""
    export = root / ".export"
    for _ in write_collection(export, "tiny", annotators=1, disagreement=0.0, workers=1):
        pass
    data = json.loads((export / "annotations" / "annotator-1.json").read_text())
    for k, entry in enumerate(sorted(data["images"], key=lambda e: e["file_name"])):
        entry["folder"] = ("train2017", "val2017")[k % 2]
        (root / entry["folder"]).mkdir(parents=True, exist_ok=True)
        shutil.move(export / "images" / entry["file_name"], root / entry["folder"] / entry["file_name"])
    shutil.rmtree(export)
    (root / "annotations").mkdir(exist_ok=True)
    return data


def _part(data: dict, images: list[dict], **fields: object) -> dict:
    """The file of ``images`` (their annotations, every category) with ``fields`` on top."""
    ids = {e["id"] for e in images}
    return {
        "info": {"description": "COCO 2017 Dataset", "url": "http://cocodataset.org"},
        "licenses": [{"id": 1, "name": "Attribution License", "url": "http://creativecommons.org/licenses/by/2.0/"}],
        "images": images,
        "annotations": [a for a in data["annotations"] if a["image_id"] in ids],
        "categories": data["categories"],
        **fields,
    }


def coco_tree(root: Path) -> dict:
    """COCO 2017 as its zips unpack. Returns ``{"folder": {file name: folder}, "annotations": n,
    "left_alone": [...]}``."""
    data = _generated(root)
    folder = {e["file_name"]: e.pop("folder") for e in data["images"]}
    for e in data["images"]:
        e["license"] = 1
    for split in ("train2017", "val2017"):
        mine = [e for e in data["images"] if folder[e["file_name"]] == split]
        mine = [mine[k] for k in np.random.default_rng(len(mine)).permutation(len(mine))]  # in no id order, as COCO's
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(_part(data, mine)))
    val = [e for e in data["images"] if folder[e["file_name"]] == "val2017"]
    captions = [{"id": k, "image_id": e["id"], "caption": "a scene"} for k, e in enumerate(val)]
    (root / "annotations" / "captions_val2017.json").write_text(json.dumps({"images": val, "annotations": captions}))
    (root / "annotations" / "person_keypoints_val2017.json").write_text(
        json.dumps({"images": val, "annotations": [], "categories": [{"id": 1, "name": "person"}]})
    )
    left = ["annotations/captions_val2017.json", "annotations/person_keypoints_val2017.json"]
    return {"folder": folder, "annotations": len(data["annotations"]), "left_alone": left}


def lvis_tree(root: Path) -> dict:
    """LVIS v1 over COCO's folders: images named by ``coco_url``; the val file's images from both
    folders (every third image is LVIS val). Returns ``{"folder": {...}, "split": {file name:
    train or val}, "annotations": n}``."""
    data = _generated(root)
    folder = {e["file_name"]: e.pop("folder") for e in data["images"]}
    split = {}
    for k, e in enumerate(sorted(data["images"], key=lambda e: e["file_name"])):
        split[e["file_name"]] = "val" if k % 3 == 0 else "train"
    for e in data["images"]:
        e["coco_url"] = f"{URL}/{folder[e['file_name']]}/{e['file_name']}"
        e["neg_category_ids"], e["not_exhaustive_category_ids"] = [], []
    for c in data["categories"]:
        c["frequency"], c["synonyms"] = "f", [c["name"]]
    for side in ("train", "val"):
        mine = [
            {k: v for k, v in e.items() if k != "file_name"} for e in data["images"] if split[e["file_name"]] == side
        ]
        (root / "annotations" / f"lvis_v1_{side}.json").write_text(json.dumps(_part(data, mine)))
    return {"folder": folder, "split": split, "annotations": len(data["annotations"])}
