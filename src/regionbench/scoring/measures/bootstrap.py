"""How sure a score is: a percentile bootstrap over images, and the paired comparison of two runs
(docs/scoring.md, "Intervals").

Defined so that numpy alone reproduces it: the scored images sorted by the id the run names them
by, ``n`` of them; ``rng = numpy.random.default_rng(seed)``; resample ``b`` (``b`` in
``0..B-1``, in order) is the index array ``rng.integers(0, n, size=n)``: images drawn with
repetition, each counting as many times as it is drawn in every sum the measure makes. The 95 %
interval is ``numpy.percentile(values, [2.5, 97.5])`` (linear) of the measure over the ``B``
resamples. Two runs of the same images, seed and ``B`` see the same resamples, so their paired
difference on resample ``b`` is the difference of their values on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

METHOD = "percentile bootstrap over images"
RESAMPLES = 1000  # the default B
SEED = 0
LEVEL = 0.95
CHUNK = 64  # resamples whose multiplicities are held at once: memory B x n bounded


def draws(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Each resample's index array, in order: ``rng.integers(0, n, size=n)``."""
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        yield rng.integers(0, n, size=n)


def multiplicities(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The resamples as how many times each image is drawn, ``CHUNK`` resamples at a time: arrays
    of shape (k, n), row ``b`` the ``np.bincount`` of resample ``b``'s draws."""
    rows = []
    for drawn in draws(n, resamples, seed):
        rows.append(np.bincount(drawn, minlength=n))
        if len(rows) == CHUNK:
            yield np.stack(rows)
            rows = []
    if rows:
        yield np.stack(rows)


def additive(
    per_image: np.ndarray, figures: Callable[[np.ndarray], dict[str, np.ndarray]], resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """Each figure's value on every resample, for a measure made of per-image sums.

    ``per_image``: shape (n, ...), image ``i``'s counts in the run's image order; ``figures``
    maps summed counts of shape (k, ...) (k resamples at once) to each figure's k values. Returns
    each figure's ``resamples`` values in resample order."""
    flat = per_image.reshape(len(per_image), -1).astype(np.float64)
    found: dict[str, list[np.ndarray]] = {}
    for counts in multiplicities(len(per_image), resamples, seed):
        sums = (counts.astype(np.float64) @ flat).reshape(len(counts), *per_image.shape[1:])
        for name, values in figures(sums).items():
            found.setdefault(name, []).append(np.asarray(values, dtype=np.float64))
    return {name: np.concatenate(parts) for name, parts in found.items()}


def summed_by(counts: np.ndarray, image: np.ndarray, column: np.ndarray, columns: int) -> np.ndarray:
    """Per resample (a row of ``counts``: how many times each image is drawn), the draws of the
    images of items summed by the items' ``column`` (item ``j`` is of image ``image[j]``):
    shape (rows, ``columns``). One ``np.bincount`` over every row's items: a sparse product
    without a sparse matrix."""
    rows = len(counts)
    index = (np.arange(rows, dtype=np.int64)[:, None] * columns + column[None, :]).ravel()
    found = np.bincount(index, weights=counts[:, image].ravel(), minlength=rows * columns)
    return found.reshape(rows, columns).astype(np.int64)


def averaged(each: Sequence[Mapping[str, Sequence[float | None] | np.ndarray]]) -> dict[str, np.ndarray]:
    """Several truths' resampled figures (each: name -> its values, resample by resample, the same
    resamples) averaged resample by resample, as a headline over annotators averages them; a
    resample where one is undefined (None, NaN) is undefined."""
    return {name: np.mean([np.array(e[name], dtype=np.float64) for e in each], axis=0) for name in each[0]}


def interval(values: np.ndarray, resamples: int, seed: int, level: float = LEVEL) -> dict[str, Any]:
    """The percentile interval of a measure's resampled ``values``, with how it was made. A
    resample on which the measure is undefined (NaN: PQ of things when it drew no thing) is left
    out and counted (``undefined``); none defined: no bounds (None)."""
    tail = 100 * (1 - level) / 2
    given = np.asarray(values, dtype=np.float64)
    defined = given[~np.isnan(given)]
    low, high = np.percentile(defined, [tail, 100 - tail]) if len(defined) else (None, None)
    found = {"low": None if low is None else float(low), "high": None if high is None else float(high),
             "level": level, "resamples": resamples, "seed": seed, "method": METHOD}  # fmt: skip
    return found | ({"undefined": len(given) - len(defined)} if len(defined) < len(given) else {})


def paired(a: np.ndarray, b: np.ndarray, observed: float, level: float = LEVEL) -> dict[str, Any]:
    """B - A on the same resamples: the difference's percentile interval and its two-sided
    p-value, ``(1 + #{resamples whose difference has the sign opposite to the observed, or is 0})
    / (1 + B)`` (with the observed difference 0, every resample counts: p = 1)."""
    as_array = lambda v: np.array([np.nan if x is None else x for x in v], dtype=np.float64)  # noqa: E731
    difference = as_array(b) - as_array(a)
    difference = difference[~np.isnan(difference)]  # a resample where either is undefined
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(difference, [tail, 100 - tail])
    against = np.count_nonzero(difference * np.sign(observed) <= 0)  # observed 0: every one
    return {"difference": observed, "low": float(low), "high": float(high), "level": level,
            "p": (1 + int(against)) / (1 + len(difference))}  # fmt: skip


def report(values: dict[str, np.ndarray], keys: Sequence[str], resamples: int, seed: int) -> dict[str, Any]:
    """What a report keeps of a bootstrap: each measure's ``intervals`` and the ``resampled``
    values themselves, with what pairs two runs' resamples: the images' keys in the order drawn
    from (their count and sha256), the seed and the number of resamples."""
    text = "\n".join(keys).encode()
    return {
        "intervals": {name: interval(v, resamples, seed) for name, v in values.items()},
        "resampled": {
            "images": len(keys),
            "images_sha256": hashlib.sha256(text).hexdigest(),
            "resamples": resamples,
            "seed": seed,
            "values": {name: [None if np.isnan(x) else float(x) for x in v] for name, v in values.items()},
        },
    }
