"""Raw image files, whatever the layout: decoded and checked once, and kept inside their root."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

from PIL import Image


def inside(root: Path, path: Path) -> bool:
    """True when ``path`` (symlinks resolved) lies under ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def read_image(
    path: Path, max_pixels: int, formats: tuple[str, ...] | None = None, modes: tuple[str, ...] | None = None
) -> tuple[int, int, str, str]:
    """(width, height, mode, sha256) of a fully decoded image; raises ValueError with a reason.

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
    except ValueError:
        raise
    except (OSError, Image.DecompressionBombError, Image.DecompressionBombWarning, SyntaxError) as exc:
        raise ValueError(f"unreadable image: {exc}") from None
    return width, height, mode, hashlib.sha256(data).hexdigest()
