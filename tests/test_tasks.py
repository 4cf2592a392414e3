"""The task registry: every scoring task is one module that keeps the contract; the command
line, the report's settings, view's rerun and the manual's table derive from it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import PROJECT
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import cli
from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.scoring import tasks
from regionbench.scoring.tasks import _base

TASKS = ["boundaries", "concepts", "image", "imageclef", "instances", "panoptic", "region", "segments", "semantic"]


@pytest.fixture()
def drop_in_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """``drop(name, source)`` puts a task module in a folder ``regionbench.scoring.tasks`` searches
    too, as if copied into the package; undone after the test."""
    import regionbench.scoring.tasks as package

    extra = tmp_path / "tasks-extra"
    extra.mkdir()
    names: list[str] = []

    def drop(name: str, source: str) -> None:
        (extra / f"{name}.py").write_text(source)
        names.append(f"regionbench.scoring.tasks.{name}")
        sys.modules.pop(names[-1], None)
        tasks.registry.cache_clear()

    monkeypatch.setattr(package, "__path__", [*package.__path__, str(extra)])
    yield drop
    tasks.registry.cache_clear()
    for name in names:
        sys.modules.pop(name, None)


WHOLE = '''"""``count``: a count of the predictions' lines.

Predictions: a text file.

Measures: lines.
"""
from dataclasses import dataclass
from regionbench.scoring import scope
from regionbench.scoring.tasks._base import Settings as Base, option


@dataclass(frozen=True)
class Settings(Base):
    """The count task's settings."""

    blank: bool = option(False, "--count-blank", "count blank lines too", action="store_true")


def scope_of(data, settings):
    return scope.Scope(settings.split, "every line", 1, 1, "files")


def read(predictions, data, settings):
    lines = predictions.read_text().splitlines()
    return [line for line in lines if settings.blank or line.strip()]


def score(run):
    return {"measures": {"lines": len(run.given)}, "per_image": {}}
'''


def test_the_registry_holds_the_nine_tasks_and_each_keeps_the_contract() -> None:
    found = tasks.registry()
    assert list(found) == TASKS
    for module in found.values():
        assert tasks.contract_problems(module) == []
        said = tasks.about(module)
        assert module.Settings.__doc__ and said.summary and said.predictions and said.measures
        assert said.name == module.__name__.rpartition(".")[2] and not said.summary.endswith(".")
    assert {name for name, module in found.items() if hasattr(module, "shapes")} == {
        "boundaries",
        "instances",
        "panoptic",
        "segments",
        "semantic",
    }


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda s: s.replace("Measures: lines.", ""), "the docstring has 0 paragraphs beginning 'Measures: '"),
        (lambda s: s.replace("``count``:", "count:"), "the docstring does not begin ``count``: <summary>"),
        (lambda s: s.replace("def scope_of(", "def scoped("), "scope_of missing"),
        (lambda s: s.replace("def score(run):", "def score(run, extra):"), "score(run, extra) should be score(run)"),
        (lambda s: s.replace("class Settings(Base):", "class Settings:"), "Settings is not a frozen dataclass"),
        (lambda s: s.replace("@dataclass(frozen=True)\n", "@dataclass\n"),
         "cannot be imported (TypeError: cannot inherit non-frozen dataclass from a frozen one)"),
        (lambda s: s.replace("def read(predictions, data, settings):", "def read(path, data, settings):"),
         "read(path, data, settings) should be read(predictions, data, settings)"),
        (lambda s: s + "\nshapes = 3\n", "shapes() should be shapes(run, report)"),
    ],
)  # fmt: skip
def test_a_task_module_that_breaks_the_contract_is_one_line(drop_in_task, change, said: str) -> None:
    drop_in_task("count", change(WHOLE))
    with pytest.raises(tasks.TaskError) as refused:
        tasks.registry()
    text = str(refused.value)
    assert (
        "\n" not in text
        and text.startswith("regionbench.scoring.tasks.count: breaks the task contract")
        and said in text
    )


def stub_release() -> object:
    """What the door reads of a release for a task that reads no table: its name and version."""
    from types import SimpleNamespace

    return SimpleNamespace(dataset="d", version="1.0.0", manifest={"digest": "d" * 64})


TREE = Hierarchy.from_nodes("entity", {"entity": Node("entity", None), "sky": Node("sky", "entity")})


def test_a_new_task_is_one_file(drop_in_task, tmp_path: Path) -> None:
    """A module dropped into the package is a task: the command line offers it with its option,
    evaluate scores with it, and the report keeps its settings."""
    drop_in_task("count", WHOLE)
    assert "count" in tasks.registry()
    args = cli.parser().parse_args(
        ["evaluate", "--release", "r", "--predictions", "p", "--task", "count", "--count-blank"]
    )
    assert tasks.settings_from_args(args) == {"blank": True}
    predictions = tmp_path / "run.txt"
    predictions.write_text("a\n\nb\n")
    heard: list[str] = []
    report = tasks.evaluate(stub_release(), predictions, "count", TREE, heard.append, blank=True)  # type: ignore[arg-type]
    assert heard == ["scored: 1 of 1 files, every line"] and report["measures"] == {"lines": 3}
    assert report["settings"] == {"annotator": None, "blank": True, "split": "test"}
    assert "lines                       3" in tasks.render(report)
    assert tasks.evaluate(stub_release(), predictions, "count", TREE)["measures"] == {"lines": 2}  # type: ignore[arg-type]


def settings_values(task: str) -> st.SearchStrategy[dict]:
    """Values for every field of ``task``'s settings, of the field's type."""
    strategies = {
        "split": st.sampled_from(["test", "all"]),
        "annotator": st.none() | st.sampled_from(["saiapr", "annotator-1"]),
        "subset": st.sampled_from(list("ABCDEFGH")),
        "k": st.integers(1, 20),
        "semantic_threshold": st.none() | st.floats(0, 1),
        "similarity": st.sampled_from(["hierarchy", "hooks:factory"]),
        "image_features": st.none() | st.just(Path("features.csv")),
        "categories": st.none() | st.just(Path("categories.txt")),
        "all_annotators": st.booleans(),
        "iou_type": st.sampled_from(["segm", "bbox", "boundary"]),
        "dilation_ratio": st.floats(0.001, 1),
        "tide": st.booleans(),
        "strict": st.booleans(),
        "allow_missing": st.booleans(),
        "max_dets": st.none() | st.integers(1, 300),
        "method": st.sampled_from(["coco", "lvis"])
        if task == "instances"
        else st.none() | st.sampled_from(["plain", "cityscapes", "ade20k", "voc"]),
        "train_ids": st.booleans(),
        "reduce_zero_label": st.booleans(),
        "area_ranges": st.lists(
            st.tuples(st.sampled_from(["small", "medium", "large"]), st.floats(0, 100), st.floats(101, 1e10)),
            max_size=3,
        ).map(tuple),
        "exclude": st.none() | st.just("annotator-2"),
        "thresholds": st.none() | st.integers(1, 99),
        "zero_is_unlabelled": st.booleans(),
        "max_dist": st.floats(0.001, 0.1),
        "png": st.sampled_from(["boundaries", "segments"]),
        "ignore": st.integers(0, 65535),
        "label_names": st.none() | st.dictionaries(st.integers(0, 255).map(str), st.sampled_from(["sky", "sea"])),
        "resamples": st.integers(0, 5000),
        "seed": st.integers(0, 2**32),
    }
    fields = [f.name for f in dataclasses.fields(tasks.get(task).Settings)]
    return st.fixed_dictionaries({name: strategies[name] for name in fields})


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_settings_come_back_from_the_report(data: st.DataObject) -> None:
    """What a report keeps of a task's settings gives the same settings back (``view`` reruns a
    report by them); a path is kept by its name."""
    import json

    task = data.draw(st.sampled_from(TASKS))
    values = data.draw(settings_values(task))
    chosen = tasks.settings_of(task, **values)
    kept = json.loads(json.dumps(chosen.to_report()))
    again = tasks.get(task).Settings.from_report(kept)
    expected = {k: Path(v.name) if isinstance(v, Path) else v for k, v in values.items()}
    assert {f.name: getattr(again, f.name) for f in dataclasses.fields(again)} == expected


def shown_groups(argv: list[str]) -> dict[str, set[str]]:
    """The option groups ``evaluate --help`` shows for ``argv``: title -> the fields shown."""
    sub = cli.parser(argv)._subparsers._group_actions[0].choices["evaluate"]  # type: ignore[union-attr]
    return {
        g.title: {a.dest for a in g._group_actions if a.help != argparse.SUPPRESS}
        for g in sub._action_groups
        if g.title
    }


def test_evaluate_help_shows_the_named_task_s_options_and_its_methods() -> None:
    """``evaluate --task X --help`` shows X's options, grouped by the class that declares them
    (titled by the tasks that take it), and under each of X's methods the options only it takes;
    no other task's option. Without a task it shows none, and says where they are."""
    for name, module in tasks.registry().items():
        groups = shown_groups(["evaluate", "--task", name])
        fields = {f.name for f in dataclasses.fields(module.Settings)}
        shown = set().union(*groups.values()) - {"help", "task", "release", "rev", "predictions", "out", "cores",
                                                 "by_source", "no_verify", "executor", "jobs", "work_dir"}  # fmt: skip
        assert shown == fields, name
        assert groups["every task"] == {"split", "annotator", "resamples", "seed"}
        for method in module.Settings.methods:
            assert groups.get(f"{name} --method {method.name}", set()) == set(method.options), (name, method)
    assert shown_groups(["evaluate", "--task", "semantic"])["semantic"] == {"ignore", "label_names", "method"}
    assert shown_groups(["evaluate", "--task", "image"])["image, imageclef, region"] == {"subset"}
    bare = shown_groups(["evaluate"])
    assert "every task" not in bare and "semantic" not in bare
    sub = cli.parser(["evaluate"])._subparsers._group_actions[0].choices["evaluate"]  # type: ignore[union-attr]
    assert "evaluate --task NAME --help" in " ".join(sub.format_help().split())


def test_a_method_s_options_are_refused_with_another_method() -> None:
    """An option only one method takes (``Method.options``), given with another method, is one
    line naming both; with its own method, or left at its default, it is nothing."""
    cases = 0
    for name, module in tasks.registry().items():
        for method in module.Settings.methods:
            for option in method.options:
                for other in module.Settings.methods:
                    chosen = tasks.settings_of(name, method=other.name, **{option: True})
                    problem = chosen.method_problem()
                    if other.name == method.name:
                        assert problem is None
                    else:
                        cases += 1
                        flag = tasks.option_flag(option)
                        assert problem == (
                            f"{flag} is an option of --method {method.name}, not of --method {other.name}; drop it, "
                            f"or score with --method {method.name}"
                        )
                assert tasks.settings_of(name, method=method.name).method_problem() is None
    assert cases >= 6


def test_an_option_of_another_task_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Before the release is read: a setting the chosen task does not take is one line, exit 2."""
    args = ["evaluate", "--release", str(tmp_path / "none"), "--predictions", str(tmp_path), "--task", "semantic"]
    assert cli.main([*args, "--iou-type", "bbox"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "regionbench: error: --iou-type is an option of concepts, instances, not of --task semantic"
    )
    with pytest.raises(
        tasks.TaskError, match="--subset is an option of image, imageclef, region, not of --task semantic"
    ):
        tasks.settings_of("semantic", subset="H")


METHODS = {"instances": ["coco", "lvis"], "semantic": ["plain", "cityscapes", "ade20k", "voc"]}


def test_each_task_declares_its_methods() -> None:
    """A task's ``Settings.methods`` are its ``--method`` choices, in order."""
    for name, methods in METHODS.items():
        settings_class = tasks.get(name).Settings
        assert [m.name for m in settings_class.methods] == methods
        field = next(f for f in dataclasses.fields(settings_class) if f.name == "method")
        assert field.metadata["argparse"]["choices"] == methods


@settings(max_examples=40, deadline=None)
@given(
    task=st.sampled_from(sorted(METHODS)),
    method=st.sampled_from([*sorted({m for ms in METHODS.values() for m in ms}), "bogus"]),
    flag=st.sampled_from(["--method", "--protocol"]),
)
def test_a_method_is_its_task_s_or_an_argparse_error(task: str, method: str, flag: str) -> None:
    """Each task owns its methods: a method of another task (or of none) is argparse's error,
    usage and one line, exit 2, before anything is read; the task's own is taken, under either
    spelling (``--protocol``, the former one, with a one-line note)."""
    argv = ["evaluate", "--release", "none", "--predictions", "none", "--task", task, flag, method]
    parser = cli.parser(argv)
    with contextlib.redirect_stderr(io.StringIO()) as err:
        if method in METHODS[task]:
            args = parser.parse_args(argv)
            assert tasks.settings_from_args(args) == {"method": method}
            said = err.getvalue().strip().splitlines()
            assert said == (["regionbench: note: --protocol is spelled --method now"] if flag == "--protocol" else [])
            return
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(argv)
    assert stop.value.code == 2
    said = err.getvalue().strip().splitlines()
    assert said[-1].startswith(f"regionbench evaluate: error: argument {flag}: invalid choice: {method!r}")
    assert all(repr(m) in said[-1] for m in METHODS[task])


def test_a_report_written_with_the_former_setting_names_reopens() -> None:
    """A report written before ``protocol`` was renamed ``method`` gives its settings back, and
    a caller of ``evaluate`` that still says ``protocol`` is understood."""
    for task, method in (("instances", "lvis"), ("semantic", "voc")):
        old = tasks.get(task).Settings.from_report({"split": "all", "protocol": method})
        assert old.method == method and old.split == "all"
        assert tasks.settings_of(task, protocol=method).method == method


def test_a_layout_names_the_benchmark_that_scores_it() -> None:
    """The layout module declares its benchmark (``About.benchmark``), one the semantic task has;
    a release of any other layout, or of one this version does not know, is scored plain."""
    from regionbench.io import layouts
    from regionbench.scoring import protocols as benchmarks

    named = {name: layout.about.benchmark for name, layout in layouts.registry().items() if layout.about.benchmark}
    assert named == {"ade20k": "ade20k", "cityscapes": "cityscapes", "voc": "voc"}
    assert set(named.values()) <= set(benchmarks.METHODS) == set(METHODS["semantic"])
    for name in layouts.registry():
        assert benchmarks.of_layout(name) == named.get(name, benchmarks.PLAIN)
    assert benchmarks.of_layout("a-layout-of-a-later-version") == benchmarks.of_layout(None) == benchmarks.PLAIN


def test_the_manual_s_task_table_is_the_registry_s() -> None:
    text = (PROJECT / "docs" / "scoring.md").read_text(encoding="utf-8")
    table = re.search(r"^\| task \| predictions \| measures \|\n(?:^\|.*\|\n)+", text, re.M)
    assert table and table.group(0).strip() == tasks.manual_table()


def test_render_lays_out_any_report() -> None:
    report = {
        "release": {"dataset": "d", "version": "1.0.0"}, "task": "t", "split": "test",
        "scored": {"split": "test", "side": "the test side of the image split", "count": 2, "total": 5, "unit": "images"},
        "predictions": "p", "images": 2, "notes": ["a note"], "measures": {"a": {"b": 0.5}, "n": 3},
        "human_ceiling": {"a": 0.25, "per_annotator": {}},
        "spread": {"a": {"mean": 0.5, "std": 0.0, "min": 0.5, "max": 0.5}},
    }  # fmt: skip
    lines = tasks.render(report).splitlines()
    assert lines[0] == "scored: 2 of 5 images, the test side of the image split (--split all scores every one)"
    assert lines[1] == "d v1.0.0  task t  split test  predictions p" and set(lines[2]) == {"-"}
    assert lines[3:] == [
        "images                      2", "note: a note", "a.b                         0.5000", "n                           3",
        "human ceiling (each annotator against the others):", "  human.a                   0.2500",
        "against each annotator (mean, std, min, max):", "  a                         0.5000  0.0000  0.5000  0.5000",
    ]  # fmt: skip
    assert tasks.render(report, scoped=False).splitlines()[0] == lines[1]


def test_a_rerun_refuses_a_report_of_a_task_that_draws_nothing(tmp_path: Path) -> None:
    data = stub_release()
    with pytest.raises(tasks.TaskError, match="not of a mask task"):
        tasks.rerun(data, {"task": "region", "settings": {}}, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(tasks.TaskError, match="not the predictions the report scored"):
        tasks.rerun(data, {"task": "semantic", "settings": {}, "predictions_sha256": "0" * 64}, tmp_path)  # type: ignore[arg-type]


def test_the_settings_base_is_every_task_s() -> None:
    for module in tasks.registry().values():
        assert issubclass(module.Settings, _base.Settings)
        assert {f.name for f in dataclasses.fields(module.Settings)} >= {"split", "annotator"}


def test_a_prediction_file_is_matched_by_id_stem_or_cityscapes_frame() -> None:
    """A map named by the image's id, its file's stem, or its Cityscapes frame with any suffix
    (``_leftImg8bit``, ``_pred``, as cityscapesScripts finds them) names that image; another
    frame or a stem of no image names none."""
    import pandas as pd

    from regionbench.scoring.tasks._masks import file_keys

    images = pd.DataFrame(
        {"image_id": [7, 8], "path": ["leftImg8bit/val/aachen/aachen_000000_000019_leftImg8bit.png", "photos/x1.jpg"]}
    )
    keys = file_keys(images)
    for stem in ("7", "aachen_000000_000019_leftImg8bit", "aachen_000000_000019", "aachen_000000_000019_pred"):
        assert stem in keys and keys[stem] == 7
    assert keys["x1"] == 8 and keys["8"] == 8
    for stem in ("aachen_000000_000020_pred", "bremen_000000_000019", "x2", "x1_pred"):
        assert stem not in keys
        with pytest.raises(KeyError):
            keys[stem]


def test_a_ceiling_without_a_pair_of_humans_is_none_never_zero() -> None:
    """The report holds null and the text says none, where no two humans drew a scored image."""
    report = {
        "release": {"dataset": "d", "version": "1.0.0"}, "task": "t", "split": "test", "predictions": "p",
        "scored": {"split": "test", "side": "the test side of the image split", "count": 2, "total": 5, "unit": "images"},
        "measures": {"a": 0.5}, "human_ceiling": None,
    }  # fmt: skip
    lines = tasks.render(report).splitlines()
    assert "human ceiling: none (no two annotators drew any of the scored images)" in lines
    assert not any(line.startswith("  human.") for line in lines)


@settings(max_examples=60, deadline=None)
@given(
    drawn=st.dictionaries(
        st.integers(1, 6), st.lists(st.sampled_from(["a", "b", "c", "consensus"]), unique=True), max_size=6
    ),
    scored=st.sets(st.integers(1, 6)),
)
def test_a_pair_is_two_humans_on_one_scored_image(drawn: dict[int, list[str]], scored: set[int]) -> None:
    """``paired``: some scored image drawn by two humans (the derived consensus is no human)."""
    import pandas as pd

    from regionbench.scoring.tasks import _masks

    rows = [(i, who) for i, people in drawn.items() for who in people]
    coverage = pd.DataFrame(rows, columns=["image_id", "annotator"])
    names = sorted({who for _, who in rows})

    class Stub:
        def annotators(self) -> list[str]:
            return names

        def table(self, name: str) -> pd.DataFrame:
            assert name == "coverage"
            return coverage

    images = pd.DataFrame({"image_id": sorted(scored)})
    expected = any(len(set(drawn.get(i, [])) - {"consensus"}) >= 2 for i in scored)
    assert _masks.paired(Stub(), images) is expected  # type: ignore[arg-type]


def test_a_value_its_own_interval_leaves_out_is_said_in_a_note() -> None:
    """A headline value outside its resamples' interval (a mean over labels the resamples thin
    out) is named in one note; values inside, or without an interval, are not."""
    bounds = {"level": 0.95, "resamples": 9, "seed": 0, "method": "percentile bootstrap over images"}
    report = {
        "measures": {"ranking": {"map_l": 0.047, "map_i": 0.25}, "miap": 0.3},
        "intervals": {
            "ranking.map_l": {"low": 0.051, "high": 0.062} | bounds,
            "miap": {"low": 0.2, "high": 0.4} | bounds,
        },
    }
    note = tasks.intervals_beside(report)
    assert note is not None and note.startswith("the interval of ranking.map_l leaves out its value")
    report["intervals"]["ranking.map_l"]["low"] = 0.04
    assert tasks.intervals_beside(report) is None
    assert tasks.intervals_beside({"measures": {"miap": 0.3}}) is None
