"""Raw image files, whatever the layout: decoded and checked once, and kept inside their root."""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from collections import Counter
from collections.abc import Sequence
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


HEAD_BYTES = 4096  # files of one size are told apart by their first 4 KiB (an image's headers and first pixels) before whole reads


def copy_reason(first: str) -> str:
    """Why an image file that holds the bytes of the earlier ``first`` is rejected."""
    return f"the same bytes as {first} (a copy or a link of it): one image under two ids; keep one of the files"


def copies(root: str | Path, paths: Sequence[str]) -> dict[str, str]:
    """Each of ``paths`` (files relative to ``root``, in order) whose bytes are those of an
    earlier one -> the first of them: a byte copy, a hard link or a symbolic link of another
    image. Files are compared only with files of their size; one file under two names (a link)
    is known by its inode, others by the sha256 of their first ``HEAD_BYTES`` and then, where
    those agree, of the whole file. A path that is not a readable regular file is left to the
    reader, which rejects it with its own reason.

    Parameters: ``root`` the tree, ``paths`` its image files in the order their ids are given.
    Returns: later path -> first path, for every later copy."""
    root = os.fspath(root)
    by_size: dict[int, list[tuple[str, tuple[int, int]]]] = {}
    for relative in paths:
        try:
            found = os.stat(os.path.join(root, relative))  # follows a link to its file
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(found.st_mode):
            by_size.setdefault(found.st_size, []).append((relative, (found.st_dev, found.st_ino)))
    out: dict[str, str] = {}
    for group in by_size.values():
        if len(group) < 2:
            continue
        names: dict[tuple[int, int], str] = {}  # each file (inode) by its first path
        for relative, inode in group:
            names.setdefault(inode, relative)
        key: dict[tuple[int, int], object] = dict.fromkeys(names)
        if len(names) > 1:
            key = {inode: _digest(os.path.join(root, name), HEAD_BYTES) for inode, name in names.items()}
            heads = Counter(key.values())
            for inode, name in names.items():
                if heads[key[inode]] > 1:  # the heads agree: the whole files decide
                    key[inode] = _digest(os.path.join(root, name), None)
        first_of: dict[object, str] = {}
        for relative, inode in group:
            out_of = first_of.setdefault(key[inode], relative)
            if out_of != relative:
                out[relative] = out_of
    return out


def _digest(path: str, size: int | None) -> tuple[str, ...]:
    """sha256 of the file's first ``size`` bytes (None: all of it), tagged with ``size`` so
    that heads and wholes never compare equal; an unreadable file gives its own path."""
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read(size)) if size is not None else hashlib.file_digest(f, "sha256")
    except OSError:
        return ("unreadable", path)
    return (str(size), digest.hexdigest())
