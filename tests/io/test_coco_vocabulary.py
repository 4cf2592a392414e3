"""A vocabulary and hierarchy taken from COCO categories, used by a build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import WHOLE
from PIL import Image

from regionbench import cli
from regionbench.core.hierarchy import Hierarchy
from regionbench.io.coco.categories import categories
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.vocabulary import Registry, derive


def test_categories_become_the_hierarchy_with_stable_ids(coco_pair: Path, tmp_path: Path) -> None:
    out = tmp_path / "vocab"
    counts = derive("coco", coco_pair, out)
    tree = Hierarchy.from_yaml(out / "hierarchy.yaml")
    for name, parent in categories(coco_pair).items():
        assert tree.parent(name) == (parent or "entity") or name in {
            n for n in tree.nodes if tree.parent(n) == "entity"
        }
    ids = Registry.read(out / "label_ids.tsv").ids()
    assert set(ids) == set(tree.labels) and counts["new_ids"] == len(ids)
    before = (out / "label_ids.tsv").read_bytes()
    assert derive("coco", coco_pair, out)["new_ids"] == 0 and (out / "label_ids.tsv").read_bytes() == before
    path = coco_pair / "annotations" / "annotator-1.json"
    data = json.loads(path.read_text())
    data["categories"].append({"id": 9999, "name": "unicycle", "supercategory": "vehicle"})
    grown = tmp_path / "grown"
    (grown / "annotations").mkdir(parents=True)
    (grown / "annotations" / "annotator-1.json").write_text(json.dumps(data))
    assert derive("coco", grown, out)["new_ids"] >= 1
    after = Registry.read(out / "label_ids.tsv").ids()
    assert {k: after[k] for k in ids} == ids and after["unicycle"] > max(ids.values())


def test_category_names_map_to_labels_by_one_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Names with spaces or other characters: from-coco lists each with its label, and ingest
    maps the annotations by the same rule."""
    from test_coco import H, W, rect

    from regionbench.core import geometry
    from regionbench.io.coco.ingest import category_label

    root = tmp_path / "coco"
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    Image.new("RGB", (W, H)).save(root / "images" / "1.png")
    names = ["traffic light", "Hair Drier", "café table", "person"]
    data = {
        "images": [{"id": 1, "file_name": "1.png", "width": W, "height": H}],
        "categories": [
            {"id": k, "name": n, "supercategory": "Outdoor Things" if k < 2 else "person"} for k, n in enumerate(names)
        ],
        "annotations": [
            {
                "id": 10 + k,
                "image_id": 1,
                "category_id": k,
                "segmentation": {"size": [H, W], "counts": geometry.encode_rle(rect(0, 0, k + 2, 5))},
            }
            for k in range(len(names))
        ],
    }
    (root / "annotations" / "a.json").write_text(json.dumps(data))
    vocab = tmp_path / "vocab"
    assert cli.main(["vocabulary", "from-coco", str(root), "--out", str(vocab)]) == 0
    assert "category_names.tsv: 4 category names" in capsys.readouterr().out
    listed = (vocab / "category_names.tsv").read_text().splitlines()
    assert listed == [
        "name\tlabel", "Hair Drier\thair-drier", "Outdoor Things\toutdoor-things",
        "café table\tcafé-table", "traffic light\ttraffic-light",
    ]  # fmt: skip
    tree = Hierarchy.from_yaml(vocab / "hierarchy.yaml")
    assert tree.parent("traffic-light") == "outdoor-things" and tree.parent("café-table") == "person"
    shard = ingest_shard(
        root, "00", Registry.read(vocab / "label_ids.tsv").ids(), settings=IngestSettings(shard_size=WHOLE)
    )
    assert shard.rejects.num_rows == 0
    assert sorted(shard.regions.column("label").to_pylist()) == sorted(category_label(n) for n in names)
