"""The NumPy implementation of the saiapr27 features that the compiled kernel replaced: the
reference the kernel is tested against (to 1e-12 relative), kept out of the library."""

from __future__ import annotations

import numpy as np

from regionbench.core import geometry
from regionbench.core.features import FEATURE_NAMES, as_rgb

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


def image_std(n: int, other: int) -> float:
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
        sx[0] / image_std(width, height),
        sy[0] / image_std(height, width),
        (count - int(interior.sum())) / count,
        1.0 - count / (bw * bh),
    ]
    hist = np.stack([np.bincount(rgb[..., c][crop], minlength=256) for c in range(3)]).astype(np.float64)
    rgb_stats = _weighted_moments(_LEVELS, hist)
    lab_stats = _moments(np.stack([plane[crop] for plane in lab_planes]))
    return np.concatenate([shape, *rgb_stats, *lab_stats])


def reference_image_features(
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
