"""The test lanes hold: the folder is the lane. Every test under tests/workflow/ is marked
``workflow`` (by conftest.py), and no test elsewhere starts a Snakemake build, so
``make test-units`` (``-m "not workflow and not slurm"``) never starts one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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
    every ``regionbench build`` command line, the farm's ``release`` fixture, and, to a fixed
    point, whatever calls or requests one of them."""
    found = {"build_command", "release"}  # release: the farm's builds (tests/farm.py)
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


def test_the_folder_decides_the_lane(request: pytest.FixtureRequest) -> None:
    """In the session that runs this test, as it collected: a test carries the marker exactly
    when it lies under tests/workflow/, so ``-m "not workflow"`` (the fast lane) selects none of
    them and every other test."""
    items = request.session.items
    assert items
    for item in items:
        assert (item.get_closest_marker("workflow") is not None) == item.path.is_relative_to(WORKFLOW), item.nodeid


def test_make_test_and_the_machinery_lane_together_run_every_test() -> None:
    """The machinery lane names files that exist, and ``make test`` and ``make test-machinery``
    select complements: no test falls between the two lanes."""
    import re

    from conftest import MACHINERY

    assert all((WORKFLOW / name).is_file() for name in MACHINERY), MACHINERY
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    lanes = dict(re.findall(r'^(test|test-machinery): .*\n\t.*-m "([^"]+)"', makefile, re.MULTILINE))
    assert lanes == {"test": "not machinery and not slurm", "test-machinery": "machinery or slurm"}
