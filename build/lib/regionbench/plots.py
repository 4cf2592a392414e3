"""Figures: the classifier comparison of the paper's Fig. 7."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pyarrow as pa

from regionbench.subsets import SUBSET_SIZES

# No dates or random ids in the files, so reruns give the same bytes.
plt.rcParams["svg.hashsalt"] = "regionbench"
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


def classifier_figure(summary: pa.Table, png: str | Path, svg: str | Path) -> None:
    """Two panels over subsets A-H: accuracy by e_hard (left) and soft accuracy (right),
    one line per classifier and baseline, as in the paper's Fig. 7."""
    rows = summary.to_pylist()
    subsets = [s for s in SUBSET_SIZES if any(r["subset"] == s for r in rows)]
    names = sorted({r["classifier"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    for ax, measure, title in zip(
        axes, ("e_hard", "soft"), ("Hard accuracy (e_hard)", "Soft accuracy (e_hierarchy < 1)"), strict=True
    ):
        for name in names:
            value = {r["subset"]: 100 * r[measure] for r in rows if r["classifier"] == name}
            style = "--" if name in ("random", "majority") else "-"
            ax.plot(subsets, [value.get(s) for s in subsets], style, marker="o", ms=3, label=name)
        ax.set_title(title)
        ax.set_xlabel("subset (A: 2 labels ... H: 100 labels)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("% of test regions")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(png, dpi=110, metadata=_METADATA["png"])
    fig.savefig(svg, metadata=_METADATA["svg"])
    plt.close(fig)
