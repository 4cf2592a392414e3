"""Raw image files, whatever the layout: decoded and checked once, and kept inside their root."""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

EXIF_ORIENTATION = 0x0112


def inside(root: str | Path, path: str | Path) -> bool:
    """True when ``path`` (symlinks resolved) lies under ``root`` (symlinks resolved).

    A path written under ``root`` with no link among its parts below ``root`` is inside it,
    whatever links lead to ``root``: those parts are checked one ``lstat`` each. Only a path
    with such a link, a ``..`` or written elsewhere is resolved whole (a resolve walks every
    part of both paths from ``/``: 0.4 s of a 488-image folder's ingest)."""
    root, path = os.fspath(root), os.fspath(path)
    prefix = root.rstrip("/") + "/"
    if path.startswith(prefix):
        parts = path[len(prefix) :].split("/")
        if ".." not in parts:
            walked = prefix[:-1]
            for part in parts:
                walked = f"{walked}/{part}"
                if part and os.path.islink(walked):
                    break
            else:
                return True
    return Path(path).resolve().is_relative_to(Path(root).resolve())


@dataclass(frozen=True)
class DecodedImage:
    """A raw image file read once: its description and its RGB pixels (H x W x 3 uint8, a gray
    image replicated to three channels), which the features and relations are measured on."""

    width: int
    height: int
    mode: str
    sha256: str
    pixels: np.ndarray
    orientation: int = 1  # the EXIF orientation tag: pixels are as stored, never turned (masks are drawn on them)


def read_image(
    path: Path, max_pixels: int, formats: tuple[str, ...] | None = None, modes: tuple[str, ...] | None = None
) -> DecodedImage:
    """The fully decoded image at ``path``; raises ValueError with a reason.

    ``formats`` (Pillow format names) and ``modes`` (Pillow modes), when given, are the only
    ones accepted: a PNG named ``.jpg`` or a CMYK JPEG is then a reason, not a silent image."""
    data = path.read_bytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                width, height = im.size
                if width * height > max_pixels:
                    raise ValueError(f"decompression bomb: {width}x{height} exceeds max_image_pixels={max_pixels}")
                if formats is not None and im.format not in formats:
                    raise ValueError(
                        f"a {im.format or 'non-image'} file named {path.suffix}; convert it to {' or '.join(formats)}"
                    )
                if modes is not None and im.mode not in modes:
                    raise ValueError(
                        f"{im.format} in mode {im.mode}; the collection takes {', '.join(modes)} images: convert it"
                    )
                im.load()
                mode = im.mode
                orientation = im.getexif().get(EXIF_ORIENTATION, 1)
                pixels = np.asarray(im.convert("RGB"))
    except ValueError:
        raise
    except (OSError, Image.DecompressionBombError, Image.DecompressionBombWarning, SyntaxError) as exc:
        raise ValueError(f"unreadable image: {exc}") from None
    turned = orientation if isinstance(orientation, int) and 1 <= orientation <= 8 else 1
    return DecodedImage(width, height, mode, hashlib.sha256(data).hexdigest(), pixels, turned)
