"""The build's driver (``pipeline.driver.run``) under any interrupt: whatever signal (SIGINT,
SIGTERM, SIGHUP), sent to the build's process group or to the build alone, and whether the build
started with SIGINT ignored (a background job of a shell without job control), the command it
runs (Snakemake's place) gets SIGINT, the build raises KeyboardInterrupt once the command has
stopped, and nothing the command says after the signal reaches the build's output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Snakemake's stand-in: talks on stderr until a signal stops it (it takes SIGTERM and SIGHUP as
# its own stops too, as Snakemake does when they reach its group; one it was started ignoring
# it ignores, as Python does), notes each it got, talks on (a job's traceback) and stops.
COMMAND = """
import signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
def stop(signum, frame):
    with open(out, "a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    for _ in range(5):
        sys.stderr.write("Traceback: interrupted job\\n"); sys.stderr.flush(); time.sleep(0.02)
    sys.exit(130)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    if signal.getsignal(s) is not signal.SIG_IGN:  # as Python leaves an ignored SIGINT ignored
        signal.signal(s, stop)
Path(sys.argv[2]).write_text("ready")
while True:
    sys.stderr.write("[ 1/9] working\\n"); sys.stderr.flush(); time.sleep(0.02)
"""

# The build's stand-in: regionbench build's call of the driver, and its one line.
BUILD = """
import sys
from regionbench.pipeline import driver
try:
    driver.run([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], sys.stderr, False)
except KeyboardInterrupt:
    sys.stderr.write("regionbench: interrupted\\n")
    sys.exit(130)
"""


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sent=st.sampled_from([signal.SIGINT, signal.SIGTERM, signal.SIGHUP]),
    to_group=st.booleans(),
    ignoring=st.booleans(),
    after=st.floats(0.0, 0.3),
)
def test_any_interrupt_stops_the_command_and_silences_it(
    tmp_path_factory, sent: signal.Signals, to_group: bool, ignoring: bool, after: float
) -> None:
    folder = tmp_path_factory.mktemp("driver")
    got, ready = folder / "got", folder / "ready"

    def start() -> None:
        if ignoring:  # as a shell without job control starts a background job
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    build = subprocess.Popen(
        [sys.executable, "-c", BUILD, COMMAND, str(got), str(ready)],
        stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=start,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), "the command never started"
    time.sleep(after)
    (os.killpg if to_group else os.kill)(build.pid, sent)
    _, err = build.communicate(timeout=30)
    assert build.returncode == 130, err
    assert "SIGINT" in got.read_text().split()  # the command's Ctrl-C, whatever reached the build
    lines = err.strip().splitlines()
    assert lines[-1] == "regionbench: interrupted" and not any("Traceback" in line for line in lines), err
    assert all(line == "[ 1/9] working" for line in lines[:-1]), err
