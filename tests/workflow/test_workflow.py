"""The Snakemake workflow end to end on tiny generated collections, in temporary folders."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import farm
import pyarrow.parquet as pq
import pytest
from conftest import (
    PROJECT,
    TINY,
    TINY_RELEASE,
    build,
    build_command,
    build_output,
    file_digests,
    on_a_terminal,
    regionbench_cli,
    workflow_copy,
    write_config,
)
from layouts import saiapr_words

from regionbench import release
from regionbench.pipeline import jobs
from regionbench.pipeline.vocabulary import DEFAULT_DIR


def test_generated_tiny_build(tiny_build: Path) -> None:
    project, override = tiny_build, tiny_build / "override.yaml"
    report = json.loads((project / "results/tiny/ingest/report.json").read_text())
    assert report["regions"]["accepted"] == 110 and report["regions"]["rejected"] == 0
    assert report["images"]["seen"] == report["images"]["accepted"] == 24
    regions = sum(pq.read_metadata(p).num_rows for p in (project / "results/tiny/ingest").glob("*/regions.parquet"))
    assert regions == 110
    assert (project / "logs/tiny/ingest/00.log").is_file()
    results = project / "results/tiny"
    # One annotator: no agreement job ran; the summary says who covered what, from the coverage.
    assert not (results / "agreement").exists() and not (project / "logs/tiny/agreement").exists()
    agreed = json.loads((results / "agreement.json").read_text())
    assert agreed["annotators"] == ["saiapr"] and agreed["coverage"]["images"] == 24, agreed
    assert sum(pq.read_metadata(p).num_rows for p in (results / "features").glob("*.parquet")) == 110
    parity = json.loads((results / "features_parity.json").read_text())
    assert parity["rows_compared"] == 110 and all(c["excess"] == 0 for c in parity["columns"].values())
    stats = pq.read_table(results / "relation_stats.parquet").to_pylist()
    pairs = sum(pq.read_metadata(p).num_rows for p in (results / "relations").glob("*.parquet"))
    assert sum(r["count"] for r in stats if r["group"] == "vertical") == pairs
    official = json.loads((results / "relations_parity.json").read_text())
    assert official["pairs_compared"] == pairs and official["pairs_only_official"] == 0
    assert official["files_not_used"] == [] and {g["agreement"] for g in official["groups"].values()} == {1.0}
    assert (project / "releases/tiny/v1.0.0/results/relations_parity.json").is_file()
    vocabulary = pq.read_table(results / "vocabulary.parquet", columns=["label", "region_count"]).to_pydict()
    assert sum(vocabulary["region_count"]) == 110
    summary = pq.read_table(results / "classifiers.parquet").to_pylist()
    assert len(summary) == 8 * 3 and all(r["soft"] >= r["e_hard"] for r in summary)
    assert (results / "classifiers.png").stat().st_size > 0
    metrics = {p.name: json.loads(p.read_text()) for p in (results / "metrics").iterdir()}
    assert metrics == {
        f"{r['subset']}-{r['classifier']}.json": {k: r[k] for k in ("e_hard", "soft", "mean_e")} for r in summary
    }
    again = build(project, "--configfile", str(override), "--dry-run")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_every_job_log_ends_with_its_peak_memory_and_cpu(tiny_build: Path) -> None:
    """The kernel's figures, which benchmarks/ read beside each job's Snakemake benchmark file
    (logs/<dataset>/benchmarks/<job>.tsv beside logs/<dataset>/<job>.log)."""
    logs = tiny_build / "logs/tiny"
    benchmarks = sorted((logs / "benchmarks").rglob("*.tsv"))
    assert len(benchmarks) > 10
    for benchmark in benchmarks:
        assert (logs / benchmark.relative_to(logs / "benchmarks").with_suffix(".log")).is_file(), benchmark
    # A light stage runs in Snakemake's process (its run: calls here): its CPU is its thread's,
    # often under 0.05 s; a script job's counts its own interpreter.
    rules = "".join(p.read_text() for p in (tiny_build / "rules").glob("*.smk"))
    in_process = set(re.findall(r"^(?:rule|checkpoint) (\w+):(?:(?!^\S).)*?\bhere\(", rules, re.M | re.S))
    assert {"source", "vocabulary", "subsets"} <= in_process and "ingest" not in in_process
    for log in sorted(logs.rglob("*.log")):
        last = log.read_text().splitlines()[-1]
        match = re.fullmatch(r"peak memory (\d+) MiB, CPU (\d+\.\d) s", last)
        assert match, f"{log}: {last}"
        stage = log.relative_to(logs).parts[0].removesuffix(".log")
        assert 30 < int(match[1]) < 2048 and float(match[2]) >= (0 if stage in in_process else 0.1), log
        assert jobs.logged_resources(log) == (float(match[1]), float(match[2]))  # as benchmarks/ read it


def test_the_build_output_fits_one_screen_and_ends_on_the_next_command(tiny_build: Path) -> None:
    """Not a terminal: a line a stage, plain text, then what was built and what to run next."""
    stdout, stderr = build_output(tiny_build)
    lines = (stderr + stdout).splitlines()
    # a stage whose jobs join the plan one at a time (the classifiers) has a line each time it
    # has caught up with the jobs scheduled so far: two or three more lines, as the jobs' timing goes
    assert len(lines) <= 33, stderr + stdout
    assert all(line.isprintable() for line in lines)  # no control characters: CI logs stay readable
    assert lines[0] == "Using profile config/profiles/default for setting default command line arguments."
    assert re.fullmatch(r"running (at least )?\d+ jobs in \d+ stages", lines[1])
    assert lines[2].startswith("forecast by the reference build") and "ingest" in lines[2]  # a first build here
    assert str(tiny_build) not in stderr + stdout  # paths as the user types them, never absolute
    assert any(
        re.fullmatch(
            r"\[\s*\d+/\d+\+?\] \d+:\d\d elapsed(, ETA \d+:\d\d|, no ETA: the machine is busy \(load [\d.]+ on \d+ cores\))?"
            r"  ingest \(2 jobs\)",
            x,
        )
        for x in lines
    )
    summary = stdout.strip().splitlines()
    assert summary[0] == f"release tiny: {TINY_RELEASE}"
    assert re.search(r"^  rows: .*regions [\d,]+", stdout, re.M)
    assert summary[-1] == f"next: regionbench verify {TINY_RELEASE}"
    verified = regionbench_cli(*summary[-1].removeprefix("next: regionbench ").split(), cwd=tiny_build)
    assert verified.returncode == 0, verified.stdout


def test_a_terminal_sees_a_status_line(tiny_build: Path, tmp_path: Path) -> None:
    """On a terminal the status line is redrawn in place and erased at the end (a copy of the
    tiny build without its vocabulary: that job runs again)."""
    project = Path(shutil.copytree(tiny_build, tmp_path / "wf", symlinks=True))
    (project / "results/tiny/vocabulary.parquet").unlink()
    override = project / "override.yaml"
    command = build_command(project, "results/tiny/vocabulary.parquet", "--configfile", str(override))
    code, out, _ = on_a_terminal(command)
    text = out.decode()
    assert code == 0, text[-3000:]
    assert "\r\x1b[2K[" in text and "elapsed" in text
    assert text.rstrip("\r\n").endswith("\x1b[2K") or "vocabulary (1 job)" in text.splitlines()[-1]


def test_dvc_shows_the_metrics_and_plots_readably(tiny_build: Path, tmp_path: Path) -> None:
    """`dvc metrics show` is a row per (subset, classifier) with three measures, `dvc metrics diff` a
    row per changed value, and `dvc plots` draws accuracy over the subsets as categories, a line per
    classifier: the project's dvc.yaml and plot template over the tiny build's results."""
    repo = tmp_path / "repo"
    for name in ("dvc.yaml", ".dvcignore", ".dvc/config", ".dvc/plots"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (PROJECT / name).is_dir() else shutil.copy)(PROJECT / name, repo / name)
    (repo / "config").mkdir()
    (repo / "config/config.yaml").write_text(
        (PROJECT / "config/config.yaml").read_text().replace("dataset: demo", "dataset: tiny")
    )
    for name in ("metrics", "classifiers.csv"):
        source = tiny_build / "results/tiny" / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, repo / "results/tiny" / name)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}

    def dvc(*args: str) -> str:
        done = subprocess.run(["dvc", *args], cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    subprocess.run(
        "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm r",
        shell=True,
        cwd=repo,
        check=True,
    )
    summary = pq.read_table(tiny_build / "results/tiny/classifiers.parquet").to_pylist()
    header, *rows = [line.split() for line in dvc("metrics", "show").splitlines()]
    assert header == ["Path", "e_hard", "mean_e", "soft"]
    expected = sorted(summary, key=lambda r: (r["subset"], r["classifier"]))
    assert [row[0] for row in rows] == [f"results/tiny/metrics/{r['subset']}-{r['classifier']}.json" for r in expected]
    shown = [[float(v) for v in row[1:]] for row in rows]  # dvc rounds to five significant digits
    assert shown == [pytest.approx([r[k] for k in ("e_hard", "mean_e", "soft")], abs=5e-6) for r in expected]
    changed = repo / "results/tiny/metrics/H-zarbi.json"
    changed.write_text(json.dumps({**json.loads(changed.read_text()), "soft": 0.125}))
    header, *rows = [line.split() for line in dvc("metrics", "diff").splitlines()]
    assert header == ["Path", "Metric", "HEAD", "workspace", "Change"] and len(rows) == 1
    assert rows[0][:2] == ["results/tiny/metrics/H-zarbi.json", "soft"] and rows[0][3] == "0.125"

    (plot,) = json.loads(dvc("plots", "show", "--json"))["data"]["results/tiny/classifiers.csv"]
    encoding = plot["content"]["encoding"]
    assert encoding["x"] == {**encoding["x"], "field": "subset", "type": "nominal"}
    assert encoding["y"] == {**encoding["y"], "field": "e_hard", "type": "quantitative"}
    assert encoding["color"]["field"] == "classifier"
    points = plot["content"]["data"]["values"]
    assert sorted((p["subset"], p["classifier"]) for p in points) == sorted(
        (r["subset"], r["classifier"]) for r in summary
    )


def test_an_edited_vocabulary_regenerates_the_collection(tiny_build: Path, tmp_path: Path) -> None:
    """The synth rule reads the vocabulary: a newer hierarchy.yaml plans synth again (a dry run)."""
    vocabulary = Path(shutil.copytree(DEFAULT_DIR, tmp_path / "vocabulary"))
    (vocabulary / "hierarchy.yaml").touch()
    edited = write_config(tmp_path, f"{TINY}vocabulary_dir: {vocabulary}\n")
    planned = build(tiny_build, "--configfile", str(edited), "--dry-run")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert re.search(r"^\s*synth\s+1(\s+~\d+:\d\d)?$", planned.stdout + planned.stderr, re.M), planned.stderr[-3000:]


def test_strict_build_fails_on_a_reject(tmp_path: Path, tiny_copy: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    masks = sorted((tiny_copy / "01" / "segmentation_masks").glob("*.mat"))
    masks[0].unlink()
    override = write_config(
        project, f"dataset: ext\nraw_dir: {tiny_copy}\ningest: {{strict: true, max_image_pixels: 1000000}}\n"
    )
    done = build(project, "--configfile", str(override))
    assert done.returncode == 2
    # Snakemake's report of the failed job comes first; the reason is the build's last line.
    assert "has no mask file" in done.stderr.strip().splitlines()[-1]


FAILURES = [
    (
        "raise OSError(errno.ENOSPC, 'No space left on device', 'results/tiny/relation_stats.parquet')",
        "regionbench: results/tiny/relation_stats.parquet: No space left on device; free some disk space",
    ),
    ("[][1]", "regionbench: IndexError: list index out of range (log: logs/tiny/relation_stats.log)."),
]


def test_a_failing_job_ends_the_build_on_its_reason(tiny_build: Path, tmp_path: Path) -> None:
    """A job that fails on the machine (a full disk), then on a bug, in one project (a copy of
    the tiny build: the changed script reruns its job alone): the build's last line is the
    reason, after Snakemake's report; a bug's traceback is in the output."""
    project = Path(shutil.copytree(tiny_build, tmp_path / "wf", symlinks=True))
    override = project / "override.yaml"
    for body, last in FAILURES:
        script = project / "scripts" / "relation_stats.py"
        script.write_text(
            "import errno\nfrom regionbench.pipeline.jobs import log_to\n\nlog_to(snakemake.log[0])\n" + body + "\n"
        )
        done = build(project, "results/tiny/relation_stats.parquet", "--configfile", str(override))
        assert done.returncode == (3 if "IndexError" in last else 2)
        assert done.stderr.strip().splitlines()[-1].startswith(last), done.stderr[-2000:]
        assert ("Traceback" in done.stderr) == ("IndexError" in last)


def test_bad_config_is_one_line(tmp_path: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, "synth: {profile: huge, seed: 0, quirks: false}\n")
    done = build(project, "--configfile", str(override))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "synth.profile" in lines[0] and "override.yaml" in lines[0]


def test_a_second_build_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    import fcntl

    project = workflow_copy(tmp_path / "wf")
    (project / ".snakemake").mkdir()
    with (project / ".snakemake/regionbench-build.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = build(project, "--dry-run")
    assert done.returncode == 2
    assert "another regionbench build is running" in done.stderr


def test_real_raw_dir(tmp_path: Path, tiny_copy: Path) -> None:
    """A raw tree on disk, not generated: built with the classifiers switched off, at two paths
    of different lengths, to the same bytes; no workspace fact in a release (the damaged image's
    reject reason comes from Pillow); a no-op rerun does nothing, and touching one mask reruns
    its shard and what gathers the shards."""
    image = sorted((tiny_copy / "00" / "images").glob("*.jpg"))[0]
    image.write_bytes(b"not a JPEG")
    saiapr_words.official_spellings(tiny_copy)  # words the library's vocabulary lacks
    second = sorted((tiny_copy / "00" / "images").glob("*.jpg"))[1]  # and the same photograph four times
    (tiny_copy / "01/images/990001.jpg").symlink_to(second)
    os.link(second, tiny_copy / "01/images/990002.jpg")
    shutil.copyfile(second, tiny_copy / "01/images/990003.jpg")
    trees = [tiny_copy, Path(shutil.copytree(tiny_copy, tmp_path / "a" / "much" / "longer" / "path" / "raw"))]
    releases = []
    for k, raw in enumerate(trees):
        project = workflow_copy(tmp_path / f"wf{k}")
        # every job in the Snakemake process: the same bytes (test_jobs_inside_the_snakemake_process_...)
        config = f"dataset: ext\nraw_dir: {raw}\nclassifiers: {{enabled: false}}\njobs: {{in_process: true}}\n"
        override = write_config(project, config)
        done = build(project, "--configfile", str(override))
        assert done.returncode == 0, done.stderr[-3000:]
        releases.append(project / "releases/ext/v1.0.0")
    assert file_digests(releases[0]) == file_digests(releases[1])
    assert release.verify(releases[0]) == []
    # the tree's own vocabulary, in one id space with the regions
    vocabulary = pq.read_table(releases[0] / "data/vocabulary.parquet").to_pydict()
    named = dict(zip(vocabulary["label_id"], vocabulary["label"], strict=True))
    regions = pq.read_table(releases[0] / "data/regions.parquet", columns=["label_id", "label"]).to_pydict()
    assert [named[i] for i in regions["label_id"]] == regions["label"]
    assert {saiapr_words.RENAMED, saiapr_words.UNPLACED} <= set(regions["label"])
    for path in releases[0].rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert str(tmp_path).encode() not in text and str(tiny_copy).encode() not in text, path

    assert (
        "  reference classifiers: not run (classifiers.enabled: true in the config runs them)"
        in done.stdout.splitlines()
    )
    assert any(line.startswith("  images: named by path, not embedded") for line in done.stdout.splitlines())
    manifest = json.loads((releases[1] / "manifest.json").read_text())
    assert manifest["images"] == "paths" and manifest["source"]["name"].startswith("SAIAPR TC-12")
    # the same photograph under three more ids (a link, a hard link, a copy): each rejected, naming the first
    rejects = pq.read_table(releases[1] / "data/rejects.parquet").to_pylist()
    copies = {r["key"]: r["reason"] for r in rejects if r["item"] == "image" and "the same bytes as" in r["reason"]}
    assert sorted(copies) == ["990001", "990002", "990003"]
    assert all(f"the same bytes as 00/images/{second.name}" in reason for reason in copies.values())
    assert pq.read_table(releases[1] / "data/subsets.parquet").num_rows > 0  # subsets are still made
    assert not (project / "results/ext/classifiers").exists()
    assert not (project / "resources").exists()  # nothing generated
    shards = sorted(p.name for p in (project / "results/ext/ingest").iterdir() if p.is_dir())
    assert shards == ["00", "01"]
    unchanged = build(project, "--configfile", str(override), "--dry-run")
    assert "Nothing to be done" in unchanged.stdout + unchanged.stderr
    os.utime(sorted((trees[1] / "01" / "segmentation_masks").glob("*.mat"))[0])
    target = ("results/ext/ingest/report.json", "--configfile", str(override), "--dry-run")
    planned = build(project, *target, "--verbose").stdout  # Snakemake's report names every job's files
    assert re.search(r"^ingest\s+1$", planned, re.M) and re.search(r"^ingest_report\s+1$", planned, re.M), planned
    assert "ingest/01/" in planned and "ingest/00/" not in planned.split("rule ingest_report")[0]


def _svg_texts(path: Path) -> list[str]:
    """The text of every ``<text>`` element of a figure (the project writes text as text)."""
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())]


def test_every_chart_number_is_the_tables_s(tiny_build: Path) -> None:
    """Each figure of the card is recomputed from the release's own Parquet with pandas: the
    relation shares (each group's pairs, as the axis says), the subsets' label counts on the
    classifier chart's axis, and the labels of the regions-per-label chart in order; the card's
    relation table holds both shares."""
    folder = tiny_build / TINY_RELEASE
    results = folder / "results"
    relations = pq.read_table(folder / "data/relations.parquet").to_pandas()
    expected = sorted(
        f"{100 * share:.1f} %"
        for group in ("topological", "horizontal", "vertical")
        for share in relations[group].value_counts(normalize=True).to_numpy()
    )
    shown = sorted(t for t in _svg_texts(results / "relation_stats.svg") if t.endswith(" %"))
    assert shown == expected
    card = (folder / "README.md").read_text()
    assert "| share of the group's pairs | normalised frequency |" in card
    subsets = pq.read_table(folder / "data/subsets.parquet", columns=["subset", "label"]).to_pandas()
    labels = subsets.groupby("subset")["label"].nunique().to_dict()
    texts = _svg_texts(results / "classifiers.svg")
    ticks = {texts[k]: int(texts[k + 1]) for k in range(len(texts) - 1) if texts[k] in labels}
    assert ticks == labels  # the release's own label counts, not the paper's (H: 100)
    regions = pq.read_table(folder / "data/regions.parquet", columns=["label"]).to_pandas()
    counts = regions["label"].value_counts()
    ranked = sorted(counts.index, key=lambda label: (-counts[label], label))[:50]
    drawn = _svg_texts(results / "collection.svg")
    assert drawn[: len(ranked)] == ranked


def test_jobs_inside_the_snakemake_process_publish_the_same_release(
    release: Callable[[str], farm.Built], tmp_path: Path
) -> None:
    """The test profile runs every job inside the Snakemake process (``jobs.in_process``); the
    same config with each heavy job in its own interpreter, as users build, publishes the same
    bytes: every file of the release."""
    built = release("ade20k")
    project = workflow_copy(tmp_path / "wf")
    files = farm.configfiles("ade20k", project, farm.config_text("ade20k", built.raw))
    (project / "fresh.yaml").write_text("jobs: {in_process: false}\n")
    done = build(project, *files, str(project / "fresh.yaml"))
    assert done.returncode == 0, done.stderr
    fresh = farm.release_folder(project, (project / "override.yaml").read_text())

    def contents(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    assert contents(fresh) == contents(built.folder)
    assert "heavy(" in (project / "rules" / "ingest.smk").read_text()  # the rule that chooses
