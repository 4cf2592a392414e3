"""The machine at fault during a build: a folder the build writes that is read-only is one line
before any job; a disk that fills mid-build is one line, publishes nothing, leaves the previous
release as it was, and the rerun with space resumes to the same bytes. The file systems are
tmpfs mounts (the machine's root may mount; elsewhere the tests say why they cannot run)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TINY, TINY_RELEASE, build, file_digests, workflow_copy, write_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench import cli
from regionbench.cli import build as build_command_line
from regionbench.core.errors import InputError

FIRST = "results/tiny/ingest/00/regions.parquet"  # an output of a stage that ends before the device fills


@contextlib.contextmanager
def mounted(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``folder`` with ``options`` (size=..., ro), unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): the test needs root with CAP_SYS_ADMIN")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    read_only=st.sets(st.sampled_from(build_command_line.WRITTEN)),
    made=st.sets(st.sampled_from(build_command_line.WRITTEN)),
)
def test_a_read_only_folder_a_build_writes_is_named_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, read_only: set[str], made: set[str]
) -> None:
    """Any of the folders a build writes read-only (the others present or not): the first in the
    build's order is named, with the system's reason and what to do; none read-only: no word."""
    project = tmp_path_factory.mktemp("project")
    for name in sorted(made - read_only):
        (project / name).mkdir()
    with contextlib.ExitStack() as stack:
        for name in sorted(read_only):
            stack.enter_context(mounted(project / name, "ro,size=64k"))
        if not read_only:
            build_command_line.check_writable(project)
            return
        with pytest.raises(InputError) as raised:
            build_command_line.check_writable(project)
    first = next(name for name in build_command_line.WRITTEN if name in read_only)
    message = str(raised.value)
    assert message.startswith(f"{project / first.rstrip('/')}: cannot write there (Read-only file system)")
    assert "make them writable" in message and "\n" not in message


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(full=st.sampled_from(build_command_line.WRITTEN), kib=st.integers(64, 512))
def test_a_full_device_under_a_written_folder_is_named(
    tmp_path_factory: pytest.TempPathFactory, full: str, kib: int
) -> None:
    """A device of any size filled to the last byte under any written folder: named, with what to do."""
    project = tmp_path_factory.mktemp("project")
    assert build_command_line.full_device(project) is None  # the machine's own disk has room
    with mounted(project / full, f"size={kib}k") as folder:
        with contextlib.suppress(OSError), open(folder / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        line = build_command_line.full_device(project)
    assert line is not None and line.startswith(f"{project / full.rstrip('/')}: no space left on its device")
    assert line.endswith("free some and run the same command again to resume")


def test_a_read_only_results_folder_stops_the_build_before_any_job(tmp_path: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, TINY)
    with mounted(project / "results", "ro,size=64k"):
        done = build(project, "--configfile", str(override))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert lines[-1].startswith("regionbench: error: ") and "results: cannot write there (Read-only" in lines[-1]
    assert not any(word in done.stderr for word in ("WorkflowError", "OSError", "Traceback")), done.stderr
    assert not (project / "logs").exists()  # no job ran


def test_a_disk_that_fills_mid_build_is_one_line_and_the_rerun_resumes(tiny_build: Path, tmp_path: Path) -> None:
    """results/ on a 600 KiB device: the build stops where it fills with one line naming the
    job; nothing is published and the release built before stays as it was; with the device
    grown, the same command resumes (what finished is kept) to the bytes of a build never
    stopped."""
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, TINY)
    shutil.copytree(tiny_build / TINY_RELEASE, project / TINY_RELEASE)  # the version built before
    before = file_digests(project / TINY_RELEASE)
    with mounted(project / "results", "size=600k") as results:
        done = build(project, "--configfile", str(override))
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2, done.stderr[-3000:]
        assert last.startswith("regionbench: ") and "No space left on device" in last, last
        # the file it was writing where the writer names it (a JSON report), else the job's log
        assert "free some disk space and run again" in last, last
        assert last.startswith("regionbench: results/tiny/") or "(the job logged in logs/tiny/" in last, last
        assert file_digests(project / TINY_RELEASE) == before
        assert not list((project / "releases" / "tiny").glob("*.partial"))
        finished = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}  # a failed job's: removed
        assert project / FIRST in finished
        subprocess.run(["mount", "-o", "remount,size=64m", str(results)], check=True)
        again = build(project, "--configfile", str(override))
        assert again.returncode == 0, again.stderr[-3000:]
        assert {p: p.stat().st_mtime_ns for p in finished} == finished  # what finished is not made again
        assert file_digests(project / TINY_RELEASE) == file_digests(tiny_build / TINY_RELEASE)


@settings(max_examples=9, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["evaluate", "audit", "view"]), kib=st.integers(4, 256))
def test_a_report_or_a_site_on_a_full_disk_is_one_line_and_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory, tiny_build: Path, command: str, kib: int
) -> None:
    """``evaluate --out``, ``audit --json`` and ``view --out`` onto a disk of any size: a report or
    site written whole, or one line naming the path with what to do, and nothing left on the disk
    (no 0-byte report, no part of a site)."""
    import io
    import json

    from regionbench import load
    from regionbench.scoring.tasks import _labels

    folder = tiny_build / TINY_RELEASE
    work = tmp_path_factory.mktemp("full")
    predictions = work / "regions.csv"
    _labels.subset_truth(load(folder), "H").regions.to_csv(predictions, index=False)
    with mounted(work / "disk", f"size={kib}k") as disk:
        out = disk / ("site" if command == "view" else "report.json")
        argv = {
            "evaluate": [
                "evaluate",
                "--release",
                str(folder),
                "--predictions",
                str(predictions),
                "--task",
                "region",
                "--out",
            ],
            "audit": ["audit", str(folder), "--json"],
            "view": ["view", str(folder), "--out"],
        }[command] + [str(out)]
        said = io.StringIO()
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(argv)
        left = sorted(p.relative_to(disk).as_posix() for p in disk.rglob("*"))
        whole = out.is_file() and json.loads(out.read_text()) if command != "view" else (out / "data/meta.js").is_file()
    if code == 0:
        assert whole, left
        return
    lines = said.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1, said.getvalue()
    assert lines[0] == f"regionbench: error: {out}: No space left on device; free some disk space and run again"
    assert left == []
