"""A release as a static site (``regionbench view``): pages that open from ``file://`` in any
browser, with no server and no network.

The site is the page files of ``regionbench/data/view`` (HTML, one hand-written script, one
style sheet) and the release's data written as JavaScript files (``data/*.js``, each calling
``RB.load``): a browser reads a ``<script>`` from ``file://`` where it refuses a ``fetch``. The
index holds one short entry per image (its labels, annotators, subsets and agreement, for the
filters and the sort) in parts of ``INDEX_PART`` images, the first page drawn once the first is
read, and shows its thumbnails a page at a time; each image's regions are a file of their own,
read when the image is opened. Outlines come from the release's exact
polygons (``regions.geometry``), filled by label colour; a region without one (labels only) is
listed, not drawn. The card's figures are copied from the release's ``results/``.
"""

from __future__ import annotations

import colorsys
import json
import math
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.release.loader import Release
from regionbench.scoring import tasks
from regionbench.scoring.measures import tide_errors
from regionbench.scoring.tasks.instances import OUTCOME_NAMES

THUMB = 256  # the thumbnails' longer side, in pixels
OUTLINE_TOLERANCE = 0.5  # pixels: outlines drawn within half a pixel of the release's polygons
PAGE = 48  # thumbnails shown at a time on the index
INDEX_PART = 4096  # index entries a data file: the first page is drawn once the first part is read
# Colours: Paul Tol's "muted" and "bright" schemes, told apart with the common colour
# blindnesses (https://personal.sron.nl/~pault/), 16 in all. Each label prefers one by its place in
# the vocabulary, so it keeps its colour on every page where no other label of the image took it;
# an image's labels (or, in a release without labels to tell apart, its regions) never share one.
PALETTE = [
    "#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#332288",
    "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499",
]  # fmt: skip


def extra_colour(k: int) -> str:
    """The ``k``-th colour past the palette, for an image with more labels than it holds: hues
    by the golden angle, so any two stay apart."""
    r, g, b = colorsys.hls_to_rgb((k * 137.508) % 360 / 360, 0.55, 0.6)
    return f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}"


def image_colours(keys: list[str], preferred: dict[str, int]) -> dict[str, str]:
    """Distinct colours for the ``keys`` of one image (its labels, or its regions): each takes
    its ``preferred`` palette entry when free, else the next free one, past the palette generated
    colours; keys in order, so a page is the same every time it is written."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    extra = 0
    for key in keys:
        start = preferred.get(key, 0)
        turn = [PALETTE[(start + step) % len(PALETTE)] for step in range(len(PALETTE))]
        choice = next((c for c in turn if c not in taken), None)
        while choice is None or choice in taken:
            choice, extra = extra_colour(extra), extra + 1
        taken.add(choice)
        out[key] = choice
    return out


PAGE_FILES = ("index.html", "image.html", "run.html", "view.js", "view.css")


@dataclass(frozen=True)
class Site:
    """What ``write_site`` wrote: the folder, its images and regions, and its size in bytes."""

    folder: Path
    images: int
    regions: int
    bytes: int

    def line(self) -> str:
        mib = self.bytes / 2**20
        return (
            f"{self.folder}: a site of {self.images:,} images and {self.regions:,} regions, {mib:,.1f} MiB; "
            f"open {self.folder / 'index.html'} in a browser"
        )


def _js(path: Path, kind: str, value: object) -> None:
    """Write ``value`` as a script that hands it to the page (``RB.load(kind, value)``)."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
    path.write_text(f"RB.load({json.dumps(kind)},{text});\n", encoding="utf-8")


def svg_paths(geometries: list[bytes | None]) -> list[str]:
    """SVG paths (``d``) of polygons or multipolygons in WKB, pixel coordinates; "" for none.

    The release's outlines follow pixel edges, a vertex at every step of a staircase; drawn,
    they are simplified within ``OUTLINE_TOLERANCE`` pixels (Douglas-Peucker), which keeps
    every corner a person can see."""
    import shapely

    return outline_paths(shapely.from_wkb(np.array(geometries, dtype=object)))


def outline_paths(geometries: np.ndarray) -> list[str]:
    """``svg_paths`` of shapely polygons or multipolygons (None for none): simplified within
    ``OUTLINE_TOLERANCE`` pixels, coordinates to a tenth of a pixel."""
    import shapely

    shapes = shapely.simplify(geometries, OUTLINE_TOLERANCE, preserve_topology=False)
    out = []
    for shape in shapes:
        parts = []
        for polygon in [] if shape is None or shape.is_empty else getattr(shape, "geoms", [shape]):
            for ring in [polygon.exterior, *polygon.interiors]:
                # tenths of a pixel: what a screen shows, and a site a fraction of the size of 14 digits
                tenths = np.round(shapely.get_coordinates(ring).ravel() * 10).astype(np.int64).tolist()
                numbers = (f"{t // 10}" if t % 10 == 0 else f"{t / 10:.1f}" for t in tenths)
                parts.append("M" + " ".join(numbers) + "Z")  # after M, further pairs are lines
        out.append("".join(parts))
    return out


def _number(value: Any) -> float | None:
    """A JSON number, or None for a missing one."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return round(float(value), 4)


def _agreement(data: Release) -> dict[int, float]:
    """Per image, the mean agreement of its annotator pairs: pixel kappa, or the Rand index
    when the segments carry one label (a label-free collection)."""
    if "agreement" not in data.manifest.get("tables", {}):
        return {}
    labelled = len(set(data.arrow("regions", ["label"]).column("label").to_pylist()) - {None}) > 1
    measure = "pixel_kappa" if labelled else "rand_index"
    pairs = data.arrow("agreement", ["image_id", measure]).to_pylist()
    found: dict[int, list[float]] = {}
    for pair in pairs:
        found.setdefault(int(pair["image_id"]), []).append(float(pair[measure]))
    return {image_id: float(np.mean(values)) for image_id, values in found.items()}


def _thumbnail(job: tuple[str, str]) -> None:
    """Write a JPEG of at most ``THUMB`` pixels a side of the image file ``job[0]`` to ``job[1]``
    (decoded at a reduced scale where JPEG allows)."""
    from PIL import Image

    source, out = job
    with Image.open(source) as opened:
        opened.draft("RGB", (THUMB, THUMB))
        small = opened.convert("RGB")
        small.thumbnail((THUMB, THUMB))
        small.save(out, "JPEG", quality=80)


def _subsets(data: Release) -> dict[int, list[str]]:
    """Per image, its subsets and sides as "A:train" tokens (an image is in a subset where one
    of its regions is)."""
    rows = data.arrow("subsets", ["image_id", "subset", "split"]).to_pylist()
    found = sorted({(int(r["image_id"]), str(r["subset"]), str(r["split"])) for r in rows})
    out: dict[int, list[str]] = {}
    for image_id, subset, split in found:
        out.setdefault(image_id, []).append(f"{subset}:{split}")
    return out


def _relations(data: Release) -> dict[tuple[int, str, int], list[list[Any]]]:
    """(image, annotator, region) -> its relations: [other region, topological, horizontal, vertical]."""
    out: dict[tuple[int, str, int], list[list[Any]]] = {}
    for row in data.arrow("relations").to_pylist():
        key = (int(row["image_id"]), str(row["annotator"]), int(row["region_id"]))
        out.setdefault(key, []).append([row["other_region_id"], row["topological"], row["horizontal"], row["vertical"]])
    return out


def run_scores(data: Release, report: dict) -> dict[int, float]:
    """Per image, a run report's score (``per_image`` of an ``evaluate --out`` report: the region
    task's share of regions labelled exactly, the image tasks' F1 of the labels given); raises
    InputError when the report is of another release or version, or has no per-image scores."""
    made_on = report.get("release", {})
    if (made_on.get("dataset"), made_on.get("version")) != (data.dataset, data.version):
        raise InputError(
            f"--run: the report scores {made_on.get('dataset')} v{made_on.get('version')}, not "
            f"{data.dataset} v{data.version}; score the run against this release"
        )
    scores = report.get("per_image")
    if not isinstance(scores, dict):
        raise InputError("--run: the report has no per-image scores (per_image); write it with evaluate --out again")
    return {int(k): float(v) for k, v in scores.items()}


def drawn_predictions(run: tasks.Run, report: dict, colour: dict[str, str]) -> dict[int, list[dict]]:
    """Per image, a task's predictions (``tasks.shapes``) as the page draws them: label, colour
    (a segment's by its number), SVG path ("" for an empty mask) and facts."""
    out: dict[int, list[dict]] = {}
    for image_id, found in tasks.shapes(run, report):
        paths = outline_paths(np.array([shape.polygon() for shape in found], dtype=object))
        out[image_id] = [
            {
                "label": shape.label,
                "colour": colour.get(shape.label, "#888888")
                if shape.label is not None
                else PALETTE[shape.facts.get("segment", 0) % len(PALETTE)],
                "path": path,
                "facts": {k: _number(v) if isinstance(v, float) else v for k, v in shape.facts.items()},
            }
            for shape, path in zip(found, paths, strict=True)
        ]
    return out


def write_site(
    data: Release,
    out: str | Path,
    images_root: str | Path | None = None,
    run: dict | None = None,
    workers: int = 2,
    predictions: str | Path | None = None,
    compared: dict | None = None,
) -> Site:
    """Write the site of release ``data`` into ``out`` (created; an existing folder is
    refused unless it holds an earlier site, which is replaced). ``images_root``: the raw tree
    to take the pixels from (default: the release's embedded images); ``run``: an ``evaluate``
    report whose per-image scores the index shows and sorts by; ``predictions``: the file or
    folder a mask task's report scored, drawn beside the truth; ``compared``: ``scoring.compare``
    of the run and another (the run page's comparison table); ``workers``: processes making
    the thumbnails. Returns what was written."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / "data" / "meta.js").is_file():
        raise InputError(f"--out {out}: a folder that holds something else than a site; give a new folder")
    if predictions is not None and run is None:
        raise InputError("--predictions: give the report that scored them with --run")
    # Written beside ``out`` and moved into place whole: a full disk or a stop half-way leaves
    # the earlier site (or none), never part of one.
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        site = _write_site(data, staging, images_root, run, workers, predictions, compared)
        earlier = out.with_name(f".{out.name}.earlier")
        shutil.rmtree(earlier, ignore_errors=True)
        if out.exists():
            out.rename(earlier)
        staging.rename(out)
        shutil.rmtree(earlier, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return replace(site, folder=out)


def _write_site(
    data: Release,
    out: Path,
    images_root: str | Path | None,
    run: dict | None,
    workers: int,
    predictions: str | Path | None,
    compared: dict | None = None,
) -> Site:
    """``write_site``'s work, into the new folder ``out``."""
    scores = run_scores(data, run) if run is not None else {}
    vocabulary = sorted(set(data.arrow("vocabulary", ["label"]).column("label").to_pylist()))
    colour = {label: PALETTE[k % len(PALETTE)] for k, label in enumerate(vocabulary)}
    masks = tasks.rerun(data, run, Path(predictions)) if run is not None and predictions is not None else None
    _new_site(out)
    images = sorted(data.arrow("images").to_pylist(), key=lambda row: int(row["image_id"]))
    ids = [int(row["image_id"]) for row in images]
    regions = _regions(data)
    labels = sorted({r["label"] for r in regions if r["label"] is not None})
    annotators = sorted({str(r["annotator"]) for r in regions})
    jobs = _copy_images(out, images, data.image_sources(ids, images_root))
    with ProcessPoolExecutor(max(1, workers)) as pool:  # shut on every path, an error's too
        thumbnails = pool.map(_thumbnail, jobs, chunksize=32)  # made while the pages' data are written
        pages = Pages(data, regions, colour, labels, annotators, scores, run or {})
        pages.drawn = drawn_predictions(masks, run, colour) if masks is not None and run is not None else {}
        entries = [pages.write(out, row) for row in images]
        list(thumbnails)
    charts = _charts(data.folder / "results", out / "charts")
    if run:
        evaluation = run_view(run, pages.cells)
        evaluation["charts"] = _run_charts(run, out / "charts")
        evaluation["compared"] = compared_view(compared) if compared else None
        _js(out / "data" / "run.js", "run", evaluation)
    for entry in entries:
        entry.append([])  # the confusion cells the run's page links to this image
        entry.append(pages.errors.get(int(entry[0]), []))  # TIDE's error types among its detections
    if run:
        place = {int(e[0]): e for e in entries}
        for k, (_, confusing) in enumerate(sorted(pages.cells.items())):
            for image_id in sorted(confusing):
                place[image_id][8].append(k)
    parts = [entries[k : k + INDEX_PART] for k in range(0, len(entries), INDEX_PART)] or [[]]
    meta = {
        "dataset": data.dataset,
        "version": data.version,
        "digest": data.manifest.get("digest"),
        "labels": [{"name": x, "colour": colour.get(x, "#888888"), "regions": pages.counts.get(x, 0)} for x in labels],
        "annotators": annotators,
        "subsets": sorted({t for tokens in pages.subsets.values() for t in tokens}),
        "splits": sorted({str(e[4]) for e in entries if e[4]}),
        "page": PAGE,
        "index_parts": len(parts),
        "charts": charts,
        "figures": _figures(data.folder / "results"),
        "run": {"task": run.get("task"), "outcomes": OUTCOME_NAMES} if run else None,
        "audits": {kind: any(kind in str(e[7]) for e in entries) for kind in ("d", "l")},
        "agreement": any(e[5] is not None for e in entries),
        "errors": sorted({kind for e in entries for kind in e[9]}, key=ERROR_TYPES.index),
    }
    _js(out / "data" / "meta.js", "meta", meta)
    (out / "data" / "index").mkdir()
    for k, part in enumerate(parts):
        _js(out / "data" / "index" / f"{k}.js", "index", part)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return Site(out, len(ids), len(regions), size)


def _new_site(out: Path) -> None:
    """``out`` emptied, with the site's folders and the page files."""
    shutil.rmtree(out, ignore_errors=True)
    for folder in ("data/img", "img", "thumb", "charts"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    page_files = resources.files("regionbench") / "data" / "view"
    for name in PAGE_FILES:
        (out / name).write_bytes((page_files / name).read_bytes())


def _regions(data: Release) -> list[dict[str, Any]]:
    """Every region's row as the pages show it: its outline as an SVG path, features, area."""
    wanted = ["image_id", "annotator", "region_id", "label", "iscrowd", "area_px", "geometry", *tables.FEATURE_NAMES]
    regions = data.arrow("regions", wanted).to_pylist()
    for region, path in zip(regions, svg_paths([r.pop("geometry") for r in regions]), strict=True):
        region["path"] = path
    return regions


def _stuff(data: Release) -> set[str]:
    """The labels the source marks as stuff (a panoptic file's ``isthing`` 0:
    ``source_categories.has_instances`` false) and as a thing nowhere, which the pages draw apart
    from things, whoever drew the region (the consensus too)."""
    if "source_categories" not in data.manifest.get("tables", {}):
        return set()
    rows = data.arrow("source_categories", ["label", "has_instances"]).to_pylist()
    marked = {str(r["label"]) for r in rows if r["label"] and r["has_instances"] is False}
    return marked - {str(r["label"]) for r in rows if r["label"] and r["has_instances"] is not False}


def _copy_images(out: Path, images: list[dict[str, Any]], files: dict[int, Path | bytes]) -> list[tuple[str, str]]:
    """Each image into ``img/`` (the raw tree's file linked where the file system allows, or the
    embedded bytes); returns the (image, thumbnail) path pairs to make."""
    jobs = []
    for row in images:
        image_id = int(row["image_id"])
        source = files[image_id]
        copy = out / "img" / f"{image_id}{Path(row['path']).suffix.lower()}"
        if isinstance(source, bytes):
            copy.write_bytes(source)
        else:
            try:
                os.link(source, copy)  # the raw tree's file itself, where the file system allows
            except OSError:
                shutil.copyfile(source, copy)
        jobs.append((str(copy), str(out / "thumb" / f"{image_id}.jpg")))
    return jobs


class Pages:
    """The per-image pages of a site: each image's layers (an annotator's regions), agreement,
    subsets, split, the run's score and what it said or drew; and the index entry of each."""

    def __init__(
        self,
        data: Release,
        regions: list[dict[str, Any]],
        colour: dict[str, str],
        labels: list[str],
        annotators: list[str],
        scores: dict[int, float],
        run: dict[str, Any],
    ) -> None:
        self.colour, self.scores = colour, scores
        self.preferred = {label: PALETTE.index(c) for label, c in colour.items() if c in PALETTE}
        self.by_region = len(labels) < 2  # a label-free or single-label release
        self.label_index = {label: k for k, label in enumerate(labels)}
        self.annotator_index = {name: k for k, name in enumerate(annotators)}
        vocabulary = data.arrow("vocabulary", ["label", "path"])
        self.paths = dict(zip(*(vocabulary.column(c).to_pylist() for c in ("label", "path")), strict=True))
        self.stuff = _stuff(data)
        self.agreement, self.subsets, self.relations = _agreement(data), _subsets(data), _relations(data)
        self.audits = _audits(data)
        self.predicted = {int(k): v for k, v in run.get("predicted", {}).items()}
        self.cells: dict[tuple[str, str], set[int]] = {}  # (true, predicted) label -> the images confusing them
        self.errors: dict[int, list[str]] = {}  # image -> TIDE's error types among its drawn detections
        self.drawn: dict[int, list[dict[str, Any]]] = {}
        self.counts: dict[str, int] = {}  # regions per label, as the pages are written
        self.regions_of: dict[int, list[dict[str, Any]]] = {}
        for r in regions:
            self.regions_of.setdefault(int(r["image_id"]), []).append(r)

    def layer(self, image_id: int, r: dict[str, Any]) -> dict[str, Any]:
        """One region as its annotator's layer draws it."""
        label = r["label"]
        return {
            "id": int(r["region_id"]),
            "label": label,
            "colour": self.colour.get(label, "#888888"),
            "path": r["path"],
            "crowd": bool(r.get("iscrowd")),
            "stuff": label in self.stuff,
            "hierarchy": str(self.paths.get(label) or ""),
            "area": _number(r["area_px"]),
            "features": {c: _number(r[c]) for c in tables.FEATURE_NAMES},
            "relations": self.relations.get((image_id, str(r["annotator"]), int(r["region_id"])), []),
        }

    def confused(self, image_id: int, mine: list[dict[str, Any]], drawn: list[dict[str, Any]] | None) -> None:
        """Note the (true, predicted) labels the run confuses in this image: a label map's
        pixels (each drawn label's ``truth`` under it), a region task's regions."""
        pairs: set[tuple[str, str]] = set()
        for shape in drawn or []:
            pairs |= {(t, shape["label"]) for t in shape["facts"].get("truth") or {} if shape["label"] is not None}
        said = self.predicted.get(image_id)
        if isinstance(said, dict):
            label = {f"{r['annotator']}/{r['region_id']}": r["label"] for r in mine}
            pairs |= {(label[key], p) for key, p in said.items() if key in label}
        for pair in pairs:
            if pair[0] != pair[1]:
                self.cells.setdefault(pair, set()).add(image_id)

    def write(self, out: Path, row: dict[str, Any]) -> list[Any]:
        """Image ``row``'s page data (``data/img/<id>.js``); returns its index entry."""
        image_id = int(row["image_id"])
        mine = self.regions_of.get(image_id, [])
        drawn = self.drawn.get(image_id)
        layers: dict[str, list[dict[str, Any]]] = {}
        for r in mine:
            self.counts[r["label"]] = self.counts.get(r["label"], 0) + 1
            layers.setdefault(str(r["annotator"]), []).append(self.layer(image_id, r))
        if self.by_region:  # no labels to tell apart: each region its colour
            keys = [f"{r['annotator']}/{r['region_id']}" for r in mine]
            colours = image_colours(keys, {key: k for k, key in enumerate(keys)})
            for annotator, regions in layers.items():
                for region in regions:
                    region["colour"] = colours[f"{annotator}/{region['id']}"]
        else:
            named = sorted({r["label"] for r in mine if r["label"] is not None})
            named += sorted({s["label"] for s in drawn or [] if s["label"] is not None} - set(named))
            colours = image_colours(named, self.preferred)
            for regions in layers.values():
                for region in regions:
                    region["colour"] = colours.get(region["label"], region["colour"])
            for shape in drawn or []:
                shape["colour"] = colours.get(shape["label"], shape["colour"])
        self.confused(image_id, mine, drawn)
        found = {ERROR_OF.get(str(shape["facts"].get("outcome"))) for shape in drawn or []}
        if found - {None}:
            self.errors[image_id] = sorted(found - {None}, key=ERROR_TYPES.index)  # type: ignore[arg-type]
        split = row.get("split") if isinstance(row.get("split"), str) else None
        caption = row.get("caption_title") if isinstance(row.get("caption_title"), str) else ""
        page = {
            "id": str(image_id), "width": int(row["width"]), "height": int(row["height"]),
            "src": f"img/{image_id}{Path(row['path']).suffix.lower()}", "caption": caption, "split": split,
            "layers": layers, "agreement": self.agreement.get(image_id), "score": self.scores.get(image_id),
            "predicted": self.predicted.get(image_id), "drawn": drawn,
            "audit": self.audits.get(image_id),
        }  # fmt: skip
        _js(out / "data" / "img" / f"{image_id}.js", "image", page)
        return [
            str(image_id),  # a string: a browser rounds integers past 2^53 (COCO ids hashed from names)
            sorted({self.label_index[r["label"]] for r in mine if r["label"] is not None}),
            sorted({self.annotator_index[str(r["annotator"])] for r in mine}),
            self.subsets.get(image_id, []),
            split,
            self.agreement.get(image_id),
            self.scores.get(image_id),
            _audit_flags(self.audits.get(image_id)),
        ]


def _audits(data: Release) -> dict[int, dict[str, Any]]:
    """Per image, what the release's audits say: its near-copies (id, distance, split) and its
    regions that are label-error candidates (a release made before the audits has neither)."""
    found: dict[int, dict[str, Any]] = {}
    names = data.manifest.get("tables", {})
    if "audit_duplicates" in names:
        rows = data.arrow(
            "audit_duplicates", ["group_id", "image_id", "nearest_image_id", "distance", "split"]
        ).to_pylist()
        members: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            members.setdefault(int(r["group_id"]), []).append(r)
        for group in members.values():
            for r in group:
                copies = [
                    {"id": str(o["image_id"]), "distance": int(o["distance"]), "split": o["split"]}
                    for o in group
                    if o["image_id"] != r["image_id"]
                ]
                found.setdefault(int(r["image_id"]), {})["copies"] = copies
    if "audit_labels" in names:
        columns = ["rank", "image_id", "region_id", "label", "suggested_label", "evidence"]
        for r in sorted(data.arrow("audit_labels", columns).to_pylist(), key=lambda r: r["rank"]):
            found.setdefault(int(r["image_id"]), {}).setdefault("candidates", []).append(
                {
                    "rank": int(r["rank"]),
                    "region": int(r["region_id"]),
                    "label": r["label"],
                    "suggested": r["suggested_label"],
                    "evidence": r["evidence"],
                }
            )
    return found


def _audit_flags(audit: dict[str, Any] | None) -> str:
    """An index entry's audit letters: d, a near-copy in the release; l, a label-error candidate."""
    if not audit:
        return ""
    return ("d" if audit.get("copies") else "") + ("l" if audit.get("candidates") else "")


def _charts(results: Path, out: Path) -> list[str]:
    """The card's figures (the release's ``results/*.svg``) copied into ``out``; their names."""
    names = []
    for svg in sorted(results.glob("*.svg")):
        shutil.copyfile(svg, out / svg.name)
        names.append(svg.name)
    return names


PER_CLASS = {  # a report's per-class figures and what the page calls them
    "per_category_ap": "AP", "per_class_iou": "IoU", "per_label_accuracy": "accuracy", "per_class": "",
}  # fmt: skip


def _flat(values: Any, prefix: str = "") -> dict[str, float]:
    """A report's figures, nested ones named by their path ("any e_hard"), the annotators' own
    (``per_annotator``) aside."""
    out: dict[str, float] = {}
    for key, value in values.items() if isinstance(values, dict) else []:
        if isinstance(value, dict) and key != "per_annotator":
            out |= _flat(value, f"{prefix}{key} ")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = value
    return out


def run_view(report: dict[str, Any], cells: dict[tuple[str, str], set[int]]) -> dict[str, Any]:
    """The run page's data, every figure the report's: the headline figures, each beside the
    humans' (``human_ceiling``) where the report has it; the per-class table (``PER_CLASS``);
    the confusion matrix (a label map's pixels, a region task's regions), each of its
    off-diagonal cells with the images that confuse so (``cells``, from the pages: ``link``,
    the index of the pair in their sorted order, as the index entries name it)."""
    ceiling = _flat(report.get("human_ceiling") or {})

    def humans(name: str) -> float | None:
        # BSDS gives its humans' one figure as their ODS and OIS both
        for candidate in (name, name.removesuffix(" ods").removesuffix(" ois"), name.split(" ", 1)[-1]):
            if candidate in ceiling and (candidate == name or {"ods", "ois"} & set(name.split())):
                return _number(ceiling[candidate])
        return None

    intervals = report.get("intervals") or {}

    def bounds(name: str) -> list[float] | None:
        found = intervals.get(name.replace(" ", "."))  # _flat names nested figures with spaces
        return [found["low"], found["high"]] if found and found.get("low") is not None else None

    headline = [
        [name, _number(value), humans(name), bounds(name)] for name, value in _flat(report.get("measures")).items()
    ]
    method = next(iter(intervals.values()), None)  # how every interval was made
    lacking = set(report.get("predicted_not_in_truth") or [])  # a label map's classes scored by rule

    def named(name: str) -> str:
        return f"{name} (not in the truth, predicted: IoU 0 in the mean)" if name in lacking else name

    per_class = None
    for key, figure in PER_CLASS.items():
        found = report.get(key)
        if isinstance(found, dict) and found and all(isinstance(v, dict) and "name" in v for v in found.values()):
            figures = {
                k: {c: x for c, x in v.items() if c != "name" and not isinstance(x, str)} for k, v in found.items()
            }
            found = {  # keyed by id, the name beside; a category with no figure (no instance) is left out
                f"{v['name']} (id {k})": figures[k]
                for k, v in found.items()
                if any(x is not None for x in figures[k].values())
            }
        if isinstance(found, dict) and found:
            first = next(iter(found.values()))
            columns = [figure] if not isinstance(first, dict) else [k for k in first if k != "thing"]
            rows = [
                [named(name), *([_number(v)] if not isinstance(v, dict) else [_number(v[c]) for c in columns])]
                for name, v in sorted(found.items())
            ]
            per_class = {"columns": columns, "rows": rows}
            break
    links = {pair: k for k, pair in enumerate(sorted(cells))}
    confusion = None
    given = report.get("confusion")
    if isinstance(given, dict) and given.get("labels"):
        labels = given["labels"]
        found_cells = given.get("cells")
        if found_cells is None:  # a region task's dense matrix
            matrix = np.asarray(given["matrix"], dtype=np.int64)
            found_cells = [[int(t), int(p), int(matrix[t, p])] for t, p in zip(*np.nonzero(matrix), strict=True)]
        confusion = {
            "labels": labels,
            "unit": "pixels" if report.get("task") == "semantic" else "regions",
            "cells": [[t, p, n, links.get((labels[t], labels[p]))] for t, p, n in found_cells],
        }
    return {
        "task": report.get("task"),
        "truth": report.get("truth"),
        "side": (report.get("scored") or {}).get("side"),
        "images": len(report.get("per_image") or {}),
        "headline": headline,
        "intervals": (
            f"[low, high]: {method['level']:.0%} intervals, {method['method']} ({method['resamples']} resamples, "
            f"seed {method['seed']})"
            if method
            else None
        ),
        "per_class": per_class,
        "confusion": confusion,
        "tide": tide_view(report.get("tide")),
    }


def compared_view(result: dict[str, Any]) -> dict[str, Any]:
    """The run page's comparison with another run (``scoring.compare.compare``): what was
    compared, and per headline measure B - A, its paired interval, p and the verdict line."""
    from regionbench.scoring import compare

    names = (str(result["a"]), str(result["b"]))
    return {
        "about": f"{result['b']} against {result['a']} (B - A): {result['method']}, {result['resamples']} resamples, "
        f"seed {result['seed']}, {result['images']} images",
        "rows": [
            [measure, row["difference"], row["low"], row["high"], row["p"], compare.verdict(measure, row, names)]
            for measure, row in result["measures"].items()
        ],
    }


# TIDE's error types, by the outcome a drawn shape names each by (a missed instance: Miss).
ERROR_TYPES = tide_errors.MAIN
ERROR_OF = {kind: kind for kind in ERROR_TYPES if kind != "Miss"} | {"missed": "Miss"}


def tide_view(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run page's TIDE section (``--tide``'s report): TIDE's AP50 and COCOeval's, each error
    type's dAP and count (``rows``, the page draws a bar of each dAP and links the images that
    have the type) and the FalsePos, FalseNeg dAP; None without it."""
    if not isinstance(found, dict) or "main" not in found:
        return None
    return {
        "ap": _number(found.get("ap")),
        "coco_ap50": _number(found.get("coco_ap50")),
        "rows": [
            [kind, _number(found["main"].get(kind)), int(found.get("counts", {}).get(kind, 0))] for kind in ERROR_TYPES
        ],
        "special": [[name, _number(value)] for name, value in found.get("special", {}).items()],
    }


RUN_CURVE = "run-precision-recall.svg"


def _run_charts(report: dict, out: Path) -> list[str]:
    """A run's precision-recall curves, drawn into ``out``: the boundaries task's (``curve``, its
    ODS point and the humans'), the instances task's (``pr_curves``, COCO's at IoU 0.5, 0.75 and
    over the thresholds); its name, or none."""
    curve, curves = report.get("curve"), report.get("pr_curves")
    if isinstance(curve, dict) and curve.get("recall"):
        ods, human = report.get("measures", {}).get("ods", {}), report.get("human_ceiling") or {}
        points = [(f"ODS F {ods['f']:.3f}", ods["recall"], ods["precision"], PALETTE[0])] if "recall" in ods else []
        if "recall" in human:
            points.append((f"humans F {human['f']:.3f}", human["recall"], human["precision"], PALETTE[1]))
        lines = [("boundaries", curve["recall"], curve["precision"], PALETTE[0])]
        svg = precision_recall_svg(lines, points, "Precision-recall of the boundaries", iso_f=True)
    elif isinstance(curves, dict) and curves.get("recall"):
        lines = [
            (f"{name} {np.mean(curves[name]):.3f}", curves["recall"], curves[name], PALETTE[k])
            for k, name in enumerate(("AP50", "AP75", "AP"))
        ]
        svg = precision_recall_svg(lines, [], "Precision-recall, the mean over the categories", iso_f=False)
    else:
        return []
    (out / RUN_CURVE).write_text(svg, encoding="utf-8")
    return [RUN_CURVE]


Line = tuple[str, list[float], list[float], str]  # name, recall, precision, colour


def precision_recall_svg(
    lines: list[Line], points: list[tuple[str, float, float, str]], title: str, iso_f: bool
) -> str:
    """Precision against recall as an SVG: each curve of ``lines`` and each point of ``points``
    (name, recall, precision, colour), named in a legend; iso-F lines at 0.1 steps where
    ``iso_f`` (as BSDS draws its curves). Hand-written (no plotting library in the client), the
    same bytes for the same report."""
    size, pad = 360, 40

    def xy(r: float, p: float) -> str:
        return f"{pad + r * size:.1f},{pad + (1 - p) * size:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size + 2 * pad + 150} {size + 2 * pad}" '
        f'width="{size + 2 * pad + 150}" height="{size + 2 * pad}" font-family="sans-serif" font-size="11">',
        f'<rect x="{pad}" y="{pad}" width="{size}" height="{size}" fill="white" stroke="#444"/>',
    ]
    for f in np.arange(0.1, 1.0, 0.1) if iso_f else []:  # iso-F: p = f r / (2 r - f), r from f/2 to 1
        r = np.linspace(f / 2 + 1e-3, 1, 60)
        p = f * r / (2 * r - f)
        keep = p <= 1
        polyline = " ".join(xy(a, b) for a, b in zip(r[keep], p[keep], strict=True))
        parts.append(f'<polyline points="{polyline}" fill="none" stroke="#ccc" stroke-width="0.6"/>')
    for k in range(6):
        v = k / 5
        parts.append(f'<text x="{pad + v * size:.1f}" y="{pad + size + 14}" text-anchor="middle">{v:.1f}</text>')
        parts.append(f'<text x="{pad - 4}" y="{pad + (1 - v) * size + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    legend = []
    for name, recall, precision, colour in lines:
        polyline = " ".join(xy(r, max(p, 0.0)) for r, p in zip(recall, precision, strict=True))
        parts.append(f'<polyline points="{polyline}" fill="none" stroke="{colour}" stroke-width="2"/>')
        legend.append((name, colour, "line"))
    for name, at_recall, at_precision, colour in points:
        cx, cy = xy(at_recall, at_precision).split(",")
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="4" fill="{colour}"/>')
        legend.append((name, colour, "point"))
    for k, (name, colour, kind) in enumerate(legend):
        y = pad + 12 + 18 * k
        mark = (
            f'<line x1="{pad + size + 12}" y1="{y - 4}" x2="{pad + size + 30}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>'
            if kind == "line"
            else f'<circle cx="{pad + size + 21}" cy="{y - 4}" r="4" fill="{colour}"/>'
        )
        parts += [mark, f'<text x="{pad + size + 36}" y="{y}">{_escape(name)}</text>']
    parts += [
        f'<text x="{pad + size / 2}" y="{pad - 14}" text-anchor="middle" font-size="13">{_escape(title)}</text>',
        f'<text x="{pad + size / 2}" y="{pad + size + 32}" text-anchor="middle">recall</text>',
        f'<text x="12" y="{pad + size / 2}" text-anchor="middle" transform="rotate(-90 12 {pad + size / 2})">'
        "precision</text>",
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _figures(results: Path) -> dict[str, Any]:
    """The card's headline figures beside its charts: the collection's agreement, when
    annotators were compared (the classifiers' results are a chart), the humans' ceiling on its
    concepts (SA-Co's cgF1, pmF1 and IL_MCC: ``concepts.json``) and the reference methods'
    table, as the card has it (``card.baseline_table``)."""
    from regionbench.release.card import CONCEPT_FIGURES, baseline_table

    found: dict[str, Any] = {}
    agreement = results / "agreement.json"
    if agreement.is_file():
        report = json.loads(agreement.read_text())
        found["agreement"] = {
            k: report[k] for k in ("fleiss_kappa", "krippendorff_alpha", "mean_iou", "pixel_kappa") if k in report
        }
    concepts = results / "concepts.json"
    if concepts.is_file() and (ceiling := json.loads(concepts.read_text()))["pairs"]:
        found["concepts"] = {
            f"human {k} (concepts)": ceiling[k] for k in CONCEPT_FIGURES if isinstance(ceiling.get(k), float)
        }
    header, rows = baseline_table(results / "baselines")
    if header:
        found["baselines"] = {"header": header, "rows": rows}
    return found
