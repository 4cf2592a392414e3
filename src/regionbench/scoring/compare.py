"""Two runs of one benchmark compared: B - A on each headline measure, its paired bootstrap
interval and p-value (``measures.bootstrap.paired``), read from the two reports alone.

Two reports pair when they scored the same release, task and settings: then each resampled the
same images in the same order with the same seed, so resample ``b`` drew the same images for
both, and the difference of their values on it is the paired resample (docs/scoring.md,
"Comparing two runs"). Anything else is refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from regionbench.scoring.errors import TaskError
from regionbench.scoring.measures import bootstrap

LOWER_IS_BETTER = {"vi"}  # a measure whose smaller value is the better (BSDS's variation of information)


def _resampled(report: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    found = report.get("resampled")
    if not isinstance(found, Mapping) or not isinstance(found.get("values"), Mapping):
        raise TaskError(
            f"{name}: a report without resamples (none kept, or not a report of evaluate); score the run with "
            "evaluate --out, its --resamples above 0"
        )
    return found


def _point(report: Mapping[str, Any], measure: str) -> float:
    """A headline measure's value, by its dotted name (``all.pq``) in the report's ``measures``."""
    value: Any = report["measures"]
    for key in measure.split("."):
        value = value[key]
    return float(value)


def _difference(a: object, b: object) -> str:
    """Where two values differ, said briefly: the keys of two mappings that differ, each value
    against the other; else the two values."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return ", ".join(f"{k} {a.get(k)!r:.40} against {b.get(k)!r:.40}" for k in keys)
    return f"{a!r:.60} against {b!r:.60}"


def compare(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    """B - A on every headline measure both reports resampled: the observed difference of their
    values, its paired percentile interval and p-value. Raises ``TaskError`` when the reports do
    not pair (another release, task, settings, image set, seed or number of resamples)."""
    first, second = _resampled(a, names[0]), _resampled(b, names[1])
    for key, what in (
        ("release", "release"),
        ("task", "task"),
        ("settings", "settings"),
        ("scored", "scored images"),
    ):
        if a.get(key) != b.get(key):
            raise TaskError(
                f"{names[0]} and {names[1]} differ in their {what} ({_difference(a.get(key), b.get(key))}); "
                "compare two runs scored on the same release, task and options (--resamples and --seed too)"
            )
    for key in ("images", "images_sha256", "resamples", "seed"):
        if first.get(key) != second.get(key):
            raise TaskError(
                f"{names[0]} and {names[1]} were resampled differently ({key} {first.get(key)} against "
                f"{second.get(key)}); score both with the same --resamples and --seed"
            )
    shared = [m for m in first["values"] if m in second["values"]]
    rows = {}
    for measure in shared:
        observed = _point(b, measure) - _point(a, measure)
        rows[measure] = bootstrap.paired(first["values"][measure], second["values"][measure], observed)
    return {
        "a": names[0],
        "b": names[1],
        "task": a.get("task"),
        "release": a.get("release"),
        "resamples": first["resamples"],
        "seed": first["seed"],
        "images": first["images"],
        "method": "paired " + bootstrap.METHOD,
        "measures": rows,
    }


def verdict(measure: str, row: Mapping[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """One line: which run is better on ``measure`` (its interval excludes 0), or that they do not
    differ at the interval's level, with the difference, its interval and p."""
    a, b = names
    figures = f"{row['difference']:+.4f} [{row['low']:+.4f}, {row['high']:+.4f}], p = {row['p']:.3g}"
    if row["low"] > 0 or row["high"] < 0:
        higher = row["low"] > 0
        better = higher != (measure.split(".")[0] in LOWER_IS_BETTER)  # vi.ods: VI's
        return f"{b} is {'better' if better else 'worse'} than {a} on {measure}: {figures}"
    return f"{b} and {a} do not differ on {measure} at the {row['level']:.0%} level: {figures}"


def render(result: Mapping[str, Any]) -> str:
    """The comparison as lines: what was compared, then a verdict a measure."""
    names = (str(result["a"]), str(result["b"]))
    release = result["release"] or {}
    head = (
        f"{release.get('dataset')} v{release.get('version')}  task {result['task']}  {result['images']} images  "
        f"{result['method']} ({result['resamples']} resamples, seed {result['seed']}): B - A"
    )
    return "\n".join([head, *(verdict(m, row, names) for m, row in result["measures"].items())])
