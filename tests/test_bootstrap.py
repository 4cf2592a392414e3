"""The bootstrap interval is calibrated, not assumed: test sets drawn from a known population of
images (generated per-image counts), each scored with its 95 % interval as ``evaluate`` makes it,
cover the population's own figure in 92-98 % of the draws, for mIoU and for PQ."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from regionbench.scoring.measures import average_precision, bootstrap, kept_detections
from regionbench.scoring.tasks import panoptic, semantic

POPULATION, TEST_SET, DRAWS, RESAMPLES = 20_000, 300, 400, 200


def label_counts(rng: np.random.Generator, n: int, classes: int = 8) -> np.ndarray:
    """(n, 3, classes): each image's hit, true and predicted pixels of a few classes."""
    counts = np.zeros((n, 3, classes))
    for i in range(n):
        present = rng.choice(classes, size=3, replace=False)
        true = rng.integers(500, 20_000, size=3).astype(float)
        hit = np.floor(true * rng.beta(6, 2, size=3))
        counts[i, 0, present], counts[i, 1, present] = hit, true
        counts[i, 2, present] = hit + np.floor(rng.exponential(2_000, size=3))
    return counts


def tallies(rng: np.random.Generator, n: int, categories: int = 10) -> np.ndarray:
    """(n, categories, 4): each image's IoU sum, TP, FP and FN of a few categories."""
    out = np.zeros((n, categories, 4))
    for i in range(n):
        present = rng.choice(categories, size=4, replace=False)
        tp = rng.integers(0, 4, size=4)
        out[i, present, 1], out[i, present, 0] = tp, tp * rng.uniform(0.6, 0.95, size=4)
        out[i, present, 2], out[i, present, 3] = rng.poisson(0.6, size=4), rng.poisson(0.5, size=4)
    return out


def coverage(population: np.ndarray, figure: Callable[[np.ndarray], float], figures, name: str) -> float:
    """The share of test sets whose interval covers the population's figure."""
    truth = figure(population.sum(axis=0)[None])
    rng = np.random.default_rng(1)
    covered = 0
    for draw in range(DRAWS):
        test = population[rng.choice(len(population), size=TEST_SET, replace=False)]
        values = bootstrap.additive(test, figures, RESAMPLES, draw)[name]
        low, high = np.percentile(values, [2.5, 97.5])
        covered += low <= truth <= high
    return covered / DRAWS


@pytest.mark.parametrize("measure", ["miou", "all.pq"])
def test_the_95_percent_interval_covers_the_population_s_figure_95_percent_of_the_time(measure: str) -> None:
    rng = np.random.default_rng(0)
    if measure == "miou":
        population, figures = label_counts(rng, POPULATION), semantic.flat_figures
    else:
        things = np.arange(10) < 6
        population, figures = tallies(rng, POPULATION), lambda s: panoptic.summary_figures(s, things)
    share = coverage(population, lambda sums: float(figures(sums)[measure][0]), figures, measure)
    assert 0.92 <= share <= 0.98, share


class Detections:
    """A population's detections as the engine would leave them (``kept_detections.Accumulated``):
    per image a few instances of a few categories, most found by a detection whose score is
    higher the better it fits (a hit up to the IoU threshold its fit reaches), and false positives
    of lower scores."""

    def __init__(self, rng: np.random.Generator, n: int, categories: int = 5) -> None:
        self.instances_by = np.zeros((n, categories), dtype=np.int64)
        found: dict[int, list[tuple[int, float, int]]] = {k: [] for k in range(categories)}
        for i in range(n):
            for k in rng.choice(categories, size=2, replace=False):
                count = int(rng.poisson(1.5))
                self.instances_by[i, k] = count
                fits = rng.integers(0, 11, size=count)  # thresholds the detection reaches: 0 (none) to 10
                for fit in fits[rng.random(count) < 0.8]:
                    found[k].append((i, float(rng.beta(2 + fit, 3)), (1 << int(fit)) - 1))
                for _ in range(int(rng.poisson(0.7))):
                    found[k].append((i, float(rng.beta(2, 4)), 0))
        self.found = found

    def only(self, chosen: np.ndarray) -> kept_detections.InMemory:
        """The images ``chosen`` (in order) as one evaluated range."""
        where = {int(i): j for j, i in enumerate(chosen)}
        part = average_precision.Evaluated(image_count=len(chosen))
        instances = self.instances_by[chosen]
        rows = [(j, k, int(v)) for j, k in zip(*np.nonzero(instances), strict=True) for v in [instances[j, k]]]
        part.image_instances = np.array(rows, dtype=np.int64).reshape(-1, 3)
        part.instances = instances.sum(axis=0)[:, None]
        for k, items in self.found.items():
            kept = sorted((where[i], -s, bits) for i, s, bits in items if i in where)
            if kept:
                image = np.array([x[0] for x in kept])
                part.scores[k] = np.array([-x[1] for x in kept])
                part.image[k] = image.astype(np.uint32)
                part.ranks[k] = (np.arange(len(kept)) - np.searchsorted(image, image)).astype(np.uint16)
                part.hits[k] = np.array([x[2] for x in kept], dtype=np.uint16)[None, :]
                part.ignored[k] = np.zeros((1, len(kept)), dtype=np.uint16)
        return kept_detections.InMemory([part], instances.shape[1], 1)
