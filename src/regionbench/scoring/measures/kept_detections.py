"""A run's kept detections as the engine evaluated them range by range, read one category at a
time: what COCOeval's ``accumulate`` (``average_precision.accumulate``) and the bootstrap over
images (``resampled_ap``) read, whether the ranges are held in memory or spilled to files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np


class EvaluatedRange(Protocol):
    """What the engine found on a range of images, as read here (``average_precision.Evaluated``)."""

    scores: dict[int, np.ndarray]
    ranks: dict[int, np.ndarray]
    hits: dict[int, np.ndarray]
    ignored: dict[int, np.ndarray]
    image: dict[int, np.ndarray]
    instances: np.ndarray
    image_count: int
    image_instances: np.ndarray


class Kept(NamedTuple):
    """One category's detections over a run's ranges, in image order (``Evaluated``'s arrays
    laid end to end): scores, ranks, hits and ignored (area range x detection), and each one's
    image (its index among the run's images, id order)."""

    scores: np.ndarray
    ranks: np.ndarray
    hits: np.ndarray
    ignored: np.ndarray
    image: np.ndarray

    @classmethod
    def joined(cls, pieces: Sequence[Kept]) -> Kept | None:
        """``pieces`` (one a range, in image order) laid end to end; None without any."""
        if not pieces:
            return None
        return cls(
            np.concatenate([p.scores for p in pieces]),
            np.concatenate([p.ranks for p in pieces]),
            np.concatenate([p.hits for p in pieces], axis=1),
            np.concatenate([p.ignored for p in pieces], axis=1),
            np.concatenate([p.image for p in pieces]),
        )


class Accumulated(Protocol):
    """A run's evaluated ranges as ``accumulate`` reads them: ``instances`` (category x area
    range, summed over the ranges) and ``kept(k)``, category index ``k``'s detections (``None``:
    none); for the bootstrap, ``image_count`` (the run's images) and ``image_instances`` (rows
    image index, category index, instances over all areas, image indices over the run)."""

    instances: np.ndarray

    @property
    def image_count(self) -> int: ...

    @property
    def image_instances(self) -> np.ndarray: ...

    def kept(self, k: int) -> Kept | None: ...


def image_offsets(counts: Sequence[int]) -> np.ndarray:
    """Where each range's images start among the run's (ranges in image order)."""
    return np.cumsum([0, *counts])[:-1].astype(np.int64)


def run_instances(parts: Sequence[np.ndarray], offsets: Sequence[int] | np.ndarray) -> np.ndarray:
    """The ranges' ``image_instances`` rows with their image indices made the run's."""
    rows = [p + np.array([o, 0, 0], dtype=np.int64) for p, o in zip(parts, offsets, strict=True)]
    return np.concatenate(rows) if rows else np.zeros((0, 3), dtype=np.int64)


class InMemory:
    """``Accumulated`` of ranges held in memory (``parts``, in image order)."""

    def __init__(self, parts: Sequence[EvaluatedRange], categories: int, areas: int) -> None:
        self.parts = parts
        self.instances = np.sum([p.instances for p in parts], axis=0) if parts else np.zeros((categories, areas))
        self.offsets = image_offsets([p.image_count for p in parts])
        self.count = sum(p.image_count for p in parts)
        self.rows = run_instances([p.image_instances for p in parts], self.offsets)

    @property
    def image_count(self) -> int:
        return self.count

    @property
    def image_instances(self) -> np.ndarray:
        return self.rows

    def kept(self, k: int) -> Kept | None:
        return Kept.joined(
            [
                Kept(p.scores[k], p.ranks[k], p.hits[k], p.ignored[k], p.image[k].astype(np.int64) + o)
                for p, o in zip(self.parts, self.offsets, strict=True)
                if k in p.scores
            ]
        )
