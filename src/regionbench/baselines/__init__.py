"""Reference methods: classical, seeded methods whose predictions are scored through the one
door users score theirs by (``client.tasks.evaluate``), so a release says what a new method
must beat. One module of ``regionbench.baselines`` each, found by name.

A baseline module defines:

- a docstring whose first line is its name (the module's) in double backquotes, a colon and its
  summary, then its source (the paper and the library function);
- ``KIND``: ``"segmentation"`` (a hierarchy of label maps, fine to coarse: scored by the
  ``segments`` and ``boundaries`` tasks) or ``"edges"`` (a soft boundary map in [0, 1]: scored by
  ``boundaries``);
- ``SWEEP``: the values of its scale parameter, one per level of the hierarchy or of the sweep;
- ``predict(image)``: its output for one RGB image (H x W x 3, uint8): S x H x W labels for a
  segmentation, H x W for edges. Deterministic: any randomness seeded.

``registry`` scans the package and refuses, in one line, a module that breaks the contract: a
new baseline is one new file. ``run`` writes a baseline's predictions for the scored images as a
user would (a folder per scale of 16-bit label PNGs, or one 16-bit soft PNG an image, named by the
image file's stem) and scores them with each task of its kind.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from regionbench.client.loader import Release
from regionbench.core import plugins
from regionbench.core.errors import InputError

KINDS: dict[str, tuple[str, ...]] = {"segmentation": ("segments", "boundaries"), "edges": ("boundaries",)}
_NAMED = re.compile(r"``(?P<name>[a-z_]+)``: (?P<summary>.+)")


class BaselineError(InputError):
    """A baseline that cannot run: an unknown name, a module that breaks the contract, a release
    without the humans' segmentations a baseline is scored against."""


@dataclass(frozen=True)
class About:
    """What a baseline says of itself: its name and summary (the docstring's first line)."""

    name: str
    summary: str


def about(module: ModuleType) -> About:
    """The ``About`` of a baseline module, from its docstring's first line."""
    first = (module.__doc__ or "").strip().splitlines()[:1]
    found = _NAMED.fullmatch(first[0]) if first else None
    own = module.__name__.rsplit(".", 1)[-1]
    if found is None or found["name"] != own:
        raise BaselineError(f"the docstring's first line is not ``{own}``: its summary")
    return About(own, found["summary"])


def contract_problems(module: ModuleType) -> list[str]:
    """What a baseline module lacks of the contract (module docstring); empty: it keeps it."""
    problems = []
    try:
        about(module)
    except BaselineError as exc:
        problems.append(str(exc))
    if getattr(module, "KIND", None) not in KINDS:
        problems.append(f"KIND is not one of {', '.join(KINDS)}")
    sweep = getattr(module, "SWEEP", None)
    if not (isinstance(sweep, tuple) and sweep and all(isinstance(v, int | float) for v in sweep)):
        problems.append("SWEEP is not a tuple of numbers")
    predict = getattr(module, "predict", None)
    if not callable(predict) or tuple(inspect.signature(predict).parameters) != ("image",):
        problems.append("predict(image) missing")
    return problems


@cache
def registry() -> dict[str, ModuleType]:
    """Baseline name -> its module, in name order; a module that breaks the contract is a
    ``BaselineError`` naming what it lacks."""
    import regionbench.baselines as package

    return dict(plugins.scan(package, lambda module: module, contract_problems, "baseline contract", BaselineError))


def get(name: str) -> ModuleType:
    """The baseline called ``name``; a ``BaselineError`` naming the baselines otherwise."""
    return plugins.named(registry(), name, "baseline", BaselineError)


def predictions(module: ModuleType, image: np.ndarray) -> np.ndarray:
    """``module.predict(image)``, checked against its kind: S x H x W labels (S the sweep's
    length) or H x W values in [0, 1]."""
    out = np.asarray(module.predict(image))
    height, width = image.shape[:2]
    wanted = (len(module.SWEEP), height, width) if module.KIND == "segmentation" else (height, width)
    if out.shape != wanted:
        raise BaselineError(f"{module.__name__}: predict gave {out.shape}, not {wanted}")
    if module.KIND == "edges" and not (np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1):
        raise BaselineError(f"{module.__name__}: predict gave values outside [0, 1]")
    return out


def write(module: ModuleType, image: np.ndarray, stem: str, folder: Path) -> None:
    """The baseline's predictions of one image into ``folder``, as a user writes them: label
    maps under ``scale01/`` ... (16-bit PNGs; labels renumbered from 0), or one soft map (a
    16-bit PNG of value / 65535)."""
    from PIL import Image

    out = predictions(module, image)
    if module.KIND == "edges":
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.round(out * 65535).astype(np.uint16)).save(folder / f"{stem}.png")
        return
    for k, labels in enumerate(out, start=1):
        scale = folder / f"scale{k:02d}"
        scale.mkdir(parents=True, exist_ok=True)
        _, dense = np.unique(labels, return_inverse=True)
        if dense.max() > 65535:
            raise BaselineError(f"{module.__name__}: more than 65,536 segments in one map of image {stem}")
        Image.fromarray(dense.reshape(labels.shape).astype(np.uint16)).save(scale / f"{stem}.png")


def _pixels(source: Path | bytes) -> np.ndarray:
    from io import BytesIO

    from PIL import Image

    with Image.open(BytesIO(source) if isinstance(source, bytes) else source) as opened:
        return np.asarray(opened.convert("RGB"))


def _images(data: Release, root: Path | None) -> Iterator[tuple[str, np.ndarray]]:
    """(file stem, RGB pixels) of each image the segments task scores by default, in id order."""
    from regionbench.client import tasks
    from regionbench.client.tasks import _masks

    split = tasks.scoped(data, "segments")[0].split
    images = _masks.scored_images(data, split)
    ids = images["image_id"].astype(int).tolist()
    stems = dict(zip(ids, (Path(p).stem for p in images["path"]), strict=True))
    sources = data.image_sources(ids, root)
    for image_id in ids:
        yield stems[image_id], _pixels(sources[image_id])


def run(
    data: Release,
    name: str,
    out: Path,
    root: Path | None = None,
    cores: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Baseline ``name``'s predictions of the release's scored images written under
    ``out/<name>/predictions`` and scored by each task of its kind through
    ``client.tasks.evaluate``: task -> report (each also written as ``out/<name>/<task>.json``).
    ``root``: the raw tree, when the release does not embed its images. ``progress`` hears what
    is done and, after the first image, what the rest will cost."""
    from regionbench.client import tasks
    from regionbench.core import tables

    module = get(name)
    folder = out / name / "predictions"
    if folder.exists():
        import shutil

        shutil.rmtree(folder)  # a previous run's files would be scored with this one's
    tell = progress or (lambda line: None)
    started, count = time.process_time(), 0
    images = list(_images(data, root))
    for stem, pixels in images:
        write(module, pixels, stem, folder)
        count += 1
        if count == 1 and len(images) > 1:
            each = time.process_time() - started
            tell(
                f"{name}: {each:.1f} CPU-s an image; about {each * (len(images) - 1):.0f} s for the other {len(images) - 1}"
            )
    tell(f"{name}: {count} images in {time.process_time() - started:.1f} CPU-s")
    reports = {}
    for task in KINDS[module.KIND]:  # a hierarchy's scale folders: label maps to either task
        report = tasks.evaluate(data, folder, task, progress=tell, cores=cores)
        report["baseline"] = {"name": name, "kind": module.KIND, "sweep": list(module.SWEEP)}
        tables.write_json(out / name / f"{task}.json", report)
        reports[task] = report
    return reports
