"""The test lanes hold: every test that runs a Snakemake build is marked ``workflow``, so
``make test-units`` (``-m "not workflow and not slurm"``) never starts one."""

from __future__ import annotations

import ast
from pathlib import Path

BUILDERS = {"build", "build_command", "build_tiny", "built_release"}  # conftest's and the tests' own
BUILT = {"tiny_build", "tiny_release", "coco_build", "exports", "demo"}  # fixtures that build


def _marked(node: ast.AST) -> bool:
    return any("workflow" in ast.unparse(d) or "slurm" in ast.unparse(d) for d in getattr(node, "decorator_list", []))


def _fixtures(tree: ast.Module) -> set[str]:
    """This module's own fixtures that build."""
    return {
        f.name
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any("fixture" in ast.unparse(d) for d in f.decorator_list)
        and _builds(f, set())
    }


def _builds(function: ast.FunctionDef, fixtures: set[str]) -> bool:
    calls = {n.func.id for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return bool(calls & BUILDERS) or bool({a.arg for a in function.args.args} & (BUILT | fixtures))


def test_every_build_test_is_marked() -> None:
    unmarked = []
    for path in sorted(Path(__file__).parent.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_marked = any(
            isinstance(n, ast.Assign)
            and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
            and ("workflow" in ast.unparse(n.value) or "slurm" in ast.unparse(n.value))
            for n in tree.body
        )
        fixtures = _fixtures(tree)
        for node in tree.body:
            is_test = isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            if is_test and _builds(node, fixtures) and not (module_marked or _marked(node)):
                unmarked.append(f"{path.name}::{node.name}")
    assert unmarked == []
