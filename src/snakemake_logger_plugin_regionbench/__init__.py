"""Snakemake logger plugin ``regionbench`` (``snakemake --logger regionbench``): the compact
account of a build that ``regionbench build`` shows by default (regionbench.pipeline.progress).

Snakemake finds logger plugins by this module name; the plugin only routes the workflow's
events to ``regionbench.pipeline.progress.BuildProgress``.
"""

from __future__ import annotations

import os
import sys
from logging import WARNING, LogRecord

from snakemake.common import NOTHING_TO_BE_DONE_MSG
from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent


class LogHandler(LogHandlerBase):
    """Routes Snakemake's log records to a ``BuildProgress`` on standard error."""

    def __post_init__(self) -> None:
        # Imported here, not above: Snakemake imports every logger plugin it finds before any
        # run, so this module must import cleanly even beside another copy of regionbench.
        from regionbench.pipeline import driver
        from regionbench.pipeline.progress import BuildProgress, CostModel

        stream = sys.stdout if self.common_settings.stdout else sys.stderr
        # Under ``regionbench build`` standard error is a pipe to it: it says whether a terminal is behind.
        said = os.environ.get("REGIONBENCH_LIVE")
        live = said == "1" if said is not None else driver.live(stream)
        # The workflow's checkpoints, as ``regionbench build`` read them from the Snakefile.
        checkpoints = frozenset(filter(None, os.environ.get("REGIONBENCH_CHECKPOINTS", "").split(",")))
        # What this dataset's jobs took in the project's last build here: the ETA's costs.
        history = os.environ.get("REGIONBENCH_HISTORY")
        model = CostModel.read(history, checkpoints) if history else None
        # A first build is forecast by the reference build's costs (its ETA stays the naive one).
        forecast = model or CostModel.reference(checkpoints)
        cores = int(os.environ.get("REGIONBENCH_CORES") or os.cpu_count() or 1)
        self.progress = BuildProgress(
            stream, live=live, checkpoints=checkpoints, model=model, cores=cores, forecast=forecast
        )
        self.progress.start_ticking()  # a live clock on a terminal, a line every 30 s in a quiet log

    def emit(self, record: LogRecord) -> None:
        event = getattr(record, "event", None)
        fields = vars(record)  # Snakemake sets each event's fields as attributes of the record
        p = self.progress
        if event == LogEvent.RUN_INFO:
            p.plan(fields["stats"], dry_run=bool(self.common_settings.dryrun))
        elif event == LogEvent.JOB_INFO:
            wildcards = fields.get("wildcards") or {}
            p.job_info(fields["jobid"], fields["rule_name"], "-".join(map(str, wildcards.values())) or None)
        elif event == LogEvent.JOB_STARTED:
            p.started(list(fields["jobs"]))
        elif event == LogEvent.JOB_FINISHED:
            p.finished(fields["job_id"])
        elif event == LogEvent.JOB_ERROR:
            p.failed(fields["rule_name"], [str(f) for f in fields["log"] or []])
        elif record.levelno >= WARNING and event in (None, LogEvent.ERROR):
            p.message(self.format(record))
        elif record.msg == NOTHING_TO_BE_DONE_MSG:
            p.message(NOTHING_TO_BE_DONE_MSG)

    def close(self) -> None:
        self.progress.close()
        super().close()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True  # every event is wanted: the filter is emit's own

    @property
    def has_formatter(self) -> bool:
        return False  # warnings and errors are formatted as Snakemake formats them

    @property
    def needs_rulegraph(self) -> bool:
        return False
