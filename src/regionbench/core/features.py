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

from pathlib import Path
from typing import BinaryIO

import numpy as np
from PIL import Image

from regionbench.core import geometry, kernels, tables

FEATURE_NAMES = tables.FEATURE_NAMES


def lab(rgb: np.ndarray) -> np.ndarray:
    """CIE-Lab of 8-bit RGB values (..., 3), integers 0-255, without sRGB gamma (docs/features.md).

    XYZ = (RGB / 255) T with X and Z divided by the white point; L = 116 Y^(1/3) - 16 when
    Y > 0.008856 else 903.3 Y; f(t) = t^(1/3) when t > 0.008856 else 7.787 t + 16/116;
    a = 500 (f(X) - f(Y)), b = 200 (f(Y) - f(Z)). T and the white point are
    ``kernels.RGB_TO_XYZ`` and ``kernels.WHITE``; computed by ``kernels.lab_planes``.
    """
    values = np.asarray(rgb)
    eight = values.astype(np.uint8)
    if values.shape[-1:] != (3,) or not np.array_equal(eight, values):
        raise ValueError("lab takes 8-bit RGB values: integers 0-255 in a last axis of 3")
    planes = kernels.lab_planes(np.ascontiguousarray(eight.reshape(1, -1, 3)), kernels.XYZ)
    return np.ascontiguousarray(planes.reshape(3, -1).T).reshape(values.shape)


def _image_std(n: int, other: int) -> float:
    """MATLAB std of the coordinates 1..n, each repeated ``other`` times (all image pixels)."""
    total = n * other
    population = (n * n - 1) / 12.0
    return float(np.sqrt(population * total / (total - 1))) if total > 1 else 0.0


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


def image_features(image: np.ndarray, masks: list[np.ndarray], boxes: np.ndarray | None = None) -> np.ndarray:
    """Features of every region of one image, (n, 27) (``measure``)."""
    return measure(image, masks, boxes)[0]


def measure(
    image: np.ndarray, masks: list[np.ndarray], boxes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, 27) and pixel centroids (n, 2: x, y counted from 0) of every region of one
    image, by the compiled kernel (``regionbench.core.kernels``).

    Lab is converted once for the pixels that any region covers (the union of the boxes' rows
    and columns); each region is then one pass over its bounding box. ``boxes`` (x, y, width,
    height), when known, save finding them. Coordinates and RGB values are integers, so their
    moments come from counts per column, row and 8-bit level.
    """
    rgb = np.ascontiguousarray(as_rgb(image))
    height, width = rgb.shape[:2]
    if not masks:
        return np.empty((0, len(FEATURE_NAMES))), np.empty((0, 2))
    for i, mask in enumerate(masks):
        if mask.shape != (height, width):
            raise ValueError(f"mask {i} has shape {mask.shape}, image is {height}x{width}")
    spans = geometry.bboxes(masks, boxes)
    r0, r1 = int(spans[:, 1].min()), int((spans[:, 1] + spans[:, 3]).max())
    c0, c1 = int(spans[:, 0].min()), int((spans[:, 0] + spans[:, 2]).max())
    lab_window = kernels.lab_planes(np.ascontiguousarray(rgb[r0:r1, c0:c1]), kernels.XYZ)
    stacked = np.stack([np.asarray(m, dtype=bool) for m in masks])
    spread = np.array([_image_std(width, height), _image_std(height, width)])
    return kernels.region_features(rgb, lab_window, np.array([r0, c0]), stacked, spans, spread)


def decode_image(source: str | Path | BinaryIO) -> np.ndarray:
    """Decoded RGB pixels of an image file (grayscale replicated to three channels)."""
    with Image.open(source) as im:
        return np.asarray(im.convert("RGB"))
