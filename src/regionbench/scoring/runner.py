"""The one runner of every mask task's scoring: a measure takes the scored images a batch at a
time and computes its figures at the end, as mmsegmentation's ``BaseMetric`` does
(``process(batch)`` then ``compute()``); the runner owns what lies around that: the batches,
the worker processes, memory given back between batches, and what is spilled to disk.

- ``Measure``: ``process(batch)`` returns the batch's part (in a worker: it may not change the
  measure), ``add(part)`` takes the parts in batch order (in this process: a figure never
  depends on the workers), ``compute()`` the figures.
- ``stream(measure, batches, cores)``: the parts made on ``cores`` forked workers (they inherit
  what the measure holds, nothing is sent but a batch's number) and added in order.
- ``scattered(folder, job, jobs)``: the same run scored as ``jobs`` jobs (processes, maybe on
  other machines, sharing ``folder``), in rounds. In a round, each job scores the run: a stream
  whose parts every job has left is read back and added, the first that lacks some makes and
  writes the job's share of its batches and ends the round (``Waiting``). The gathering then
  scores the run from the parts alone, or waits for another round. Parts are added in batch
  order, so the figures are the one process's to the bit (``client.scattering`` runs the rounds
  through Snakemake).
- ``Shelf``: items held by batch in memory up to a count, the rest spilled to a temporary
  folder (a run's detections, read before any batch is scored); ``Spilled``: the instance
  measure's evaluated batches on disk, read back one category at a time.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import multiprocessing
import os
import pickle
import shutil
import tempfile
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

import numpy as np
import pandas as pd

from regionbench.core.allocator import give_back
from regionbench.core.forked import WorkerDied, may_fork
from regionbench.scoring.measures.average_precision import Evaluated
from regionbench.scoring.measures.kept_detections import Kept, image_offsets, run_instances

P = TypeVar("P")
B = TypeVar("B")
Taken = TypeVar("Taken", contravariant=True)  # a batch, as a measure takes it

BATCH = 64  # images whose maps a mask measure holds at a time
WORKER_BATCHES = 8  # batches a worker processes before a fresh one takes over


class Measure(Protocol[Taken, P]):
    """A measure streamed over batches (module docstring)."""

    def process(self, batch: Taken) -> P:
        """The part of ``batch`` (a worker may make it: the measure is left as it was)."""

    def add(self, part: P) -> None:
        """The next batch's part, in batch order."""

    def compute(self) -> dict[str, Any]:
        """The figures over every batch added."""


def image_batches(images: pd.DataFrame, size: int | None = None) -> list[pd.DataFrame]:
    """``images`` (rows of the images table, in id order) ``size`` (``BATCH``) rows at a time."""
    size = size or BATCH
    return [images.iloc[start : start + size] for start in range(0, len(images), size)]


def batches(images: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """``image_batches`` one at a time, memory given back between them: a loop over the images
    that is not a measure's (a human ceiling's)."""
    for batch in image_batches(images):
        yield batch
        give_back()


def gather(total: Any, part: Any) -> None:
    """Adds ``part`` to ``total``, two dataclasses of one kind, field by field: a list is extended;
    a dict's lists are extended and its other values (counts, arrays) added, key by key. Parts
    gathered in batch order give the same floats whatever the batches were."""
    for field in dataclasses.fields(part):
        mine, theirs = getattr(total, field.name), getattr(part, field.name)
        if isinstance(theirs, list):
            mine.extend(theirs)
            continue
        for key, value in theirs.items():
            if isinstance(value, list):
                mine.setdefault(key, []).extend(value)
            else:
                mine[key] = mine[key] + value if key in mine else value


def stream(measure: Measure[B, P], batches: Sequence[B], cores: int = 1, forked: bool = False) -> dict[str, Any]:
    """``measure`` over ``batches``: each batch's part (``parts``), added in order; its figures.
    Under ``scattered``: the parts every job left, when they are all there; else ``Waiting``,
    once this job's share is made and written."""
    if _PLACE is None:
        made: Iterator[P] = parts(measure.process, batches, cores, forked)
    else:
        made = _PLACE.parts(measure, batches, cores, forked)
    for part in made:
        measure.add(part)
    return measure.compute()


class ScatterError(RuntimeError):
    """The jobs' parts in a folder do not make up the run (a job missing, or of another run)."""


class Waiting(BaseException):
    """A scattered run's ``stream`` number ``stream`` lacks some job's parts: this job has made
    and written its own; the figures wait for the next round. Not an error (no ``except
    Exception`` takes it): it ends a job's round."""

    def __init__(self, stream: int) -> None:
        super().__init__(f"stream {stream}: waiting for the jobs' parts")
        self.stream = stream


@dataclasses.dataclass
class Place:
    """Where a scattered run's parts are: ``folder``, shared by the ``jobs`` jobs; ``job``: this
    process's (None: the gathering). ``streams`` counts the run's streams so far: every job runs
    the same scoring, so the n-th stream of each is the same measure over the same batches."""

    folder: Path
    job: int | None
    jobs: int
    streams: int = 0

    def share(self, batches: Sequence[B]) -> Sequence[B]:
        """This job's batches: the ``job``-th of ``jobs`` runs of consecutive batches, as even as
        they go (a job beyond the batches has none)."""
        assert self.job is not None
        lo, hi = (len(batches) * self.job) // self.jobs, (len(batches) * (self.job + 1)) // self.jobs
        return batches[lo:hi]

    def _file(self, stream: int, job: int) -> Path:
        return self.folder / f"stream-{stream}.job-{job}.pickle"

    def parts(self, measure: Measure[B, P], batches: Sequence[B], cores: int, forked: bool) -> Iterator[P]:
        """The next stream's parts, every job's in batch order, when each job has left its own;
        else ``Waiting``, after this job's own are made and written (a gathering makes none)."""
        stream = self.streams
        self.streams += 1
        if all(self._file(stream, job).is_file() for job in range(self.jobs)):
            return self._read(stream, len(batches))
        if self.job is not None:
            self._write(stream, len(batches), parts(measure.process, self.share(batches), cores, forked))
        raise Waiting(stream)

    def _write(self, stream: int, count: int, made: Iterator[Any]) -> None:
        """This job's parts ``made`` of a stream of ``count`` batches, whole or not at all."""
        assert self.job is not None
        path = self._file(stream, self.job)
        with path.with_suffix(".partial").open("wb") as f:
            pickle.dump((count, self.job, self.jobs), f, protocol=pickle.HIGHEST_PROTOCOL)
            for part in made:
                pickle.dump(part, f, protocol=pickle.HIGHEST_PROTOCOL)
        path.with_suffix(".partial").rename(path)  # a job cut short leaves no file

    def _read(self, stream: int, count: int) -> Iterator[Any]:
        """Every job's parts of a stream of ``count`` batches, job by job: batch order."""
        for job in range(self.jobs):
            path = self._file(stream, job)
            with path.open("rb") as f:
                if (found := pickle.load(f)) != (count, job, self.jobs):
                    raise ScatterError(f"{path}: parts of another run ({found}, not {(count, job, self.jobs)})")
                with contextlib.suppress(EOFError):
                    while True:
                        yield pickle.load(f)


_PLACE: Place | None = None  # set by scattered


@contextlib.contextmanager
def scattered(folder: Path, job: int | None, jobs: int) -> Iterator[Place]:
    """Every ``stream`` within: job ``job`` of ``jobs`` (None: the gathering) of a run whose
    parts are in ``folder``. A round of the jobs, then the gathering, takes a run one stream
    further; the gathering's ``Waiting`` says another round is needed."""
    global _PLACE
    if jobs < 1 or not (job is None or 0 <= job < jobs):
        raise ValueError(f"job {job} of {jobs}: a job is 0 to jobs - 1")
    _PLACE = Place(folder, job, jobs)
    try:
        yield _PLACE
    finally:
        _PLACE = None


_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # what a forked worker runs (inherited)
_TAKEN: Any = None  # shared memory, inherited: batch k -> the pid of the worker that took it
WAIT = 1.0  # seconds between looks at whether the worker of the batch awaited is still alive


def _part(k: int) -> Any:
    assert _WORK is not None
    _TAKEN[k] = os.getpid()
    process, batches = _WORK
    found = process(batches[k])
    give_back()
    return found


def _awaited(result: Any, k: int) -> Any:
    """Batch ``k``'s part: ``result.get()``, unless the worker that took the batch has died
    (killed by the system, out of memory most often): a pool replaces a dead worker and never
    answers its batch, so that is ``WorkerDied``, one line, not a wait for ever."""
    while True:
        try:
            return result.get(timeout=WAIT)
        except multiprocessing.TimeoutError:
            if (pid := _TAKEN[k]) and not _alive(pid):
                raise WorkerDied(
                    "a scoring worker process died without its part (killed by the system: out of memory?); "
                    "give the run more memory, or fewer --cores so that fewer workers run at once"
                ) from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def parts(process: Callable[[B], P], batches: Sequence[B], cores: int = 1, forked: bool = False) -> Iterator[P]:
    """``process`` of each batch, in order: here for one core or one batch (unless ``forked``),
    else on ``cores`` worker processes forked from this one. A worker is replaced after
    ``WORKER_BATCHES`` batches: memory an engine freed comes back to the system only when its
    process ends (one process grew 300 MiB over 80 ranges of detections: ``forked`` keeps such an
    engine out of this process on one core too). Memory is given back after each batch."""
    global _WORK, _TAKEN
    forking = may_fork()
    if not forking or not batches or (not forked and (cores <= 1 or len(batches) <= 1)):
        for batch in batches:
            found = process(batch)
            give_back()
            yield found
        return
    context = multiprocessing.get_context("fork")
    _WORK, _TAKEN = (process, batches), context.RawArray("q", len(batches))
    try:
        with context.Pool(min(cores, len(batches)), maxtasksperchild=WORKER_BATCHES) as pool:
            pending: deque[tuple[Any, int]] = deque()
            for k in range(len(batches)):
                pending.append((pool.apply_async(_part, (k,)), k))
                while len(pending) > 2 * cores:
                    yield _awaited(*pending.popleft())
            while pending:
                yield _awaited(*pending.popleft())
    finally:
        _WORK = _TAKEN = None


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused: a run's detections are a million small objects
    that hold no cycles, and each collection would walk them all (a third of the time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


HELD = 25_000  # items a Shelf holds in memory; more are spilled to disk


class Shelf(Generic[B]):
    """Items by batch number, held in memory up to ``HELD`` items, then spilled to files of a
    temporary folder (``folder``; removed on exit): whatever order they come in, memory is
    bounded."""

    def __init__(self, prefix: str = "regionbench-") -> None:
        self.count = 0
        self.memory: dict[int, list[B]] = defaultdict(list)
        self.in_memory = 0
        self.folder = Path(tempfile.mkdtemp(prefix=prefix))
        self.spilled: set[int] = set()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def put(self, k: int, item: B) -> None:
        """``item`` of batch ``k``."""
        self.memory[k].append(item)
        self.count += 1
        self.in_memory += 1
        if self.in_memory >= HELD:
            self.spill()

    def spill(self) -> None:
        for k, items in self.memory.items():
            with (self.folder / f"{k}.pickle").open("ab") as f:
                pickle.dump(items, f, protocol=pickle.HIGHEST_PROTOCOL)
            self.spilled.add(k)
        self.memory.clear()
        self.in_memory = 0

    def items(self, k: int) -> list[B]:
        """Batch ``k``'s items, in the order they were put."""
        items: list[B] = []
        if k in self.spilled:
            with (self.folder / f"{k}.pickle").open("rb") as f, contextlib.suppress(EOFError):
                while True:
                    items += pickle.load(f)
        return items + self.memory.get(k, [])


class Spilled:
    """The instance measure's evaluated batches (``client.instances.Evaluated``) written to
    files of ``folder`` as they come, one per batch, and read back one category at a time:
    memory holds the instance counts, not the run's 30 bytes a detection."""

    def __init__(self, folder: Path, categories: int, areas: int) -> None:
        self.folder, self.areas = folder, areas
        self.instances = np.zeros((categories, areas), dtype=np.int64)
        self.index: list[np.ndarray] = []  # per batch: detections per category
        self.part_instances: list[np.ndarray] = []  # per batch: its instances (category x area range)
        self.image_counts: list[int] = []  # per batch: its images
        self.part_image_instances: list[np.ndarray] = []  # per batch: (image, category, instances) rows
        self.chosen: list[int] | None = None  # the batches read (None: all)

    def only(self, chosen: list[int]) -> Spilled:
        """The same evaluation restricted to the batches ``chosen`` (a source split's)."""
        view = copy.copy(self)
        view.chosen = chosen
        view.instances = np.sum([self.part_instances[r] for r in chosen], axis=0)
        return view

    @property
    def batches(self) -> list[int]:
        return self.chosen if self.chosen is not None else list(range(len(self.index)))

    @property
    def offsets(self) -> np.ndarray:
        """Where each batch read starts among the images read."""
        return image_offsets([self.image_counts[r] for r in self.batches])

    @property
    def image_count(self) -> int:
        return sum(self.image_counts[r] for r in self.batches)

    @property
    def image_instances(self) -> np.ndarray:
        return run_instances([self.part_image_instances[r] for r in self.batches], list(self.offsets))

    def add(self, part: Evaluated) -> None:
        """The next batch's evaluation (in image order)."""
        self.instances += part.instances
        self.part_instances.append(part.instances)
        self.image_counts.append(part.image_count)
        self.part_image_instances.append(part.image_instances)
        counts = np.zeros(len(self.instances), dtype=np.int64)  # arrays, not small objects: the
        with (self.folder / f"part-{len(self.index)}.bin").open("wb") as f:  # parent's heap stays compact
            for k in sorted(part.scores):
                for values in (part.scores[k], part.ranks[k], part.hits[k], part.ignored[k], part.image[k]):
                    f.write(np.ascontiguousarray(values).tobytes())
                counts[k] = len(part.scores[k])
        self.index.append(counts)

    def kept(self, k: int) -> Kept | None:
        """Category ``k``'s detections over the batches, in order (None: it has none)."""
        pieces: list[Kept] = []
        width = 14 + 4 * self.areas  # bytes a detection: score, rank, hits and ignored per area range, image
        for r, offset_images in zip(self.batches, self.offsets, strict=True):
            counts = self.index[r]
            if n := int(counts[k]):
                offset = int(counts[:k].sum()) * width
                raw = np.fromfile(self.folder / f"part-{r}.bin", dtype=np.uint8, count=n * width, offset=offset)
                scores = raw[: 8 * n].view(np.float64)
                ranks = raw[8 * n : 10 * n].view(np.uint16)
                hits = raw[10 * n : (10 + 2 * self.areas) * n].view(np.uint16).reshape(self.areas, n)
                ignored = raw[(10 + 2 * self.areas) * n : (10 + 4 * self.areas) * n].view(np.uint16)
                image = raw[(10 + 4 * self.areas) * n :].view(np.uint32).astype(np.int64) + offset_images
                pieces.append(Kept(scores, ranks, hits, ignored.reshape(self.areas, n), image))
        return Kept.joined(pieces)
