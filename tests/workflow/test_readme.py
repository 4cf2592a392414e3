"""Every example of the README runs: here on the demo release, built as `make release` builds it,
or in the test that a comment ``<!-- run by: tests/FILE.py::TEST -->`` above the block names.

Blocks say what they are: ``sh`` commands, ``console`` commands after ``$ `` with their output
(compared line by line; a line ``...`` stands for any lines), ``python`` code, ``yaml``
configuration (checked against the config schema), ``text`` output and listings (not run).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import PROJECT, ReadmeBlock, readme_blocks, regionbench_cli
from farm import Built

from regionbench.pipeline import config as build_config

KINDS = {"sh", "console", "python", "yaml", "text"}


def test_every_block_says_what_it_is_and_where_it_runs() -> None:
    found = readme_blocks()
    assert len(found) > 25
    assert [b.where for b in found if b.kind not in KINDS] == []
    # Commands run elsewhere name their test; the first block is `make release` and `make test`.
    first, *rest = found
    assert first.body.splitlines()[0].startswith("make release") and (first.file, first.line) == ("README.md", 2)
    assert [b.where for b in rest if b.kind == "sh" and not b.by] == []
    assert [b.where for b in found if b.kind == "text" and b.by] == []


def test_the_tests_the_readme_names_exist() -> None:
    for block in (b for b in readme_blocks() if b.by):
        file, name = block.by.split("::")
        assert f"def {name}(" in (PROJECT / file).read_text(encoding="utf-8"), f"{block.where}: {block.by}"


def test_make_release_is_the_build_the_demo_test_runs() -> None:
    recipe = (PROJECT / "Makefile").read_text().split("\nrelease: $(STAMP)\n", 1)[1].splitlines()[0]
    assert recipe.strip() == "$(BIN)/regionbench build --cores 2"


def test_yaml_examples_are_valid_configurations(tmp_path: Path) -> None:
    for block in (b for b in readme_blocks() if b.kind == "yaml"):
        override = tmp_path / f"{block.file.replace('/', '-')}-{block.line}.yaml"
        override.write_text(block.body)
        cfg, layers = build_config.load_layers(PROJECT, [override])
        build_config.validate(cfg, PROJECT / "schemas" / "config.schema.yaml", layers)


@pytest.fixture(scope="module")
def demo(release: Callable[[str], Built]) -> tuple[Path, subprocess.CompletedProcess]:
    """A workflow copy that has built the demo release: `make release` without the install."""
    built = release("demo")
    return built.project, subprocess.CompletedProcess([], 0, built.stdout, built.stderr)


def command(line: str) -> list[str]:
    """A README command line's arguments to ``regionbench``."""
    words = shlex.split(line)
    if words[0] in ("regionbench", ".venv/bin/regionbench"):
        return words[1:]
    raise AssertionError(f"no way to run {line!r} here")


def matches(expected: list[str], got: list[str]) -> bool:
    """``got`` is ``expected`` where each ``...`` line stands for any lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and matches(expected[1:], got[1:])


def run_console(block: ReadmeBlock, cwd: Path, env: dict) -> None:
    """Each ``$ command`` of the block, its output against the lines that follow it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    for line, expected in steps:
        # As a terminal shows them: progress (stderr) and results (stdout) interleaved.
        done = regionbench_cli(*command(line), cwd=cwd, merged=True)
        got = done.stdout.splitlines()
        assert done.returncode == 0, f"{block.where}: {line}: {done.stdout[-2000:]}"
        assert matches(expected, got), f"{block.where}: {line}\n" + "\n".join(got)


def test_the_readme_examples_run_on_the_demo(demo: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> None:
    """In the README's order, in the demo project: python, console; each block's own checks hold."""
    project, _ = demo
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    ran = 0
    for block in (b for b in readme_blocks() if not b.by and b.kind in ("python", "console")):
        if block.kind == "python":
            done = subprocess.run(
                [sys.executable, "-c", block.body], cwd=project, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, f"{block.where}: {done.stderr[-3000:]}"
        else:
            run_console(block, project, env)
        ran += 1
    assert ran >= 6


def test_the_build_output_in_the_readme_is_the_demo_s(demo: tuple[Path, subprocess.CompletedProcess]) -> None:
    """The README's quoted build output: its first line and its summary are the demo's, as built."""
    _, done = demo
    quoted = next(b for b in readme_blocks() if b.kind == "text" and "\nrunning " in b.body).body.splitlines()
    plan = next(line for line in quoted if line.startswith("running "))
    assert quoted[0] == done.stderr.splitlines()[0] and plan in done.stderr.splitlines(), done.stderr + done.stdout
    summary = done.stdout.strip().splitlines()
    assert quoted[-len(summary) :] == summary
