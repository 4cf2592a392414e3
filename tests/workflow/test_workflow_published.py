"""A published version is never touched by a later build: a rebuild with other content is refused
before anything is removed, and keeps being refused however the folder is restored."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import TINY, TINY_RELEASE, build, file_digests, write_config

from regionbench import release


def test_a_refused_rebuild_leaves_the_published_release_as_it_was(tiny_build: Path, tmp_path: Path) -> None:
    project = Path(shutil.copytree(tiny_build, tmp_path / "wf", symlinks=True))
    folder = project / TINY_RELEASE
    published = file_digests(folder)
    # Other splits; the classifiers off, which only spares the refused attempts their fits.
    other = TINY.replace("classifiers: {names: [zarbi, naive, majority]}", "classifiers: {enabled: false}")
    assert other != TINY
    # Every job in-process (jobs.in_process): the refusal is the point, not the job processes.
    changed = write_config(project, other + "subsets: {seed: 1, split_unit: region}\njobs: {in_process: true}\n")
    for attempt in ("rebuild", "again", "restored"):
        if attempt == "restored":  # the folder copied back with fresh modification times
            restored = Path(shutil.copytree(folder, tmp_path / "restored"))
            shutil.rmtree(folder)
            shutil.copytree(restored, folder)
            for path in folder.rglob("*"):
                os.utime(path)
        done = build(project, "--configfile", str(changed))
        assert done.returncode == 2, (attempt, done.stdout[-2000:])
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("regionbench: release refused: version 1.0.0 exists with other content in "), attempt
        assert "Traceback" not in done.stderr
        assert file_digests(folder) == published, attempt
        assert release.verify(folder) == []
    assert not list(folder.parent.glob("*.partial")) and not list(folder.parent.glob("*.replaced"))


def test_a_removed_release_folder_is_built_again(tiny_build: Path, tmp_path: Path) -> None:
    project = Path(shutil.copytree(tiny_build, tmp_path / "wf", symlinks=True))
    folder = project / TINY_RELEASE
    published = file_digests(folder)
    shutil.rmtree(folder)
    done = build(project, "--configfile", str(write_config(project, TINY)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert file_digests(folder) == published
    again = build(project, "--configfile", str(write_config(project, TINY)))
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
