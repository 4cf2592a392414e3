"""Reproduce a tagged release: clone the repository at the tag, rebuild, compare every file with
the release that DVC tracks at that tag (docs/releases.md, "Reproducing a tag").

The rebuild runs the tag's own workflow and library (its ``src/`` first on ``PYTHONPATH``) in this
environment, from the tag's pinned inputs: its config, its generated or DVC-tracked raw tree
(``dvc pull`` of the clone's ``.dvc`` files). Dependencies are this environment's; a tag whose
pins differ needs its own ``pip install -c constraints.txt``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from regionbench import release
from regionbench.client import history
from regionbench.release.loader import load


@dataclass
class Outcome:
    """What a reproduction found: the files compared and those that differ (or are missing)."""

    files: int = 0
    differing: list[str] = field(default_factory=list)
    refused: str = ""  # the rebuild's own refusal, e.g. a version whose tables differ

    @property
    def identical(self) -> bool:
        return not self.differing and not self.refused

    def lines(self) -> list[str]:
        if self.refused:
            return [f"not reproduced: {self.refused}"]
        if self.identical:
            return [f"byte-identical ({self.files} files)"]
        return [f"differs: {path}" for path in self.differing] + [
            f"not reproduced: {len(self.differing)} of {self.files} files differ"
        ]


def compare(tracked: Path, rebuilt: Path) -> Outcome:
    """Every file of ``tracked`` against ``rebuilt`` and back: differing, missing or extra paths."""
    before, after = release.file_digests(tracked), release.file_digests(rebuilt)
    paths = sorted(before.keys() | after.keys())
    return Outcome(files=len(before), differing=[p for p in paths if before.get(p) != after.get(p)])


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def reproduce(repo: str, tag: str, workdir: Path | None = None, cores: int = 2) -> Outcome:
    """Clone ``repo`` at ``tag`` into ``workdir`` (a temporary folder when ``None``, removed
    after), rebuild the release there and compare it with the DVC-tracked one. A ``workdir``
    that already holds the clone is reused (its build resumes or is up to date)."""
    dataset, version = history.split_tag(tag)
    if Path(repo).exists():
        repo = str(Path(repo).resolve())  # the clone runs elsewhere
    owned = workdir is None
    root = Path(tempfile.mkdtemp(prefix="regionbench-reproduce-")) if workdir is None else Path(workdir)
    clone = root / "repo"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(clone / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    try:
        if not (clone / ".git").is_dir():
            root.mkdir(parents=True, exist_ok=True)
            done = _run(["git", "clone", "--quiet", "--branch", tag, str(repo), str(clone)], root, env)
            if done.returncode != 0:
                raise release.ReleaseError(f"git clone {repo} at {tag} failed: {done.stderr.strip().splitlines()[-1]}")
        tracked_raw = sorted(
            p.relative_to(clone).as_posix()
            for p in clone.rglob("*.dvc")
            if p.is_file() and not {".dvc", ".git"} & set(p.relative_to(clone).parts[:-1])
        )
        if tracked_raw:  # raw trees under DVC: the pinned inputs
            dvc = str(Path(sys.executable).parent / "dvc")
            done = _run([dvc, "pull", "--quiet", *tracked_raw], clone, env)
            if done.returncode != 0:
                raise release.ReleaseError(
                    f"dvc pull {' '.join(tracked_raw)} failed in the clone: {done.stderr.strip()}"
                )
        built = _run([sys.executable, "-m", "regionbench", "build", "--cores", str(cores)], clone, env)
        if built.returncode != 0:
            last = (built.stdout + built.stderr).strip().splitlines()
            return Outcome(refused=last[-1] if last else f"the build exited with {built.returncode}")
        # Unverified: the byte comparison below names every file that differs.
        tracked = load(str(repo), rev=tag, dataset=dataset, version=version, verify=False).folder
        return compare(tracked, clone / "releases" / dataset / f"v{version}")
    finally:
        if owned:
            shutil.rmtree(root, ignore_errors=True)
