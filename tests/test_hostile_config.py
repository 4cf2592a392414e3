"""Hostile and careless configurations and command lines: one line naming the file, key and fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import PROJECT, regionbench_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench import cli
from regionbench.pipeline.config import ConfigError, load_layers, raw_layout, validate

SCHEMA = PROJECT / "schemas" / "config.schema.yaml"


def check(*files: Path) -> None:
    config, layers = load_layers(PROJECT, list(files))
    validate(config, SCHEMA, layers)
    raw_layout(config, layers.source_of(("raw_dir",)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"ingest: {strict: [}\n", r"bad.yaml:1: invalid YAML \(.*\); fix the syntax"),
        (b"dataset: a\ndataset: b\n", r"bad.yaml: line 2: key 'dataset' given twice in one mapping; keep one"),
        (b"dataset: caf\xe9\n", r"bad.yaml: not UTF-8 text \(byte 12\); save the config file as UTF-8"),
        (b"relations: {tau: .nan}\n", r"bad.yaml: relations.tau: not a finite number"),
        (b"agreement: {min_iou: .inf}\n", r"bad.yaml: agreement.min_iou: not a finite number"),
        (b'raw_dir: ""\n', r"bad.yaml: raw_dir: '' should be non-empty"),
        (b"raw_dir: data/saiapr\n", r"bad.yaml: raw_dir 'data/saiapr' is relative; give the absolute path"),
        (b"raw_dir: /nowhere/at/all\n", r"raw_dir '/nowhere/at/all' does not exist"),
        (b"release: {date: '2026-02-30'}\n", r"bad.yaml: release.date: '2026-02-30' is not a 'date'"),
        (b"release: {date: '0999-01-01'}\n", r"release.date: '0999-01-01' does not match"),
        (b"release: {date: null}\n", r"bad.yaml: release.date: None is not of type 'string'"),
        (b"- a list\n", r"bad.yaml: a config file must hold a mapping of settings"),
        (b"baselines: {methods: [canny, sobel]}\n", r"bad.yaml: baselines.methods: baseline 'sobel': use canny, "),
        (b"baselines: {methods: canny}\n", r"bad.yaml: baselines.methods: 'canny' is not valid under any of"),
    ],
)
def test_bad_config_files_are_one_line(tmp_path: Path, text: bytes, expected: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(text)
    with pytest.raises(ConfigError, match=expected) as info:
        check(bad)
    assert "\n" not in str(info.value)


def test_errors_are_blamed_on_the_file_that_set_the_value(tmp_path: Path) -> None:
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("ingest: {strict: maybe}\n")
    second.write_text("dataset: fine\n")
    with pytest.raises(ConfigError, match=r"^.*first.yaml: ingest.strict: 'maybe' is not of type 'boolean'"):
        check(first, second)
    second.write_text("ingest: {strict: true}\nsubsets: {seed: -1}\n")
    with pytest.raises(ConfigError, match=r"second.yaml: subsets.seed"):
        check(first, second)


def test_raw_dir_as_a_file_or_with_only_a_word_list(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "wlist.txt").write_text("1\tn.a.\n")
    for raw, expected in ((tmp_path / "file", "is a file"), (tmp_path / "tree", "has wlist.txt but no folder shard")):
        override = tmp_path / "o.yaml"
        override.write_text(f"raw_dir: {raw}\n")
        with pytest.raises(ConfigError, match=expected):
            check(override)


def test_build_reports_a_bad_config_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("relations: {tau: .nan}\n")
    done = regionbench_cli("build", "--project-dir", str(PROJECT), "--configfile", str(bad), "-n")
    assert (
        done.returncode == 2
        and done.stderr == f"regionbench: error: {bad}: relations.tau: not a finite number; give a number such as 0.5\n"
    )


@pytest.mark.parametrize("profile", ["nope", "../profiles", "default/config.yaml", ""])
def test_an_unknown_profile_is_one_line(profile: str, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["build", "--project-dir", str(PROJECT), "--profile", profile, "-n"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--profile {profile}: no such profile" in err and "default, slurm" in err, err


def test_an_unknown_target_ends_on_one_line_of_ours(capsys: pytest.CaptureFixture, monkeypatch) -> None:
    """A target that is neither a rule nor an output path is refused before Snakemake starts;
    one that no rule makes is Snakemake's refusal, followed by one line of ours that names no
    absolute path when run from the project."""
    monkeypatch.chdir(PROJECT)
    assert cli.main(["build", "no_such_target", "-n"]) == 2
    assert "build target 'no_such_target': neither a rule (" in capsys.readouterr().err
    assert cli.main(["build", "results/no_such_file", "-n"]) == 1
    last = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert (
        last
        == "regionbench: Snakemake stopped (exit 1) outside any regionbench job: its message above says why (job logs: logs)"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["evaluate", "--release", "r", "--predictions", "p", "--task", "image", "--k", "-3"], "argument --k: '-3' is not an integer >= 1"),
        (["synth", "--out", "x", "--seed", "-1"], "argument --seed: '-1' is not an integer >= 0"),
        (["synth", "--out", "x", "--seed", "1_0"], "argument --seed: '1_0' is not an integer >= 0"),
        (["evaluate", "--release", "r", "--predictions", "p", "--task", "image", "--semantic-threshold", "nan"], "is not a number in [0, 1]"),
        (["diff", "a", "b", "--examples", "\u0663"], "argument --examples: '\u0663' is not an integer >= 0"),
    ],
)  # fmt: skip
def test_bad_options_name_the_option(argv: list[str], expected: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and expected in err and err.count("\n") == 1, err


def test_a_bug_shows_its_traceback_and_asks_for_a_report(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from regionbench.cli import release as release_commands

    monkeypatch.setattr(release_commands, "cmd_verify", lambda args: [][1])  # a genuine bug, not the user's input
    assert cli.main(["verify", "x"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "IndexError" in err
    assert err.rstrip().splitlines()[-1].startswith("regionbench: internal error (a bug in regionbench")


KEYS = st.sampled_from(
    ["dataset", "raw_dir", "synth", "ingest", "relations", "subsets", "classifiers", "release", "agreement", "tau",
     "strict", "seed", "profile", "version", "min_iou", "names", "previous", "max_image_pixels", "date",
     "creator", "license"]
)  # fmt: skip
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**12)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["", "/", "relative/path", "/nowhere", ".nan", "1_0", "\u0663", "v1.0", "tiny", "2026-02-30", "2024-02-29"]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(KEYS, VALUES, max_size=4) | st.binary(max_size=60))
def test_any_config_file_is_accepted_or_one_line(tmp_path: Path, content: dict | bytes) -> None:
    """Any settings (as YAML) or any bytes as a config file: either a valid configuration or a
    ConfigError of one line that names the file."""
    path = tmp_path / "any.yaml"
    path.write_bytes(content if isinstance(content, bytes) else yaml.safe_dump(content).encode())
    try:
        check(path)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "yaml" in str(exc), str(exc)
