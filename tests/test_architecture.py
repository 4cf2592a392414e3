"""The library's structure: no import cycle, nothing reaching into the checkout, a light client."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT

SRC = PROJECT / "src"
PACKAGE = SRC / "regionbench"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the library modules it imports (a submodule where one is named, else the package).

    Importing ``a.b.c`` first runs the ``__init__`` of ``a`` and ``a.b``: each package above an
    imported module that does not already hold the importer is an edge too (an ``__init__`` that
    imports back into the importer is a cycle that only fails at run time)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                    parts = target.split(".")
                    for package in (".".join(parts[:k]) for k in range(2, len(parts))):
                        if package in modules and not name.startswith(package + "."):
                            graph[name].add(package)
                    break
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    assert "regionbench.release.manifest" in graph["regionbench.release.writer"]
    assert "regionbench.io.saiapr.text" in graph["regionbench.io.saiapr.ingest"]
    assert (
        "regionbench.io.saiapr" in graph["regionbench.cli.vocabulary"]
    )  # io.saiapr.synthetic: its __init__ runs first
    assert "regionbench.io.saiapr" not in graph["regionbench.io.saiapr.ingest"]  # ran before it
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_no_path_reaches_out_of_the_package() -> None:
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert ".parents[" not in text and "parent.parent" not in text, path


def test_the_client_modules_need_no_build_dependency() -> None:
    """load, verify, diff and evaluate import nothing of the build extra."""
    code = (
        "import sys, regionbench, regionbench.cli, regionbench.release.loader, regionbench.scoring.tasks, regionbench.release\n"
        "heavy = {'snakemake', 'sklearn', 'matplotlib', 'scipy', 'PIL', 'dvc', 'threadpoolctl', 'zlib_ng', 'isal', 'numba', 'llvmlite', 'mlcroissant', 'rdflib', 'huggingface_hub', 'statsmodels', 'SimpleITK'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_layouts_registry_needs_no_build_dependency() -> None:
    """A label-map run asks the layouts' registry which benchmark scores the release's layout:
    the client install (Pillow and shapely, no build extra) imports every layout module."""
    code = (
        "import sys\nfrom regionbench.io import layouts\nfrom regionbench.scoring import protocols\n"
        "assert protocols.of_layout('voc') == 'voc'\n"
        "heavy = {'snakemake', 'sklearn', 'matplotlib', 'scipy', 'skimage', 'dvc', 'zlib_ng', 'isal', 'numba', 'mlcroissant'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_cli_synth_profiles_are_the_synth_profiles() -> None:
    from regionbench.cli import build
    from regionbench.synthetic import plans

    assert set(build.SYNTH_PROFILES) == set(plans.PROFILES)


def test_the_help_names_the_layouts_and_formats_there_are() -> None:
    """The command line names the layouts with generated trees and the export formats in its help
    (written out: the client install cannot import the build's modules to list them): the names
    are the registries'."""
    import argparse
    import re

    from regionbench import cli, synthetic
    from regionbench.client import exports

    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    layout = next(a for a in sub.choices["synth"]._actions if a.dest == "layout")
    named = set(re.findall(r"[a-z0-9-]+", layout.help.split(":", 1)[1].split(";")[0])) - {"or"}
    assert named == set(synthetic.writers())
    export_format = next(a for a in sub.choices["export"]._actions if a.dest == "format")
    assert set(re.findall(r"[a-z0-9-]+", export_format.help.split("(")[0])) - {"or"} == set(exports.formats())
    from regionbench import conformance

    engine = next(a for a in sub.choices["conformance"]._actions if a.dest == "engine")
    assert set(re.findall(r"[a-z0-9-]+", engine.help.split(":", 1)[1].split("(")[0])) - {"or"} == set(
        conformance.ENGINES
    )


def test_each_package_imports_only_the_ones_above_it() -> None:
    """docs/layout.md lists the library's packages top down and says each imports only the ones
    above it (``cli`` and ``__main__`` on top of all): every import, a function's own included,
    keeps that order."""
    import re

    text = (PROJECT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = text[text.index("## The library") :]
    order = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert order[:2] == ["core", "io"] and len(order) == len(set(order)) >= 6
    rank = {name: k for k, name in enumerate(order)} | {"cli": len(order), "__main__": len(order)}

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else None  # regionbench itself: the lazy door, on no layer

    upward = sorted(
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        for target in targets
        if package(source) in rank and package(target) in rank and rank[package(target)] > rank[package(source)]
    )
    assert upward == []


def test_the_command_line_package_wires_in_its_init_and_runs_in_its_groups() -> None:
    """``cli/__init__`` holds the parser and ``main`` only: every command's handler lives in the
    module of its group, and no module of the package is over 800 lines."""
    import argparse

    from regionbench import cli

    handlers = []
    for action in cli.parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                nested = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
                handlers += [c.get_default("func") for n in nested for c in n.choices.values()] or [
                    command.get_default("func")
                ]
    assert len(handlers) >= 15 and all(callable(h) for h in handlers)
    assert {h.__module__ for h in handlers} == {
        f"regionbench.cli.{g}" for g in ("build", "release", "scoring", "vocabulary")
    }
    for path in (PACKAGE / "cli").glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 800, path


def test_scoring_is_layered_and_named_once() -> None:
    """``scoring.measures`` imports ``core`` only (pure measures, no file or release), and the
    readers (``scoring.results``) nothing of the tasks; no file name
    stands twice under ``scoring/`` (a measure is named for what it computes, its task for what is
    scored); no scoring module is over 800 lines, the instance measure not over 600."""
    graph = import_graph()
    measures = {m: targets for m, targets in graph.items() if m.startswith("regionbench.scoring.measures")}
    assert len(measures) >= 8
    outside = sorted(
        f"{m} imports {t}"
        for m, targets in measures.items()
        for t in targets
        if not t.startswith(("regionbench.core", "regionbench.scoring.measures"))
    )
    assert outside == []
    readers = graph["regionbench.scoring.results"]  # below the tasks: they check what it read against the truth
    assert not {t for t in readers if t.startswith(("regionbench.scoring.tasks", "regionbench.scoring.runner"))}
    files = [p for p in (PACKAGE / "scoring").rglob("*.py") if p.name != "__init__.py"]
    names = [p.name for p in files]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    lines = {p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    assert max(lines.values()) <= 800, lines
    assert lines["scoring/measures/average_precision.py"] <= 600
