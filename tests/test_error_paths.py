"""Every error the manual documents (docs/cli.md), run through the command line: its exit status and the
one line it ends on, never a traceback."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from conftest import PROJECT, regionbench_cli, workflow_copy

SECTION = re.compile(r"^## Errors\n(.*?)(?=^## |\Z)", re.M | re.S)
ROW = re.compile(r"^\| (?P<case>[^|]+?) \| `(?P<command>[^`]+)` \| (?P<exit>\d+) \| `(?P<line>[^`]+)` \|$", re.M)


def documented() -> list[dict]:
    text = SECTION.search((PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")).group(1)
    return [m.groupdict() for m in ROW.finditer(text)]


def setup(case: str, here: Path) -> None:
    """The files each documented case needs, in the folder the command runs in."""
    configs = {
        "empty config file": ("empty.yaml", ""),
        "config not YAML": ("broken.yaml", "dataset: [unclosed\n"),
        "raw_dir relative": ("relative.yaml", "raw_dir: raw\n"),
        "raw_dir empty": ("empty-raw.yaml", f"raw_dir: {here / 'empty'}\n"),
        "layout not the tree's": ("layout.yaml", f"raw_dir: {here / 'saiapr'}\nlayout: coco\n"),
        "vocabulary_dir missing": ("vocabulary.yaml", f"vocabulary_dir: {here / 'no-such-folder'}\n"),
    }
    (here / "empty").mkdir()
    (here / "saiapr" / "00").mkdir(parents=True)
    (here / "saiapr" / "wlist.txt").write_text("1\tn.a.\n")
    if case in configs:
        name, text = configs[case]
        (here / name).write_text(text)
    deep = here / "deep"
    deep.mkdir()
    (deep / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)


def test_every_documented_case_is_tested() -> None:
    cases = [row["case"] for row in documented()]
    assert len(cases) >= 10 and len(cases) == len(set(cases))


@pytest.mark.parametrize("row", documented(), ids=lambda row: row["case"])
def test_a_documented_error_ends_on_its_line(row: dict, tmp_path: Path) -> None:
    project = workflow_copy(tmp_path)
    setup(row["case"], project)
    words = row["command"].split()[1:]
    words = [w for w in words if w != "…"]
    if words[0] == "build":
        words += ["--project-dir", str(project), "--dry-run"]
    if words[0] == "show":
        words[1] = str(project / "deep")  # the suffix is refused before the release is read
    done = regionbench_cli(*words, cwd=project)
    assert done.returncode == int(row["exit"]), done.stdout + done.stderr
    out = (done.stderr or done.stdout).strip().splitlines() if done.returncode != 1 else done.stdout.splitlines()
    expected = ".*".join(re.escape(part) for part in row["line"].split("…"))
    assert re.match(expected, out[-1]), out[-1]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC])
def test_an_output_folder_the_machine_refuses_is_one_line(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only or full output folder (root ignores permissions, so the refusal is simulated
    where the command creates its folder): exit 2, the path, the system's reason, what to do."""
    from regionbench import cli

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code), str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert cli.main(["synth", "--profile", "tiny", "--out", str(tmp_path / "raw"), "--workers", "1"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"regionbench: error: {tmp_path / 'raw'}") and os.strerror(code) in line
