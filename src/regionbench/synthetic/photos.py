"""The photos of a generated label-map tree, as the collections ship theirs: JPEG at quality 90,
and every ``GRAY_EVERY``-th one grayscale (Pascal VOC and ADE20K carry a few single-channel
JPEGs among their colour ones; a reader must take both)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

GRAY_EVERY = 4  # image k is grayscale when k % GRAY_EVERY == GRAY_EVERY - 1


def jpeg(pixels: np.ndarray, k: int) -> bytes:
    """Image ``k``'s JPEG bytes of RGB ``pixels`` (grayscale for every ``GRAY_EVERY``-th ``k``)."""
    image = Image.fromarray(pixels)
    if k % GRAY_EVERY == GRAY_EVERY - 1:
        image = image.convert("L")
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()
