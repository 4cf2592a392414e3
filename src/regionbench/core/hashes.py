"""Perceptual hashes of an image: 64 bits that change little when the image is re-encoded,
resized, cropped a little or made brighter, so near-copies are found by Hamming distance.

Both are ``imagehash``'s (4.3), computed from the pixels ingest has already decoded rather than
from a file, with one change for speed: the grey image is resized with Pillow's
``reducing_gap=2.0`` (box-averaged by an integer factor to at least twice the hash's size, then
Lanczos), not Lanczos from the full size. That is 0.6 ms instead of 1.8 ms for a 500x375 image,
and a hash within a bit or two of imagehash's (``benchmarks/duplicates.py``); a test checks that
each equals imagehash's hash of the box-reduced image, bit for bit.

- ``phash`` (DCT hash, Zauner 2010): the grey image resized to 32x32 (Lanczos), its 2-D DCT-II,
  the 8x8 lowest frequencies; a bit is 1 where the coefficient exceeds their median.
- ``dhash`` (difference hash, Krawetz 2013): the grey image resized to 9x8; a bit is 1 where a
  pixel is brighter than its left neighbour.

A hash is written as 16 hex digits, the first row's bits most significant (imagehash's ``str``).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

BITS = 64
REDUCING_GAP = 2.0  # Pillow's resize(reducing_gap=...): the speed-up above


def _grey(pixels: np.ndarray) -> Image.Image:
    return Image.fromarray(pixels).convert("L")


def _hex(bits: np.ndarray) -> str:
    return f"{int(''.join('1' if b else '0' for b in bits.ravel()), 2):016x}"


def phash(grey: Image.Image) -> str:
    """The DCT hash of a grey (mode L) image, 16 hex digits."""
    # scipy's fftpack, as imagehash: a flat image's coefficients are rounding noise around their
    # median, and another DCT's noise would set other bits. Imported here: hashes are made at
    # ingest, and the client (which reads them) has no scipy.
    from scipy import fftpack

    small = np.asarray(grey.resize((32, 32), Image.Resampling.LANCZOS, reducing_gap=REDUCING_GAP))
    low = fftpack.dct(fftpack.dct(small, axis=0), axis=1)[:8, :8]
    return _hex(low > np.median(low))


def dhash(grey: Image.Image) -> str:
    """The difference hash of a grey (mode L) image, 16 hex digits."""
    small = np.asarray(grey.resize((9, 8), Image.Resampling.LANCZOS, reducing_gap=REDUCING_GAP), dtype=np.int16)
    return _hex(small[:, 1:] > small[:, :-1])


def image_hashes(pixels: np.ndarray) -> tuple[str, str]:
    """``(phash, dhash)`` of decoded pixels (H x W x 3 RGB, or H x W grey, uint8)."""
    grey = _grey(pixels)
    return phash(grey), dhash(grey)
