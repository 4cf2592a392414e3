"""The compact account of a build (regionbench.pipeline.progress), fed events as the Snakemake plugin feeds them."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.pipeline.progress import BuildProgress, clock


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def run(live: bool, order: list[int]) -> tuple[str, BuildProgress]:
    """Three ingest jobs, one release job and the target, finished in ``order`` (job ids 1-4)."""
    out, now = io.StringIO(), Clock()
    p = BuildProgress(out, live=live, now=now)
    for jobid, rule in ((1, "ingest"), (2, "ingest"), (3, "ingest"), (4, "release"), (0, "all")):
        p.job_info(jobid, rule)
    p.plan({"ingest": 3, "release": 1, "all": 1, "total": 5})
    for jobid in order:
        p.started([jobid])
        now.t += 10
        p.finished(jobid)
    p.finished(0)
    p.close()
    return out.getvalue(), p


def test_plain_output_is_a_line_a_stage() -> None:
    text, _ = run(live=False, order=[1, 2, 3, 4])
    assert text.splitlines() == [
        "running 4 jobs in 2 stages",
        "[3/4] 0:30 elapsed, ETA 0:10  ingest (3 jobs)",
        "[4/4] 0:40 elapsed  release (1 job)",
    ]


def test_a_terminal_gets_a_status_line_redrawn_in_place() -> None:
    text, _ = run(live=True, order=[1, 2, 3, 4])
    assert "\r\x1b[2K[1/4] 0:10 elapsed, ETA 0:30" in text
    assert "running: ingest" in text
    assert text.endswith("release (1 job)\n[4/4] 0:40 elapsed\r\x1b[2K")  # the status line is erased at the end
    assert max(len(line) for line in text.replace("\r", "\n").splitlines()) <= 80  # wider would wrap


@settings(max_examples=60, deadline=None)
@given(st.permutations([1, 2, 3, 4]))
def test_plain_output_has_no_control_character_in_any_order(order: list[int]) -> None:
    text, p = run(live=False, order=order)
    assert all(ch == "\n" or ch.isprintable() for ch in text)
    assert len(text.splitlines()) == 3 and p.finished_jobs == 4


def test_failures_and_warnings_are_lines() -> None:
    out = io.StringIO()
    p = BuildProgress(out, live=False)
    p.failed("ingest", ["logs/demo/ingest/00.log"])
    p.message("a warning\n")
    assert out.getvalue() == "failed: ingest: see logs/demo/ingest/00.log\na warning\n"


def test_clock() -> None:
    assert (clock(0), clock(61.4), clock(3725)) == ("0:00", "1:01", "1:02:05")
