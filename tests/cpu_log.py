"""Each test's CPU, for ``benchmarks/test_suite.py``: with ``REGIONBENCH_CPU_LOG=FOLDER`` set,
every pytest process (each xdist worker) appends one JSON line a test to a file of its own in
FOLDER: the test's id and the user + system seconds of the process and of every child it waited
for (a Snakemake build and its jobs, a CLI subprocess) from its setup to its teardown. A session
fixture counts against the first test that asked for it."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    folder = os.environ.get("REGIONBENCH_CPU_LOG")
    if not folder:
        return (yield)
    start = _cpu()
    try:
        return (yield)
    finally:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with (Path(folder) / f"{worker}.jsonl").open("a") as log:
            log.write(json.dumps({"test": item.nodeid, "cpu_s": round(_cpu() - start, 3)}) + "\n")
