"""Release folders: determinism, verify, semver, real clients, export round trip, DVC round trip."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import shapely
from conftest import PROJECT, TINY_RELEASE, build, file_digests, readme_blocks, workflow_copy, write_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as coco_mask

import regionbench
from regionbench import release
from regionbench.core import geometry, tables

pytestmark = pytest.mark.workflow
VERSION = TINY_RELEASE


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regionbench", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture()
def tiny_release(tiny_build: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny release that a test may damage."""
    return Path(shutil.copytree(tiny_build / VERSION, tmp_path / "v1.0.0"))


def provenance_of(folder: Path, version: str) -> release.Provenance:
    """The provenance ``folder``'s release was written with, as ``version``."""
    manifest = release.read_manifest(folder)
    fields = [f.name for f in dataclasses.fields(release.Provenance) if f.name != "version"]
    return release.Provenance(version=version, **{name: manifest[name] for name in fields})


def rewrite(folder: Path, version: str, out: Path, change=None, published: Path | None = None) -> dict:
    """Write ``folder``'s tables again as ``version`` with ``folder`` as the previous release
    (none when ``published``, this version as built before, is given)."""
    data = release.read_tables(folder)
    if change is not None:
        change(data)
    provenance = provenance_of(folder, version)
    results = {p.relative_to(folder / "results").as_posix(): p for p in (folder / "results").rglob("*") if p.is_file()}
    previous = None if published else folder
    return release.write_release(out, data, results, provenance, previous=previous, published=published)


def test_a_version_is_immutable(tiny_release: Path, tmp_path: Path) -> None:
    """The same version again: the same tables are written again; other tables are refused in one
    line naming them, and nothing is written."""
    again = rewrite(tiny_release, "1.0.0", tmp_path / "again", published=tiny_release)
    assert again["tables"] == release.read_manifest(tiny_release)["tables"]

    def relabel(data: dict) -> None:
        regions = data["regions"].to_pylist()
        regions[0]["area_px"] += 1
        data["regions"] = pa.Table.from_pylist(regions, data["regions"].schema)
        data["relations"] = data["relations"].slice(1)

    with pytest.raises(release.ReleaseError) as refused:
        rewrite(tiny_release, "1.0.0", tmp_path / "changed", relabel, published=tiny_release)
    message = str(refused.value)
    assert "\n" not in message and "exists with other content in regions, relations;" in message
    assert not (tmp_path / "changed").exists()


def test_an_older_table_layout_is_other_content(tiny_release: Path, tmp_path: Path) -> None:
    """A release written before a column existed: building its version again is refused in one
    line, and as the previous release its records count as changed (MAJOR), not a traceback."""
    older = Path(shutil.copytree(tiny_release, tmp_path / "older"))
    subsets = pq.read_table(older / "data/subsets.parquet")
    pq.write_table(subsets.drop_columns(["image_split"]), older / "data/subsets.parquet")
    with pytest.raises(release.ReleaseError, match=r"^version 1.0.0 exists with other content in subsets;"):
        rewrite(tiny_release, "1.0.0", tmp_path / "again", published=older)
    with pytest.raises(release.ReleaseError, match="need MAJOR"):
        release.write_release(
            tmp_path / "next",
            release.read_tables(tiny_release),
            {},
            provenance_of(tiny_release, "1.1.0"),
            previous=older,
        )


def test_release_verifies_and_describes_itself(tiny_build: Path) -> None:
    folder = tiny_build / VERSION
    done = cli("verify", str(folder))
    assert done.returncode == 0, done.stdout
    assert "tiny v1.0.0 verified" in done.stdout
    manifest = release.read_manifest(folder)
    assert manifest["tables"]["regions"]["rows"] == 110
    # A fresh build's bytes are checked by the interrupted-build test and by reproduce.
    assert {"manifest.json", "croissant.json", "README.md", "data/regions.parquet", "results/classifiers.png"} <= set(
        manifest["files"]
    ) | {"manifest.json"}
    regions = pq.read_table(folder / "data/regions.parquet")
    assert regions.column_names[:7] == [
        "image_id",
        "annotator",
        "region_id",
        "label_id",
        "label",
        "ontology_path",
        "iscrowd",
    ]
    keys = pq.read_metadata(folder / "data/regions.parquet").metadata.keys()
    assert "convexity" in regions.column_names and b"geo" in keys and b"pandas" not in keys
    card = (folder / "README.md").read_text()
    front = card.split("\n---\n", 1)[0]
    assert card.startswith("---\n") and "\npretty_name: regionbench tiny v1.0.0\n" in front
    assert "config_name: regions" in card and "## Known conflicts" in card and "## Citation" in card
    assert "110 regions by saiapr over 24 images: 4.58 regions per image" in card
    assert "`image_split` puts every image on one side" in card
    for figure in ("collection.png", "relation_stats.png", "classifiers.png"):  # shown, and in the release
        assert f"](results/{figure})" in card and (folder / "results" / figure).stat().st_size > 0
    # The collection's figures are a results file the card reads, with the label-frequency figure.
    stats = json.loads((folder / "results/collection.json").read_text())
    assert stats["regions"] == 110 and stats["annotator"] == "saiapr"
    assert sum(r["regions"] for r in stats["label_histogram"]) == 110
    counts = [r["images"] for r in stats["train_label_frequency"]["labels"]]
    assert counts == sorted(counts, reverse=True) and stats["train_label_frequency"]["train_images"] > 0
    assert "![Regions per label and training images per label](results/collection.png)" in card
    assert {"results/collection.png", "results/soft_confusions.json"} <= set(manifest["files"])
    assert "relations agree: topological 100.00 %, horizontal 100.00 %, vertical 100.00 %." in card


@pytest.mark.parametrize("damage", ["byte", "row", "manifest"])
def test_tampering_is_caught(tiny_release: Path, damage: str) -> None:
    target = tiny_release / "data/regions.parquet"
    if damage == "byte":
        raw = bytearray(target.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        target.write_bytes(bytes(raw))
        expected = "data/regions.parquet"
    elif damage == "row":
        table = pq.read_table(target)
        tables.write_parquet(table.slice(0, table.num_rows - 1), target)
        expected = "data/regions.parquet"
    else:
        manifest = json.loads((tiny_release / "manifest.json").read_text())
        manifest["tables"]["images"]["rows"] += 1
        (tiny_release / "manifest.json").write_text(json.dumps(manifest))
        expected = "manifest.json"
    done = cli("verify", str(tiny_release))
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert lines and all(line.startswith(f"{tiny_release}: ") for line in lines)
    assert any(expected in line for line in lines), lines
    if damage == "row":
        assert any("109 rows, manifest.json says 110" in line for line in lines)


def test_semver_rules(tiny_release: Path, tmp_path: Path) -> None:
    def drop_region(data: dict) -> None:
        data["regions"] = data["regions"].slice(1)

    def add_image(data: dict) -> None:
        # A copy of image 0's row and regions under a new id: additions only, no subset changes.
        images, regions = data["images"], data["regions"]
        first = images.slice(0, 1).to_pylist()[0]
        new_id = max(images["image_id"].to_pylist()) + 1
        data["images"] = pa.concat_tables(
            [images, pa.Table.from_pylist([{**first, "image_id": new_id}], images.schema)]
        )
        theirs = regions.filter(pc.equal(regions["image_id"], first["image_id"])).to_pylist()
        added = [{**r, "image_id": new_id, "split": None} for r in theirs]
        data["regions"] = pa.concat_tables([regions, pa.Table.from_pylist(added, regions.schema)])

    def move_split(data: dict) -> None:
        subsets = data["subsets"].to_pylist()
        key = (subsets[0]["image_id"], subsets[0]["annotator"], subsets[0]["region_id"])
        flip = {"train": "test", "test": "train"}
        for row in subsets:
            if (row["image_id"], row["annotator"], row["region_id"]) == key:
                row["split"] = flip[row["split"]]
        data["subsets"] = pa.Table.from_pylist(subsets, data["subsets"].schema)

    cases = [(drop_region, "major"), (add_image, "minor"), (move_split, "major"), (None, "patch")]
    for change, needed in cases:
        too_small = {"major": "1.1.0", "minor": "1.0.1", "patch": None}[needed]
        if too_small:
            with pytest.raises(release.ReleaseError) as refused:
                rewrite(tiny_release, too_small, tmp_path / "refused", change)
            message = str(refused.value)
            assert "\n" not in message and f"need {needed.upper()}" in message
            assert not (tmp_path / "refused").exists()
        right = {"major": "2.0.0", "minor": "1.1.0", "patch": "1.0.1"}[needed]
        out = tmp_path / f"{needed}-{getattr(change, '__name__', 'same')}"
        manifest = rewrite(tiny_release, right, out, change)
        assert manifest["previous"] == {"version": "1.0.0", "required_bump": needed}
        assert release.verify(out) == []
        diff = cli("diff", str(tiny_release), str(out))
        assert diff.returncode == 0 and diff.stdout.strip().endswith(f"required bump: {needed.upper()}")
        if change is move_split:
            moved = re.search(
                r"^subsets: 0 added, 0 removed, (\d+) changed; columns changed: split \((\d+)\)$", diff.stdout, re.M
            )
            assert moved and moved.group(1) == moved.group(2), diff.stdout  # one record per subset holding it
            assert re.search(
                r"^  changed subset=\w, image_id=\d+, annotator=\w+, region_id=\d+: split$", diff.stdout, re.M
            )
        checked = cli("diff", "--check", str(tiny_release), str(out))
        assert checked.returncode == 0 and checked.stdout.strip().endswith(f"1.0.0 -> {right} is enough")
        backwards = cli("diff", "--check", str(out), str(tiny_release))
        assert backwards.returncode == 1 and "not above the previous release" in backwards.stdout.splitlines()[-1]
    with pytest.raises(release.ReleaseError, match="not above the previous release"):
        rewrite(tiny_release, "1.0.0", tmp_path / "same-version")


def test_reserialised_tables_are_a_patch(tiny_release: Path, tmp_path: Path) -> None:
    other = Path(shutil.copytree(tiny_release, tmp_path / "other"))
    for path in (other / "data").glob("*.parquet"):
        pq.write_table(pq.read_table(path), path, compression="snappy", row_group_size=7)
    diff = release.diff_releases(tiny_release, other)
    assert diff.required == "patch" and not any(d.added or d.removed or d.changed for d in diff.tables.values())
    assert file_digests(tiny_release)["data/regions.parquet"] != file_digests(other)["data/regions.parquet"]


def test_a_diff_trusts_only_sealed_content_hashes(tiny_release: Path, tmp_path: Path) -> None:
    """Tables whose sealed content hashes agree are not read; a data file edited after sealing
    (its sha256 no longer the manifest's) is diffed record by record, whatever its manifest says."""
    copy = Path(shutil.copytree(tiny_release, tmp_path / "copy"))
    assert release.versions.same_contents(tiny_release, copy) == set(release.TABLES)
    edited = Path(shutil.copytree(tiny_release, tmp_path / "edited"))
    path = edited / "data/images.parquet"
    images = pq.read_table(path)
    index = images.schema.get_field_index("caption_title")
    images = images.set_column(index, "caption_title", pa.array(["edited"] * images.num_rows, pa.string()))
    pq.write_table(images, path)
    assert release.versions.same_contents(tiny_release, edited) == set(release.TABLES) - {"images"}
    d = release.diff_releases(tiny_release, edited).tables["images"]
    assert (d.changed, d.differing) == (images.num_rows, {"caption_title": images.num_rows})


def test_a_table_breaking_its_schema_is_refused(tiny_release: Path, tmp_path: Path) -> None:
    def bad_split(data: dict) -> None:
        subsets = data["subsets"]
        data["subsets"] = subsets.set_column(
            subsets.column_names.index("split"), "split", pa.array(["val"] * subsets.num_rows)
        )

    with pytest.raises(release.ReleaseError, match=r"subsets\.split: 1 distinct values break the schema"):
        rewrite(tiny_release, "2.0.0", tmp_path / "bad", bad_split)


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

    manifest = {**release.read_manifest(tiny_build / VERSION), **chosen}
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
    override = write_config(
        project, f"dataset: tiny\nraw_dir: {exported}\nclassifiers: {{names: [zarbi, naive, majority]}}\n"
    )
    rebuilt = build(project, "--configfile", str(override))
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    diff = release.diff_releases(tiny_build / VERSION, project / VERSION)
    assert not any(d.added or d.removed or d.changed for d in diff.tables.values()), diff.lines()
    parity = json.loads((project / VERSION / "results/features_parity.json").read_text())
    assert parity["rows_compared"] == 110 and all(c["excess"] == 0 for c in parity["columns"].values())
    official = json.loads((project / VERSION / "results/relations_parity.json").read_text())
    assert official["pairs_compared"] > 0 and {g["agreement"] for g in official["groups"].values()} == {1.0}


def shell_lines(block: str, substitutions: dict[str, str]) -> list[str]:
    """The commands of a README block, comments dropped, with the placeholders substituted."""
    lines = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        for old, new in substitutions.items():
            line = line.replace(old, new)
        if line and line != ". .venv/bin/activate":  # the test's interpreter is the environment
            lines.append(line)
    return lines


def test_readme_release_flows_on_fresh_clones(tmp_path: Path) -> None:
    """The README's maintainer and researcher blocks, as written, on a fresh clone of a temporary
    repository with a local remote; then the next version's bump check from the tag in another
    fresh clone, where no older version folder exists."""
    source = workflow_copy(tmp_path / "source")
    for name in ("dvc.yaml", ".dvcignore", ".dvc/config", ".dvc/.gitignore", ".dvc/plots/accuracy_by_subset.json"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT / name, source / name)
    shutil.copytree(
        PROJECT / "src" / "regionbench", source / "src" / "regionbench", ignore=shutil.ignore_patterns("__pycache__")
    )
    settings = (source / "config/config.yaml").read_text()
    settings = settings.replace("dataset: demo", "dataset: tiny").replace("profile: demo", "profile: tiny")
    settings = settings.replace(
        "names: [zarbi, naive, klogistic, neural, svc, kridge, rf, random, majority]", "names: [zarbi, majority]"
    )
    (source / "config/config.yaml").write_text(settings)
    (source / ".gitignore").write_text(".snakemake/\n/results/\n/resources/\n/logs/\n__pycache__/\n")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "regionbench",
        "GIT_AUTHOR_EMAIL": "ci@regionbench.invalid",
        "GIT_COMMITTER_NAME": "regionbench",
        "GIT_COMMITTER_EMAIL": "ci@regionbench.invalid",
        "REGIONBENCH_CACHE": str(tmp_path / "cache"),
    }

    def run(command: str | list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
        shell = isinstance(command, str)
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, shell=shell)
        if ok:
            assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done

    run(["git", "init", "-q"], source)
    run(["git", "add", "-A"], source)
    run(["git", "commit", "-qm", "workflow"], source)
    origin = tmp_path / "origin.git"
    run(["git", "clone", "-q", "--bare", str(source), str(origin)], tmp_path)
    maintainer = tmp_path / "maintainer"
    run(["git", "clone", "-q", str(origin), str(maintainer)], tmp_path)

    names = {"demo-v1.0.0": "tiny-v1.0.0", "releases/demo/": "releases/tiny/", "demo-1.0.0": "tiny-1.0.0"}
    flow = readme_blocks("## Maintainers: build, verify, push, tag")[0].body
    for line in shell_lines(flow, {**names, "/path/or/url": str(tmp_path / "remote"), "Release demo": "Release tiny"}):
        run(line, maintainer)
    released = maintainer / VERSION
    assert release.verify(released) == []

    # The tag reproduces byte for byte; a tracked file tampered with in DVC's cache is named.
    work = tmp_path / "reproduce"
    reproduced = run(
        [sys.executable, "-m", "regionbench", "reproduce", "tiny-v1.0.0", "--workdir", str(work)], maintainer
    )
    assert reproduced.stdout.strip().splitlines()[-1] == f"byte-identical ({len(file_digests(released))} files)"
    card = released / "README.md"
    digest = hashlib.md5(card.read_bytes()).hexdigest()
    cached = maintainer / ".dvc/cache/files/md5" / digest[:2] / digest[2:]
    cached.chmod(0o644)
    cached.write_bytes(card.read_bytes() + b"tampered\n")
    env["REGIONBENCH_CACHE"] = str(tmp_path / "fresh-cache")  # fetch the tracked release again
    tampered = run(
        [sys.executable, "-m", "regionbench", "reproduce", "tiny-v1.0.0", "--workdir", str(work)], maintainer, ok=False
    )
    assert tampered.returncode == 1 and "differs: README.md" in tampered.stdout.splitlines(), tampered.stdout
    cached.write_bytes(card.read_bytes())
    env["REGIONBENCH_CACHE"] = str(tmp_path / "cache")

    researcher = [b.body for b in readme_blocks("## Researchers: pull a pinned version")]
    places = {**names, "https://github.com/ORG/REPO": str(origin)}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for line in shell_lines(researcher[0], places):
        run(line, elsewhere)
    assert file_digests(elsewhere / "tiny-1.0.0") == file_digests(released)
    mine = tmp_path / "mine"
    mine.mkdir()
    run("git init -q && dvc init -q", mine)
    for line in shell_lines(researcher[1], places):
        run(line, mine)
    assert release.verify(mine / "tiny-1.0.0") == [] and (mine / "tiny-1.0.0.dvc").is_file()
    code = researcher[2]
    for old, new in places.items():
        code = code.replace(old, new)
    run([sys.executable, "-c", code], elsewhere)

    # The next version, in a fresh clone: the previous release comes from the tag, through DVC,
    # whether built directly or as the README's `dvc exp run`, which clears the outputs first.
    following = tmp_path / "following"
    run(["git", "clone", "-q", str(origin), str(following)], tmp_path)
    assert not (following / VERSION).exists()
    config = following / "config/config.yaml"
    changed = (
        config.read_text()
        .replace("previous: none", "previous: null")
        .replace("  seed: 0\n  split_unit", "  seed: 1\n  split_unit")
    )
    config.write_text(changed.replace("version: 1.0.0", "version: 1.0.1"))
    refused = run([sys.executable, "-m", "regionbench", "build", "--cores", "2"], following, ok=False)
    last = (refused.stdout + refused.stderr).strip().splitlines()[-1]
    assert refused.returncode != 0 and "need MAJOR" in last and "over 1.0.0" in last, last
    (experiment,) = shell_lines(readme_blocks("## Maintainers: build, verify, push, tag")[1].body, {})
    refused = run(experiment, following, ok=False)
    *_, ours, dvc_error = refused.stderr.strip().splitlines()
    assert refused.returncode != 0 and dvc_error.startswith("ERROR: failed to reproduce 'release'"), dvc_error
    assert (
        ours.startswith("regionbench: release refused: version 1.1.0 is a MINOR bump over 1.0.0")
        and "need MAJOR" in ours
    )
    run(experiment.replace("version=1.1.0", "version=2.0.0"), following)
    manifest = json.loads((following / "releases/tiny/v2.0.0/manifest.json").read_text())
    assert manifest["previous"] == {"version": "1.0.0", "required_bump": "major"}
    assert "version: 2.0.0" in config.read_text()  # the experiment's parameters, applied to the workspace
    # The tagged version is immutable, even where its folder was never checked out.
    config.write_text(changed.replace("previous: null", "previous: none"))
    refused = run([sys.executable, "-m", "regionbench", "build", "--cores", "2"], following, ok=False)
    last = (refused.stdout + refused.stderr).strip().splitlines()[-1]
    assert refused.returncode != 0 and "version 1.0.0 exists with other content in regions, subsets;" in last, last


def test_build_previous_must_be_a_release(tmp_path: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    done = build(project, "--previous", str(tmp_path), "--dry-run")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"regionbench: error: --previous {tmp_path}: not a release folder (no manifest.json)"
    ]


def _slices(table: pa.Table, cuts: list[int]) -> list:
    bounds = [0, *(c for c in cuts if 0 < c < table.num_rows), table.num_rows]
    return [partial(table.slice, a, b - a) for a, b in itertools.pairwise(bounds)]


def _interleaved(table: pa.Table) -> list:
    rows = np.arange(table.num_rows)
    return [partial(table.take, rows[rows % 2 == 0]), partial(table.take, rows[rows % 2 == 1])]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("cut", ["consecutive", "interleaved"])
def test_a_release_from_parts_is_the_release_from_whole_tables(
    tiny_release: Path, tmp_path: Path, cut: str, workers: int
) -> None:
    # The workflow hands the writer one part per shard; any cut must give the same folder, and
    # so must any number of worker processes (the tiny build's release ran on two).
    data = release.read_tables(tiny_release)
    if cut == "consecutive":
        parts = {name: _slices(table, [1, 7, table.num_rows // 2]) for name, table in data.items()}
    else:
        parts = {name: _interleaved(table) for name, table in data.items()}
    provenance = provenance_of(tiny_release, "1.0.0")
    results = {p.relative_to(tiny_release / "results").as_posix(): p for p in (tiny_release / "results").rglob("*")}
    out = tmp_path / "v1.0.0"
    release.write_release(out, parts, {k: v for k, v in results.items() if v.is_file()}, provenance, workers=workers)
    assert file_digests(out) == file_digests(tiny_release)
    assert not (tmp_path / "v1.0.0.partial").exists()


def test_scan_finds_duplicates_across_parts(tiny_release: Path) -> None:
    regions = release.read_tables(tiny_release)["regions"]
    schema = release.load_schemas()["regions"]
    twice = release.scan([partial(regions.slice, 0, 5), partial(regions.slice, 4, 5)], schema)
    assert not twice.in_order and any("duplicate primary keys" in p for p in twice.problems)
    whole = release.scan(release.as_parts(regions), schema)
    assert whole.in_order and whole.content_sha256 == release.content_hash(regions, schema)


def test_load_verifies_and_remembers_a_sound_release(tiny_release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert regionbench.load(tiny_release).version == "1.0.0"
    # Loaded again untouched: the verification is remembered, not repeated.
    monkeypatch.setattr(release, "verify", lambda folder: pytest.fail("verified twice"))
    assert regionbench.load(tiny_release).version == "1.0.0"
    monkeypatch.undo()
    raw = bytearray((tiny_release / "data/regions.parquet").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tiny_release / "data/regions.parquet").write_bytes(bytes(raw))
    with pytest.raises(release.ReleaseError, match=r"refused, the release does not verify: data/regions.parquet"):
        regionbench.load(tiny_release)
    assert regionbench.load(tiny_release, verify=False).version == "1.0.0"
    with pytest.raises(release.ReleaseError, match=r"data/regions.parquet: unreadable \("):
        regionbench.load(tiny_release, verify=False).regions  # noqa: B018


def test_a_tampered_or_missing_release_is_one_line(tiny_release: Path, tmp_path: Path) -> None:
    (tiny_release / "extra").mkdir()
    missing = tmp_path / "nowhere"
    for source, expected in (
        (tiny_release, "refused, the release does not verify: extra/: a folder without any file listed"),
        (missing, f"{missing}: no such folder"),
        (tiny_release / "README.md", "a file, not a release folder"),
    ):
        done = cli("evaluate", "--release", str(source), "--predictions", "x.csv", "--task", "region")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert expected in done.stderr
        with pytest.raises(release.ReleaseError, match=re.escape(expected)):
            regionbench.load(source)
    done = cli("evaluate", "--release", str(tiny_release), "--predictions", "x.csv", "--task", "region", "--no-verify")
    assert done.returncode == 1 and "x.csv: no such file" in done.stderr


def test_diff_refuses_releases_of_two_datasets(tiny_release: Path, tmp_path: Path) -> None:
    other = Path(shutil.copytree(tiny_release, tmp_path / "other" / "v1.0.0"))
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["dataset"] = "another"
    # The release says its dataset in three places; a sound one of another dataset says it in all.
    croissant = json.loads((other / "croissant.json").read_text())
    croissant["name"] = "regionbench-another"
    (other / "croissant.json").write_text(json.dumps(croissant))
    card = other / "README.md"
    card.write_text(card.read_text().replace("regionbench tiny v1.0.0", "regionbench another v1.0.0"))
    for rel in ("croissant.json", "README.md"):
        manifest["files"][rel] = release.sha256_file(other / rel)
    manifest.pop("digest")
    manifest["digest"] = release.canonical_digest(manifest)
    (other / "manifest.json").write_text(json.dumps(manifest))
    done = cli("diff", str(tiny_release), str(other))
    assert done.returncode == 2 and "is dataset 'tiny' and" in done.stderr and "one dataset" in done.stderr


def test_export_and_diff_refuse_a_damaged_release(tiny_release: Path, tmp_path: Path) -> None:
    table = tiny_release / "data/regions.parquet"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    for args in (
        ["export-saiapr", str(tiny_release), str(tmp_path / "out")],
        ["diff", str(tiny_release), str(tiny_release)],
    ):
        done = cli(*args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "refused, the release does not verify: data/regions.parquet" in done.stderr
    assert not (tmp_path / "out").exists()


def test_embedding_refuses_an_image_changed_or_gone_since_ingest(tmp_path: Path) -> None:
    from regionbench.release import huggingface

    (tmp_path / "a.jpg").write_bytes(b"pixels")
    images = pa.table({"path": ["a.jpg"], "sha256": [hashlib.sha256(b"pixels").hexdigest()]})
    embedded = huggingface.embed_images(images, tmp_path)
    assert embedded["image"].to_pylist() == [{"bytes": b"pixels", "path": "a.jpg"}]
    (tmp_path / "a.jpg").write_bytes(b"other")
    with pytest.raises(release.ReleaseError, match=r"a\.jpg changed since ingest"):
        huggingface.embed_images(images, tmp_path)
    (tmp_path / "a.jpg").unlink()
    with pytest.raises(release.ReleaseError, match=r"cannot read a\.jpg under .*: No such file"):
        huggingface.embed_images(images, tmp_path)


def test_show_draws_the_release_s_own_pixels(tiny_build: Path, tmp_path: Path) -> None:
    folder = tiny_build / VERSION
    out = tmp_path / "show.png"
    shown = subprocess.run(
        [sys.executable, "-m", "regionbench", "show", str(folder), "--count", "2", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"{out}: images ") and out.stat().st_size > 10_000
    from PIL import Image

    with Image.open(out) as picture:
        assert picture.size[0] > 600
    missing = subprocess.run(
        [sys.executable, "-m", "regionbench", "show", str(folder), "--image", "999999999", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert "no image 999999999" in missing.stderr


def test_the_regions_files_use_their_own_row_groups(tiny_release: Path, tmp_path: Path) -> None:
    """The regions table and its Hugging Face views are written in groups of REGION_ROW_GROUP
    rows (a region carries a mask and a polygon), every other table in groups of ROW_GROUP, and
    the folder verifies: a small group size gives the same records in more row groups."""
    data = release.read_tables(tiny_release)
    results = {p.relative_to(tiny_release / "results").as_posix(): p for p in (tiny_release / "results").rglob("*")}
    out = tmp_path / "v1.0.0"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "REGION_ROW_GROUP", 16)
        patch.setattr(tables, "ROW_GROUP", 64)
        release.write_release(
            out, data, {k: v for k, v in results.items() if v.is_file()}, provenance_of(tiny_release, "1.0.0")
        )
    assert release.verify(out) == []
    for path, rows in [("data/regions.parquet", 16), ("hf/regions-train.parquet", 16), ("data/relations.parquet", 64)]:
        meta = pq.read_metadata(out / path)
        sizes = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
        assert sizes[:-1] == [rows] * (len(sizes) - 1) and 0 < sizes[-1] <= rows and meta.num_rows > rows, path
    manifest, before = release.read_manifest(out), release.read_manifest(tiny_release)
    assert {n: t["content_sha256"] for n, t in manifest["tables"].items()} == {
        n: t["content_sha256"] for n, t in before["tables"].items()
    }
