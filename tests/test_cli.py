import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import regionbench
from regionbench import cli, synthetic
from regionbench.cli import common
from regionbench.io import layouts
from regionbench.pipeline.config import ConfigError, load, merge, validate


def test_synth_command_writes_a_collection(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["synth", "--profile", "tiny", "--out", str(tmp_path / "raw"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "in the saiapr layout" in out and "01: 54 regions" in out and "done: 110 regions" in out
    assert (tmp_path / "raw" / "wlist.txt").is_file()


def test_unknown_profile_is_refused(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        cli.main(["synth", "--profile", "galaxy", "--out", "x"])


def test_a_layout_without_generated_trees_is_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert cli.main(["synth", "--layout", "kitti", "--profile", "tiny", "--out", str(tmp_path / "raw")]) == 2
    captured = capsys.readouterr()
    known = ", ".join(synthetic.writers())
    assert captured.out == "" and f"no synthetic collections in the kitti layout; choose one of {known}" in captured.err
    assert not (tmp_path / "raw").exists()


def test_an_unknown_layout_in_the_config_is_one_line(tmp_path: Path) -> None:
    from regionbench.pipeline.config import raw_layout

    (tmp_path / "00").mkdir()
    (tmp_path / "wlist.txt").write_text("1\tsky\n")
    known = ", ".join(sorted(layouts.registry()))
    with pytest.raises(ConfigError, match=f"layout: unknown layout 'kitti'; the layouts are {known}"):
        raw_layout({"raw_dir": str(tmp_path), "layout": "kitti"}, "o.yaml")


def test_project_is_found_from_a_subfolder() -> None:
    assert common.find_project(PROJECT / "src" / "regionbench") == PROJECT


def test_config_merge_and_validation(tmp_path: Path) -> None:
    assert merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}) == {"a": {"b": 1, "c": 3}}
    cfg = load(PROJECT)
    validate(cfg, PROJECT / "schemas" / "config.schema.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("ingest: {strict: maybe}\n")
    with pytest.raises(ConfigError, match=r"ingest.strict: 'maybe' is not of type 'boolean'"):
        validate(load(PROJECT, [bad]), PROJECT / "schemas" / "config.schema.yaml")
    with pytest.raises(ConfigError, match="no such file; give a config file"):
        load(PROJECT, [tmp_path / "missing.yaml"])


def test_vocabulary_register_appends_and_retires(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    hierarchy = tmp_path / "hierarchy.yaml"
    hierarchy.write_text("root: entity\nnodes:\n  - {name: sky, parent: entity}\n  - {name: cloud, parent: sky}\n")
    registry = tmp_path / "label_ids.tsv"
    registry.write_text("id\tlabel\tstatus\n1\tn.a.\treserved\n2\tsky\tactive\n3\tsea\tactive\n")
    args = ["vocabulary", "register", "--yaml", str(hierarchy), "--registry", str(registry)]
    assert cli.main(args) == 0
    assert "1 added (cloud), 1 retired (sea)" in capsys.readouterr().out
    rows = [line.split("\t") for line in registry.read_text().splitlines() if line[0].isdigit()]
    assert rows == [
        ["1", "n.a.", "reserved"],
        ["2", "sky", "active"],
        ["3", "sea", "retired"],
        ["4", "cloud", "active"],
    ]


def _actions(
    p: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((path, a) for a in action._choices_actions)
            for name, sub in action.choices.items():
                yield from _actions(sub, (*path, name))
        else:
            yield path, action


def test_every_subcommand_option_and_positional_has_help() -> None:
    missing = [(path, a.option_strings or a.dest) for path, a in _actions(cli.parser()) if not a.help]
    assert missing == []
    assert len(list(_actions(cli.parser()))) > 60


ALIASES = {("export-coco",), ("export-imageclef",), ("export-saiapr",), ("vocabulary", "from-coco")}  # kept a version


def test_the_manual_s_synopsis_is_the_help() -> None:
    """docs/cli.md's synopsis names every subcommand (aliases aside) with exactly the options its
    ``--help`` lists."""
    import re

    text = (PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"## Command line\n\n```text\n(.*?)```", text, re.S)
    assert block
    documented: dict[tuple[str, ...], set[str]] = {}
    command: tuple[str, ...] = ()
    nested = {"vocabulary", "hierarchy"}
    for line in block.group(1).splitlines():
        if line.startswith("regionbench "):
            words = line.split()
            command = tuple(words[1:3]) if words[1] in nested else (words[1],)
            documented.setdefault(command, set())
        documented[command] |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    documented.pop(("--version",), None)
    helped: dict[tuple[str, ...], set[str]] = {}
    for path, action in _actions(cli.parser()):
        if path and path not in ALIASES and type(action).__name__ != "FormerSpelling":  # --protocol: said, not shown
            helped.setdefault(path, set()).update(o for o in action.option_strings if o.startswith("--"))
    groups = {path[:1] for path in helped if len(path) > 1}  # vocabulary, hierarchy: their subcommands
    helped = {path: options - {"--help"} for path, options in helped.items() if path not in groups}
    assert documented == helped


def test_version(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"regionbench {regionbench.__version__}\n"


def test_configfile_takes_every_file_after_it_and_may_repeat() -> None:
    args = cli.parser().parse_args(["build", "release", "--configfile", "a.yaml", "b.yaml", "--configfile", "c.yaml"])
    assert args.targets == ["release"] and args.configfile == ["a.yaml", "b.yaml", "c.yaml"]


def test_help_and_a_command_s_parsing_import_no_data_library() -> None:
    """``regionbench --help`` (and parsing any command but evaluate) imports neither NumPy nor
    pyarrow nor pandas: each command imports what it uses when it runs (a fresh interpreter,
    as a user's call)."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from regionbench import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "cli.parser(['verify', 'x'])\n"
        "print(sorted(m for m in ('numpy', 'pyarrow', 'pandas', 'sklearn', 'snakemake') if m in sys.modules))\n"
        "print(len(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, count = done.stdout.splitlines()
    assert heavy == "[]" and int(count) < 120, done.stdout


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.lists(
        st.tuples(st.from_regex(r"[a-z][a-z0-9_.-]{0,10}", fullmatch=True), st.booleans()), max_size=5, unique_by=lambda e: e[0]
    )
)  # fmt: skip
def test_a_folder_that_is_neither_a_release_nor_a_repository_is_said_so(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], entries: list[tuple[str, bool]]
) -> None:
    """Any local folder without manifest.json, .git or .dvc (files and folders of any names in
    it): load, audit and verify say in one line that it is no release, and where one is."""
    from regionbench.release import ReleaseError, loader

    folder = tmp_path_factory.mktemp("notarelease")
    for name, is_folder in entries:
        if name in ("manifest.json", ".git", ".dvc"):
            continue
        (folder / name).mkdir() if is_folder else (folder / name).write_text("x")
    with pytest.raises(
        ReleaseError, match=re.escape("not a release folder (it has no manifest.json) nor a git+DVC repository")
    ):
        loader.load(folder)
    assert cli.main(["audit", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a release folder" in err and "releases/<dataset>/v<version>" in err, err
    assert cli.main(["verify", str(folder)]) == 1  # a release whose manifest is gone fails to verify
    out = capsys.readouterr().out.strip()
    assert out.count("\n") == 0 and out.endswith(f"no manifest; is {folder} a regionbench release folder?"), out


@pytest.mark.parametrize(
    ("command", "flag", "registry"),
    [("synth", "--layout", "synthetic.writers"), ("export", "--format", "exports.formats")],
)
def test_the_help_lists_what_the_registries_hold(
    command: str, flag: str, registry: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``synth --help`` names every layout a collection can be generated in and ``export --help``
    every export format: the registries' names (written out: the client install cannot import
    the build's registries to print them)."""
    from regionbench import synthetic
    from regionbench.client import exports

    names = sorted({"synthetic.writers": synthetic.writers, "exports.formats": exports.formats}[registry]())
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse wraps at hyphens
    said = re.split(r" \(|;", text.rsplit(f"{flag} {flag.strip('-').upper()} ", 1)[1], maxsplit=1)[0]
    listed = said.rsplit(": ", 1)[-1].replace(" or ", ", ").split(", ")
    assert listed == names
