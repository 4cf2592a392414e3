"""A light stage's script run in the Snakemake process (jobs.in_process): its log, its failures
and its neighbours' logs kept apart, as a script job's would be in its own interpreter."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from regionbench.pipeline import jobs


def run(tmp_path: Path, name: str, body: str) -> Path:
    """Run a script whose body is ``body`` as an in-process job; return its log."""
    script = tmp_path / f"{name}.py"
    script.write_text("from regionbench.pipeline.jobs import fail, log_to\n\nlog = log_to(snakemake.log[0])\n" + body)
    log = tmp_path / f"{name}.log"
    jobs.in_process(script, input=[], output=[str(tmp_path / f"{name}.out")], params={}, log=[str(log)], config={})
    return log


def test_a_job_logs_to_its_file_and_ends_with_its_resources(tmp_path: Path) -> None:
    log = run(tmp_path, "ok", "log.info('%d regions', 7)\nopen(snakemake.output[0], 'w').write('done')\n")
    lines = log.read_text().splitlines()
    assert lines[0] == "7 regions" and (tmp_path / "ok.out").read_text() == "done"
    assert re.fullmatch(r"peak memory \d+ MiB, CPU \d+\.\d s", lines[-1])
    assert jobs.logged_resources(log) is not None


def test_fail_ends_the_job_on_its_line_and_keeps_it_for_the_build(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # failures are kept relative to the project, where jobs run
    with pytest.raises(jobs.InProcessJobError, match=r"^subsets: no regions; check the annotator$"):
        run(tmp_path, "bad", "fail('subsets: no regions; check the annotator')\n")
    assert jobs.failures(tmp_path) == ["subsets: no regions; check the annotator"]
    assert not jobs.bug_reported(tmp_path)
    assert "subsets: no regions" in (tmp_path / "bad.log").read_text()


@pytest.mark.parametrize(
    ("body", "said", "bug"),
    [
        ("raise OSError(28, 'No space left on device', 'out.parquet')", "out.parquet: No space left on device", False),
        ("[][1]", "IndexError: list index out of range", True),
    ],
)
def test_an_error_is_the_machine_s_line_or_a_bug_with_its_traceback(
    tmp_path: Path, monkeypatch, body: str, said: str, bug: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(jobs.InProcessJobError):
        run(tmp_path, "err", body + "\n")
    (message,) = jobs.failures(tmp_path)
    assert message.startswith(said) and jobs.bug_reported(tmp_path) == bug
    assert ("Traceback" in (tmp_path / "err.log").read_text()) == bug


def test_jobs_at_once_keep_their_logs_apart(tmp_path: Path) -> None:
    """Two jobs in two threads, each logging while the other does: each log holds its own
    records only."""
    body = (
        "import time\nfor k in range(20):\n    log.info('%s %d', snakemake.params['name'], k)\n    time.sleep(0.002)\n"
    )
    scripts = {}
    for name in ("left", "right"):
        scripts[name] = tmp_path / f"{name}.py"
        scripts[name].write_text(
            "from regionbench.pipeline.jobs import log_to\n\nlog = log_to(snakemake.log[0])\n" + body
        )

    def job(name: str) -> None:
        log = [str(tmp_path / f"{name}.log")]
        jobs.in_process(scripts[name], input=[], output=[], params={"name": name}, log=log, config={})

    threads = [threading.Thread(target=job, args=(name,)) for name in scripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, other in (("left", "right"), ("right", "left")):
        text = (tmp_path / f"{name}.log").read_text()
        assert all(f"{name} {k}" in text for k in range(20))
        assert other not in text
