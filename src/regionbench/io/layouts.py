"""Raw layouts: the file formats a collection arrives in, one module (or package) of
``regionbench.io`` each, found by name.

A layout module defines ``LAYOUT``, an object with the ``Layout`` methods: how a tree of that
format is recognised, split into shards and fingerprinted, and how one shard is read into
``ImageRecord``s (an accepted image and every annotator's regions of it) while each raw item it
cannot use goes to the shard's ``Ledger`` with its reason. ``registry`` scans the package, so a
new format is one new file: nothing else names the layouts. Consensus, features and relations
are not a layout's business: ``regionbench.build.ingest`` derives them from the records of any layout.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from regionbench.core.hierarchy import Hierarchy
from regionbench.io.shards import IngestError, Ledger

if TYPE_CHECKING:  # a type only: reading images needs Pillow, a build dependency
    from regionbench.io.images import DecodedImage


@dataclass
class ImageRecord:
    """One accepted image of a shard and every annotator's accepted regions of it.

    ``key`` names the image in rejects (its file name); ``row`` is its ``images`` row
    (``io.shards.image_row``), which the reader may still complete (captions) until its report
    is asked for; ``regions`` are ``regions`` rows (``io.shards.region_row``) with their boolean
    masks, None for a region a source file describes without a mask, whose features ``known``
    holds by (annotator, region id); ``covered_by`` are the annotators who looked at the image,
    in name order (one who drew nothing covered it too).
    """

    key: str
    image: DecodedImage
    row: dict
    regions: list[tuple[dict, np.ndarray | None]]
    covered_by: tuple[str, ...]
    known: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class About:
    """How a release's card and Croissant describe a collection of this layout.

    ``summary`` completes "A region-annotated image benchmark ..."; ``tag`` and ``keyword`` name
    the layout; ``creators`` is Hugging Face's annotations_creators of a collected (not generated)
    tree; ``original`` the home of the benchmark whose layout it is, and ``source_dataset`` how a
    collected tree relates to it; ``citation`` its BibTeX (None: a release cites itself)."""

    summary: str
    tag: str
    keyword: str
    creators: str = "found"
    original: str | None = None
    source_dataset: str = "original"
    citation: str | None = None


@dataclass(frozen=True)
class Reading:
    """What a layout may need to read a shard: ``words`` (vocabulary label -> id) and
    ``category_map`` (a source's category name -> label) for formats that name categories,
    ``max_image_pixels`` (larger images are rejected as decompression bombs) and
    ``shard_size`` (images per shard, for formats sharded by runs of images; None: the
    layout's default) and ``pieces`` (the folder a layout that prepares its tree, ``prepare``,
    wrote its shard pieces to; None: the reader prepares what it needs itself)."""

    words: Mapping[str, int] = field(default_factory=dict)
    max_image_pixels: int = 40_000_000
    category_map: Mapping[str, str] = field(default_factory=dict)
    shard_size: int | None = None
    pieces: str | None = None


class ShardReader(Protocol):
    """One shard being read: ``records`` yields its accepted images one at a time, and after
    them ``report`` counts every item seen (``images``, ``regions``, per annotator when the
    layout has several) and the layout's own findings; the ledger's quirks are added by ingest,
    which counts more of them."""

    ledger: Ledger
    annotators: tuple[str, ...]

    def records(self) -> Iterator[ImageRecord]: ...

    def report(self) -> dict: ...


class Layout(Protocol):
    """A raw format. ``expects`` says what a tree of it holds (for the error when none fits);
    ``official_measures`` which of "features" and "relations" its trees may publish (their parity
    with the computed ones is then checked); ``names_categories`` whether its files name the
    categories, so that a vocabulary can be derived from a tree (``write_vocabulary``).

    A layout whose files each hold every shard's items (COCO: one file per annotator) also has
    ``prepare(root, out, shard_size)``, which reads them once into per-shard pieces under
    ``out`` (``pieces``: the files each shard has there); the workflow runs it as one job
    before the shards, and each shard reads only its pieces (``Reading.pieces``)."""

    name: str
    expects: str
    about: About
    official_measures: tuple[str, ...]
    names_categories: bool

    def detect(self, root: Path) -> bool:
        """Whether ``root`` is a tree of this layout."""

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        """The shard names of the tree, in order."""

    def planned_shards(self, folders: Sequence[str], shard_size: int | None) -> list[str]:
        """The shard names of a tree about to be generated: ``folders`` has one entry per image,
        the folder it will be written to."""

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """Per shard, a fingerprint of every raw file reading it depends on (its pieces aside,
        which the workflow tracks as files): it changes when one does."""

    def inputs(self, root: Path) -> list[str]:
        """Files every shard reads, for the workflow to track."""

    def annotators(self, root: Path) -> list[str]:
        """The annotators of the tree."""

    def official_features(self, root: Path) -> list[str]:
        """The tree's files of published region features (parity is checked against them)."""

    def official_relations(self, root: Path) -> list[str]:
        """The tree's files of published spatial relations."""

    def check(self, root: Path) -> None:
        """Raise IngestError when ``root``, detected as this layout, cannot be read as one: the
        message completes "raw_dir <root> ..." (what it has, how to fix)."""

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> ShardReader:
        """A reader of one shard."""

    def synthetic_annotators(self, requested: int) -> int:
        """How many annotators a generated tree of this layout has when ``requested``."""


def prepares(layout: Layout) -> bool:
    """Whether ``layout`` prepares its trees into shard pieces (``Layout``'s ``prepare``)."""
    return callable(getattr(layout, "prepare", None))


@cache
def registry() -> dict[str, Layout]:
    """Layout name -> layout: the ``LAYOUT`` of every module and package of ``regionbench.io``."""
    import regionbench.io as package

    found: dict[str, Layout] = {}
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        layout = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "LAYOUT", None)
        if layout is not None:
            found[layout.name] = layout
    return found


def get(name: str) -> Layout:
    """The layout called ``name``; raises IngestError listing the known ones."""
    layouts = registry()
    if name not in layouts:
        raise IngestError(f"unknown layout {name!r}; the layouts are {', '.join(sorted(layouts))}")
    return layouts[name]


def detect(root: str | Path) -> Layout:
    """The one layout whose tree ``root`` is; raises IngestError saying what each expects."""
    root = Path(root)
    for layout in registry().values():
        if layout.detect(root):
            return layout
    raise IngestError(f"{root}: {expected()}; check raw_dir or set layout in the config")


def expected() -> str:
    """What a raw tree holds, layout by layout: "neither a coco tree (...) nor a saiapr tree (...)"."""
    return "neither " + " nor ".join(f"a {name} tree ({layout.expects})" for name, layout in sorted(registry().items()))
