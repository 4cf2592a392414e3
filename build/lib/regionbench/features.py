"""Region features ``saiapr27``: the 27 features distributed with SAIAPR TC-12 (docs/features.md).

Image I is H x W x 3 uint8 (grayscale replicated to three channels), region mask M is a
boolean H x W array, and x = column + 1, y = row + 1 are MATLAB's 1-based pixel coordinates.

==== ================= =====================================================================
 #   name              definition
==== ================= =====================================================================
 1   area              |M| / (H W)
 2   width             (xmax - xmin + 1) / W
 3   height            (ymax - ymin + 1) / H
 4-5 mean_x, mean_y    mean of x over M / W, mean of y over M / H
 6-7 std_x, std_y      std of x over M / std of x over every pixel of the image; same for y
 8   boundary_area     pixels of M with a 4-neighbour outside M (off-image is outside) / |M|
 9   convexity         1 - |M| / (bbox width * bbox height), in pixels
10-18 rgb_{mean,std,skew}_{r,g,b}  over the pixels of M, values 0-255
19-27 lab_{mean,std,skew}_{l,a,b}  CIE-Lab without sRGB gamma (``lab``)
==== ================= =====================================================================

``std`` is MATLAB's: normalised by n - 1, and 0 for a single value. Skewness is MATLAB's
default ``skewness``: the population moments m3 / m2^1.5, and 0 when the variance is 0
(or only float rounding: a spread below 1e-10 of the values' scale).
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
from PIL import Image

from regionbench import geometry, tables
from regionbench.io.saiapr.text import num2str_tolerance

FEATURE_NAMES = tables.FEATURE_NAMES

# RGB -> XYZ (rows X, Y, Z) and the white point that normalises X and Z.
_RGB_TO_XYZ = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]])
_WHITE = np.array([0.950456, 1.0, 1.088754])
_EPS = 0.008856


def lab(rgb: np.ndarray) -> np.ndarray:
    """CIE-Lab of RGB values (..., 3) in 0-255, without sRGB gamma (docs/features.md).

    XYZ = (RGB / 255) T with X and Z divided by the white point; L = 116 Y^(1/3) - 16 when
    Y > 0.008856 else 903.3 Y; f(t) = t^(1/3) when t > 0.008856 else 7.787 t + 16/116;
    a = 500 (f(X) - f(Y)), b = 200 (f(Y) - f(Z)).
    """
    shape = np.shape(rgb)
    rgb = np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    # Element-wise sums rather than a matrix product: a 3x3 product gains nothing from BLAS,
    # whose threads would compete with the build's own parallel jobs.
    m = _RGB_TO_XYZ / (255.0 * _WHITE[:, None])
    xyz = np.empty_like(rgb)
    for k in range(3):
        xyz[:, k] = m[k, 0] * rgb[:, 0] + m[k, 1] * rgb[:, 1] + m[k, 2] * rgb[:, 2]
    f = np.cbrt(xyz)
    low = xyz <= _EPS  # dark values are few: fix them up in place instead of np.where
    f[low] = 7.787 * xyz[low] + 16.0 / 116.0
    out = np.empty_like(xyz)
    np.multiply(f[:, 1], 116.0, out=out[:, 0])
    out[:, 0] -= 16.0  # L = 116 cbrt(Y) - 16 where Y > eps, f(Y) being cbrt(Y) there
    dark = low[:, 1]
    out[dark, 0] = 903.3 * xyz[dark, 1]
    np.subtract(f[:, 0], f[:, 1], out=out[:, 1])
    out[:, 1] *= 500.0
    np.subtract(f[:, 1], f[:, 2], out=out[:, 2])
    out[:, 2] *= 200.0
    return out.reshape(shape)


def _moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise mean, MATLAB std (n - 1) and MATLAB skewness of a (k, n) array.

    Rows are contiguous samples, so every sum is a fast contiguous reduction.
    """
    n = values.shape[1]
    mean = values.sum(axis=1) / n
    centred = values - mean[:, None]
    squared = centred * centred  # products, not **: numpy's power is many times slower
    m2 = squared.sum(axis=1) / n
    m3 = (squared * centred).sum(axis=1) / n
    std = np.sqrt(m2 * n / (n - 1)) if n > 1 else np.zeros_like(mean)
    return mean, std, _skew(m2, m3, mean)


def _skew(m2: np.ndarray, m3: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """m3 / m2^1.5, and 0 where the variance is zero or only float rounding.

    Gray pixels have Lab a = b = 0 up to rounding (~1e-16); the skewness of that noise is
    meaningless, so a spread below 1e-10 of the values' scale counts as none.
    """
    flat = m2 <= (1e-10 * np.maximum(np.abs(mean), 1.0)) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(flat, 0.0, m3 / np.where(flat, 1.0, m2) ** 1.5)


def _image_std(n: int, other: int) -> float:
    """MATLAB std of the coordinates 1..n, each repeated ``other`` times (all image pixels)."""
    total = n * other
    population = (n * n - 1) / 12.0
    return float(np.sqrt(population * total / (total - 1))) if total > 1 else 0.0


def _weighted_moments(levels: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_moments`` of samples given as value levels (m,) and counts per row (k, m): exact, cheap."""
    n = weights.sum(axis=1)
    mean = weights @ levels / n
    centred = levels[None, :] - mean[:, None]
    squared = centred * centred
    m2 = (weights * squared).sum(axis=1) / n
    m3 = (weights * squared * centred).sum(axis=1) / n
    std = np.where(n > 1, np.sqrt(m2 * n / np.maximum(n - 1, 1)), 0.0)
    return mean, std, _skew(m2, m3, mean)


_LEVELS = np.arange(256, dtype=np.float64)


def _region(
    rgb: np.ndarray, lab_planes: np.ndarray, crop: np.ndarray, x0: int, y0: int, height: int, width: int
) -> np.ndarray:
    """Features of one region from its bounding-box crop and the RGB (h, w, 3) / Lab (3, h, w)
    pixels under the box. Coordinates and RGB values are integers, so their moments come from
    counts per column, row and 8-bit level."""
    bh, bw = crop.shape
    per_column = crop.sum(axis=0, dtype=np.float64)
    per_row = crop.sum(axis=1, dtype=np.float64)
    count = int(per_column.sum())
    mx, sx, _ = _weighted_moments(np.arange(x0 + 1, x0 + bw + 1, dtype=np.float64), per_column[None, :])
    my, sy, _ = _weighted_moments(np.arange(y0 + 1, y0 + bh + 1, dtype=np.float64), per_row[None, :])
    padded = np.pad(crop, 1)
    interior = crop & padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]
    shape = [
        count / (height * width),
        bw / width,
        bh / height,
        mx[0] / width,
        my[0] / height,
        sx[0] / _image_std(width, height),
        sy[0] / _image_std(height, width),
        (count - int(interior.sum())) / count,
        1.0 - count / (bw * bh),
    ]
    hist = np.stack([np.bincount(rgb[..., c][crop], minlength=256) for c in range(3)]).astype(np.float64)
    rgb_stats = _weighted_moments(_LEVELS, hist)
    lab_stats = _moments(np.stack([plane[crop] for plane in lab_planes]))
    return np.concatenate([shape, *rgb_stats, *lab_stats])


def as_rgb(image: np.ndarray) -> np.ndarray:
    """H x W x 3 uint8 view of an image; a grayscale image is replicated to three channels."""
    image = np.asarray(image)
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an H x W or H x W x 3 image, got shape {image.shape}")
    return image


def saiapr27(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The 27 features of one region, in ``FEATURE_NAMES`` order."""
    return image_features(image, [mask])[0]


def image_features(
    image: np.ndarray, masks: list[np.ndarray], boxes: list[tuple[int, int, int, int]] | None = None
) -> np.ndarray:
    """Features of every region of one image, (n, 27), in one pass over the decoded image.

    Lab is converted once for the pixels that any region covers; each region is then measured
    on its bounding-box crop. ``boxes`` (x, y, width, height), when known, save finding them.
    """
    rgb = as_rgb(image)
    height, width = rgb.shape[:2]
    out = np.empty((len(masks), len(FEATURE_NAMES)))
    if not masks:
        return out
    spans = []
    for i, mask in enumerate(masks):
        if mask.shape != (height, width):
            raise ValueError(f"mask {i} has shape {mask.shape}, image is {height}x{width}")
        x, y, w, h = geometry.bbox(mask) if boxes is None else boxes[i]
        spans.append((x, y, x + w, y + h))
    # Lab only where a region lies: the union of the boxes' rows and columns.
    r0, r1 = min(s[1] for s in spans), max(s[3] for s in spans)
    c0, c1 = min(s[0] for s in spans), max(s[2] for s in spans)
    window = rgb[r0:r1, c0:c1]
    lab_planes = np.ascontiguousarray(np.moveaxis(lab(window), 2, 0))  # gathers stay contiguous
    for i, (mask, (x0, y0, x1, y1)) in enumerate(zip(masks, spans, strict=True)):
        crop = mask[y0:y1, x0:x1]
        box = (slice(y0 - r0, y1 - r0), slice(x0 - c0, x1 - c0))
        out[i] = _region(window[box], lab_planes[(slice(None), *box)], crop, x0, y0, height, width)
    return out


def decode_image(source: str | Path | BinaryIO) -> np.ndarray:
    """Decoded RGB pixels of an image file (grayscale replicated to three channels)."""
    with Image.open(source) as im:
        return np.asarray(im.convert("RGB"))


def shard_features(raw_root: str | Path, images: pa.Table, regions: pa.Table) -> pa.Table:
    """Features of every region of an ingest shard: each image decoded once, masks from RLE."""
    paths = dict(zip(images.column("image_id").to_pylist(), images.column("path").to_pylist(), strict=True))
    cols = [*tables.REGION_KEY, "mask_rle", "bbox_x", "bbox_y", "bbox_w", "bbox_h"]
    keys: list[tuple] = []
    values = []
    # Regions arrive sorted by key, so each image's regions are consecutive.
    for image_id, group in groupby(regions.select(cols).to_pylist(), key=lambda r: r["image_id"]):
        group = list(group)
        pixels = decode_image(Path(raw_root) / paths[image_id])
        h, w = pixels.shape[:2]
        masks = [geometry.decode_rle(r["mask_rle"], h, w) for r in group]
        boxes = [(r["bbox_x"], r["bbox_y"], r["bbox_w"], r["bbox_h"]) for r in group]
        values.append(image_features(pixels, masks, boxes))
        keys += [(r["image_id"], r["annotator"], r["region_id"]) for r in group]
    matrix = np.concatenate(values) if values else np.empty((0, len(FEATURE_NAMES)))
    columns = {"image_id": [k[0] for k in keys], "annotator": [k[1] for k in keys], "region_id": [k[2] for k in keys]}
    columns.update({name: matrix[:, k] for k, name in enumerate(FEATURE_NAMES)})
    return pa.table(columns, schema=tables.FEATURES)


def parity(official: dict[tuple[int, int], np.ndarray], computed: pa.Table, worst: int = 5) -> dict:
    """Compare computed features with an official ``features.txt``.

    Per column: the largest |difference| and the largest that ``num2str`` rounding allows for
    those rows; ``excess`` counts values whose difference exceeds their rounding allowance.
    """
    keys = list(zip(computed.column("image_id").to_pylist(), computed.column("region_id").to_pylist(), strict=True))
    common = [k for k in keys if k in official]
    ours = np.column_stack([computed.column(name).to_numpy() for name in FEATURE_NAMES])
    index = {k: n for n, k in enumerate(keys)}
    mine = ours[[index[k] for k in common]] if common else np.empty((0, len(FEATURE_NAMES)))
    theirs = np.array([official[k] for k in common]) if common else np.empty((0, len(FEATURE_NAMES)))
    allowed = (
        np.array([num2str_tolerance(official[k]) for k in common]) if common else np.empty((0, len(FEATURE_NAMES)))
    )
    diff = np.abs(mine - theirs)
    excess = diff > allowed * (1 + 1e-9) + 1e-12
    row_excess = (diff / np.maximum(allowed, 1e-300)).max(axis=1) if common else np.empty(0)
    order = np.argsort(-row_excess, kind="stable")[:worst]
    return {
        "rows_compared": len(common),
        "rows_only_computed": len(keys) - len(common),
        "rows_only_official": len(set(official) - set(keys)),
        "columns": {
            name: {
                "max_abs_diff": float(diff[:, k].max(initial=0.0)),
                "max_rounding": float(allowed[:, k].max(initial=0.0)),
                "excess": int(excess[:, k].sum()),
            }
            for k, name in enumerate(FEATURE_NAMES)
        },
        "worst_rows": [
            {"image_id": common[n][0], "region_id": common[n][1], "diff_over_rounding": float(row_excess[n])}
            for n in order
        ],
    }
