"""Real clients read a release: Croissant, Hugging Face datasets, GeoParquet readers, the loader, the SAIAPR export, show."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import shapely
from conftest import build, regionbench_cli, workflow_copy, write_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as coco_mask
from release_helpers import VERSION, cli

import regionbench
from regionbench import release
from regionbench.core import geometry
from regionbench.pipeline.vocabulary import DEFAULT_DIR


def test_croissant_validates_without_a_warning_and_every_record_set_loads(tiny_build: Path) -> None:
    import mlcroissant as mlc

    folder = tiny_build / VERSION
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    issues = dataset.metadata.ctx.issues
    assert issues.errors == set() and issues.warnings == set()
    rows = {name: entry["rows"] for name, entry in release.read_manifest(folder)["tables"].items()}
    records = {name: list(dataset.records(record_set=name)) for name in rows}
    assert {name: len(r) for name, r in records.items()} == rows
    assert {b"train", b"test"} <= {r["regions/split"] for r in records["regions"]} <= {b"train", b"test", None}
    document = json.loads((folder / "croissant.json").read_text())
    fields = {f["@id"]: f for rs in document["recordSet"] for f in rs["field"]}
    assert fields["regions/image_id"]["references"] == {"field": {"@id": "images/image_id"}}
    assert fields["regions/label_id"]["references"] == {"field": {"@id": "vocabulary/label_id"}}
    assert document["datePublished"] == "2026-11-23" and document["creator"]["name"] == "regionbench"
    assert "url" not in document and document["description"].startswith("Synthetic")  # not the original's page


# What a configuration may set that Croissant carries: any text the config schema lets through.
SETTINGS = st.fixed_dictionaries(
    {
        "dataset": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True),
        "creator": st.text(min_size=1, max_size=30),
        "license": st.text(min_size=1, max_size=20),
        "date": st.dates(min_value=datetime.date(1000, 1, 1)).map(datetime.date.isoformat),  # as the config allows
        "synthetic": st.booleans(),
        "version": st.tuples(*[st.integers(0, 10**6)] * 3).map(lambda v: ".".join(map(str, v))),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SETTINGS)
def test_croissant_of_any_configured_release_has_no_issue(tiny_build: Path, chosen: dict) -> None:
    """Whatever dataset name, creator, licence, date and version a configuration gives, the
    Croissant metadata mlcroissant builds carries them with no error and no warning."""
    from regionbench.release import croissant

    manifest = {**release.read_manifest(tiny_build / VERSION), **chosen, "source": None}  # the layout's source
    meta = croissant.metadata(tiny_build / VERSION, manifest)
    assert meta.ctx.issues.errors == set() and meta.ctx.issues.warnings == set()
    document = croissant.croissant(tiny_build / VERSION, manifest)
    assert document["creator"]["name"] == chosen["creator"] and document["version"] == chosen["version"]
    assert document["datePublished"] == chosen["date"]
    assert ("url" in document) == (not chosen["synthetic"])


def test_hugging_face_datasets_loads_real_splits(tiny_build: Path, tmp_path: Path) -> None:
    """``load_dataset(<release>, config)``: regions and images in train and test, the other
    tables with rows as one split; the sizes are the release's."""
    import datasets

    folder = tiny_build / VERSION
    regions = pq.read_table(folder / "data/regions.parquet").to_pandas()
    card = (folder / "README.md").read_text()
    loaded = {}
    for config in release.TABLES:
        if f"config_name: {config}\n" in card:
            loaded[config] = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path))
    got = loaded["regions"]
    assert set(got) == {"train", "test", "full"}
    assert got["full"].num_rows == len(regions)  # every annotator's regions, in subsets or not
    for split in ("train", "test"):
        assert got[split].num_rows == int((regions["split"] == split).sum()) > 0
    assert sorted(got["test"]["image_id"]) == sorted(regions.loc[regions["split"] == "test", "image_id"])
    sides = regions.dropna(subset=["image_split"]).groupby("image_id")["image_split"].first()
    assert {s: loaded["images"][s].num_rows for s in ("train", "test")} == sides.value_counts().to_dict()
    # release.images: embed (the default config): the pixels as datasets' Image feature.
    images = loaded["images"]["test"]
    assert isinstance(images.features["image"], datasets.Image)
    first = images[0]
    assert (first["image"].width, first["image"].height) == (first["width"], first["height"])
    rows = {name: entry["rows"] for name, entry in release.read_manifest(folder)["tables"].items()}
    assert set(loaded) == {"regions", "images"} | {name for name, n in rows.items() if n}
    for name in set(loaded) - {"regions", "images"}:
        assert {s: d.num_rows for s, d in loaded[name].items()} == {"full": rows[name]}


def test_real_clients_read_the_release(tiny_build: Path) -> None:
    folder = tiny_build / VERSION
    for name in release.TABLES:
        path = folder / "data" / f"{name}.parquet"
        assert (
            ds.dataset(path, format="parquet").to_table().num_rows
            == release.read_manifest(folder)["tables"][name]["rows"]
        )
        assert len(__import__("pandas").read_parquet(path)) == ds.dataset(path).count_rows()
    regions = pq.read_table(folder / "data/regions.parquet")
    geo = json.loads(pq.read_metadata(folder / "data/regions.parquet").metadata[b"geo"])
    assert geo["primary_column"] == "geometry" and geo["columns"]["geometry"]["encoding"] == "WKB"
    shapes = shapely.from_wkb(regions["geometry"].to_numpy(zero_copy_only=False))
    assert shapely.is_valid(shapes).all()
    assert set(geo["columns"]["geometry"]["geometry_types"]) >= set(shapely.get_type_id(shapes).astype(str)) - {
        "3",
        "6",
    }
    images = {r["image_id"]: r for r in pq.read_table(folder / "data/images.parquet").to_pylist()}
    for row in regions.slice(0, 20).to_pylist():
        image = images[row["image_id"]]
        assert row["mask"]["size"] == [image["height"], image["width"]]  # as COCO writes it
        rle = {**row["mask"], "counts": row["mask"]["counts"].encode()}
        mask = coco_mask.decode(rle).astype(bool)
        assert int(mask.sum()) == row["area_px"] == int(coco_mask.area(rle))
        polygon = shapely.from_wkb(row["geometry"])
        assert np.array_equal(geometry.polygon_to_mask(polygon, image["height"], image["width"]), mask)


def test_loader_reads_a_folder(tiny_build: Path) -> None:
    data = regionbench.load(tiny_build / VERSION)
    assert data.version == "1.0.0" and len(data.regions) == 110
    test = data.subset("E", split="test")
    assert set(test["split"]) == {"test"} and "lab_mean_l" in test.columns
    row = data.regions.iloc[0]
    assert data.mask(int(row["image_id"]), int(row["region_id"])).sum() == row["area_px"]
    with pytest.raises(release.ReleaseError, match="split 'val'"):
        data.subset("E", split="val")


def test_export_saiapr_round_trip(tiny_build: Path, tmp_path: Path) -> None:
    exported = tmp_path / "exported"
    done = cli(
        "export-saiapr", str(tiny_build / VERSION), str(exported), "--images", str(tiny_build / "resources/raw/tiny")
    )
    assert done.returncode == 0, done.stderr
    assert (exported / "00" / "features.txt").is_file() and (exported / "wlist.txt").is_file()
    # The relations come back as the official code matrices the raw tree had, byte for byte.
    raw = tiny_build / "resources/raw/tiny"
    written = {p.relative_to(exported): p.read_bytes() for p in exported.glob("*/spatial_rels/*.mat")}
    assert written and written == {p.relative_to(raw): p.read_bytes() for p in raw.glob("*/spatial_rels/*.mat")}
    project = workflow_copy(tmp_path / "wf")
    # The library's vocabulary, as the generated tree was built with: a tree's own files give
    # only the labels its regions use.
    override = write_config(
        project,
        f"dataset: tiny\nraw_dir: {exported}\nvocabulary_dir: {DEFAULT_DIR}\n"
        "classifiers: {names: [zarbi, naive, majority]}\n",
    )
    rebuilt = build(project, "--configfile", str(override))
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    diff = release.diff_releases(tiny_build / VERSION, project / VERSION)
    assert not any(d.added or d.removed or d.changed for d in diff.tables.values()), diff.lines()
    parity = json.loads((project / VERSION / "results/features_parity.json").read_text())
    assert parity["rows_compared"] == 110 and all(c["excess"] == 0 for c in parity["columns"].values())
    official = json.loads((project / VERSION / "results/relations_parity.json").read_text())
    assert official["pairs_compared"] > 0 and {g["agreement"] for g in official["groups"].values()} == {1.0}


def test_show_draws_the_release_s_own_pixels(tiny_build: Path, tmp_path: Path) -> None:
    folder = tiny_build / VERSION
    out = tmp_path / "show.png"
    shown = regionbench_cli("show", str(folder), "--count", "2", "--out", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"{out}: images ") and out.stat().st_size > 10_000
    from PIL import Image

    with Image.open(out) as picture:
        assert picture.size[0] > 600
    missing = regionbench_cli("show", str(folder), "--image", "999999999", "--out", str(out))
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert "no image 999999999" in missing.stderr
