"""CamVid (SegNet's), LIP, COCO-Stuff as distributed, a labelme2voc export, Mapillary Vistas and
PASCAL-Context: a generated tree is detected as its collection, read with the collection's class
values as label ids, and exported back map for map, image for image, with its class table
(labelme's .npy arrays aside: the PNGs say the same). In-process: the workflow path these
collections share is the classmap build's (tests/workflow/test_workflow_labelmaps.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
from layouts.in_process import released
from PIL import Image

from regionbench.io import layouts


@pytest.mark.parametrize("layout", ["camvid", "lip", "cocostuff", "labelme", "mapillary", "pascal-context"])
def test_each_collection_of_class_maps_reads_and_exports_back_pixel_exact(tmp_path: Path, layout: str) -> None:
    raw = tmp_path / "raw"
    list(importlib.import_module(f"regionbench.synthetic.{layout.replace('-', '_')}").write_tree(raw, 6, 4, (64, 48)))
    assert layouts.detect(raw).name == layout
    tables = released(raw, layout)
    assert tables.arrow("rejects").num_rows == 0 and tables.arrow("images").num_rows == 6
    rows = tables.arrow("regions", ["label_id", "category_id", "annotation_id"]).to_pylist()
    assert rows and all(r["label_id"] == r["category_id"] for r in rows)  # the collection's values
    if layout == "mapillary":  # its instance maps read: an instance of a car or a person is a region
        assert any(r["annotation_id"] is not None for r in rows)
    out = tmp_path / "export"
    layouts.get(layout).export(tables, out, raw, None)  # type: ignore[attr-defined]
    written = sorted(p.relative_to(raw) for p in raw.rglob("*") if p.is_file() and p.suffix != ".npy")
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == written
    for path in written:
        if path.suffix == ".png" and np.asarray(Image.open(raw / path)).ndim == 2:  # a map: its values
            assert np.array_equal(np.asarray(Image.open(out / path)), np.asarray(Image.open(raw / path))), path
        else:
            assert (out / path).read_bytes() == (raw / path).read_bytes(), path
