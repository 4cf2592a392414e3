"""A release built through SLURM (snakemake-executor-plugin-slurm) equals the local build of the same
configuration (the tiny collection, whose local build the session already holds).

Needs the single-node test cluster of ``tests/slurm/cluster.sh``: the fixture starts it in a temp
folder and stops it afterwards. Without SLURM installed the test is skipped, except under CI,
where ``.ci/run`` installs it first and a skip would hide a broken cluster setup.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT, TINY, TINY_RELEASE, build_command, file_digests, workflow_copy, write_config

pytestmark = pytest.mark.slurm

CLUSTER = PROJECT / "tests" / "slurm" / "cluster.sh"


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running single-node cluster; yields the environment that points SLURM commands at it."""
    if not shutil.which("slurmctld"):
        if os.environ.get("CI"):
            pytest.fail(f"SLURM is not installed; .ci/run must run '{CLUSTER} install' first")
        pytest.skip(f"SLURM is not installed: run '{CLUSTER} install' (root)")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run([str(CLUSTER), "start", str(folder)], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    try:
        yield {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    finally:
        subprocess.run([str(CLUSTER), "stop", str(folder)], check=True)
        for daemon in ("slurmctld", "slurmd", "munged"):
            assert not (folder / f"{daemon}.pid").exists() or not _alive(folder / f"{daemon}.pid"), daemon


def _alive(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text()), 0)
    except (ProcessLookupError, ValueError):
        return False
    return True


def test_release_through_slurm_equals_local_build(
    slurm_cluster: dict[str, str], tiny_build: Path, tmp_path: Path
) -> None:
    cluster = workflow_copy(tmp_path / "cluster")
    override = write_config(cluster, TINY)
    done = subprocess.run(
        # --verbose: Snakemake's own report, which names each job's SLURM id.
        build_command(cluster, "--verbose", "--profile", "slurm", "--configfile", str(override), cores=None),
        capture_output=True,
        text=True,
        cwd=cluster,
        env=slurm_cluster,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    # Every job went through sbatch (the plugin logs the SLURM id of each one) but those of the
    # workflow's local rules: the target and the light stages, run in Snakemake's own process. The
    # subsets checkpoint re-plans mid-build, so the job count is Snakemake's last "N of N steps".
    planned = int(re.findall(r"^(\d+) of \1 steps \(100%\) done$", log, re.M)[-1])
    local = re.findall(r"^local(?:rule|checkpoint) (\w+):$", log, re.M)
    declared = re.search(r"^localrules:\n((?:    \w+,?\n)+)", (cluster / "Snakefile").read_text(), re.M)
    assert declared and set(local) <= {*re.findall(r"\w+", declared.group(1)), "all"} and "all" in local, local
    assert "ingest" not in local and "classify" not in local  # the heavy stages are SLURM's
    assert log.count("has been submitted with SLURM jobid") == planned - len(local), log[-3000:]
    assert file_digests(cluster / TINY_RELEASE) == file_digests(tiny_build / TINY_RELEASE)


def test_a_run_scored_through_slurm_equals_the_one_scored_here(
    slurm_cluster: dict[str, str], tiny_build: Path, tmp_path: Path
) -> None:
    """``evaluate --executor slurm``: the part jobs and the gathering are sbatch jobs (with the
    project's cluster profile, the build's), and the report is the one of one local process."""
    import json
    import sys

    from conftest import truth_label_maps

    folder = tiny_build / TINY_RELEASE
    truth_label_maps(folder, tmp_path / "maps")
    common = [sys.executable, "-m", "regionbench", "evaluate", "--release", str(folder), "--predictions",
              str(tmp_path / "maps"), "--task", "semantic"]  # fmt: skip
    here = subprocess.run([*common, "--out", str(tmp_path / "here.json")], capture_output=True, text=True, cwd=PROJECT)
    assert here.returncode == 0, here.stderr
    work = tmp_path / "work"
    done = subprocess.run(
        [*common, "--executor", "slurm", "--jobs", "2", "--work-dir", str(work), "--out", str(tmp_path / "slurm.json")],
        capture_output=True, text=True, cwd=PROJECT, env=slurm_cluster,
    )  # fmt: skip
    log = (work / "snakemake.log").read_text() if (work / "snakemake.log").is_file() else ""
    assert done.returncode == 0, done.stderr + log[-3000:]
    assert json.loads((tmp_path / "slurm.json").read_text()) == json.loads((tmp_path / "here.json").read_text())
    assert log.count("has been submitted with SLURM jobid") >= 3, log[-3000:]  # two parts and the gathering, a round
    assert "Using profile" in log and "config/profiles/slurm" in log  # the build's cluster profile
