"""What the label-map layouts share (``voc``, ``cityscapes``, ``ade20k``): reading a map PNG
exactly as stored, cutting it into one mask per value, and sharding a collection by runs of
image names. A label map is a PNG whose pixel value names a class or an instance; the layout
says which values mean what.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from regionbench.io.layouts import ImageRecord, Reading
from regionbench.io.shards import (
    Ledger,
    default_shard_size,
    files_state,
    image_row,
    region_row,
    shard_names,
    shard_report,
)


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


T = TypeVar("T")


def shard_runs(names: Sequence[T], shard_size: int | None) -> list[list[T]]:
    """``names`` (sorted) cut into shards of ``shard_size`` (None: ``default_shard_size``)."""
    size = shard_size or default_shard_size(len(names))
    return [list(names[k : k + size]) for k in range(0, len(names), size)]


def shard_run(items: Sequence[T], shard: str, shard_size: int | None) -> list[T]:
    """The items of shard ``shard`` (``shard_runs``); none past the last shard."""
    runs = shard_runs(items, shard_size)
    return runs[int(shard)] if int(shard) < len(runs) else []


@dataclass(frozen=True)
class Listed:
    """One image of a layout sharded by runs of images (``ImageRuns.listing``): ``name``, its key
    in the run; ``image``, its image file (relative to the root; None when only a map names it);
    ``files``, every file its shard's fingerprint covers (relative to the root; those that exist
    count)."""

    name: str
    image: str | None
    files: tuple[str, ...]


class ImageRuns(abc.ABC):
    """What the layouts sharded by runs of images share (``io.layouts.Layout`` members): from one
    ``listing`` of the tree (the layout's own), its shards, their fingerprints and image files;
    the shards a generated tree will have; no published features or relations. A layout that
    does not say how it lists its tree cannot be made (``abc``)."""

    @abc.abstractmethod
    def listing(self, root: Path) -> list[Listed]:
        """Every image of the tree, in shard order (the layout says how it lists its tree)."""

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        """Runs of images in ``listing`` order (``shard_runs``): a split of any size is cut into
        shards of bounded memory."""
        return shard_names(len(shard_runs(self.listing(Path(root)), shard_size)))

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """Per shard, the fingerprint of its images' files (``runs_state``)."""
        runs = shard_runs(self.listing(Path(root)), shard_size)
        files = {listed.name: list(listed.files) for run in runs for listed in run}
        return {
            s: runs_state(root, [listed.name for listed in runs[int(s)]], files.__getitem__)
            for s in shards
            if int(s) < len(runs)
        }

    def shard_images(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, list[str]]:
        """Per shard, its images' files."""
        runs = shard_runs(self.listing(Path(root)), shard_size)
        return {s: [i.image for i in runs[int(s)] if i.image is not None] for s in shards if int(s) < len(runs)}

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        return shard_names(len(shard_runs([""] * images, shard_size)))

    def official_features(self, root: Path) -> list[str]:
        return []

    def official_relations(self, root: Path) -> list[str]:
        return []


def runs_state(root: Path, run: Sequence[str], files_of: Callable[[str], list[str]]) -> str:
    """The fingerprint of a run of images: every file ``files_of(name)`` lists (paths relative to
    ``root``) that exists (``io.shards.files_state``)."""
    relatives = [f for name in run for f in files_of(name) if (Path(root) / f).exists()]
    return files_state(root, relatives)


@dataclass(frozen=True)
class Item:
    """One image of a label-map collection: ``name`` (its key in rejects), ``image`` and each
    annotator's ``maps`` (paths relative to the root; the image None when a map has no image),
    the collection's own ``split`` and the release's ``image_id``; ``copy_of`` the earlier item
    of the same name in another split (one image, one id: the copy is a reject); ``also`` the
    item's other files a format checks its maps against (``MapFormat.agrees``)."""

    name: str
    image: str | None
    maps: dict[str, str]
    split: str | None
    image_id: int
    copy_of: str | None = None  # an earlier item of the same image name (another split): this one is rejected
    also: tuple[str, ...] = ()  # other files of the item its reading checks (fingerprinted with it)

    @property
    def listed(self) -> Listed:
        """The item as ``ImageRuns.listing`` gives it: its image and maps fingerprinted."""
        files = tuple(p for p in (self.image, *sorted(self.maps.values()), *self.also) if p is not None)
        return Listed(self.name, self.image, files)


@dataclass(frozen=True)
class Meaning:
    """What one value of a map names: the source's class id, the vocabulary label, the source's
    own instance id (None for a class's pixels) and whether it is a group of objects (a thing
    class without an instance id: COCO's crowd)."""

    class_id: int
    label: str
    instance: int | None = None
    crowd: bool = False


class MapFormat(Protocol):
    """How a label-map layout reads its files: the Pillow formats and modes of its images and
    maps, the map values that are no region (unlabelled, void: the ignore mask, and the values
    of no object at all) and ``meaning``: a value's class and instance, or why it cannot be one."""

    image_formats: tuple[str, ...]
    image_modes: tuple[str, ...]
    map_modes: tuple[str, ...]
    ignore_values: tuple[int, ...]

    def meaning(self, value: int) -> Meaning | str: ...

    # Optionally, ``agrees(root, item, maps) -> (file, reason) | None``: whether other files of the
    # item (``Item.also``) say what its maps say; a ValueError for one that cannot be read.


class MapReader:
    """A shard of label-map ``items`` being read (``io.layouts.ShardReader``): per annotator a
    region per value of its map, the ignore values its ignore mask."""

    def __init__(
        self, root: Path, shard: str, items: Sequence[Item], reading: Reading, fmt: MapFormat, annotators: Sequence[str]
    ) -> None:
        self.root, self.shard, self.items, self.reading, self.fmt = Path(root), shard, items, reading, fmt
        self.ledger = Ledger(self.root)
        self.annotators = tuple(annotators)
        self.counts = {"images": [0, 0], **{a: [0, 0] for a in self.annotators}}  # seen, accepted

    def records(self) -> Iterator[ImageRecord]:
        fmt = self.fmt
        for item in self.items:
            self.counts["images"][0] += 1
            first = next(iter(sorted(item.maps.values())), item.name)
            if item.copy_of is not None:
                reason = f"the image name of {item.copy_of} again, in another split: an image is in one split"
                self.ledger.reject(item.image or first, item.name, "image", reason)
                continue
            if item.image is None and not item.maps:  # a name only a split list gives
                self.ledger.reject(
                    item.name,
                    item.name,
                    "image",
                    "a split list names it but neither its image nor its label map is in the tree",
                )
                continue
            if item.image is None:
                self.ledger.reject(first, item.name, "image", "a label map without its image")
                continue
            if not item.maps:
                self.ledger.reject(item.image, item.name, "image", "an image without a label map")
                continue
            try:
                image = self.reading.read_image(self.root, self.root / item.image, fmt.image_formats, fmt.image_modes)
                shape = (image.height, image.width)
                maps = {a: read_map(self.root / p, fmt.map_modes, shape) for a, p in sorted(item.maps.items())}
                problem = fmt.agrees(self.root, item, maps) if hasattr(fmt, "agrees") else None
            except ValueError as exc:
                self.ledger.reject(item.image, item.name, "image", str(exc))
                continue
            if problem is not None:  # a second file of the format says otherwise: the one to fix is named
                self.ledger.reject(problem[0], item.name, "image", problem[1])
                continue
            row = image_row(item.image_id, self.shard, item.image, image, item.split)
            found: list[tuple[dict[str, Any], np.ndarray | None]] = []
            ignore = {}
            for who, values in maps.items():
                ignore[who] = np.isin(values, fmt.ignore_values)
                for value, mask in masks_by_value(values, skip=fmt.ignore_values):
                    self._region(item, who, value, mask, row["image_id"], found)
            self.counts["images"][1] += 1
            yield ImageRecord(item.name, image, row, found, tuple(sorted(maps)), ignore=ignore)

    def _region(self, item: Item, who: str, value: int, mask: np.ndarray, image_id: int, found: list) -> None:  # type: ignore[type-arg]
        self.counts[who][0] += 1
        meaning = self.fmt.meaning(value)
        if isinstance(meaning, Meaning) and meaning.label not in self.reading.words:
            meaning = f"label {meaning.label!r} is not a vocabulary label; leave vocabulary_dir unset to take the format's classes"
        if isinstance(meaning, str):
            self.ledger.reject(item.maps[who], f"{item.name}/{who}/{value}", "region", meaning, who)
            return
        self.counts[who][1] += 1
        region_id = sum(1 for row, _ in found if row["annotator"] == who) + 1
        row = region_row(
            image_id, who, region_id, self.reading.words[meaning.label], meaning.label, mask,
            iscrowd=meaning.crowd, annotation_id=meaning.instance, category_id=meaning.class_id,
        )  # fmt: skip
        found.append((row, mask))

    def report(self) -> dict[str, Any]:
        """Images and regions per annotator: seen, accepted, rejected (``Layout`` contract)."""
        return shard_report(self.shard, self.counts, self.ledger)


def safe_label(name: str) -> str:
    """A format's class name as a vocabulary key: lower case, spaces as hyphens
    (``traffic light`` -> ``traffic-light``); the name itself stays in ``source_categories``."""
    return "-".join(name.strip().lower().split())


def export_annotator(present: set[str], default: str, annotator: str | None) -> str:
    """Whose regions an export of a one-annotator format writes: ``annotator`` when given, else
    the format's own (``default``), else the only annotator of the release (the consensus aside);
    an ``InputError`` naming the choices otherwise. ``present``: the annotators of the regions."""
    from regionbench.core.errors import InputError

    people = sorted(present - {"consensus"})
    who = annotator or (default if default in people else people[0] if len(people) == 1 else None)
    if who is None or who not in present:
        raise InputError(f"choose whose regions to export with --annotator (one of {', '.join(people)})")
    return who


def sampled_values(root: Path, items: Sequence[Item], annotator: str, most: int) -> Iterator[tuple[Path, set[int]]]:
    """(map, the values it holds) of up to ``most`` of ``items``' maps by ``annotator``, spread
    evenly over them: what a layout checks its class table against before a build reads the
    tree (a map that cannot be read is the shard's to reject, and skipped here)."""
    mapped = [item for item in items if annotator in item.maps]
    for item in mapped[:: max(1, len(mapped) // most)][:most]:
        path = Path(root) / item.maps[annotator]
        try:
            yield path, set(np.unique(read_map(path, ("L", "P", "I;16", "I"))).tolist())
        except ValueError:
            continue


def export_maps(
    release: Any,
    who: str,
    target: Callable[[dict[str, Any]], Path | None],
    value: Callable[[dict[str, Any]], int],
    fill: int,
    dtype: type,
) -> int:
    """Write ``who``'s regions back as one label map an image (what the label-map layouts'
    exports share): each image ``who`` covered has its map at ``target(image row)`` (None: not
    written), which holds each
    region's ``value(region row)`` over its mask, in region order, and ``fill`` where no region
    or the annotator's ignore mask lies; ``dtype`` the PNG's (uint8 or uint16). Returns the maps
    written. ``release``: ``io.layouts.ReleaseTables``."""
    from PIL import Image

    from regionbench.core import geometry

    columns = ["image_id", "annotator", "region_id", "label_id", "category_id", "annotation_id", "mask"]
    regions = [r for r in release.arrow("regions", columns).to_pylist() if r["annotator"] == who and r["mask"]]
    ignored = {
        r["image_id"]: r["ignore_mask"]
        for r in release.arrow("coverage", ["image_id", "annotator", "ignore_mask"]).to_pylist()
        if r["annotator"] == who and r["ignore_mask"] is not None
    }
    covered = {
        r["image_id"] for r in release.arrow("coverage", ["image_id", "annotator"]).to_pylist() if r["annotator"] == who
    }
    by_image: dict[int, list[dict[str, Any]]] = {}
    for r in regions:
        by_image.setdefault(r["image_id"], []).append(r)
    written = 0
    for row in sorted(release.arrow("images").to_pylist(), key=lambda r: r["image_id"]):
        path = target(row) if row["image_id"] in covered else None
        if path is None:
            continue
        values = np.full((row["height"], row["width"]), fill, dtype=dtype)
        for r in sorted(by_image.get(row["image_id"], []), key=lambda r: r["region_id"]):
            values[geometry.from_rle(r["mask"])] = value(r)
        if (mask := ignored.get(row["image_id"])) is not None:
            values[geometry.from_rle(mask)] = fill
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(values).save(path)
        written += 1
    return written
