"""The test lanes hold: the folder is the lane. Every test under tests/workflow/ is marked
``workflow`` (by conftest.py), and no test elsewhere starts a Snakemake build, so
``make test-units`` (``-m "not workflow and not slurm"``) never starts one."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
WORKFLOW = TESTS / "workflow"


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _uses(function: ast.FunctionDef) -> set[str]:
    """The names ``function`` calls, and the fixtures it requests."""
    calls = {n.func.id for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return calls | {a.arg for a in function.args.args}


def building(functions: dict[str, ast.FunctionDef]) -> set[str]:
    """The functions and fixtures that start a build: ``build_command``, where conftest makes
    every ``regionbench build`` command line, and, to a fixed point, whatever calls or requests
    one of them."""
    found = {"build_command"}
    while grown := {name for name, f in functions.items() if name not in found and _uses(f) & found}:
        found |= grown
    return found


def test_no_test_outside_the_workflow_folder_builds() -> None:
    shared = _functions(ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8")))
    builds = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.is_relative_to(WORKFLOW):
            continue
        own = _functions(ast.parse(path.read_text(encoding="utf-8")))
        starts = building(shared | own)
        builds += [f"{path.name}::{name}" for name in own if name.startswith("test_") and name in starts]
    assert builds == []


def test_the_folder_decides_the_lane() -> None:
    """Collected as the fast lane collects: nothing under tests/workflow/; and everything there
    carries the marker."""

    def collected(marker: str) -> set[str]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                "-m",
                marker,
                str(TESTS),
            ],
            capture_output=True,
            text=True,
            cwd=TESTS.parent,
        )
        assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
        return {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}

    units, builds = collected("not workflow"), collected("workflow")
    assert units and not any(path.startswith("tests/workflow/") for path in units)
    assert builds == {str(p.relative_to(TESTS.parent)) for p in WORKFLOW.glob("test_*.py")}
