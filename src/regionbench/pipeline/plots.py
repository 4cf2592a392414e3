"""Figures: the classifier comparison of the paper's Fig. 7, the label frequencies (the paper's
Fig. 6, Dutta et al.'s Fig. 1) and the annotators' agreement."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker
import numpy as np
import pyarrow as pa
from matplotlib import colormaps
from matplotlib.figure import Figure

from regionbench.pipeline.subsets import SUBSET_SIZES

# Figures are made without pyplot (``Figure``, saved by its own canvas): pyplot's global figure
# registry is not safe in the threads the light stages share (regionbench.pipeline.jobs).
# No dates or random ids in the files, so reruns give the same bytes.
matplotlib.rcParams["svg.hashsalt"] = "regionbench"
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: readable, searchable, and checked against the tables
_METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Producer": None, "Creator": None},
    "jpg": None,  # matplotlib writes no metadata of its own in a JPEG
    "jpeg": None,
}
PICTURE_FORMATS = tuple(f".{k}" for k in _METADATA)


def _save(fig: Figure, png: str | Path, svg: str | Path) -> None:
    """Write ``fig`` as PNG and SVG without dates or ids (the same bytes on every run)."""
    fig.savefig(png, dpi=110, metadata=_METADATA["png"])
    fig.savefig(svg, metadata=_METADATA["svg"])


def classifier_figure(summary: pa.Table, png: str | Path, svg: str | Path) -> None:
    """Two panels over subsets A-H: accuracy by e_hard (left) and soft accuracy (right),
    one line per classifier and baseline, as in the paper's Fig. 7."""
    rows = summary.to_pylist()
    subsets = [s for s in SUBSET_SIZES if any(r["subset"] == s for r in rows)]
    labels = {r["subset"]: r["n_labels"] for r in rows}  # the release's own, not the paper's sizes
    names = sorted({r["classifier"] for r in rows})
    fig = Figure(figsize=(11, 4.6))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, measure, title in zip(
        axes, ("e_hard", "soft"), ("Hard accuracy (e_hard)", "Soft accuracy (e_hierarchy < 1)"), strict=True
    ):
        for name in names:
            value = {r["subset"]: 100 * r[measure] for r in rows if r["classifier"] == name}
            style = "--" if name in ("random", "majority") else "-"
            ax.plot(subsets, [value.get(s) for s in subsets], style, marker="o", ms=3, label=name)
        ax.set_title(title)
        ax.set_xticks(range(len(subsets)), [f"{s}\n{labels[s]}" for s in subsets])
        ax.set_xlabel("subset, and the labels it holds")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("% of test regions")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    _save(fig, png, svg)


LABELS_SHOWN = 25
HISTOGRAM_LABELS = 50


def label_frequency_figure(histogram: list[dict], train: dict, png: str | Path, svg: str | Path) -> None:
    """Two panels. Left, the paper's Fig. 6: regions per label for the ``HISTOGRAM_LABELS`` most
    used labels (``histogram``, most used first). Right, Dutta et al.'s Fig. 1: training images
    per label of the image split (``collection.train_label_frequency``), sorted in decreasing
    order on a log scale, the long tail that makes frequent-label baselines score well."""
    fig = Figure(figsize=(12, 4.8))
    (left, right) = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    shown = histogram[:HISTOGRAM_LABELS]
    left.bar(range(len(shown)), [r["regions"] for r in shown], color="#4c72b0")
    left.set_xticks(range(len(shown)), [r["label"] for r in shown], rotation=90, fontsize=6)
    left.set_xlim(-0.8, max(len(shown), 1) - 0.2)
    left.set_title(f"Regions per label ({len(shown)} most used)")
    left.set_ylabel("regions")
    counts = [r["images"] for r in train["labels"]]
    right.plot(range(1, len(counts) + 1), counts, marker="o", ms=2, color="#dd8452")
    if any(counts):
        right.set_yscale("log")
        right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.set_title(f"Training images per label, subset {train['subset']} ({train['train_images']} images)")
    right.set_xlabel("label rank")
    right.set_ylabel("training images (log scale)")
    for ax in (left, right):
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    _save(fig, png, svg)


def agreement_figure(report: dict, png: str | Path, svg: str | Path) -> None:
    """Two panels from an ``agreement.summary`` report with several annotators. Left: the
    specific agreement of the ``LABELS_SHOWN`` most frequent labels (regions in brackets), or,
    when the segments carry no labels, each annotator's PRI and covering of the others. Right:
    the images agreed on least, by their mean measure over annotator pairs."""
    fig = Figure(figsize=(11, 6.4))
    (left, right) = fig.subplots(1, 2)
    if report["labelled"]:
        shown = report["per_label"][:LABELS_SHOWN][::-1]  # most frequent at the top
        left.barh(
            [f"{r['label']} ({r['regions']})" for r in shown], [r["specific_agreement"] for r in shown], color="#4c72b0"
        )
        left.set_title(f"Specific agreement per label ({min(LABELS_SHOWN, len(report['per_label']))} most frequent)")
        left.set_xlabel("2 n(both chose it, matched) / n(regions with it)")
    else:
        per = report["label_free"]["per_annotator"]
        names = sorted(per)[::-1]
        y = np.arange(len(names))
        left.barh(y + 0.2, [per[n]["pri"] for n in names], height=0.4, label="PRI", color="#4c72b0")
        left.barh(y - 0.2, [per[n]["covering"] for n in names], height=0.4, label="covering", color="#dd8452")
        left.set_yticks(y, names)
        left.legend(fontsize=8, frameon=False)
        left.set_title("Label-free agreement per annotator")
        left.set_xlabel("against the other annotators of each image")
    left.set_xlim(0, 1)
    left.tick_params(axis="y", labelsize=7)
    worst = report["worst_images"][::-1]
    measure = next(k for k in worst[0] if k != "image_id") if worst else "pixel_kappa"
    right.barh([str(r["image_id"]) for r in worst], [r[measure] for r in worst], color="#c44e52")
    right.set_title(f"Images agreed on least ({measure}, mean over pairs)")
    right.set_xlabel(measure)
    right.set_ylabel("image id")
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, png, svg)


def relation_figure(stats: pa.Table, png: str | Path, svg: str | Path) -> None:
    """Each relation's share of the ordered region pairs of its group (each group holds every
    pair once: ``share_of_pairs`` of ``relations.relation_stats``): one panel per group."""
    rows = stats.to_pylist()
    groups = list(dict.fromkeys(r["group"] for r in rows))
    fig = Figure(figsize=(3.8 * len(groups), 2.8))
    axes = fig.subplots(1, len(groups), squeeze=False)
    for ax, group in zip(axes[0], groups, strict=True):
        mine = [r for r in rows if r["group"] == group][::-1]
        ax.barh([r["relation"] for r in mine], [100 * r["share_of_pairs"] for r in mine], color="#55a868")
        for i, r in enumerate(mine):
            ax.text(100 * r["share_of_pairs"] + 1, i, f"{100 * r['share_of_pairs']:.1f} %", va="center", fontsize=7)
        ax.set_xlim(0, 115)
        ax.set_title(f"{group} relations")
        ax.set_xlabel("% of ordered region pairs")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, png, svg)


def region_colours(panels: list[dict]) -> list[list[np.ndarray]]:
    """The RGB colour (floats in [0, 1]) of each region of each panel: one colour per label
    across the panels, or, when the regions carry fewer than two labels (a label-free
    collection), one colour per region of a panel, so that neighbouring segments stand apart."""
    palette = colormaps["tab20"]
    labels = sorted({label for p in panels for label, _ in p["masks"]})
    if len(labels) >= 2:
        colour = {label: np.array(palette(i % 20)[:3]) for i, label in enumerate(labels)}
        return [[colour[label] for label, _ in p["masks"]] for p in panels]
    return [[np.array(palette(k % 20)[:3]) for k in range(len(p["masks"]))] for p in panels]


def release_images(panels: list[dict], out: str | Path) -> None:
    """A grid of images with their regions coloured (``region_colours``) and their captions,
    written to ``out`` in the format its suffix names (``PICTURE_FORMATS``).

    Each panel is a dict: ``pixels`` (h, w, 3) uint8, ``masks`` a list of (label, boolean
    mask), ``title`` (the image id and caption).
    """
    colours = region_colours(panels)
    cols = min(len(panels), 2)
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(6 * cols, 4.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, panel, colour in zip(axes.ravel(), panels, colours, strict=False):
        shown = panel["pixels"].astype(float) / 255
        for (_, mask), rgb in zip(panel["masks"], colour, strict=True):
            shown[mask] = 0.5 * shown[mask] + 0.5 * rgb
        ax.imshow(shown, interpolation="nearest")
        for label, mask in panel["masks"]:
            rows_, cols_ = np.nonzero(mask)
            if rows_.size:
                ax.text(cols_.mean(), rows_.mean(), label, ha="center", va="center", fontsize=7,
                        bbox={"facecolor": "white", "alpha": 0.7, "pad": 1, "edgecolor": "none"})  # fmt: skip
        ax.set_title(panel["title"], fontsize=8, wrap=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=_METADATA[Path(out).suffix.lower().lstrip(".")])
