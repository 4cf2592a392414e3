"""Scoring tasks: what a researcher's predictions are scored as, one module of
``regionbench.scoring.tasks`` each, found by name.

A task module defines:

- a docstring whose first line is the task's name (the module's) in double backquotes, a colon
  and its summary (its line in ``evaluate --help``), with the paragraphs ``Predictions: ...`` and
  ``Measures: ...`` (its row of the manual's task table), read by ``about``;
- ``Settings``, a frozen dataclass deriving from ``_base.Settings``: each field an ``option``, so
  the command line's options (grouped by the class that declares them), the report's
  ``settings`` and ``view``'s rerun all derive from it;
- ``scope_of(data, settings)``: what it scores (``scope.Scope``), said before anything is read;
- ``read(predictions, data, settings)``: the predictions read and checked (or what the task
  reads a batch at a time);
- ``score(run) -> report`` (with ``per_image``): a task that scores images hands a measure
  (``runner.Measure``: ``process(batch)``, ``add(part)``, ``compute()``) to the one runner,
  ``runner.stream``, which owns the batches, workers, memory and spilling;
- optionally ``shapes(run, report)``: (image id, ``Shape`` list) per scored image, what
  ``view`` draws beside the truth.

``registry`` scans the package and refuses, in one line, a module that breaks the contract: a
new task is one new file. The measures themselves (``regionbench.scoring.measures``) stay below,
free of files and settings. ``evaluate`` is
the one door, ``render`` the one table, ``TaskError`` the one error.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from regionbench.core import plugins
from regionbench.core.hierarchy import Hierarchy
from regionbench.release.loader import Release
from regionbench.release.versions import tag_name
from regionbench.scoring import scope
from regionbench.scoring.tasks._base import (
    Run,
    Settings,
    Shape,
    TaskError,
    predictions_digest,
    release_hierarchy,
    renamed,
)

__all__ = [
    "Run", "Settings", "Shape", "TaskError", "evaluate", "evaluate_release", "get", "registry", "release_hierarchy",
    "render", "rerun",
]  # fmt: skip

CONTRACT: dict[str, tuple[str, ...] | type] = {
    "Settings": type,
    "scope_of": ("data", "settings"),
    "read": ("predictions", "data", "settings"),
    "score": ("run",),
}
OPTIONAL: dict[str, tuple[str, ...]] = {"shapes": ("run", "report")}


@dataclasses.dataclass(frozen=True)
class About:
    """What a task says of itself, from its module's docstring (one place, read by the help and
    the manual): its name, its summary, what it scores and what it measures."""

    name: str
    summary: str
    predictions: str
    measures: str


def about(module: ModuleType) -> About:
    """The ``About`` of a task module, read from its docstring: its first line names the task (the
    module's last name, in double backquotes), a colon and the summary; the paragraphs that begin
    ``Predictions:`` and ``Measures:`` follow. White space is folded, a closing full stop dropped.
    A ``TaskError`` says what the docstring lacks."""
    name = module.__name__.rpartition(".")[2]
    text = (module.__doc__ or "").strip()
    head = f"``{name}``: "
    if not text.startswith(head):
        raise TaskError(f"the docstring does not begin {head}<summary>")
    found = {"summary": text.partition("\n")[0][len(head) :]}
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
    for label in ("Predictions", "Measures"):
        said = [p[len(label) + 2 :] for p in paragraphs if p.startswith(f"{label}: ")]
        if len(said) != 1:
            raise TaskError(f"the docstring has {len(said)} paragraphs beginning '{label}: ' (one is needed)")
        found[label.lower()] = said[0]
    return About(name, *(found[k].removesuffix(".") for k in ("summary", "predictions", "measures")))


def contract_problems(module: ModuleType) -> list[str]:
    """What a task module lacks of the contract (module docstring): a missing member, a member of
    another kind, a function whose parameters are not the contract's, a ``Settings`` that is not
    a frozen dataclass of ``_base.Settings``. Empty: it keeps the contract."""
    problems = []
    try:
        about(module)
    except TaskError as exc:
        problems.append(str(exc))
    for name, wanted in {**CONTRACT, **{k: v for k, v in OPTIONAL.items() if hasattr(module, k)}}.items():
        if not hasattr(module, name):
            problems.append(f"{name} missing")
            continue
        value = getattr(module, name)
        if isinstance(wanted, tuple):
            found = tuple(inspect.signature(value).parameters) if callable(value) else None
            if found != wanted:
                problems.append(f"{name}({', '.join(found or ())}) should be {name}({', '.join(wanted)})")
        elif not isinstance(value, wanted):
            problems.append(f"{name} is not a {wanted.__name__}")
    settings = getattr(module, "Settings", None)
    if isinstance(settings, type) and not (
        issubclass(settings, Settings) and dataclasses.is_dataclass(settings) and settings.__dataclass_params__.frozen  # type: ignore[attr-defined]
    ):
        problems.append("Settings is not a frozen dataclass deriving from regionbench.scoring.tasks._base.Settings")
    return problems


@cache
def registry() -> dict[str, ModuleType]:
    """Task name -> its module: every public module of ``regionbench.scoring.tasks``, in name
    order; a module that breaks the contract is a ``TaskError`` naming what it lacks."""
    import regionbench.scoring.tasks as package

    return dict(plugins.scan(package, lambda module: module, contract_problems, "task contract", TaskError))


def get(name: str) -> ModuleType:
    """The task called ``name``; a ``TaskError`` naming the tasks otherwise."""
    return plugins.named(registry(), name, "task", TaskError)


def settings_of(name: str, **given: Any) -> Settings:
    """Task ``name``'s settings from keyword arguments (field names; lists become tuples); an
    argument the task does not take is a ``TaskError`` naming the tasks that do."""
    task = get(name)
    fields = {f.name for f in dataclasses.fields(task.Settings)}
    given = renamed(given)
    if unknown := sorted(set(given) - fields):
        takers = [n for n, t in registry().items() if unknown[0] in {f.name for f in dataclasses.fields(t.Settings)}]
        flag = option_flag(unknown[0])
        raise TaskError(f"{flag} is an option of {', '.join(takers) or 'no task'}, not of --task {name}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    settings: Settings = task.Settings(**values)
    return settings


def option_flag(field_name: str) -> str:
    """The command-line flag of a settings field, whichever task declares it."""
    for task in registry().values():
        for f in dataclasses.fields(task.Settings):
            if f.name == field_name:
                return str(f.metadata["flag"])
    return f"--{field_name.replace('_', '-')}"


def evaluate(
    data: Release,
    predictions: str | Path,
    task: str,
    tree: Hierarchy | None = None,
    progress: Callable[[str], None] | None = None,
    cores: int | None = 1,
    by_source: bool = False,
    **settings: Any,
) -> dict[str, Any]:
    """The report of ``predictions`` scored as ``task`` against the release ``data``:
    ``settings`` are the task's (``Settings`` fields, e.g. ``split="all"``, ``iou_type="bbox"``);
    ``progress`` hears the scope line (what is scored) before anything is read; ``cores``: the
    processes a task may use (None: every core; the report is the same for any); ``by_source``:
    the measures against each annotator too, grouped by who or what drew the truth
    (``by_source``, regions.drawn_by). Raises ``TaskError`` (one line per problem) for
    predictions or settings it cannot score."""
    module = get(task)
    chosen, scored = scoped(data, task, **settings)
    if progress is not None:
        progress(scored.line())
    path = Path(predictions)
    given = module.read(path, data, chosen)
    run = Run(data, tree or release_hierarchy(data), path, chosen, given, cores or available_cores())
    digest = data.manifest.get("digest")  # the truth's exact version: a score names what it was computed on
    tag = tag_name(data.dataset, data.version)  # the tag a maintainer gives the version
    head: dict[str, Any] = {
        "release": {"dataset": data.dataset, "version": data.version, "tag": tag, "digest": digest},
        "task": task,
    }
    if hasattr(chosen, "subset"):
        head["subset"] = chosen.subset
    head |= {"split": scored.split, "scored": scored.to_report(), "predictions": path.name}
    report: dict[str, Any] = head | module.score(run)
    if "human_ceiling" in report and not report["human_ceiling"]:  # no two humans drew a scored image
        report["human_ceiling"] = None
    if outside := intervals_beside(report):  # a value its own resamples do not bracket: said
        report["notes"] = [*report.get("notes", []), outside]
    report["predictions_sha256"] = predictions_digest(path)
    if by_source:
        report["by_source"] = _by_source(data, path, task, run.tree, cores, settings)
    report["settings"] = chosen.to_report()
    return report


def scoped(data: Release, task: str, **settings: Any) -> tuple[Settings, scope.Scope]:
    """``task``'s settings (``settings`` given, the rest their defaults, resolved against the
    release ``data``) and what they score; a ``TaskError`` when that is nothing."""
    module = get(task)
    if "split" not in settings and hasattr(module, "default_split"):  # a map task: its benchmark's side
        settings = {**settings, "split": module.default_split(data)}
    chosen = settings_of(task, **settings).resolve(data)
    if (problem := chosen.method_problem()) is not None:  # after resolve: the layout's method is known
        raise TaskError(problem)
    scored: scope.Scope = module.scope_of(data, chosen)
    if not scored.count:  # figures of nothing would print as zeros
        raise TaskError(
            f"nothing to score: {scored.side} holds none of the release's {scored.total} {scored.unit}; "
            "choose another side with --split (all: every one)"
        )
    return chosen, scored


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _by_source(
    data: Release, predictions: Path, task: str, tree: Hierarchy, cores: int | None, settings: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """The measures against each annotator, by who or what drew its regions (regions.drawn_by:
    human, model:NAME@VERSION, consensus, derived:HOW): {drawn_by: {annotator: measures}}."""
    import pyarrow.parquet as pq

    if settings.get("all_annotators"):
        raise TaskError("--by-source scores against each annotator already: leave out --all-annotators")
    path = data.folder / data.manifest["tables"]["regions"]["path"]
    if "drawn_by" not in pq.read_schema(path).names:
        raise TaskError(
            f"--by-source: {data.folder} has no regions.drawn_by (a release made before it); rebuild it to score by source"
        )
    pairs = data.arrow("regions", ["annotator", "drawn_by"]).group_by(["drawn_by", "annotator"]).aggregate([])
    grouped: dict[str, dict[str, Any]] = {}
    for kind, annotator in sorted(zip(pairs["drawn_by"].to_pylist(), pairs["annotator"].to_pylist(), strict=True)):
        alone = evaluate(data, predictions, task, tree, None, cores, **{**settings, "annotator": annotator})
        grouped.setdefault(kind, {})[annotator] = alone["measures"]
    return grouped


def evaluate_release(
    release: Release | str | Path, predictions: str | Path, task: str, **settings: Any
) -> dict[str, Any]:
    """``regionbench.evaluate``: ``evaluate`` of a loaded release, or of the release folder
    ``release`` (loaded and verified first)."""
    from regionbench.release.loader import load

    data = release if isinstance(release, Release) else load(release)
    return evaluate(data, predictions, task, **settings)


def rerun(data: Release, report: Mapping[str, Any], predictions: Path) -> Run[Any]:
    """The run ``report`` scored, its predictions read from ``predictions`` again (``view``
    draws them); a ``TaskError`` when they are not the ones it scored, or the report is not one
    of a task that draws (``shapes``)."""
    module = registry().get(str(report.get("task")))
    values = report.get("settings")
    if module is None or not hasattr(module, "shapes") or not isinstance(values, dict):
        raise TaskError(
            "--predictions: the report is not of a mask task scored by this version; score the run with evaluate --out"
        )
    _check_scored(report, predictions)
    chosen = module.Settings.from_report(values)
    return Run(data, release_hierarchy(data), predictions, chosen, module.read(predictions, data, chosen))


def _check_scored(report: Mapping[str, Any], predictions: Path) -> None:
    """A ``TaskError`` unless ``predictions`` are the ones ``report`` scored (their sha256)."""
    if not predictions.exists():
        raise TaskError(f"--predictions {predictions}: no such file or folder; give the predictions the report scored")
    if (found := predictions_digest(predictions)) != report.get("predictions_sha256"):
        raise TaskError(
            f"--predictions {predictions}: not the predictions the report scored (sha256 {found[:12]}, the report's "
            f"{str(report.get('predictions_sha256'))[:12]}); give the file or folder it scored"
        )


def rescore(data: Release, report: Mapping[str, Any], predictions: Path) -> dict[str, Any]:
    """The run ``report`` scored again, with its settings, against the release ``data`` (another
    version of the one it scored): its predictions must be the ones it scored."""
    module = registry().get(str(report.get("task")))
    values = report.get("settings")
    if module is None or not isinstance(values, dict):
        raise TaskError("--run: not a report of evaluate (no task and settings); score the run with evaluate --out")
    _check_scored(report, predictions)
    chosen = module.Settings.from_report(values)
    given = {f.name: getattr(chosen, f.name) for f in dataclasses.fields(chosen)}
    return evaluate(data, predictions, str(report["task"]), **given)


def intervals_beside(report: Mapping[str, Any]) -> str | None:
    """A note naming the headline measures whose 95 % interval leaves out their own value (None
    where none does). It happens where a measure averages over what the scored images hold
    (labels, concepts, classes): a resample that misses the rarest of them averages over fewer,
    and those it keeps are the better scored."""
    found = measures(report)
    apart = [
        name
        for name, around in (report.get("intervals") or {}).items()
        if around.get("low") is not None and name in found and not around["low"] <= found[name] <= around["high"]
    ]
    if not apart:
        return None
    from regionbench.scoring.tasks._masks import few

    return (
        f"the interval of {few(apart)} leaves out its value: the measure averages over what the scored images "
        "hold, and a resample that misses the rarest (labels, concepts with few images) averages over fewer; read "
        "the interval as the spread of the value, not as bounds around it"
    )


def measures(report: Mapping[str, Any]) -> dict[str, float]:
    """A report's headline measures, flattened (``iou.mean``, ``AP``...), numbers only."""
    out: dict[str, float] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix] = float(value)

    walk("", report.get("measures", {}))
    return out


def shapes(run: Run[Any], report: Mapping[str, Any]) -> Iterator[tuple[int, list[Shape]]]:
    """What the task of ``report`` draws of ``run``, image by image (its ``shapes``)."""
    drawn: Iterator[tuple[int, list[Shape]]] = get(str(report["task"])).shapes(run, report)
    return drawn


COUNTS = ("regions", "images", "images_without_prediction", "ground_truth", "detections", "truth_segments",
          "crowd_segments", "predicted_segments", "ignored_pixels", "abstained_pixels")  # fmt: skip


def _figure(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def render(report: Mapping[str, Any], scoped: bool = True) -> str:
    """A report as lines: what was scored (unless ``scoped`` is False: the command line says it
    before scoring), the run's counts and notes, its measures (and the label tasks' overlap and
    per-category sections), the human ceiling and the spread over annotators."""
    where = f"subset {report['subset']}" if "subset" in report else f"split {report['split']}"
    head = (
        f"{report['release']['dataset']} v{report['release']['version']}  task {report['task']}  "
        f"{where}  predictions {report['predictions']}"
    )
    rows: list[tuple[str, object]] = [(k, report[k]) for k in COUNTS if k in report]

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif _figure(value):
            rows.append((prefix, value))

    counted = len(rows)
    walk("", report["measures"])
    for section in ("overlap", "per_category", "tide"):
        if section in report:
            walk(section, report[section])
    ceiling = {k: v for k, v in (report.get("human_ceiling") or {}).items() if k != "per_annotator"}
    width = max([26, *(len(name) for name, _ in rows)])

    intervals = report.get("intervals") or {}

    def line(name: str, value: object) -> str:
        if not isinstance(value, float):
            return f"{name:<{width}}  {value}"
        around = intervals.get(name) or {}
        bounds = f" [{around['low']:.4f}, {around['high']:.4f}]" if around.get("low") is not None else ""
        return f"{name:<{width}}  {value:.4f}{bounds}"

    lines = [scope.Scope(**report["scored"]).line()] if scoped else []
    lines += [head, "-" * len(head)]
    lines += [line(name, value) for name, value in rows[:counted]]
    lines += [f"note: {note}" for note in report.get("notes", [])]
    lines += [line(name, value) for name, value in rows[counted:]]
    if intervals:
        first = next(iter(intervals.values()))
        lines.append(
            f"[low, high]: {first['level']:.0%} intervals, {first['method']} ({first['resamples']} resamples, "
            f"seed {first['seed']})"
        )
    for kind, annotators in report.get("by_source", {}).items():
        lines.append(f"against the regions drawn by {kind}:")
        for annotator, measures in annotators.items():
            lines += [line(f"  {annotator}.{k}", v) for k, v in measures.items() if _figure(v)]
    if "human_ceiling" in report and report["human_ceiling"] is None:
        lines.append("human ceiling: none (no two annotators drew any of the scored images)")
    if ceiling:
        lines.append("human ceiling (each annotator against the others):")
        lines += [line(f"  human.{k}", v) for k, v in ceiling.items() if isinstance(v, float)]
    if "spread" in report:
        lines.append("against each annotator (mean, std, min, max):")
        for name, spread in report["spread"].items():
            lines.append(
                f"  {name:<{width - 2}}  " + "  ".join(f"{spread[k]:.4f}" for k in ("mean", "std", "min", "max"))
            )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser, task: str | None = None) -> None:
    """The tasks' options on ``parser``: ``--task`` (its choices and their summaries), then
    ``task``'s own options, grouped by the class that declares them (titled by the tasks that take
    it), and each of its methods (``Settings.methods``) with the options only it takes; without a
    ``task`` the help says where each task's are. Every other task's options are taken but not
    shown: ``settings_of`` then says in one line whose they are. A former spelling of a flag
    (``aliases``) is taken with a one-line note. An option not given is absent from the namespace
    (the task's default then holds)."""
    tasks = registry()
    parser.add_argument(
        "--task",
        required=True,
        choices=list(tasks),
        help="; ".join(f"{name}: {about(module).summary}" for name, module in tasks.items())
        + " (evaluate --task NAME --help: its methods and options)",
    )
    shown: set[str] = set()
    chosen = tasks.get(task or "")
    if chosen is not None:
        shown = _add_options(parser, task or "", chosen.Settings, tasks)
    taken = set(shown)
    for module in tasks.values():  # the others' options, unshown
        for f in dataclasses.fields(module.Settings):
            if f.name not in taken:
                taken.add(f.name)
                extra = {k: v for k, v in f.metadata["argparse"].items() if k != "choices"}
                _add_option(parser, f, argparse.SUPPRESS, extra)


def _add_options(
    parser: argparse.ArgumentParser, task: str, settings: type[Settings], tasks: Mapping[str, ModuleType]
) -> set[str]:
    """``task``'s options shown on ``parser`` (``add_arguments``): the names of their fields."""
    of_method = {name for method in settings.methods for name in method.options}
    shown = set()
    groups: dict[str, Any] = {}  # title -> group: two classes the same tasks take share one
    for klass in reversed(settings.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, Settings)):
            continue
        fields = [f for f in klass.options() if f.name not in of_method]
        if not fields:
            continue
        takers = [n for n, t in tasks.items() if issubclass(t.Settings, klass)]
        title = "every task" if len(takers) == len(tasks) else ", ".join(takers)
        group = groups.get(title) or groups.setdefault(title, parser.add_argument_group(title))
        for f in fields:
            help = f.metadata["help"]
            if f.name == "method":
                help += "; " + "; ".join(f"{m.name}: {m.summary}" for m in settings.methods)
            _add_option(group, f, help, dict(f.metadata["argparse"]))
            shown.add(f.name)
    by_name = {f.name: f for f in dataclasses.fields(settings)}
    for method in settings.methods:
        if method.options:
            group = parser.add_argument_group(f"{task} --method {method.name}", method.summary)
            for name in method.options:
                _add_option(
                    group, by_name[name], by_name[name].metadata["help"], dict(by_name[name].metadata["argparse"])
                )
                shown.add(name)
    return shown


def _add_option(group: Any, f: dataclasses.Field[Any], help: str, extra: dict[str, Any]) -> None:
    """Settings field ``f`` as its flag on ``group`` (``help``: its line, or ``argparse.SUPPRESS``),
    each former spelling (``aliases``) beside it, unshown, taken with a note."""
    if "metavar" not in extra and extra.get("action") is None and "choices" not in extra:
        extra["metavar"] = f.name.upper()
    flag = f.metadata["flag"]
    group.add_argument(flag, dest=f.name, default=argparse.SUPPRESS, help=help, **extra)
    for alias in f.metadata["aliases"]:
        noted = {k: v for k, v in extra.items() if k != "action"}
        group.add_argument(alias, dest=f.name, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                           action=_former_spelling(flag, extra.get("action")), **noted)  # fmt: skip


def _former_spelling(flag: str, action: str | None) -> type[argparse.Action]:
    """An argparse action that takes a former spelling of ``flag`` as ``flag`` (``action``: the
    flag's own, store or store_true) and says so on stderr, once a use."""

    class FormerSpelling(argparse.Action):
        def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
            if action == "store_true":
                kwargs |= {"nargs": 0, "const": True}
            super().__init__(option_strings, dest, **kwargs)

        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:  # fmt: skip
            print(f"regionbench: note: {option_string} is spelled {flag} now", file=sys.stderr)
            setattr(namespace, self.dest, self.const if action == "store_true" else values)

    return FormerSpelling


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The settings fields an ``add_arguments`` parser was given, by field name."""
    names = {f.name for task in registry().values() for f in dataclasses.fields(task.Settings)}
    return {k: v for k, v in vars(args).items() if k in names}


def manual_table() -> str:
    """The manual's task table (docs/scoring.md holds it; a test compares), from the registry."""
    rows = ["| task | predictions | measures |", "|---|---|---|"]
    for name, task in registry().items():
        said = about(task)
        cells = [f"`--task {name}`", said.predictions, said.measures]
        rows.append("| " + " | ".join(c.replace("``", "`").replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
