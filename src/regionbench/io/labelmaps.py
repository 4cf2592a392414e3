"""What the label-map layouts share (``voc``, ``cityscapes``, ``ade20k``): reading a map PNG
exactly as stored, cutting it into one mask per value, and sharding a collection by runs of
image names. A label map is a PNG whose pixel value names a class or an instance; the layout
says which values mean what.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from regionbench.io.coco.split import default_shard_size
from regionbench.io.shards import files_state


def read_map(path: Path, modes: Sequence[str], shape: tuple[int, int] | None = None) -> np.ndarray:
    """The values of the label map at ``path`` as stored (a palette PNG's indices, a 16-bit
    PNG's integers, never converted to colours); raises ValueError with a reason.

    Parameters: ``modes`` the Pillow modes the format defines (``P`` palette, ``L`` 8-bit,
    ``I;16`` or ``I`` 16-bit); ``shape`` (height, width) of its image, which the map must match."""
    from PIL import Image

    name = path.name
    if not path.is_file():
        raise ValueError(f"{name} is missing")
    try:
        with Image.open(path) as im:
            if im.format != "PNG":
                raise ValueError(f"{name} is a {im.format or 'non-image'} file, not a PNG")
            if im.mode not in modes:
                raise ValueError(f"{name} is a PNG in mode {im.mode}; the format's maps are {' or '.join(modes)}")
            if shape is not None and (im.height, im.width) != tuple(shape):
                raise ValueError(f"{name} is {im.width}x{im.height}, its image {shape[1]}x{shape[0]}")
            values = np.asarray(im)
    except (OSError, SyntaxError) as exc:  # Pillow's word for a truncated or corrupt file
        raise ValueError(f"{name} cannot be decoded ({' '.join(str(exc).split())})") from None
    return values


def masks_by_value(values: np.ndarray, skip: Sequence[int] = ()) -> list[tuple[int, np.ndarray]]:
    """(value, its boolean mask) for every value in the map but ``skip``, ascending.

    One sort of the pixels instead of one comparison of the whole map per value: a Cityscapes
    map of 2 million pixels holds a hundred instances."""
    flat = values.ravel()
    order = np.argsort(flat, kind="stable")
    found, starts = np.unique(flat[order], return_index=True)
    ends = np.append(starts[1:], flat.size)
    out = []
    for value, start, end in zip(found.tolist(), starts.tolist(), ends.tolist(), strict=True):
        if value in skip:
            continue
        mask = np.zeros(flat.size, dtype=bool)
        mask[order[start:end]] = True
        out.append((int(value), mask.reshape(values.shape)))
    return out


def shard_runs(names: Sequence[str], shard_size: int | None) -> list[list[str]]:
    """``names`` (sorted) cut into shards of ``shard_size`` (None: ``default_shard_size``)."""
    size = shard_size or default_shard_size(len(names))
    return [list(names[k : k + size]) for k in range(0, len(names), size)]


def shard_names(count: int) -> list[str]:
    """The workflow's names of ``count`` shards: 00, 01, ..."""
    return [f"{k:02d}" for k in range(count)]


def runs_state(root: Path, run: Sequence[str], files_of: Callable[[str], list[str]]) -> str:
    """The fingerprint of a run of images: every file ``files_of(name)`` lists (paths relative to
    ``root``) that exists (``io.shards.files_state``)."""
    relatives = [f for name in run for f in files_of(name) if (Path(root) / f).exists()]
    return files_state(root, relatives)
