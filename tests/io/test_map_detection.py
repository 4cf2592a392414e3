"""Detection never guesses: a tree laid out as ADE20K's scene-parsing files whose maps hold
values its class table does not name (COCO-Stuff's 0-181), or that has no class table, is
refused in one line that points at the class-map folder; a class-map folder's classes.csv is
read or refused row by row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from regionbench.io import classmap, layouts
from regionbench.io.shards import IngestError
from regionbench.synthetic import ade20k as ade_synth
from regionbench.synthetic import classmap as classmap_synth


def stuff_like(root: Path) -> Path:
    """An ADE-shaped tree whose maps number COCO-Stuff's way (0-181, 255 unlabelled)."""
    list(ade_synth.write_tree(root, 4, 0, (48, 32)))
    base = root / "ADEChallengeData2016"
    for k, path in enumerate(sorted((base / "annotations").rglob("*.png"))):
        values = np.asarray(Image.open(path)).astype(np.uint8)
        values[values > 0] += 150 + k  # classes COCO-Stuff has and objectInfo150 does not
        Image.fromarray(values, mode="L").save(path)
    return base


def test_maps_of_another_collection_under_ade20k_s_shape_are_refused(tmp_path: Path) -> None:
    base = stuff_like(tmp_path / "raw")
    layout = layouts.detect(base)
    assert layout.name == "ade20k"  # the shape is ADE20K's: the values decide
    with pytest.raises(IngestError, match="not ADE20K's scene-parsing tree") as refused:
        layout.check(base)
    assert "layout: classmap" in str(refused.value) and "\n" not in str(refused.value)
    (base / "objectInfo150.txt").unlink()
    with pytest.raises(IngestError, match=r"no objectInfo150\.txt or objectInfo150\.csv") as refused:
        layout.check(base)
    assert "layout: classmap" in str(refused.value)


def test_a_class_map_folder_is_detected_and_its_table_read(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    list(classmap_synth.write_tree(root, 3, 0, (40, 30)))
    assert layouts.detect(root).name == "classmap"
    known = classmap.table(root)
    assert {i: (c.label, c.parent, c.ignore) for i, c in known.items()}[7] == ("car", "vehicle", False)
    assert known[255].ignore and classmap.Format(known).ignore_values == (255,)
    assert "not in classes.csv" in str(classmap.Format(known).meaning(3))


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        ("name\nroad\n", "no id and name columns"),
        ("id,name\n1,road\n1,grass\n", "line 3: id 1 named twice"),
        ("id,name\n1,road\n2,Road\n", "line 3: the name 'Road' again"),
        ("id,name\nx,road\n", "line 2: id 'x' is not a pixel value"),
        ("id,name,colour\n1,road,red\n", "line 2: colour 'red' is not #rrggbb"),
    ],
)
def test_a_class_table_that_cannot_be_read_is_one_line(tmp_path: Path, rows: str, reason: str) -> None:
    (tmp_path / "classes.csv").write_text(rows)
    with pytest.raises(IngestError, match=reason) as refused:
        classmap.table(tmp_path)
    assert "\n" not in str(refused.value)
