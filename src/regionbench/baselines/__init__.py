"""Reference methods: classical, seeded methods whose predictions are scored through the one
door users score theirs by (``client.tasks.evaluate``), so a release says what a new method
must beat. One module of ``regionbench.baselines`` each, found by name.

A baseline module defines:

- a docstring whose first line is its name (the module's) in double backquotes, a colon and its
  summary, then its source (the paper and the library function);
- ``KIND``: ``"segmentation"`` (a hierarchy of label maps, fine to coarse: scored by the
  ``segments`` and ``boundaries`` tasks), ``"edges"`` (a soft boundary map in [0, 1]: scored by
  ``boundaries``) or ``"labels"`` (a class a pixel, learnt from the train side: scored by
  ``semantic``, by the protocol of the release's benchmark);
- ``SWEEP``: the values of its scale parameter, one per level of the hierarchy or of the sweep;
- ``predict(image)`` (segmentation, edges): its output for one RGB image (H x W x 3, uint8):
  S x H x W labels for a segmentation, H x W for edges;
- ``train(examples, classes)`` (labels): a predictor fitted on (RGB image, class map) pairs of
  the train side (``classes`` where a pixel has none), which maps an image to its class map and
  each pixel's confidence in [0, 1] (the score of the instances made of it).
  Deterministic: any randomness seeded;
- optionally ``COST``: the CPU seconds a megapixel its whole sweep takes (as measured by
  ``benchmarks/baselines.py``), from which the build says what the stage will cost before it starts.

``registry`` scans the package and refuses, in one line, a module that breaks the contract: a
new baseline is one new file. ``run`` writes a baseline's predictions for the scored images as a
user would (a folder per scale of 16-bit label PNGs, or one 16-bit soft PNG an image, named by the
image file's stem) and scores them with each task of its kind.
"""

from __future__ import annotations

import inspect
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from regionbench.core import plugins
from regionbench.core.errors import InputError

if TYPE_CHECKING:  # the build plans with this package: the client's tables are not read then
    import pandas as pd

    from regionbench.release.loader import Release

# A kind's tasks, the first the one whose scope says which images are scored.
KINDS: dict[str, tuple[str, ...]] = {
    "segmentation": ("segments", "boundaries"),
    "edges": ("boundaries",),
    "labels": ("semantic",),
}
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
    sweep = getattr(module, "SWEEP", None)
    if not (isinstance(sweep, tuple) and sweep and all(isinstance(v, int | float) for v in sweep)):
        problems.append("SWEEP is not a tuple of numbers")
    if getattr(module, "KIND", None) not in KINDS:
        return [*problems, f"KIND is not one of {', '.join(KINDS)}"]
    wanted = ("train", ("examples", "classes")) if module.KIND == "labels" else ("predict", ("image",))
    function = getattr(module, wanted[0], None)
    if not callable(function) or tuple(inspect.signature(function).parameters) != wanted[1]:
        problems.append(f"{wanted[0]}({', '.join(wanted[1])}) missing")
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


def _side(data: Release, kind: str) -> str:
    """The side of the split the first task of ``kind`` scores by default: every task of a
    baseline scores that one."""
    from regionbench.scoring import tasks

    return str(tasks.scoped(data, KINDS[kind][0])[0].split)


def _scored(data: Release, side: str) -> pd.DataFrame:
    """The images (rows of the images table, by id) of the split's ``side`` (``_side``)."""
    from regionbench.scoring.tasks import _masks

    return _masks.scored_images(data, side)


def _sources(data: Release, images: pd.DataFrame, root: Path | None) -> list[tuple[int, str, Path | bytes]]:
    """(image id, file stem, its file or bytes) of each of ``images``, in their order."""
    ids = images["image_id"].astype(int).tolist()
    stems = dict(zip(ids, (Path(p).stem for p in images["path"]), strict=True))
    sources = data.image_sources(ids, root)
    return [(image_id, stems[image_id], sources[image_id]) for image_id in ids]


def _images(data: Release, images: pd.DataFrame, root: Path | None) -> Iterator[tuple[int, str, np.ndarray]]:
    """(image id, file stem, RGB pixels) of each of ``images``, in their order."""
    for image_id, stem, source in _sources(data, images, root):
        yield image_id, stem, _pixels(source)


THINGS = ("panoptic", "instances")  # a labels baseline's tasks where its source names things


def predictions_of(home: Path, task: str) -> Path:
    """Where ``run`` writes a method's predictions (``home``: ``out/<method>``) as ``task``
    scores them: its things' instances file, its panoptic folder, else its maps' folder."""
    return {"instances": home / "instances" / "results.json", "panoptic": home / "panoptic"}.get(
        task, home / "predictions"
    )


def run(
    data: Release,
    name: str,
    out: Path,
    root: Path | None = None,
    cores: int | None = None,
    progress: Callable[[str], None] | None = None,
    things_unsaid: bool = False,
    score: bool = True,
) -> dict[str, dict[str, Any]]:
    """Baseline ``name``'s predictions of the release's scored images written under
    ``out/<name>/`` and scored by each task of its kind through ``client.tasks.evaluate``:
    task -> report (each also written as ``out/<name>/<task>.json``). A segmentation or edges
    writes ``predictions/``. A labels baseline is trained first (``_learnt.fitted``) and writes
    each image's classes as the values the release's benchmark reads (``predictions/``); where
    the source names its things, their components as instances (``instances/results.json``) and
    with the stuff as panoptic segments (``panoptic/``), scored by those tasks too. ``root``: the raw
    tree, when the release does not embed its images. ``things_unsaid``: a labels baseline takes
    every category its source says nothing of for a thing (``_learnt.categories``), so a COCO
    instances release gets instances too. ``score`` False: the predictions only, no task scores
    them (``{}`` returned). The images are predicted on up to
    ``cores`` forked processes (None: every core), the files the same for any number.
    ``progress`` hears what is done and, after the first image, what the rest will cost."""
    from PIL import Image

    from regionbench.baselines import _learnt
    from regionbench.core import tables
    from regionbench.core.forked import forked_iter
    from regionbench.scoring import tasks

    module = get(name)
    home = out / name
    folder = predictions_of(home, KINDS[module.KIND][0])
    things = (predictions_of(home, "panoptic"), predictions_of(home, "instances").parent)
    for old in (folder, *things):  # a previous run's files would be scored
        shutil.rmtree(old, ignore_errors=True)
    tell = progress or (lambda line: None)
    started = time.process_time()
    side = _side(data, module.KIND)  # resolved once: every task of the method scores it
    scored = _scored(data, side)
    runs: dict[str, Path] = {task: predictions_of(home, task) for task in KINDS[module.KIND]}
    segments = None
    if module.KIND == "labels":
        try:
            predict, coding = _learnt.fitted(module, data, scored, lambda images: _images(data, images, root))
        except InputError as exc:
            raise BaselineError(str(exc)) from None
        tell(f"{name}: fitted in {time.process_time() - started:.1f} CPU-s")
        values, kinds = _learnt.class_values(coding), _learnt.categories(data, coding, things_unsaid)
        if kinds is not None:
            segments = _learnt.Segments(home / "panoptic", kinds)
            runs |= {task: predictions_of(home, task) for task in THINGS}
        started = time.process_time()

    def predicted(item: tuple[int, str, Path | bytes]) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """One image predicted and its files written (in a forked worker): its panoptic entry
        and instances, for a labels baseline whose source names things."""
        image_id, stem, source = item
        pixels = _pixels(source)
        if module.KIND != "labels":
            write(module, pixels, stem, folder)
            return None
        classes, confidence = predict(pixels)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(values[classes].astype(np.uint16)).save(folder / f"{stem}.png")
        return segments.add(image_id, stem, classes, confidence) if segments is not None else None

    items = _sources(data, scored, root)
    found = [predicted(items[0])] if items else []
    if len(items) > 1:
        each = time.process_time() - started
        tell(
            f"{name}: {each:.1f} CPU-s an image; about {each * (len(items) - 1):.0f} CPU-s for the other {len(items) - 1}"
        )
    found += forked_iter(predicted, items[1:], cores or tasks.available_cores())
    if segments is not None:
        from regionbench.scoring.tasks import _coco_truth

        numbering = _coco_truth.numbering(data.table("coverage"), str(data.reference_annotator))
        segments.write([f for f in found if f is not None], home / "instances" / "results.json", numbering)
    tell(f"{name}: {len(items)} images predicted")
    reports: dict[str, dict[str, Any]] = {}
    for task, predictions in runs.items() if score else ():  # a hierarchy's scale folders: label maps to either task
        report = tasks.evaluate(data, predictions, task, progress=tell, cores=cores, split=side)
        report["baseline"] = {"name": name, "kind": module.KIND, "sweep": list(module.SWEEP)}
        tables.write_json(home / f"{task}.json", report)
        reports[task] = report
    return reports


def chosen(methods: str | Sequence[str], kind: str | None) -> list[str]:
    """The baselines a build runs: those ``methods`` names (each checked: an unknown one is a
    ``BaselineError`` naming the baselines), or for ``"auto"`` those of the release's ``kind``
    (its layout's ``About.baselines``): the segmenters and edge detectors for ``segmentation``
    (humans segment whole images, BSDS), the learnt ones for ``labels`` (a class a pixel), none
    for None (a labelled region collection: its reference classifiers)."""
    if methods != "auto":
        return [get(name).__name__.rsplit(".", 1)[-1] for name in methods]
    kinds = {"segmentation": {"segmentation", "edges"}, "labels": {"labels"}}.get(str(kind), set())
    return [name for name, module in registry().items() if module.KIND in kinds]


def stage(
    data: Release,
    names: Sequence[str],
    out: Path,
    root: Path | None = None,
    cores: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """The build's baselines stage: each of ``names`` run and scored (``run``) on the release
    ``data`` (its reports under ``out/<name>/``), after one line of what the predictions will
    cost (each method's ``COST``, CPU-s a megapixel, times the scored images' pixels). A method
    that cannot run on this release (no train side to fit on, no humans' segmentations to score
    against: an ``InputError``) is skipped: one line, and its reason in ``out/<name>/skipped.json``
    (the card and the build's summary name it), for the stage is optional and never fails a build.
    Returns name -> task -> report of the methods that ran."""
    from regionbench.core import tables
    from regionbench.release.card import SKIPPED

    tell = progress or (lambda line: None)
    kinds = {name: get(name).KIND for name in names}
    sizes: dict[str, pd.DataFrame] = {}  # a kind's scored images
    refused: dict[str, str] = {}  # a kind whose side cannot be scored: why
    for kind in dict.fromkeys(kinds.values()):
        try:
            sizes[kind] = _scored(data, _side(data, kind))
        except InputError as exc:
            refused[kind] = str(exc)
    pixels = {kind: int((i["width"].astype("int64") * i["height"].astype("int64")).sum()) for kind, i in sizes.items()}
    costs = {name: getattr(get(name), "COST", None) for name in names if kinds[name] in sizes}
    known = sum(c * pixels[kinds[name]] / 1e6 for name, c in costs.items() if c is not None)
    unknown = [name for name, c in costs.items() if c is None]
    images = max(len(i) for i in sizes.values()) if sizes else 0
    tell(
        f"baselines: {', '.join(names)} on {images} images; their predictions about {known:.0f} CPU-s"
        + (f" (and {', '.join(unknown)}, not measured)" if unknown else "")
        + ", then their scoring"
    )
    reports = {}
    for name in names:
        try:
            if kinds[name] in refused:
                raise InputError(refused[kinds[name]])
            reports[name] = run(data, name, out, root, cores, progress)
        except InputError as exc:
            reason = str(exc).removeprefix(f"{name}: ")
            shutil.rmtree(out / name, ignore_errors=True)  # nothing of a run cut short is scored or released
            tables.write_json(out / name / SKIPPED, {"baseline": name, "skipped": reason})
            tell(f"baselines: {name} skipped: {reason}")
    return reports
