"""The official spatial relations of a SAIAPR TC-12 tree: ``<root>/NN/spatial_rels/<image_id>.mat``
with the n x n code matrices ``topo``, ``x_rels`` and ``y_rels`` (docs/relations.md).

They are not ingested: the build computes its own relations from the masks. They are read to
compare with them (``parity``), and written by ``export-saiapr``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from regionbench.core import numbers
from regionbench.core.relations import GROUPS, Pairs
from regionbench.io import images as images_io
from regionbench.io.matlab import read_mat

FOLDER = "spatial_rels"

# Codes of the official spatial_rels/<id>.mat files (docs/relations.md), and which matrix
# holds which group.
CODES = {"adjacent": 1, "disjoint": 2, "beside": 3, "x_aligned": 4, "above": 5, "below": 6, "y_aligned": 7}
MATRICES = {"topo": "topological", "x_rels": "horizontal", "y_rels": "vertical"}


def code_matrices(
    i: np.ndarray, j: np.ndarray, values: Mapping[str, Sequence[str] | np.ndarray], n: int
) -> dict[str, np.ndarray]:
    """The official n x n code matrices ``topo``, ``x_rels``, ``y_rels``: entry [i, j] holds the
    code of the relation of region i + 1 to region j + 1 (``values``: group -> relation names,
    aligned with the 0-based ``i`` and ``j``); 0 on the diagonal and for absent pairs."""
    out = {}
    for name, group in MATRICES.items():
        m = np.zeros((n, n))
        m[np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)] = [CODES[v] for v in values[group]]
        out[name] = m
    return out


def pair_matrices(pairs: Pairs, n: int) -> dict[str, np.ndarray]:
    """The official n x n code matrices of one image's computed relations (``code_matrices``)."""
    values = {"topological": pairs.topological, "horizontal": pairs.horizontal, "vertical": pairs.vertical}
    return code_matrices(pairs.i, pairs.j, values, n)


def image_matrices(relations: pa.Table, sizes: dict[int, int]) -> dict[int, dict[str, np.ndarray]]:
    """The official code matrices (``code_matrices``) of every image of ``sizes`` (image id ->
    its highest region id) from a relations table of one annotator; an image without pairs gets
    zero matrices."""
    rows = relations.select(["image_id", "region_id", "other_region_id", *MATRICES.values()]).to_pydict()
    by_image: dict[int, list[int]] = {image_id: [] for image_id in sizes}
    for n, image_id in enumerate(rows["image_id"]):
        by_image[image_id].append(n)
    out = {}
    for image_id, members in sorted(by_image.items()):
        i = np.array([rows["region_id"][n] - 1 for n in members], dtype=np.int64)
        j = np.array([rows["other_region_id"][n] - 1 for n in members], dtype=np.int64)
        values = {group: [rows[group][n] for n in members] for group in MATRICES.values()}
        out[image_id] = code_matrices(i, j, values, sizes[image_id])
    return out


def _matrices(path: Path) -> dict[str, np.ndarray]:
    """The three code matrices of one file; raises ValueError with the reason."""
    try:
        variables = read_mat(path)
    except Exception as exc:  # scipy raises many types for corrupt files
        raise ValueError(f"unreadable MAT file: {exc}") from None
    missing = [name for name in MATRICES if name not in variables]
    if missing:
        raise ValueError(f"no variable {', '.join(missing)} (found: {', '.join(sorted(variables)) or 'none'})")
    out = {name: np.asarray(variables[name]) for name in MATRICES}
    shapes = {value.shape for value in out.values()}
    if len(shapes) != 1 or len(shape := shapes.pop()) != 2 or shape[0] != shape[1]:
        raise ValueError("topo, x_rels and y_rels must be square matrices of one size")
    if not all(np.issubdtype(value.dtype, np.number) for value in out.values()):
        raise ValueError("topo, x_rels and y_rels must be numeric matrices")
    return {name: value.astype(float) for name, value in out.items()}


def read_spatial_relations(root: str | Path) -> tuple[dict[int, dict[str, np.ndarray]], list[dict[str, str]]]:
    """Every ``<root>/NN/spatial_rels/<image_id>.mat`` of the tree.

    Returns image id -> ``{"topo", "x_rels", "y_rels"}`` matrices, and the files that could not
    be used as ``{"file": path relative to root, "reason": ...}``: unreadable or malformed
    files, names that are not an image id as written in the tree (ASCII digits, no leading
    zero), links out of the tree, and an image id found in two folders (both files).
    """
    root = Path(root)
    found: dict[int, list[tuple[str, dict[str, np.ndarray]]]] = {}
    problems = []
    for path in sorted(root.glob(f"*/{FOLDER}/*.mat")):
        name = path.relative_to(root).as_posix()
        stem = path.stem
        try:
            if not images_io.inside(root, path):
                raise ValueError("links outside the raw tree")
            if not numbers.is_canonical_id(stem):
                raise ValueError("the file name is not an image id (ASCII digits, no leading zero)")
            matrices = _matrices(path)
            found.setdefault(int(stem), []).append((name, matrices))
        except ValueError as exc:
            problems.append({"file": name, "reason": str(exc)})
    out = {}
    for image_id, files in sorted(found.items()):
        if len(files) > 1:
            reason = f"image {image_id} has relations in several folders"
            problems += [{"file": name, "reason": reason} for name, _ in files]
        else:
            out[image_id] = files[0][1]
    return out, sorted(problems, key=lambda p: p["file"])


def parity(official: dict[int, dict[str, np.ndarray]], computed: pa.Table, worst: int = 5) -> dict[Any, Any]:
    """Computed relations against the official ``spatial_rels`` matrices, per relation group.

    ``official``: image id -> ``{"topo", "x_rels", "y_rels"}`` n x n code matrices (entry
    [i - 1, j - 1] for the pair (i, j)); ``computed``: a relations table of one annotator.
    Returns the pairs compared, found on one side only, and per group the share of compared
    pairs with the same relation (``agreement``) and the (official, computed) confusion counts;
    codes outside the official ones read as ``code <v>``. ``worst_images`` lists the images with
    the most disagreeing values (ties by id).
    """
    names = {code: name for name, code in CODES.items()}
    rows = computed.select(["image_id", "region_id", "other_region_id", *GROUPS]).to_pydict()
    confusion: dict[str, dict[tuple[str, str], int]] = {group: {} for group in GROUPS}
    wrong: dict[int, int] = {}
    compared = only_computed = 0
    images = set()
    for n, image_id in enumerate(rows["image_id"]):
        i, j = rows["region_id"][n] - 1, rows["other_region_id"][n] - 1
        matrices = official.get(image_id)
        if matrices is None or i >= len(matrices["topo"]) or j >= len(matrices["topo"]):
            only_computed += 1
            continue
        compared += 1
        images.add(image_id)
        for matrix, group in MATRICES.items():
            code = float(matrices[matrix][i, j])
            theirs = names.get(int(code), f"code {code:g}") if code.is_integer() else f"code {code:g}"
            pair = (theirs, rows[group][n])
            confusion[group][pair] = confusion[group].get(pair, 0) + 1
            if pair[0] != pair[1]:
                wrong[image_id] = wrong.get(image_id, 0) + 1
    official_pairs = sum(len(m["topo"]) * (len(m["topo"]) - 1) for m in official.values())
    return {
        "images_compared": len(images),
        "pairs_compared": compared,
        "pairs_only_computed": only_computed,
        "pairs_only_official": official_pairs - compared,
        "groups": {
            group: {
                "agreement": sum(c for (a, b), c in confusion[group].items() if a == b) / compared if compared else 0.0,
                "confusion": [
                    {"official": a, "computed": b, "pairs": c} for (a, b), c in sorted(confusion[group].items())
                ],
            }
            for group in GROUPS
        },
        "worst_images": [
            {"image_id": image_id, "disagreements": count}
            for image_id, count in sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))[:worst]
        ],
    }
