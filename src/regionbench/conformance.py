"""The scoring conformance corpus: small cases, each a truth, a run and the reference tools' own
outputs, run against any engine installed (docs/scoring.md, "Conformance").

A case is one JSON file of the corpus folder (``conformance/cases/<family>/<name>.json``, made
by ``conformance/make.py`` with the references pinned): ``family`` (``instances``, ``tide``,
``lvis``, ``panoptic``, ``semantic``, ``segments``, ``boundaries``, ``concepts``), ``settings`` (the IoU type,
the detections an image, a label map's benchmark, the thresholds of a hierarchy), ``truth`` (a COCO,
LVIS or panoptic document, a label map task's classes, or SA-Co's files as ``{"files": [...]}``), ``run`` (a COCO results list, or a
panoptic document), ``maps`` (the panoptic, label map, segmentation and boundary PNGs, base64;
an image's segmentations are ``<image>/<k>.png``, the k-th human's or the k-th threshold's),
``reference`` (the tool whose figures an engine must give) and ``outputs``: each reference
tool's version and figures, or the error it raised.

An engine is checked against its own recorded output where the case has one (the version that
made it is in the case; an engine whose pinned version failed on the case must fail again), else
against the reference's. ``regionbench`` (this package's engine), ``pycocotools``,
``faster-coco-eval``, ``lvis``, ``tidecv``, ``panopticapi``, ``cityscapesscripts`` and ``sam3`` (SAM 3's
``CGF1Evaluator``, its one file loaded by its path) are known; an external command
that writes COCOeval's 12 ``stats`` as a JSON list is one too (``command_engine``).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import io
import itertools
import json
import math
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regionbench.core.errors import InputError, first_line, parse_json

FAMILIES = ("instances", "tide", "lvis", "panoptic", "semantic", "segments", "boundaries", "concepts")
# Each family's tolerance: the largest difference a figure may have from the reference's. COCO's
# and LVIS's figures are sums of the same floating-point terms in the same order; TIDE's are in
# percent and its reference sums in Python floats.
TOLERANCE = {
    "instances": 1e-9, "lvis": 1e-9, "tide": 1e-6, "panoptic": 1e-12, "semantic": 1e-12, "segments": 1e-12,
    "boundaries": 1e-12, "concepts": 1e-9,
}  # fmt: skip
# Where a reference's figures are its printed outputs: BSDS500's bench prints six significant
# digits (``%g``), and its boundary matching wires outliers at random (its own two runs of one
# map differ in the fourth decimal). The least-cost matching of boundary pixels is not unique
# where two pixels are equally near (at a junction, where thinning leaves the maps a pixel
# apart): recall is, the union of matched machine pixels (precision) can differ by a pixel.
PUBLISHED = "bsds500-bench"
REFERENCE_TOLERANCE = {
    ("segments", PUBLISHED): 1e-5, ("boundaries", PUBLISHED): 5e-4, ("boundaries", "bsds-rule"): 1e-4,
}  # fmt: skip
ABOUT = {
    "instances": "COCOeval's 12 figures (AP, AP50, AP75, AP by area, AR at 1/10/100, AR by area): segm, bbox, boundary",
    "tide": "TIDE's AP50, each error type's dAP (Cls, Loc, Both, Dupe, Bkg, Miss) and FalsePos, FalseNeg",
    "lvis": "LVISEval's 13 figures (AP, AP50, AP75, APs/m/l, APr/c/f, AR and AR by area at 300)",
    "panoptic": "PQ, SQ, RQ and n over all categories, things and stuff; PQ, SQ, RQ of each category",
    "semantic": "pixel accuracy, mean class accuracy and mIoU (the classes in the truth or the prediction); "
    "Cityscapes' class and category IoU and iIoU",
    "segments": "BSDS500's region benchmark: covering ODS (and its threshold), OIS and best; PRI and VI at ODS "
    "(each with its threshold) and OIS",
    "boundaries": "BSDS500's boundary benchmark: ODS threshold, recall, precision and F; OIS recall, precision and "
    "F; AP",
    "concepts": "SA-Co's cgF1, pmF1, IL_MCC and the rest (precision, recall, F1, positive macro F1, the image-level "
    "counts and rates), over 0.50:0.95, at 0.5 and at 0.75, against one annotator or the oracle over several",
}


def tolerance(family: str, against: str) -> float:
    """The largest difference a figure of ``family`` may have from ``against``'s."""
    return REFERENCE_TOLERANCE.get((family, against), TOLERANCE[family])


class ConformanceError(InputError):
    """A corpus that cannot be read, or an engine that cannot run."""


@dataclass(frozen=True)
class Case:
    """One case of the corpus (module docstring)."""

    name: str
    family: str
    about: str
    settings: dict[str, Any]
    truth: dict[str, Any]
    run: Any
    reference: str
    outputs: dict[str, dict[str, Any]]
    maps: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # side -> file -> base64 PNG

    @classmethod
    def read(cls, path: Path, root: Path) -> Case:
        try:
            data: Any = parse_json(path.read_text(encoding="utf-8"))
            case = cls(
                path.relative_to(root).with_suffix("").as_posix(), data["family"], data["about"], data["settings"],
                data["truth"], data["run"], data["reference"], data["outputs"], data.get("maps", {}),
            )  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConformanceError(f"{path}: not a conformance case ({exc}); make the corpus again") from None
        if case.family not in FAMILIES:  # no engine would score it: dropped, it would pass unseen
            raise ConformanceError(
                f"{path}: family {case.family!r} is none of {', '.join(FAMILIES)}; correct it or make the corpus again"
            )
        for side, files in case.maps.items():
            for name, text in files.items() if isinstance(files, dict) else [("", files)]:
                try:
                    base64.b64decode(text, validate=True)
                except (ValueError, TypeError):
                    raise ConformanceError(f"{path}: maps.{side}.{name} is not base64; make the corpus again") from None
        return case

    def expected(self, engine: str) -> tuple[str, dict[str, float]] | None:
        """(whose figures, the figures) an engine must give: its own recorded output, else the
        reference's, else another tool's; None where no tool recorded figures."""
        for tool in (engine, self.reference, *sorted(self.outputs)):  # a reference that failed: the next's
            if "figures" in self.outputs.get(tool, {}):
                return tool, self.outputs[tool]["figures"]
        return None


def cases(root: Path) -> list[Case]:
    """The corpus under ``root`` (its ``cases/`` folder), by name."""
    folder = root / "cases"
    if not folder.is_dir():
        raise ConformanceError(
            f"{root}: no conformance corpus here (no cases/ folder); give the repository's conformance/"
        )
    return sorted((Case.read(p, folder) for p in folder.rglob("*.json")), key=lambda c: c.name)


# -- engines -----------------------------------------------------------------------------------
Engine = Callable[[Case], dict[str, float]]


def ours(case: Case) -> dict[str, float]:
    """This package's engine, as ``evaluate`` runs it: the run checked as a results file is, then
    scored (instances, LVIS) or analysed (TIDE); a panoptic run's segments matched, a label map's
    pixels counted."""
    from regionbench.scoring import results
    from regionbench.scoring.measures import average_precision

    if case.family == "panoptic":
        return _ours_panoptic(case)
    if case.family == "semantic":
        return _ours_cityscapes(case) if case.settings.get("method") == "cityscapes" else _ours_semantic(case)
    if case.family == "segments":
        return _ours_segments(case)
    if case.family == "boundaries":
        return _ours_boundaries(case)
    if case.family == "concepts":
        return _ours_concepts(case)

    iou_type = case.settings.get("iou_type", "segm")
    if case.family == "tide":  # detections of categories the truth lacks count in TIDE, as in tidecv
        kept = results.Checker(results.truth_header(case.truth), {}, keep_absent=True).read(Path("run.json"), case.run)
        return _ours_tide(case, kept, iou_type)
    checked = results.check_results(Path("run.json"), case.run, case.truth, {})
    max_dets = tuple(case.settings.get("max_dets", (1, 10, 100)))
    method = "lvis" if case.family == "lvis" else "coco"
    return dict(average_precision.score(case.truth, checked, iou_type, max_dets, method=method)["stats"])


@contextlib.contextmanager
def _concept_files(case: Case) -> Iterator[tuple[list[Path], Path]]:
    """A concepts case's SA-Co files and run, written to a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, document in enumerate(case.truth["files"]):
            path = Path(tmp) / f"gold_case_merged_{'abcdefgh'[k]}_release_test.json"
            path.write_text(json.dumps(document))
            paths.append(path)
        run = Path(tmp) / "run.json"
        run.write_text(json.dumps(case.run))
        yield paths, run


def _ours_concepts(case: Case) -> dict[str, float]:
    """``regionbench concepts``' figures of the case's files (None, no value: left out, as the
    reference's -1)."""
    from regionbench.scoring import concept_files as concepts

    with _concept_files(case) as (paths, run):
        found = concepts.score(paths, run, case.settings.get("iou_type", "segm"))["measures"]
    return {name: float(value) for name, value in found.items() if value is not None}


def sam3_eval(case: Case) -> dict[str, float]:
    """SAM 3's ``CGF1Evaluator`` on the case's files (``sam3/eval/cgf1_eval.py``, loaded by its
    path: the package itself pulls the model), its names as ours (``positive_micro_F1`` is pmF1);
    a figure it gives as -1 (no value) is left out."""
    import importlib.util
    import sysconfig

    path = Path(sysconfig.get_paths()["purelib"]) / "sam3/eval/cgf1_eval.py"
    spec = importlib.util.spec_from_file_location("cgf1_eval", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ConformanceError(f"{path}: SAM 3's evaluator is not installed (pip install --no-deps sam3)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    iou_type = case.settings.get("iou_type", "segm")
    with _concept_files(case) as (paths, run), contextlib.redirect_stdout(io.StringIO()):
        evaluator = module.CGF1Evaluator(gt_path=[str(p) for p in paths], iou_type=iou_type)
        found = evaluator.evaluate(str(run))
    out = {}
    for key, value in found.items():
        base, _, at = key.removeprefix(f"cgF1_eval_{iou_type}_").partition("@")
        if value != -1:
            out[{"positive_micro_F1": "pmF1"}.get(base, base) + (f"@{at}" if at else "")] = float(value)
    return out


def _ours_tide(case: Case, checked: list[dict[str, Any]], iou_type: str) -> dict[str, float]:
    from pycocotools import mask as coco_mask

    from regionbench.scoring.measures import tide_errors

    shape = "bbox" if iou_type == "bbox" else "segmentation"
    size = {e["id"]: (e["height"], e["width"]) for e in case.truth["images"]}
    truth: dict[int, list[dict[str, Any]]] = {}
    for k, a in enumerate(case.truth["annotations"]):
        instance = dict(a, id=("truth", k))
        segmentation = a.get("segmentation")
        if shape == "segmentation" and isinstance(segmentation, list):  # polygons, as tidecv reads them
            instance["segmentation"] = coco_mask.merge(coco_mask.frPyObjects(segmentation, *size[a["image_id"]]))
        elif shape == "segmentation" and isinstance(segmentation["counts"], list):  # uncompressed RLE
            instance["segmentation"] = coco_mask.frPyObjects(segmentation, *size[a["image_id"]])
        truth.setdefault(a["image_id"], []).append(instance)
    found: dict[int, list[dict[str, Any]]] = {}
    for n, d in enumerate(checked):
        found.setdefault(d["image_id"], []).append(dict(d, id=n))
    images = [e["id"] for e in case.truth["images"]]
    figures = tide_errors.summarize(
        tide_errors.collect(images, truth, found, shape, case.settings.get("max_dets", 100))
    )
    return tide_figures(figures["ap"], figures["main"], figures["special"])


def picture(case: Case, side: str, name: str) -> Any:
    """The case's PNG ``name`` of ``side`` (truth or run) as an array, as PIL reads it."""
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(base64.b64decode(case.maps[side][name]))))


def _ours_panoptic(case: Case) -> dict[str, float]:
    import numpy as np

    from regionbench.io.panoptic import rgb_to_id
    from regionbench.scoring.measures import panoptic_quality

    categories = sorted(case.truth["categories"], key=lambda c: c["id"])
    index = {c["id"]: k for k, c in enumerate(categories)}
    tally = np.zeros((len(categories), 4))
    run = {a["image_id"]: a for a in case.run["annotations"]}
    for truth in case.truth["annotations"]:
        given = run[truth["image_id"]]  # a missing prediction is refused, as pq_compute refuses it
        known = {s["id"]: (index[s["category_id"]], bool(s.get("iscrowd"))) for s in truth["segments_info"]}
        ids = rgb_to_id(picture(case, "truth", truth["file_name"]))
        gt = panoptic_quality.dense(ids * np.isin(ids, list(known)), known)  # an id without its segment is VOID
        said = {s["id"]: (index.get(s["category_id"], -1), False) for s in given["segments_info"]}
        if any(k < 0 for k, _ in said.values()):
            raise ValueError(f"image {truth['image_id']}: a segment's category is no category of the truth")
        pred = panoptic_quality.dense(rgb_to_id(picture(case, "run", given["file_name"])), said)
        tally += panoptic_quality.match(gt, pred, len(categories)).tally
    things = np.array([bool(c["isthing"]) for c in categories])
    figures: dict[str, float] = {}
    for group, found in panoptic_quality.summary(tally, things).items():
        figures |= {f"{group}.{k}": float(v) for k, v in found.items() if v is not None}
    per = panoptic_quality.per_category(tally)  # every category, 0 where it counts nothing (as pq_average lists them)
    for k, c in enumerate(categories):
        figures |= {f"class.{c['id']}.{name}": float(per[k, j]) for j, name in enumerate(("pq", "sq", "rq"))}
    return figures


def _ours_semantic(case: Case) -> dict[str, float]:
    import numpy as np

    from regionbench.scoring.measures import confusion

    classes, ignore = len(case.truth["classes"]), case.settings.get("ignore", 255)
    matrix = np.zeros((classes, classes + 1), dtype=np.int64)
    for name in sorted(case.maps["truth"]):
        truth = picture(case, "truth", name).astype(np.int64)
        predicted = picture(case, "run", name).astype(np.int64)
        left_out = (truth == ignore) | (truth >= classes)  # the truth alone ignores
        predicted = np.where((predicted >= 0) & (predicted < classes), predicted, classes)  # else: abstains, wrong
        matrix += confusion.confusion(np.where(left_out, 0, truth), predicted, classes, left_out)
    found = confusion.measures(matrix, case.truth["classes"])
    return {k: float(found[k]) for k in ("pixel_accuracy", "mean_class_accuracy", "miou")}


def hierarchy(case: Case, side: str) -> dict[str, list[Any]]:
    """The case's segmentations of ``side`` by image: ``<image>/<k>.png`` in the order of k."""
    out: dict[str, list[tuple[int, str]]] = {}
    for name in case.maps[side]:
        image, _, k = name.removesuffix(".png").partition("/")
        if k:
            out.setdefault(image, []).append((int(k), name))
    return {image: [picture(case, side, n) for _, n in sorted(names)] for image, names in sorted(out.items())}


def _ours_segments(case: Case) -> dict[str, float]:
    from regionbench.scoring.measures import bsds_regions

    truth, run = hierarchy(case, "truth"), hierarchy(case, "run")
    zero = bool(case.settings.get("zero_is_unlabelled", False))
    found = bsds_regions.collect(
        case.settings["thresholds"], [bsds_regions.score_image(run[i], truth[i], zero) for i in truth]
    )
    return segment_figures(found.covering, found.pri, found.vi)


def segment_figures(
    covering: Mapping[str, float], pri: Mapping[str, float], vi: Mapping[str, float]
) -> dict[str, float]:
    """The region benchmark's figures by name: ``covering.ods``, ``pri.ods_threshold``, ..."""
    return {f"{group}.{k}": float(v) for group, found in (("covering", covering), ("pri", pri), ("vi", vi))
            for k, v in found.items()}  # fmt: skip


def boundary_levels(case: Case, image: str) -> list[Any]:
    """The run's boundary map of ``image`` at each threshold, as the boundaries task reads its
    files: a soft map (``settings.run`` ``soft``: ``<image>.png``, 8-bit, / 255) cut at each
    threshold (>=), a boundary map per threshold (``maps``), or a segmentation per threshold
    whose segments' boundaries are scored (``segments``)."""
    from regionbench.scoring.measures import bsds_boundaries

    kind = case.settings.get("run", "soft")
    if kind == "soft":
        soft = picture(case, "run", f"{image}.png") / 255.0
        return [soft >= t for t in case.settings["thresholds"]]
    held = hierarchy(case, "run")[image]
    return [bsds_boundaries.seg2bdry(m) for m in held] if kind == "segments" else [m > 0 for m in held]


def _ours_boundaries(case: Case) -> dict[str, float]:
    from regionbench.scoring.measures import bsds_boundaries

    images = []
    for image, humans in hierarchy(case, "truth").items():  # a human's boundaries: its segmentation's, thinned
        theirs = [bsds_boundaries.thin(bsds_boundaries.seg2bdry(h)) for h in humans]
        images.append(bsds_boundaries.score_image(boundary_levels(case, image), theirs))
    found = bsds_boundaries.collect(case.settings["thresholds"], images)
    return boundary_figures(found.ods, found.ois, found.ap)


def boundary_figures(ods: Mapping[str, float], ois: Mapping[str, float], ap: float) -> dict[str, float]:
    """The boundary benchmark's figures by name: ``ods.threshold``, ``ods.f``, ``ois.f``, ``ap``..."""
    return (
        {f"ods.{k}": float(v) for k, v in ods.items()}
        | {f"ois.{k}": float(v) for k, v in ois.items()}
        | {"ap": float(ap)}
    )


def _ours_cityscapes(case: Case) -> dict[str, float]:
    """Cityscapes' benchmark (``client.benchmarks``) over the case's label id maps, as ``evaluate
    --task semantic --method cityscapes`` scores a release: the truth's labels Cityscapes
    does not evaluate left out, the run's values (label ids, or train ids) read to its 19
    classes, iIoU weighted by the instance map's instances (ids of 1000 and above)."""
    import numpy as np
    import pandas as pd

    from regionbench.scoring import protocols
    from regionbench.scoring.measures import confusion
    from regionbench.scoring.tasks.semantic import class_values, confusion_of

    table = pd.DataFrame(case.truth["labels"]).rename(columns={"id": "category_id", "name": "label",
                                                                "category": "supercategory"})  # fmt: skip
    vocabulary = table.rename(columns={"category_id": "label_id"})[["label", "label_id"]]
    benchmark = protocols.build(protocols.CITYSCAPES, vocabulary, table, bool(case.settings.get("train_ids")))
    assert benchmark is not None
    classes, name_of = len(benchmark.classes), dict(zip(table["category_id"], table["label"], strict=True))
    lookup = np.full(256, classes, dtype=np.int64)
    for label_id, k in benchmark.truth.items():
        lookup[label_id] = k
    matrix, weighted = np.zeros((classes, classes + 1), dtype=np.int64), protocols.InstanceCounts()
    for name in sorted(n for n in case.maps["truth"] if n.endswith("_gtFine_labelIds.png")):
        frame = name.removesuffix("_gtFine_labelIds.png")
        label = lookup[picture(case, "truth", name)]
        ids = picture(case, "truth", f"{frame}_gtFine_instanceIds.png").astype(np.int64)
        values = picture(case, "run", f"{frame}.png").astype(np.int64)
        mapped = class_values(values, benchmark.values, None, case.settings.get("ignore", 255), None, classes)
        matrix += confusion_of({0: label}, {0: mapped}, classes)[0]
        instances = [(str(name_of[i // 1000]), ids == i) for i in np.unique(ids[ids >= 1000]).tolist()]
        weighted.add(benchmark, label, values, mapped, [(n, m) for n, m in instances if n in benchmark.instances])
    flat = confusion.measures(matrix, benchmark.classes)
    per_category = protocols.category_iou(matrix, benchmark)
    found = weighted.figures(matrix, benchmark)
    figures = (
        {"miou": flat["miou"], "category_miou": float(np.mean(list(per_category.values())))}
        | {"iiou": found["iiou"], "category_iiou": found["category_iiou"]}
        | {f"class.{k}.iou": v for k, v in flat["per_class_iou"].items()}
        | {f"category.{k}.iou": v for k, v in per_category.items()}
    )
    return {k: float(v) for k, v in figures.items() if v is not None}  # no instance to weigh: no iIoU


def cityscapes_scripts(case: Case) -> dict[str, float]:
    """cityscapesScripts' ``evalPixelLevelSemanticLabeling`` on the case's files (label ids; a
    run in train ids is given to it in the label ids they stand for, 0 where none)."""
    import numpy as np
    from cityscapesscripts.evaluation import evalPixelLevelSemanticLabeling as cs
    from cityscapesscripts.helpers.labels import labels
    from PIL import Image

    if not hasattr(np, "in1d"):  # removed in numpy 2.4; the reference calls it for iIoU
        np.in1d = lambda a, b, invert=False: np.isin(np.ravel(a), b, invert=invert)  # type: ignore[attr-defined]
    trained = {label.trainId: label.id for label in labels if not label.ignoreInEval}
    with tempfile.TemporaryDirectory(prefix="regionbench-conformance-") as folder:
        truths, runs = [], []
        for name, encoded in sorted(case.maps["truth"].items()):
            Path(folder, name).write_bytes(base64.b64decode(encoded))
            if name.endswith("_gtFine_labelIds.png"):
                frame = name.removesuffix("_gtFine_labelIds.png")
                values = picture(case, "run", f"{frame}.png")
                if case.settings.get("train_ids"):
                    values = np.vectorize(lambda t: trained.get(int(t), 0))(values).astype(np.uint8)
                Image.fromarray(values).save(Path(folder, f"{frame}_leftImg8bit.png"))
                truths.append(str(Path(folder, name)))
                runs.append(str(Path(folder, f"{frame}_leftImg8bit.png")))
        cs.args.quiet, cs.args.JSONOutput, cs.args.evalInstLevelScore = True, False, True
        with contextlib.redirect_stdout(io.StringIO()):
            found = cs.evaluateImgLists(runs, truths, cs.args)
    figures = {
        "miou": found["averageScoreClasses"], "category_miou": found["averageScoreCategories"],
        "iiou": found["averageScoreInstClasses"], "category_iiou": found["averageScoreInstCategories"],
    }  # fmt: skip
    figures |= {f"class.{k}.iou": v for k, v in found["classScores"].items()}
    figures |= {f"category.{k}.iou": v for k, v in found["categoryScores"].items()}
    return {k: float(v) for k, v in figures.items() if not math.isnan(v)}  # a class with nothing counted: none


def panoptic_api(case: Case) -> dict[str, float]:
    """The COCO panoptic API's ``pq_compute`` (panopticapi-lite) on the case's files, one process."""
    from panopticapi import evaluation

    categories = {c["id"]: c for c in case.truth["categories"]}
    run = {a["image_id"]: a for a in case.run["annotations"]}
    with tempfile.TemporaryDirectory(prefix="regionbench-conformance-") as folder:
        for side in ("truth", "run"):
            Path(folder, side).mkdir()
            for name, encoded in case.maps[side].items():
                Path(folder, side, name).write_bytes(base64.b64decode(encoded))
        pairs = [copy.deepcopy((t, run[t["image_id"]])) for t in case.truth["annotations"]]  # the API marks them
        with contextlib.redirect_stdout(io.StringIO()):
            stat = evaluation.pq_compute_single_core.__wrapped__(
                0, pairs, str(Path(folder, "truth")), str(Path(folder, "run")), categories
            )
    figures: dict[str, float] = {}
    for group, isthing in (("all", None), ("things", True), ("stuff", False)):
        try:
            found, per_class = stat.pq_average(categories, isthing=isthing)
        except ZeroDivisionError:  # no category counted: the API divides by zero
            continue
        figures |= {f"{group}.{k}": float(v) for k, v in found.items()}
        if group == "all":
            for category, values in per_class.items():
                figures |= {f"class.{category}.{k}": float(values[k]) for k in ("pq", "sq", "rq")}
    return figures


def tide_figures(ap: float, main: Mapping[str, float], special: Mapping[str, float]) -> dict[str, float]:
    """TIDE's figures by name: ``ap``, ``main.<type>``, ``special.<type>``."""
    return (
        {"ap": float(ap)}
        | {f"main.{k}": float(v) for k, v in main.items()}
        | {f"special.{k}": float(v) for k, v in special.items()}
    )


@contextlib.contextmanager
def _files(case: Case) -> Iterator[tuple[Path, Path]]:
    """The case's truth and run as files, as the reference tools read them."""
    with tempfile.TemporaryDirectory(prefix="regionbench-conformance-") as folder:
        truth, run = Path(folder, "truth.json"), Path(folder, "run.json")
        truth.write_text(json.dumps(case.truth))
        run.write_text(json.dumps(case.run))
        yield truth, run


def cocoeval(module: str, case: Case) -> dict[str, float]:
    """COCOeval's 12 figures, by pycocotools or faster-coco-eval (``module``), read from its
    accumulated arrays at the case's detection counts as its summary reads them at the default."""
    import numpy as np

    from regionbench.scoring.measures.average_precision import STATS

    if module == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval as Evaluator
    else:
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as Evaluator
    iou_type = case.settings.get("iou_type", "segm")
    max_dets = list(case.settings.get("max_dets", (1, 10, 100)))
    with _files(case) as (truth, run), contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(truth))
        options = (
            {"boundary_dilation_ratio": case.settings.get("dilation_ratio", 0.02)} if iou_type == "boundary" else {}
        )
        evaluation = Evaluator(gt, gt.loadRes(str(run)) if case.run else gt.loadRes([]), iou_type, **options)
        evaluation.params.maxDets = max_dets
        evaluation.evaluate()
        evaluation.accumulate()
    p = evaluation.params
    at = {None: slice(None), 0.5: np.isclose(p.iouThrs, 0.5), 0.75: np.isclose(p.iouThrs, 0.75)}

    def read(ap: bool, area: str = "all", iou: float | None = None, most: int = max_dets[-1]) -> float:
        a, m = list(p.areaRngLbl).index(area), list(p.maxDets).index(most)
        arrays = evaluation.eval["precision"] if ap else evaluation.eval["recall"]
        values = arrays[at[iou], :, :, a, m] if ap else arrays[at[iou], :, a, m]
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    values = [read(True), read(True, iou=0.5), read(True, iou=0.75)]
    values += [read(True, area) for area in ("small", "medium", "large")]
    values += [read(False, most=m) for m in max_dets]
    values += [read(False, area) for area in ("small", "medium", "large")]
    names = [*STATS[:6], *(f"AR{m}" for m in max_dets), *STATS[9:]]
    return dict(zip(names, values, strict=True))


def lvis_eval(case: Case) -> dict[str, float]:
    """The ``lvis`` package's 13 figures. Its 0.5.3 still calls ``np.float``, which NumPy 1.24
    removed: the alias is given back for the call."""
    import logging

    import numpy as np
    from lvis import LVIS, LVISEval, LVISResults

    most = int(case.settings.get("max_dets", (300,))[-1])
    logging.getLogger("lvis").setLevel(logging.ERROR)
    gt = LVIS.__new__(LVIS)
    gt.logger = logging.getLogger("lvis")
    gt.dataset = {k: [dict(v) for v in case.truth[k]] for k in ("images", "annotations", "categories")}
    gt._create_index()
    had = hasattr(np, "float")
    np.float = float  # type: ignore[attr-defined]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            results = LVISResults(gt, [dict(d) for d in case.run], max_dets=most)
            evaluation = LVISEval(gt, results, case.settings.get("iou_type", "segm"))
            evaluation.params.max_dets = most
            evaluation.run()
    finally:
        if not had:
            del np.float  # type: ignore[attr-defined]
    return {k: float(v) for k, v in evaluation.results.items()}


def tidecv_eval(case: Case) -> dict[str, float]:
    """tidecv's figures of the case's files."""
    from tidecv import TIDE, datasets

    mode = TIDE.BOX if case.settings.get("iou_type") == "bbox" else TIDE.MASK
    with _files(case) as (truth, run), contextlib.redirect_stdout(io.StringIO()):
        evaluator, gt = TIDE(), datasets.COCO(str(truth))
        gt.max_dets = case.settings.get("max_dets", 100)  # tidecv reads the truth's
        found = evaluator.evaluate(gt, datasets.COCOResult(str(run)), mode=mode, name="run")
        main, special = evaluator.get_main_errors()["run"], evaluator.get_special_errors()["run"]
    return tide_figures(found.ap, main, special)


ENGINES: dict[str, tuple[tuple[str, ...], Engine]] = {
    "regionbench": (FAMILIES, ours),
    "pycocotools": (("instances",), lambda case: cocoeval("pycocotools", case)),
    "faster-coco-eval": (("instances",), lambda case: cocoeval("faster-coco-eval", case)),
    "lvis": (("lvis",), lvis_eval),
    "tidecv": (("tide",), tidecv_eval),
    "panopticapi": (("panoptic",), panoptic_api),
    "cityscapesscripts": (("semantic",), cityscapes_scripts),
    "sam3": (("concepts",), sam3_eval),
}
MODULES = {
    "pycocotools": "pycocotools", "faster-coco-eval": "faster_coco_eval", "lvis": "lvis", "tidecv": "tidecv",
    "panopticapi": "panopticapi", "cityscapesscripts": "cityscapesscripts", "sam3": "sam3",
}  # fmt: skip


def installed() -> list[str]:
    """The engines that can run here: this package's, and each reference whose module imports."""
    import importlib.util

    return [name for name in ENGINES if name not in MODULES or importlib.util.find_spec(MODULES[name]) is not None]


def handles(engine: str, case: Case) -> bool:
    """Whether ``engine`` scores ``case`` (pycocotools has no boundary IoU; cityscapesScripts
    scores Cityscapes' benchmark only)."""
    families, _ = ENGINES.get(engine, (("instances",), ours))
    if engine == "cityscapesscripts" and case.settings.get("method") != "cityscapes":
        return False
    return case.family in families and not (engine == "pycocotools" and case.settings.get("iou_type") == "boundary")


def command_engine(template: str) -> Engine:
    """An engine that is a command: ``template`` with ``{truth}``, ``{run}`` and ``{out}`` (file
    paths), which writes COCOeval's 12 ``stats`` to ``{out}`` as a JSON list."""
    from regionbench.scoring.measures.average_precision import STATS

    def run(case: Case) -> dict[str, float]:
        with _files(case) as (truth, results):
            out = truth.parent / "stats.json"
            command = [part.format(truth=truth, run=results, out=out) for part in shlex.split(template)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode:
                raise ConformanceError(f"{command[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
            try:
                stats = json.loads(out.read_text())
                if not (isinstance(stats, list) and len(stats) >= 12 and all(_number(v) for v in stats[:12])):
                    raise ValueError("not a list of COCOeval's 12 stats")
            except (OSError, ValueError) as exc:
                raise ConformanceError(
                    f"--command {command[0]}: case {case.name}: its {{out}} file is not a JSON list of COCOeval's "
                    f"12 stats ({first_line(exc)}); write them with json.dump(list(E.stats), f)"
                ) from None
        max_dets = list(case.settings.get("max_dets", (1, 10, 100)))
        names = [*STATS[:6], *(f"AR{m}" for m in max_dets), *STATS[9:]]
        return dict(zip(names, [float(v) for v in stats[:12]], strict=True))

    return run


# -- checking ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One figure of one case by one engine: what it gave, what it had to give, whether it is
    within the family's tolerance (``error``: why the engine gave nothing)."""

    case: str
    engine: str
    figure: str
    expected: float | None
    found: float | None
    against: str
    ok: bool
    error: str | None = None


def check(case: Case, engine: str, run: Engine | None = None) -> list[Row]:
    """``engine``'s rows for ``case``: one per figure of the output it must match (``Case.expected``)."""
    run = run or ENGINES[engine][1]
    if failed := case.outputs.get(engine, {}).get("error"):  # the tool as pinned fails here: so must it
        try:
            run(case)
        except ConformanceError:  # the corpus or the command, not the scoring: the caller says so
            raise
        except Exception:
            return [Row(case.name, engine, "-", None, None, engine, True, f"fails, as recorded: {failed}")]
        return [Row(case.name, engine, "-", None, None, engine, False, f"gives figures; recorded: {failed}")]
    want = case.expected(engine)
    if want is None:  # every reference failed on it: an engine must fail too, or give nothing
        return []
    against, expected = want
    try:
        found = run(case)
    except ConformanceError:
        raise
    except Exception as exc:  # an engine's failure is a row, not the end of the corpus
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return [Row(case.name, engine, "-", None, None, against, False, text[:200])]
    within = tolerance(case.family, against)
    return [
        Row(case.name, engine, name, value, found.get(name), against, _close(found.get(name), value, within))
        for name, value in expected.items()
    ]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(found: float | None, expected: float, tolerance: float) -> bool:
    return found is not None and math.isfinite(found) and abs(found - expected) <= tolerance


def table(rows: list[Row]) -> list[str]:
    """The rows as text, a line per case and engine: conforms, or the figures that differ (what
    was expected, of which tool, and what came)."""
    lines: list[str] = []
    width = max((len(r.case) for r in rows), default=0)
    grouped: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        grouped.setdefault((r.case, r.engine), []).append(r)
    for (case, engine), mine in grouped.items():
        wrong = [r for r in mine if not r.ok]
        if not wrong:
            said = mine[0].error if mine[0].error else f"{len(mine)} figures as {mine[0].against}'s"
            lines.append(f"{case:<{width}}  {engine:<16}  ok  {said}")
            continue
        for r in wrong:
            what = r.error or f"{r.figure}: {r.found!r}, {r.against} gives {r.expected!r}"
            lines.append(f"{case:<{width}}  {engine:<16}  DIFFERS  {what}")
    return lines


def tolerance_table(corpus: list[Case]) -> str:
    """The Markdown table of what the corpus checks: per family its figures, reference tools,
    cases and tolerance (docs/scoring.md holds it; a test keeps the two alike)."""
    lines = ["| family | figures | references | cases | tolerance |", "|---|---|---|---|---|"]
    for family in FAMILIES:
        mine = [c for c in corpus if c.family == family]
        tools = sorted({f"`{t}` {o['version']}" for c in mine for t, o in c.outputs.items()})
        within = f"{TOLERANCE[family]:g}" + "".join(
            f"; {v:g} against `{t}`" for (f, t), v in sorted(REFERENCE_TOLERANCE.items()) if f == family
        )
        lines.append(f"| {family} | {ABOUT[family]} | {', '.join(tools)} | {len(mine)} | {within} |")
    return "\n".join(lines)


def disagreements(corpus: list[Case]) -> list[tuple[str, str, str, float, float]]:
    """Where two reference tools' recorded outputs of one case differ beyond its tolerance:
    (case, figure, the tools, their figures)."""
    out = []
    for case in corpus:
        tools = [t for t, o in sorted(case.outputs.items()) if "figures" in o]
        for a, b in itertools.pairwise(tools):
            fa, fb = case.outputs[a]["figures"], case.outputs[b]["figures"]
            within = max(tolerance(case.family, a), tolerance(case.family, b))
            for name in fa:
                if name in fb and not _close(fb[name], fa[name], within):
                    out.append((case.name, name, f"{a} / {b}", fa[name], fb[name]))
    return out
