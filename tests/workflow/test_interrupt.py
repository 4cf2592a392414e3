"""Ctrl-C during a build: one line, what finished kept, and the rerun resumes to the bytes of a
build never interrupted; on a terminal (a pseudo-terminal's Ctrl-C reaches the build's process
group), under a shell's job control (``set -m``: ``kill -INT`` to the build's process group) and
without it (SIGINT or SIGTERM to ``regionbench`` alone, started with SIGINT ignored)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from conftest import TINY, TINY_RELEASE, build, build_command, file_digests, on_a_terminal, workflow_copy, write_config

INTERRUPTED = "regionbench: interrupted; what finished is kept: run the same command again to resume"
NOISE = ("Traceback", "KeyboardInterrupt", "RuleException", "WorkflowError", "CalledProcessError", "failed:")
FIRST = "results/tiny/ingest/00/regions.parquet"  # an output of the stage finished before the interrupt
DONE = "ingest (2 jobs)"  # the line that says the stage has finished


def _resumes(project: Path, override: Path, tiny_build: Path) -> None:
    """The first job's output kept; the rerun builds the tiny release, byte for byte."""
    kept = (project / FIRST).stat().st_mtime_ns
    again = build(project, "--configfile", str(override))
    assert again.returncode == 0, again.stderr[-3000:]
    assert (project / FIRST).stat().st_mtime_ns == kept
    assert file_digests(project / TINY_RELEASE) == file_digests(tiny_build / TINY_RELEASE)


def test_ctrl_c_on_a_terminal_says_one_line_and_the_rerun_resumes(tiny_build: Path, tmp_path: Path) -> None:
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, TINY)
    code, out, sent = on_a_terminal(build_command(project, "--configfile", str(override)), DONE.encode(), b"\x03")
    assert sent is not None, "the build ended before it could be interrupted"
    after = out[sent:].decode(errors="replace").replace("\r", "\n").replace("\x1b[2K", "")
    # the terminal echoes ^C where the cursor is: alone, or before a status line's redraw
    said = [line for line in after.replace("^C", "").splitlines() if line.strip()]
    assert code == 130, after
    assert said[-1] == INTERRUPTED and not any(word in after for word in NOISE), after
    assert all(line.startswith("[") for line in said[:-1]), after  # at most a status line's last redraw
    _resumes(project, override, tiny_build)


# How a stop reaches the build: (job control, whom, signal). One project takes them in turn, each
# rerun resuming where the one before stopped, the last rerun finishing it.
STOPS = [(True, "group", "INT"), (False, "alone", "INT"), (False, "alone", "TERM")]
ANY_STAGE = r"\] .* ([0-9]* jobs\?)$"  # a progress line: a stage of this run has finished


def test_a_signal_stops_the_build_however_it_is_sent(tiny_build: Path, tmp_path: Path) -> None:
    """A script runs the build in the background, piped to a file, and once a stage has finished
    signals it: SIGINT to its process group under job control (``set -m``, as a terminal's Ctrl-C
    reaches a group), SIGINT or SIGTERM to ``regionbench`` alone without job control (where a
    shell starts a background job with SIGINT ignored). Each stop, one after another on one
    project (each rerun resuming the one before): one line in the log, exit 130; no job runs
    after it (Snakemake's log never reaches 100 %), nothing is published, and what finished is
    kept. The last rerun builds the bytes of a build never interrupted."""
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, TINY)
    command = " ".join(build_command(project, "--configfile", str(override)))
    kept = None
    for k, (job_control, target, signal) in enumerate(STOPS):
        log = tmp_path / f"build-{k}.log"
        whom = "-- -$build" if target == "group" else "$build"
        done = f"grep -q '{DONE}' {log}" if k == 0 else f"grep -q '{ANY_STAGE}' {log}"
        script = f"""
set {"-m" if job_control else "+m"}
{command} > {log} 2>&1 &
build=$!
until {done} || ! kill -0 $build 2>/dev/null; do sleep 0.1; done
kill -{signal} {whom}
wait $build
echo "exit $?"
"""
        ran = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=project, timeout=600)
        text = log.read_text()
        assert ran.stdout.strip() == "exit 130", (signal, target, ran.stdout + text)
        assert not _running_in(project), "a job of the build outlived it"  # the build waited for its jobs to end
        lines = text.splitlines()
        assert lines[-1] == INTERRUPTED and not any(word in text for word in NOISE), text
        assert all(line.isprintable() for line in lines)  # a pipe: plain lines
        assert not (project / TINY_RELEASE).exists()  # Snakemake stopped before the release
        logs = (project / ".snakemake" / "log").glob("*.snakemake.log")
        assert "(100%) done" not in max(logs, key=lambda f: f.stat().st_mtime).read_text()
        first = (project / FIRST).stat().st_mtime_ns
        assert kept in (None, first)  # what the first run finished, no rerun redid
        kept = first
    _resumes(project, override, tiny_build)


def _running_in(folder: Path) -> list[int]:
    """The processes whose working folder is ``folder`` or under it (a build's Snakemake and jobs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone, or not ours to read
    return found


def test_a_build_killed_outright_takes_its_snakemake_and_jobs_with_it(tiny_build: Path, tmp_path: Path) -> None:
    """SIGKILL to ``regionbench build`` alone (no handler runs: an out-of-memory kill, ``kill -9``)
    once a stage has finished: its Snakemake stops as at a Ctrl-C and its jobs with it, within
    seconds; nothing is published, and the rerun resumes."""
    project = workflow_copy(tmp_path / "wf")
    override = write_config(project, TINY)
    log = tmp_path / "build.log"
    command = " ".join(build_command(project, "--configfile", str(override)))
    script = f"""
set +m
{command} > {log} 2>&1 &
build=$!
until grep -q '{DONE}' {log} || ! kill -0 $build 2>/dev/null; do sleep 0.1; done
kill -KILL $build
wait $build
echo "exit $?"
"""
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=project, timeout=600)
    assert done.stdout.strip() == "exit 137", done.stdout + log.read_text()
    deadline = time.monotonic() + 60
    while (left := _running_in(project)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"still running after the build was killed: {left}"
    assert not (project / TINY_RELEASE).exists()
    snakemake_log = max((project / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda f: f.stat().st_mtime)
    assert "(100%) done" not in snakemake_log.read_text()
    _resumes(project, override, tiny_build)
