"""Versions: immutable, semver bumps from the records' diff, the previous release, the README's release flows on fresh clones."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import PROJECT, build, file_digests, readme_blocks, workflow_copy
from release_helpers import VERSION, cli, provenance_of, rewrite

from regionbench import release


def assert_derived_from(folder: Path, tag: str) -> None:
    """The release's Croissant lineage names the previous version's tag, and its maintenance plan
    the version it follows."""
    document = json.loads((folder / "croissant.json").read_text())
    derived = document["prov:wasDerivedFrom"]
    assert tag in ([derived] if isinstance(derived, str) else derived)
    assert f"after v{tag.rsplit('-v', 1)[1]}." in document["rai:dataReleaseMaintenancePlan"]


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


def test_semver_rules(tiny_release: Path, tmp_path: Path) -> None:
    def drop_region(data: dict) -> None:
        # The region goes from every table that names it, as a rebuild without it would.
        gone = data["regions"].slice(0, 1).select(["image_id", "annotator", "region_id"]).to_pylist()[0]
        data["regions"] = data["regions"].slice(1)
        for name, columns in (("relations", ("region_id", "other_region_id")), ("subsets", ("region_id",))):
            rows = data[name]
            keep = pc.invert(
                pc.and_(
                    pc.and_(
                        pc.equal(rows["image_id"], gone["image_id"]), pc.equal(rows["annotator"], gone["annotator"])
                    ),
                    pc.or_(*[pc.equal(rows[c], gone["region_id"]) for c in columns])
                    if len(columns) == 2
                    else pc.equal(rows[columns[0]], gone["region_id"]),
                )
            )
            data[name] = rows.filter(keep)

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
        coverage = data["coverage"]
        covered = coverage.filter(pc.equal(coverage["image_id"], first["image_id"])).to_pylist()
        more = [{**r, "image_id": new_id} for r in covered]
        data["coverage"] = pa.concat_tables([coverage, pa.Table.from_pylist(more, coverage.schema)])

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
        assert_derived_from(out, "tiny-v1.0.0")
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
    # The flows are about versions, tags and DVC, not about job processes: every job in-process.
    settings = settings.replace("  in_process: false", "  in_process: true")
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
    assert_derived_from(following / "releases/tiny/v2.0.0", "tiny-v1.0.0")  # the tag read through DVC
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


def test_diff_says_how_regions_changed_and_scores_a_run_on_both(tiny_release: Path, tmp_path: Path) -> None:
    """A relabelled region, a region whose mask lost its top row and a renamed source category
    are named with what changed; a run scored on the first version is scored again on both."""
    from regionbench.core import geometry

    subsets = pq.read_table(tiny_release / "data/subsets.parquet").to_pylist()
    test = sorted({(r["image_id"], r["annotator"], r["region_id"]) for r in subsets if r["split"] == "test"})
    relabelled, moved = test[0], test[1]
    vocabulary = pq.read_table(tiny_release / "data/vocabulary.parquet").to_pylist()
    regions = pq.read_table(tiny_release / "data/regions.parquet").to_pylist()
    before = next(r for r in regions if (r["image_id"], r["annotator"], r["region_id"]) == relabelled)
    other = next(v for v in vocabulary if v["label"] != before["label"])
    mask = next(r for r in regions if (r["image_id"], r["annotator"], r["region_id"]) == moved)["mask"]
    pixels = geometry.from_rle(mask)
    top = int(pixels.any(axis=1).argmax())
    iou = (pixels.sum() - pixels[top].sum()) / pixels.sum()
    pixels[top] = False

    def change(data: dict) -> None:
        rows = data["regions"].to_pylist()
        for r in rows:
            key = (r["image_id"], r["annotator"], r["region_id"])
            if key == relabelled:
                r["label"], r["label_id"] = other["label"], other["label_id"]
            if key == moved:
                r["mask"] = {"size": list(pixels.shape), "counts": geometry.encode_rle(pixels)}
        data["regions"] = pa.Table.from_pylist(rows, data["regions"].schema)
        rows = data["subsets"].to_pylist()
        for r in rows:
            if (r["image_id"], r["annotator"], r["region_id"]) == relabelled:
                r["label"] = other["label"]
        data["subsets"] = pa.Table.from_pylist(rows, data["subsets"].schema)
        rows = data["source_categories"].to_pylist()
        rows[0]["name"] = rows[0]["name"] + " (renamed)"
        data["source_categories"] = pa.Table.from_pylist(rows, data["source_categories"].schema)

    rewrite(tiny_release, "2.0.0", tmp_path / "v2.0.0", change)
    # the first version's test regions with their labels: a perfect run there
    predictions = tmp_path / "regions.csv"
    truth = {(r["image_id"], r["region_id"]): r["label"] for r in regions if r["annotator"] == relabelled[1]}
    predictions.write_text(
        "image_id,region_id,label\n" + "".join(f"{i},{k},{truth[(i, k)]}\n" for i, _, k in test if (i, k) in truth)
    )
    done = cli(
        "evaluate", "--release", str(tiny_release), "--predictions", str(predictions), "--task", "region",
        "--out", str(tmp_path / "run.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        json.loads((tmp_path / "run.json").read_text())["release"]["digest"]
        == release.read_manifest(tiny_release)["digest"]
    )

    done = cli(
        "diff", str(tiny_release), str(tmp_path / "v2.0.0"),
        "--run", str(tmp_path / "run.json"), "--predictions", str(predictions),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "images added: 0" in out and "images removed: 0" in out
    assert "regions relabelled: 1" in out and f"{before['label']!r} -> {other['label']!r}" in out
    assert f"region masks changed: 1 (IoU old/new: min {iou:.3f}" in out
    assert "source categories renamed: 1" in out and "(renamed)'" in out
    assert "labels renamed: 0" in out
    lines = [line for line in out.splitlines() if line.strip().startswith("any.e_hard")]
    assert lines and "1.0000 ->" in lines[0] and "(+0.0000)" not in lines[0], out

    done = cli("diff", str(tiny_release), str(tmp_path / "v2.0.0"), "--run", str(tmp_path / "run.json"))
    assert done.returncode == 2 and "--predictions" in done.stderr and "Traceback" not in done.stderr


def test_a_release_in_two_steps_is_the_release_in_one(tiny_release: Path, tmp_path: Path) -> None:
    """Assembled (its tables sealed, opened as a release) then published with results added: the
    same bytes as ``write_release`` in one step plus those results, the tables linked, not copied;
    a result given twice is refused; the assembled folder removed (the next build's assemble
    removes it first) leaves the published release whole."""
    from regionbench.release.loader import Release

    data = release.read_tables(tiny_release)
    provenance = provenance_of(tiny_release, "9.0.0")
    results = {
        p.relative_to(tiny_release / "results").as_posix(): p
        for p in (tiny_release / "results").rglob("*")
        if p.is_file()
    }
    extra = tmp_path / "extra.json"
    extra.write_text('{"figure": 1}\n')
    one = release.write_release(tmp_path / "one" / "v9.0.0", data, {**results, "baselines/x/t.json": extra}, provenance)
    assembled = tmp_path / "assembled"
    draft = release.assemble(assembled, data, results, provenance)
    assert Release(assembled).images.shape[0] == draft["tables"]["images"]["rows"]  # opens as a release
    two = release.publish(assembled, tmp_path / "two" / "v9.0.0", {"baselines/x/t.json": extra})
    assert one["digest"] == two["digest"]
    assert file_digests(tmp_path / "one" / "v9.0.0") == file_digests(tmp_path / "two" / "v9.0.0")
    published = tmp_path / "two" / "v9.0.0"
    table = published / "data" / "images.parquet"
    # its own copy: nothing written under results/ reaches it (tests/release/test_sealed.py)
    assert table.stat().st_ino != (assembled / "data" / "images.parquet").stat().st_ino
    assert table.read_bytes() == (assembled / "data" / "images.parquet").read_bytes()
    with pytest.raises(release.ReleaseError, match="given twice"):
        release.publish(assembled, tmp_path / "three" / "v9.0.0", {"ingest_report.json": extra})
    shutil.rmtree(assembled)  # the build's next assemble removes it first
    assert release.verify(published) == []
