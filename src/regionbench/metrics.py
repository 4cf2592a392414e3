"""Evaluation measures.

Region level (paper §4, SPEC §7): ``e_hard`` is the share of regions labelled exactly right;
soft accuracy the share whose e_hierarchy is below 1; ``mean_e`` the mean e_hierarchy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from regionbench.hierarchy import Hierarchy


def region_scores(tree: Hierarchy, true: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """e_hard accuracy, soft accuracy (e_hierarchy < 1) and mean e_hierarchy, in [0, 1]."""
    if len(true) == 0:
        return {"e_hard": 0.0, "soft": 0.0, "mean_e": 0.0}
    e = tree.e_hierarchy(list(true), list(pred))
    exact = np.asarray(true, dtype=object) == np.asarray(pred, dtype=object)
    return {"e_hard": float(exact.mean()), "soft": float((e < 1).mean()), "mean_e": float(e.mean())}
