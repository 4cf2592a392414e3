"""A release made a hosted benchmark (``regionbench challenge``): the public release holds none of
the hidden side's truth, the leak audit finds every planted leak and none on the clean release,
the Codabench bundle loads by Codabench's own rules, and its scoring program scores a
submission as ``regionbench evaluate`` does, or refuses it in one line with no score."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from codabench_rules import problems
from farm import Built
from test_resampled_ap import real_shaped_run

from regionbench.audit import leaks
from regionbench.challenge import codabench, hosting, scorer
from regionbench.release import loader, verify
from regionbench.scoring import tasks


@pytest.fixture(scope="module")
def hosted(release: Callable[[str], Built], tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    """COCO as distributed made a hosted benchmark, val2017 hidden: the farm's release and the folder."""
    built = release("coco-distributed")
    out = tmp_path_factory.mktemp("hosted")
    hosting.host(built.folder, out, images=built.raw)
    return built, out


def unzip(archive: Path | bytes, into: Path) -> Path:
    with zipfile.ZipFile(archive if isinstance(archive, Path) else io.BytesIO(archive)) as z:
        z.extractall(into)
    return into


def app(out: Path, task: str, submission: Path | bytes, root: Path) -> Path:
    """The compute worker's folders under ``root`` standing for /app: the program, the task's
    reference data and the submission, each unpacked from the bundle as the worker unpacks them."""
    bundle = out / "codabench"
    unzip(bundle / "scoring_program.zip", root / "program")
    unzip(bundle / f"reference_data_{task}.zip", root / "input" / "ref")
    if isinstance(submission, Path) and submission.is_dir():
        shutil.copytree(submission, root / "input" / "res")
    else:
        unzip(submission, root / "input" / "res")
    return root


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_the_public_release_keeps_the_hidden_images_and_none_of_their_truth(hosted) -> None:
    built, out = hosted
    public, private = out / "public", loader.load(built.folder)
    assert verify(public) == []
    manifest = json.loads((public / "manifest.json").read_text())
    assert manifest["dataset"] == "coco-distributed-public" and manifest["hidden"]["split"] == "val2017"
    assert manifest["hidden"]["private"]["digest"] == private.manifest["digest"] and manifest["hidden"]["leaks"] == 0
    images = pq.read_table(public / "data/images.parquet")
    assert images.equals(private.arrow("images"))  # every image, the hidden side's with it
    hidden = set(images.filter(pc.equal(images["split"], "val2017"))["image_id"].to_pylist())
    assert hidden and len(hidden) == manifest["hidden"]["images"]
    regions = pq.read_table(public / "data/regions.parquet")
    assert regions.num_rows and not hidden & set(regions["image_id"].to_pylist())
    assert (
        regions.num_rows
        == private.arrow("regions").num_rows
        - pc.sum(pc.is_in(private.arrow("regions")["image_id"], value_set=pa.array(sorted(hidden)))).as_py()
    )
    for name in ("relations", "subsets", "coverage"):
        assert not hidden & set(pq.read_table(public / f"data/{name}.parquet")["image_id"].to_pylist()), name
    assert pq.read_table(public / "data/audit_labels.parquet").num_rows == 0
    vocabulary = pq.read_table(public / "data/vocabulary.parquet").to_pylist()
    counted = regions.group_by("label").aggregate([("image_id", "count")]).to_pylist()
    assert {r["label"]: r["region_count"] for r in vocabulary if r["region_count"]} == {
        r["label"]: r["image_id_count"] for r in counted
    }
    assert not (public / "results").exists()
    card = " ".join((public / "README.md").read_text().split())
    assert "## Hidden test side" in card and private.manifest["digest"] in card
    assert "whose test side, the collection's own val2017 split, is hidden" in card and "70/30" not in card
    assert "found no value of the hidden truth" in card
    croissant = json.loads((public / "croissant.json").read_text())
    assert "The truth of its val2017 split" in croissant["description"]
    assert f"urn:sha256:{private.manifest['digest']}" in croissant["prov:wasDerivedFrom"]
    record = json.loads((out / "challenge.json").read_text())
    assert record["private"]["digest"] == private.manifest["digest"]
    assert record["public"]["digest"] == manifest["digest"]


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(change(pq.read_table(path)), path)


def _hidden_regions(private: loader.Release) -> pa.Table:
    regions = private.arrow("regions")
    images = private.arrow("images", ["image_id", "split"])
    ids = images.filter(pc.equal(images["split"], "val2017"))["image_id"]
    return regions.filter(pc.is_in(regions["image_id"], value_set=ids))


def _plant(public: Path, private: loader.Release, leak: str) -> str:
    """Plant ``leak`` into ``public``; returns a word the audit's line about it holds."""
    hidden = _hidden_regions(private)
    one = hidden.slice(0, 1)
    counts = one["mask"][0]["counts"].as_py()
    ids = pc.unique(hidden["image_id"])
    if leak == "a hidden region in regions":
        _rewrite(public / "data/regions.parquet", lambda t: pa.concat_tables([t, one.select(t.column_names)]))
        return "regions.parquet"
    if leak == "relations of a hidden image":
        rows = private.arrow("relations").filter(pc.is_in(private.arrow("relations")["image_id"], value_set=ids))
        _rewrite(public / "data/relations.parquet", lambda t: pa.concat_tables([t, rows.slice(0, 3)]))
        return "relations.parquet"
    if leak == "a test row of the subsets":
        rows = private.arrow("subsets").filter(pc.is_in(private.arrow("subsets")["image_id"], value_set=ids))
        _rewrite(public / "data/subsets.parquet", lambda t: pa.concat_tables([t, rows.slice(0, 1)]))
        return "subsets.parquet"
    if leak == "a hidden image's coverage":
        rows = private.arrow("coverage").filter(pc.is_in(private.arrow("coverage")["image_id"], value_set=ids))
        _rewrite(public / "data/coverage.parquet", lambda t: pa.concat_tables([t, rows.slice(0, 1)]))
        return "coverage.parquet"
    if leak == "the vocabulary's counts of the private release":
        shutil.copy(private.folder / "data/vocabulary.parquet", public / "data/vocabulary.parquet")
        return "count the hidden regions"
    if leak == "a mask encoding in a JSON report":
        (public / "results").mkdir(exist_ok=True)
        (public / "results/notes.json").write_text(json.dumps({"examples": [{"rle": counts}]}))
        return "mask encodings"
    if leak == "a mask hash in the card":
        with (public / "README.md").open("a") as card:
            card.write(f"\nchecksum of a hard case: {leaks.mask_hash(counts)}\n")
        return "mask hashes"
    if leak == "the hidden side's count in the card":
        with (public / "README.md").open("a") as card:
            card.write(f"\n| split | regions |\n|---|---|\n| val2017 | {hidden.num_rows} |\n")
        return "counts of the hidden"
    if leak == "COCO annotations of a hidden image under another name":
        image = int(one["image_id"][0].as_py())
        note = {"annotations": [{"image_id": image, "category_id": 3, "bbox": [1, 2, 3, 4]}]}
        (public / "data/extra.json").write_text(json.dumps(note))
        return "objects of hidden images"
    if leak == "hidden regions in the Hugging Face files":
        path = public / "hf/regions-train.parquet"
        _rewrite(
            path,
            lambda t: pa.concat_tables(
                [t, pq.read_table(private.folder / "hf/regions-test.parquet").select(t.column_names)]
            ),
        )
        return "regions-train.parquet"
    raise AssertionError(leak)


LEAKS = (
    "a hidden region in regions", "relations of a hidden image", "a test row of the subsets", "a hidden image's coverage",
    "the vocabulary's counts of the private release", "a mask encoding in a JSON report", "a mask hash in the card",
    "the hidden side's count in the card", "COCO annotations of a hidden image under another name",
    "hidden regions in the Hugging Face files",
)  # fmt: skip


def test_the_leak_audit_finds_each_planted_leak_and_none_on_the_clean_release(hosted, tmp_path: Path) -> None:
    built, out = hosted
    private = loader.load(built.folder)
    assert leaks.audit(out / "public", private) == []
    for k, leak in enumerate(LEAKS):
        public = shutil.copytree(out / "public", tmp_path / f"public-{k}")
        said = _plant(public, private, leak)
        found = leaks.audit(public, private)
        assert found and any(said in line for line in found), (leak, found)
    # the command: one line a leak, exit 1; the clean release exit 0
    command = [sys.executable, "-m", "regionbench", "audit", "--leaks"]
    clean = subprocess.run([*command, str(out / "public"), str(built.folder)], capture_output=True, text=True)
    assert clean.returncode == 0 and clean.stdout.strip().endswith("no value of the hidden truth"), clean
    leaky = subprocess.run([*command, str(tmp_path / "public-0"), str(built.folder)], capture_output=True, text=True)
    assert leaky.returncode == 1 and "regions.parquet" in leaky.stdout and "leaks of the hidden truth" in leaky.stdout


def test_the_bundle_loads_by_codabench_s_rules_and_rebuilds_byte_for_byte(hosted, tmp_path: Path) -> None:
    built, out = hosted
    with zipfile.ZipFile(out / "codabench.zip") as bundle:
        assert problems(bundle) == []
        doc = yaml.safe_load(bundle.read("competition.yaml"))
        names = set(bundle.namelist())
        assert names == {
            p.relative_to(out / "codabench").as_posix() for p in (out / "codabench").rglob("*") if p.is_file()
        }
    private = loader.load(built.folder)
    (phase,) = doc["phases"]
    assert phase["name"] == "val2017" and str(phase["start"]) == private.manifest["date"] and phase["tasks"] == [0]
    (task,) = doc["tasks"]
    assert task["name"] == "instances" and task["reference_data"] == "reference_data_instances.zip"
    keys = [c["key"] for c in doc["leaderboards"][0]["columns"]]
    assert keys[:3] == ["instances_ap", "instances_ap_low", "instances_ap_high"]
    expected = json.loads(zipfile.ZipFile(out / "codabench/starting_kit.zip").read("expected_scores.json"))
    assert sorted(expected["instances"]) == sorted(keys)
    # the same release and kit give the same bytes
    predictions = unzip(out / "codabench/starting_kit.zip", tmp_path / "kit") / "instances.json"
    kit = codabench.Kit("pixels", predictions, tasks.evaluate(private, predictions, "instances", split="source"))
    public = json.loads((out / "public/manifest.json").read_text())
    again = codabench.write_bundle(private, public, "val2017", {"instances": kit}, tmp_path / "again")
    assert again.read_bytes() == (out / "codabench.zip").read_bytes()


def test_the_scoring_program_scores_a_submission_as_evaluate_does(hosted, tmp_path: Path) -> None:
    built, out = hosted
    private = loader.load(built.folder)
    kit = out / "codabench/starting_kit.zip"
    expected = json.loads(zipfile.ZipFile(kit).read("expected_scores.json"))["instances"]
    # the starting kit as the compute worker runs the program: its own process, /app standing at root
    root = app(out, "instances", kit, tmp_path / "kit")
    done = subprocess.run(
        [sys.executable, str(root / "program/score.py")], capture_output=True, text=True, cwd=root / "program"
    )
    assert done.returncode == 0, done.stderr
    assert private.manifest["digest"] in done.stdout
    found = json.loads((root / "output/scores.json").read_text())
    assert found == expected
    page = (root / "output/detailed_results.html").read_text()
    assert private.manifest["digest"] in page and "AP" in page
    # a real-shaped run, scored in this process: the scores equal evaluate's on the private release
    truth = json.loads((built.raw / "annotations/instances_val2017.json").read_text())
    run = real_shaped_run(truth, np.random.default_rng(0))
    submission = tmp_path / "run"
    submission.mkdir()
    (submission / "instances.json").write_text(json.dumps(run))
    root = app(out, "instances", submission, tmp_path / "run-app")
    assert scorer.main(root) == 0
    report = tasks.evaluate(private, submission / "instances.json", "instances")
    challenge = json.loads((root / "input/ref/challenge.json").read_text())
    wanted = scorer.scores(report, challenge["columns"])
    found = json.loads((root / "output/scores.json").read_text())
    assert found.keys() == wanted.keys() and all(abs(found[k] - wanted[k]) <= 1e-12 for k in wanted)
    assert wanted["instances_ap"] != expected["instances_ap"]


DAMAGED = {
    "not JSON": ({"instances.json": b"[{"}, "instances.json"),
    "an unknown image": ({"instances.json": json.dumps([{"image_id": 987654321, "category_id": 1, "bbox": [0, 0, 2, 2], "score": 0.5}]).encode()}, "987654321"),
    "a folder around the files": ({"mine/instances.json": b"[]"}, "zip the files themselves"),
    "no entry": ({"predictions.json": b"[]"}, "no instances.json"),
    "over the size limit": ({"instances.json": b"[]" + b" " * 2_000_000}, "over this benchmark's limit"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_submission_is_one_line_and_no_score(hosted, case: str, tmp_path: Path, capsys) -> None:
    _, out = hosted
    members, said = DAMAGED[case]
    root = app(out, "instances", zipped(members), tmp_path / "app")
    challenge = root / "input/ref/challenge.json"
    limited = json.loads(challenge.read_text()) | {"max_bytes": 1_000_000}
    challenge.write_text(json.dumps(limited))
    (root / "output").mkdir()
    (root / "output/scores.json").write_text("{}")  # a previous run's: not left to stand as this one's
    assert scorer.main(root) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and "Traceback" not in err, err
    assert not (root / "output/scores.json").exists()


def test_the_challenge_command_hosts_a_bsds500_release(release: Callable[[str], Built], tmp_path: Path) -> None:
    """A label-free release's default tasks, segments and boundaries, from the command line: its
    starting kit (the first segmentation method's hierarchy) scored by the program as by evaluate."""
    built = release("bsds")
    private = loader.load(built.folder)
    out = tmp_path / "hosted"
    command = [sys.executable, "-m", "regionbench", "challenge", str(built.folder), "--out", str(out)]
    done = subprocess.run([*command, "--images", str(built.raw)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    split = private.manifest["evaluation_split"]
    assert f"on the hidden {split} side" in done.stdout and "starting kit, boundaries (felzenszwalb)" in done.stdout
    with zipfile.ZipFile(out / "codabench.zip") as bundle:
        assert problems(bundle) == []
        doc = yaml.safe_load(bundle.read("competition.yaml"))
    assert [t["name"] for t in doc["tasks"]] == ["segments", "boundaries"] and doc["phases"][0]["tasks"] == [0, 1]
    columns = {c["key"]: c["sorting"] for c in doc["leaderboards"][0]["columns"]}
    assert columns["segments_vi_ods"] == "asc" and columns["boundaries_ods_f"] == "desc"
    kit = out / "codabench/starting_kit.zip"
    expected = json.loads(zipfile.ZipFile(kit).read("expected_scores.json"))
    for task in ("segments", "boundaries"):
        root = app(out, task, kit, tmp_path / task)
        assert scorer.main(root) == 0
        found = json.loads((root / "output/scores.json").read_text())
        report = tasks.evaluate(private, root / "input/res" / task, task)
        assert found == expected[task] == scorer.scores(report, codabench.columns(task, report))
    assert leaks.audit(out / "public", private) == []
    # a side evaluate does not score is refused in one line
    other = next(s for s in {str(s) for s in private.images["split"].dropna()} if s != split)
    refused = subprocess.run([*command, "--hidden", other], capture_output=True, text=True)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"--hidden {other}: regionbench evaluate scores this release's evaluation split" in refused.stderr


def test_the_build_hosts_its_release_when_asked(release: Callable[[str], Built]) -> None:
    """challenge.enabled: the build writes challenges/<dataset>/v<version>/, its starting kit the
    predictions of the build's own baselines stage, the same bundle the command writes."""
    built = release("bsds")
    private = loader.load(built.folder)
    out = built.project / "challenges/bsds/v1.0.0"
    record = json.loads((built.results / "challenge.json").read_text())
    assert record == json.loads((out / "challenge.json").read_text())
    assert record["private"]["digest"] == private.manifest["digest"]
    assert verify(out / "public") == [] and leaks.audit(out / "public", private) == []
    with zipfile.ZipFile(out / "codabench.zip") as bundle:
        assert problems(bundle) == []
    assert record["starting_kit"]["segments"]["method"] == "felzenszwalb"
    stage = json.loads((built.results / "baselines/felzenszwalb/segments.json").read_text())
    assert record["starting_kit"]["segments"]["scores"] == scorer.scores(stage, codabench.columns("segments", stage))
    assert "challenge" in built.stderr


def test_a_release_without_a_split_of_its_images_is_refused_in_one_line(
    release: Callable[[str], Built], tmp_path: Path
) -> None:
    """A generated collection ships no split of its images: nothing to hide, said in one line, nothing written."""
    built = release("coco-tiny")
    out = tmp_path / "hosted"
    done = subprocess.run(
        [sys.executable, "-m", "regionbench", "challenge", str(built.folder), "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "its images have no split of their own" in done.stderr and not out.exists()
