"""The compact account of a build (regionbench.pipeline.progress), fed events as the Snakemake plugin feeds them."""

import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.pipeline import progress
from regionbench.pipeline.progress import REFERENCE, BuildProgress, CostModel, clock


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The account's ETA as on a machine with nothing else running (the suite's own load aside)."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))


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


class Timed(io.StringIO):
    """A stream that notes the clock at each line it is given."""

    def __init__(self, now: Clock) -> None:
        super().__init__()
        self.now, self.times = now, []

    def write(self, text: str) -> int:
        self.times += [self.now.t] * text.count("\n")
        return super().write(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["start", "finish", "wait"]), st.floats(0, 200)), max_size=30))
def test_a_plain_log_never_goes_quiet_for_longer_than_quiet_while_jobs_run(events: list[tuple[str, float]]) -> None:
    """Jobs start and finish at any times, the ticker looks every second: while a job runs, no
    two lines of a plain log are more than ``QUIET`` (plus a tick) apart, and every line is plain."""
    from regionbench.pipeline import progress

    now = Clock()
    out = Timed(now)
    p = BuildProgress(out, live=False, now=now)
    for jobid in range(1, 31):
        p.job_info(jobid, "ingest")
    p.plan({"ingest": 30, "total": 30})
    next_job, quiet_since_running = 1, []
    for kind, seconds in events:
        if kind == "start" and next_job <= 30:
            p.started([next_job])
            next_job += 1
        elif kind == "finish" and p.running:
            p.finished(min(p.running))
        for _ in range(int(seconds)):  # time passes, a tick a second
            now.t += 1
            p.tick()
            if p.running:
                quiet_since_running.append(now.t - max([t for t in out.times if t <= now.t], default=p.start))
    p.close()
    assert all(gap <= progress.QUIET + progress.TICK for gap in quiet_since_running)
    assert all(ch == "\n" or ch.isprintable() for ch in out.getvalue())


def test_a_long_stage_says_what_still_runs() -> None:
    now = Clock()
    out = io.StringIO()
    p = BuildProgress(out, live=False, now=now)
    p.job_info(1, "ingest")
    p.plan({"ingest": 1, "total": 1})
    p.started([1])
    for _ in range(95):
        now.t += 1
        p.tick()
    assert out.getvalue().splitlines()[1:] == [
        "[0/1] 0:30 elapsed  still running: ingest",
        "[0/1] 1:00 elapsed  still running: ingest",
        "[0/1] 1:30 elapsed  still running: ingest",
    ]
    p.finished(1)
    now.t += 100
    p.tick()  # nothing runs: nothing to say
    assert out.getvalue().splitlines()[-1] == "[1/1] 1:35 elapsed  ingest (1 job)"


def test_the_ticker_thread_writes_while_no_event_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start_ticking`` on a real clock: a quiet plain log gets its line without any event;
    ``close`` stops the thread."""
    import time

    from regionbench.pipeline import progress

    monkeypatch.setattr(progress, "QUIET", 0.05)
    out = io.StringIO()
    p = BuildProgress(out, live=False)
    p.job_info(1, "ingest")
    p.plan({"ingest": 1, "total": 1})
    p.started([1])
    p.start_ticking(interval=0.01)
    deadline = time.monotonic() + 5
    while "still running: ingest" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    p.close()
    assert "still running: ingest" in out.getvalue()
    written = out.getvalue()
    time.sleep(0.1)
    assert out.getvalue() == written  # closed: the ticker has stopped


def test_the_total_is_a_lower_bound_until_the_checkpoints_ran() -> None:
    """A checkpoint (subsets) adds jobs as they are scheduled, after it has run (the
    classifiers): the total reads ``N+`` until the target, the last job, is scheduled."""
    out, now = io.StringIO(), Clock()
    p = BuildProgress(out, live=False, now=now, checkpoints=frozenset({"subsets"}))
    p.job_info(1, "ingest")
    p.job_info(2, "subsets")
    p.plan({"ingest": 1, "subsets": 1, "total": 2})
    for jobid in (1, 2):
        p.started([jobid])
        now.t += 10
        p.finished(jobid)
    p.job_info(3, "classify")  # scheduled once the checkpoint ran
    p.job_info(4, "classify")
    for jobid in (3, 4):
        p.started([jobid])
        now.t += 10
        p.finished(jobid)
    p.close()
    assert out.getvalue().splitlines() == [
        "running at least 2 jobs in 2 stages",
        "[1/2+] 0:10 elapsed, ETA 0:10  ingest (1 job)",
        "[2/2+] 0:20 elapsed  subsets (1 job)",
        "[4/4+] 0:40 elapsed  classify (2 jobs)",
    ]
    assert p.pending
    p.job_info(0, "all")
    assert not p.pending and p._count() == "4/4"


TIMINGS = {"demo": REFERENCE, "coco-1000": Path(__file__).parent / "data" / "timings" / "coco-1000.json"}
CHECKPOINTS = frozenset({"prepare", "subsets"})


def replay(name: str) -> list[tuple[float, float, float]]:
    """A recorded build (its jobs' stage, start and end, 2 cores) fed to a progress as its
    events, with the cost model of that build's benchmark files as the last build's; at each
    job's start and end, (time, ETA, time actually left)."""

    recorded = json.loads(TIMINGS[name].read_text())
    jobs = recorded["jobs"]
    with tempfile.TemporaryDirectory() as scratch:
        for k, (stage, start, end) in enumerate(jobs):  # the benchmark files, dated at their job's end
            path = Path(scratch, stage, f"{k}.tsv")  # each job its own name
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"s\tcpu_time\n{end - start}\t0\n")
            os.utime(path, (1e9 + end, 1e9 + end))
        model = CostModel.read(scratch, CHECKPOINTS)
    assert model is not None
    out, now = io.StringIO(), Clock()
    now.t = 0.0
    p = BuildProgress(out, live=False, now=now, checkpoints=CHECKPOINTS, model=model, cores=recorded["cores"])
    later = model.later
    first = [(k, s) for k, (s, _, _) in enumerate(jobs) if s not in later]
    for k, stage in first:
        p.job_info(k + 1, stage, str(k))
    plan = {}
    for _, stage in first:
        plan[stage] = plan.get(stage, 0) + 1
    p.plan({**plan, "total": len(first)})
    events = sorted(
        [(start, 0, k) for k, (_, start, _) in enumerate(jobs)] + [(end, 1, k) for k, (_, _, end) in enumerate(jobs)]
    )
    finish = max(end for _, _, end in jobs)
    seen = []
    for t, kind, k in events:
        now.t = t
        if kind == 0:
            p.job_info(k + 1, jobs[k][0], str(k))
            p.started([k + 1])
        else:
            p.finished(k + 1)
        if finish - t > 0 and (eta := p.eta()) is not None:
            seen.append((t, eta, finish - t))
    return seen


@pytest.mark.parametrize("name", ["demo", "coco-1000"])
def test_the_eta_from_the_last_build_s_costs_holds_within_half(name: str) -> None:
    """From 20 % of the build on, the ETA a model of the stages' earlier costs gives is within
    +-50 % of the time actually left (or within 10 s of it, near the end), at every job's start
    and end of a recorded build (make release's demo, a 1,000-image COCO build)."""
    seen = replay(name)
    finish = seen[-1][0] + seen[-1][2]
    late = [(t, eta, left) for t, eta, left in seen if t >= 0.2 * finish]
    assert late
    wrong = [(round(t), round(eta), round(left)) for t, eta, left in late if abs(eta - left) > max(0.5 * left, 10)]
    assert not wrong, wrong


def planned_as(name: str) -> tuple[dict[str, int], float]:
    """The stages and jobs a recorded build planned before its checkpoints ran, and its wall time."""
    jobs = json.loads(TIMINGS[name].read_text())["jobs"]
    later = CostModel.reference(CHECKPOINTS).later
    plan: dict[str, int] = {}
    for stage, _, _ in jobs:
        if stage not in later:
            plan[stage] = plan.get(stage, 0) + 1
    return plan, max(end for _, _, end in jobs) - min(start for _, start, _ in jobs)


def test_a_first_build_is_forecast_by_the_reference_build_before_its_first_job() -> None:
    """The plan's line is followed by what it will roughly cost: the reference build's own plan
    forecast within +-50 % of its wall time, the costliest stages named; a stage's work grows with
    its jobs (a collection twice the size: twice the ingest shards), and a stage the reference
    never ran is said, not guessed."""
    plan, wall = planned_as("demo")
    out = io.StringIO()
    p = BuildProgress(out, live=False, checkpoints=CHECKPOINTS, forecast=CostModel.reference(CHECKPOINTS), cores=2)
    p.plan({**plan, "total": sum(plan.values())})
    first, line = out.getvalue().splitlines()
    assert first.startswith("running at least")
    assert line.startswith("forecast by the reference build") and "classify" in line and "not forecast" not in line
    said = line.split("about ")[1].split(" on ")[0]
    minutes, seconds = said.split(":")
    assert 0.5 * wall <= 60 * int(minutes) + int(seconds) <= 1.5 * wall, (line, wall)
    bigger = BuildProgress(io.StringIO(), live=False, checkpoints=CHECKPOINTS, forecast=CostModel.reference())
    bigger.plan({**plan, "ingest": 2 * plan["ingest"], "a_new_stage": 1, "total": 0})
    assert bigger.stage_costs()["ingest"] == pytest.approx(2 * p.stage_costs()["ingest"])
    assert bigger.forecast(bigger.stage_costs()).endswith("; not forecast: a_new_stage")


def test_every_stage_of_the_workflow_is_forecast_and_timed() -> None:
    """Every rule the workflow has (its target aside) writes a benchmark file, which the next
    build's forecast reads, and the reference builds shipped with the package time it, so a
    first build's plan is forecast whole: agreement, a tree's own vocabulary and the reference
    methods included."""
    import re

    root = Path(__file__).resolve().parents[1]
    rules = {}
    for path in [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]:
        for block in re.split(r"\n(?=(?:rule|checkpoint) \w+:)", path.read_text()):
            if m := re.match(r"(?:rule|checkpoint) (\w+):", block):
                rules[m.group(1)] = block
    rules.pop("all")
    assert rules and [name for name, block in rules.items() if "benchmark:" not in block] == []
    assert sorted(set(rules) - set(CostModel.reference().seconds)) == []


def test_a_stage_the_workflow_cannot_add_is_not_forecast() -> None:
    """A collection whose config or layout wants no classifiers (the workflow says so as it
    plans): the checkpoint adds no classify jobs, so the forecast holds none and its wall time is
    the rest's; a workflow that says nothing has them forecast as the reference ran them."""
    plan, _ = planned_as("demo")
    forecasts = {}
    for never in (frozenset(), frozenset({"classify", "evaluate_classifiers"})):
        out = io.StringIO()
        p = BuildProgress(out, live=False, checkpoints=CHECKPOINTS, forecast=CostModel.reference(CHECKPOINTS), cores=2)
        progress.never_join(never)  # as the workflow says it while Snakemake parses it
        p.plan({**plan, "total": sum(plan.values())})
        line = out.getvalue().splitlines()[1]
        forecasts[bool(never)] = (line, p.stage_costs(), line.split("about ")[1].split(" on ")[0])
    assert "classify" in forecasts[False][0] and "classify" in forecasts[False][1]
    line, costs, wall = forecasts[True]
    assert "classify" not in line and "classify" not in costs and "evaluate_classifiers" not in costs
    assert set(forecasts[False][1]) - set(costs) == {"classify", "evaluate_classifiers"}
    assert wall < forecasts[False][2]  # m:ss of the same width: ordered as the times are
    progress.never_join(())


def test_a_dry_run_lists_each_stage_s_forecast_work() -> None:
    plan, _ = planned_as("demo")
    out = io.StringIO()
    p = BuildProgress(out, live=False, forecast=CostModel.reference())
    p.plan({**plan, "total": sum(plan.values())}, dry_run=True)
    lines = out.getvalue().splitlines()
    ingest = next(line for line in lines if line.split()[0] == "ingest")
    assert ingest.split()[1] == str(plan["ingest"]) and ingest.split()[2] == f"~{clock(p.stage_costs()['ingest'])}"
    assert lines[-1].startswith("forecast by the reference build")


def test_no_forecast_without_costs() -> None:
    out = io.StringIO()
    BuildProgress(out, live=False).plan({"ingest": 2, "total": 2})
    assert out.getvalue() == "running 2 jobs in 1 stages\n"


@given(st.floats(0, 64), st.integers(1, 16))
def test_a_busy_machine_gets_no_eta_but_the_reason(load: float, cores: int) -> None:
    """Where more processes want to run than the machine has cores (other work beside the build),
    the jobs' measured times would promise too early: the line says the machine is busy instead."""
    out, now = io.StringIO(), Clock()
    p = BuildProgress(out, live=False, now=now, load=lambda: load, machine_cores=cores)
    for jobid, rule in ((1, "ingest"), (2, "ingest"), (3, "release")):
        p.job_info(jobid, rule)
    p.plan({"ingest": 2, "release": 1, "total": 3})
    for jobid in (1, 2):
        p.started([jobid])
        now.t += 5
        p.finished(jobid)
    line = out.getvalue().splitlines()[-1]
    if load > progress.BUSY * cores:
        assert f"no ETA: the machine is busy (load {load:.1f} on {cores} cores)" in line and "ETA 0:" not in line
    else:
        assert "ETA 0:05" in line
