"""The one error path: what is the user's to fix, what is a bug, and how a job ends on each."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regionbench.core import errors
from regionbench.io.shards import IngestError
from regionbench.pipeline import jobs
from regionbench.release import ReleaseError


def test_describe_tells_input_from_bugs() -> None:
    assert errors.describe(IngestError("00/labels.txt: bad")) == "00/labels.txt: bad"
    assert errors.describe(ReleaseError("x: refused")) == "x: refused"
    full = OSError(errno.ENOSPC, "No space left on device", "results/a.parquet")
    assert errors.describe(full) == "results/a.parquet: No space left on device; free some disk space and run again"
    assert "read-only" in errors.describe(OSError(errno.EROFS, "Read-only file system", "results"))
    assert errors.describe(ValueError("operands could not be broadcast")) is None
    assert errors.describe(KeyError("x")) is None


@given(st.integers(0, 200), st.text(max_size=20), st.none() | st.text(max_size=20))
def test_describe_answers_every_os_error_in_one_line_or_none(code: int, reason: str, filename: str | None) -> None:
    message = errors.describe(OSError(code, reason, filename))
    assert message is None or ("\n" not in reason + (filename or "")) <= ("\n" not in message)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "out.parquet"), "out.parquet: No space left on device"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero (log: job.log). internal error"),
        (
            KeyboardInterrupt(),
            "interrupted (log: job.log): the job's outputs are not kept; run the build again to resume",
        ),
    ],
)
def test_a_job_records_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, exc: BaseException, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    jobs.log_to(str(tmp_path / "job.log"))
    try:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    finally:
        monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    recorded = jobs.failures(tmp_path)
    assert len(recorded) == 1 and recorded[0].replace(str(tmp_path) + "/", "").startswith(expected), recorded
    said = capsys.readouterr().err
    assert said.rstrip().endswith(recorded[0])
    if isinstance(exc, KeyboardInterrupt):  # one line, no traceback, not a bug to report
        assert (
            said.count("\n") == 1 and "Traceback" not in said and not list((tmp_path / jobs.FAILURES).glob("*.bug.txt"))
        )


@pytest.mark.parametrize("code", sorted(errors._OS_HINTS))
@pytest.mark.parametrize("strerror", ["", None, "the system's words"])
def test_a_machine_error_is_never_an_empty_line(code: int, strerror: str | None) -> None:
    """However an OSError is raised (with or without the system's text), its line names the
    problem and what to do."""
    import os

    exc = OSError(code, strerror) if strerror is not None else OSError(code, os.strerror(code))
    line = errors.describe(exc)
    assert line and not line.startswith(";") and errors._OS_HINTS[code] in line
    assert (strerror or os.strerror(code)) in line


def test_a_failure_record_cut_short_is_no_message(tmp_path: Path) -> None:
    from regionbench.pipeline import jobs

    folder = tmp_path / jobs.FAILURES
    folder.mkdir(parents=True)
    (folder / "0.txt").write_text("")  # what a full disk leaves
    (folder / "1.txt").write_text("ingest: 00/labels.txt: a folder, not a file\n")
    assert jobs.failures(tmp_path) == ["ingest: 00/labels.txt: a folder, not a file"]


def _not_a_file(kind: str, where: Path) -> Path:
    """A path where a file is expected that is none: missing, a folder, a device, a FIFO."""
    import os

    if kind == "device":
        return Path("/dev/null")
    path = where / "thing"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["missing", "folder", "device", "fifo"])
def test_a_path_that_is_no_file_is_named_for_what_it_is(tmp_path: Path, kind: str) -> None:
    """Every reader of a file given by path (config, predictions, manifest) says what the path
    is, in one line, never "not found" for a folder that exists nor a hang on a FIFO."""
    import json

    from regionbench.pipeline import config
    from regionbench.release import read_manifest
    from regionbench.scoring.results import read_text
    from regionbench.scoring.tasks import TaskError

    said = {
        "missing": "no such file",
        "folder": "a folder, not",
        "device": "not a regular file",
        "fifo": "not a regular file",
    }[kind]
    path = _not_a_file(kind, tmp_path)
    (tmp_path / "project" / "config").mkdir(parents=True)
    (tmp_path / "project" / "config" / "config.yaml").write_text(json.dumps({"dataset": "x"}))
    with pytest.raises(config.ConfigError, match=f"{path}: {said}") as refused:
        config.load_layers(tmp_path / "project", [path])
    assert "a config file" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(TaskError, match=said):
        read_text(path)
    if kind != "missing":
        release = tmp_path / "release"
        release.mkdir()
        manifest = release / "manifest.json"
        if kind == "folder":
            manifest.mkdir()
        elif kind == "fifo":
            import os

            os.mkfifo(manifest)
        else:
            manifest.symlink_to("/dev/null")
        with pytest.raises(ReleaseError, match=f"manifest.json: {said}") as refused:
            read_manifest(release)
        assert "the manifest file" in str(refused.value)


def test_a_job_reports_its_own_peak_not_its_parent_s() -> None:
    """A job started by a large parent (Snakemake), through a shell that execs Python, counts its
    own memory: the kernel's ``ru_maxrss`` keeps the parent's peak across vfork and exec, the
    job's high-water mark does not."""
    import subprocess
    import sys

    held = bytearray(400 * 1024 * 1024)  # this process: the large parent
    held[::4096] = b"x" * len(held[::4096])  # resident, page by page
    said = subprocess.run(
        [sys.executable, "-c", "from regionbench.pipeline.jobs import own_peak_kib; print(own_peak_kib())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert int(said.stdout) < 300 * 1024  # KiB: the interpreter and the package, not the parent's 400 MiB
    del held


@given(
    st.sampled_from(
        ["scipy", "scipy.optimize", "sklearn", "snakemake", "numba", "matplotlib.pyplot", "dvc.repo", "SimpleITK"]
    )
)
def test_a_package_of_an_install_extra_that_is_missing_names_the_extra(name: str) -> None:
    """The client install lacks the build extra's packages: a command that needs one says which
    install brings it, in one line, never a traceback; a missing module of the library itself
    stays a bug."""
    said = errors.describe(ModuleNotFoundError(f"No module named {name!r}", name=name))
    extra = "dvc" if name.startswith("dvc") else "build"
    assert said == f"this needs {name.split('.')[0]}, which this install lacks: pip install 'regionbench[{extra}]'"
    assert errors.describe(ModuleNotFoundError("x", name="regionbench.nothing")) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(_JSON, st.text(max_size=3), st.integers(), st.integers())
def test_a_key_given_twice_is_refused_and_other_json_read_as_json_reads_it(
    value: object, key: str, first: int, second: int
) -> None:
    import json

    text = json.dumps(value)
    assert errors.parse_json(text) == json.loads(text)
    twice = "{" + f"{json.dumps(key)}: {first}, {json.dumps(key)}: {second}" + "}"
    nested = json.dumps({"outer": [0]}).replace("[0]", f"[{twice}]")
    for document in (twice, nested):
        with pytest.raises(ValueError, match="is given twice in one object") as raised:
            errors.parse_json(document)
        assert "\n" not in str(raised.value)


def test_json_nested_beyond_the_parser_is_one_line() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        errors.parse_json("[" * 200_000 + "]" * 200_000)
