"""Raw layouts: the file formats a collection arrives in, one module (or package) of
``regionbench.io`` each, found by name.

A layout module defines ``LAYOUT``, an object with the ``Layout`` methods: how a tree of that
format is recognised, split into shards and fingerprinted, and how one shard is read into
``ImageRecord``s (an accepted image and every annotator's regions of it) while each raw item it
cannot use goes to the shard's ``Ledger`` with its reason. ``registry`` scans the package, so a
new format is one new file: nothing else names the layouts. Consensus, features and relations
are not a layout's business: ``regionbench.pipeline.ingest`` derives them from the records of any layout.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from regionbench.core import plugins
from regionbench.core.hierarchy import Hierarchy
from regionbench.io.shards import MAX_IMAGE_PIXELS, IngestError, Ledger

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
    in name order (one who drew nothing covered it too), and ``source_ids`` the id each of them
    gives the image in their own file, where it differs from the release's numbering or may,
    and ``source_positions`` where their files list it (0 the first images entry, the files in
    name order), where they are files that list images; ``source_licenses`` the licence id each
    of their files gives the image (COCO's ``license``: an id of that file's ``licenses``, kept
    as given so an export names the same licence);
    ``ignore`` per annotator the pixels they marked as neither a region nor background (a
    label map's void), which scoring leaves out; ``federated`` per annotator what their file
    states of the image's categories beyond its regions (LVIS's ``neg_category_ids`` and
    ``not_exhaustive_category_ids``: ``coverage`` columns).
    """

    key: str
    image: DecodedImage
    row: dict[Any, Any]
    regions: Sequence[tuple[dict[Any, Any], np.ndarray | None]]
    covered_by: tuple[str, ...]
    known: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    source_ids: dict[str, int] = field(default_factory=dict)
    source_positions: dict[str, int] = field(default_factory=dict)
    source_licenses: dict[str, int] = field(default_factory=dict)
    ignore: dict[str, np.ndarray] = field(default_factory=dict)
    federated: dict[str, dict[str, list[int]]] = field(default_factory=dict)


@dataclass(frozen=True)
class About:
    """How a release's card and Croissant describe a collection of this layout.

    ``summary`` completes "A region-annotated image benchmark ..."; ``tag`` and ``keyword`` name
    the layout; ``name`` is the benchmark's whose layout it is (None: a layout many collections
    share); ``creators`` is Hugging Face's annotations_creators of a collected (not generated)
    tree; ``original`` the home of the benchmark whose layout it is, and ``source_dataset`` how a
    collected tree relates to it; ``citation`` its BibTeX (None: a release cites itself);
    ``fields`` what a release table's column means in this layout ("table.column" -> its
    description), over the table schemas' words for every layout; ``benchmark`` the label-map
    benchmark that scores a release of it (``client.benchmarks``: cityscapes, ade20k, voc; None:
    plain, every label); ``baselines`` the kind of reference methods a release of it is scored
    with (``regionbench.baselines``): ``segmentation`` where humans segment whole images without
    labels (the segmenters and edge detectors, scored as BSDS scores them), ``labels`` where a
    class is drawn at every pixel (the learnt pixel classifier), None (labelled regions: the
    reference classifiers); ``classifiers`` whether the recipe's reference classifiers (the
    SAIAPR grid over regions' features) run by default (``classifiers.enabled: auto``): the
    recipe's own layout, not a collection that brings its own benchmark; ``evaluation_splits``
    the collection's own splits its benchmark publishes figures on, first found first (BSDS500's
    test, COCO's val2017): the evaluation split where the config names none (``core.splits``;
    empty: the common names, test, val, validation, val*)."""

    summary: str
    tag: str
    keyword: str
    name: str | None = None
    creators: str = "found"
    original: str | None = None
    source_dataset: str = "original"
    citation: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    benchmark: str | None = None
    baselines: str | None = None
    classifiers: bool = False
    evaluation_splits: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reading:
    """What a layout may need to read a shard: ``words`` (vocabulary label -> id) and
    ``category_map`` (a source's category name -> label) for formats that name categories,
    ``max_image_pixels`` (larger images are rejected as decompression bombs) and
    ``shard_size`` (images per shard, for formats sharded by runs of images; None: the
    layout's default), ``pieces`` (the folder a layout that prepares its tree, ``prepare``,
    wrote its shard pieces to; None: the reader prepares what it needs itself) and ``copies``
    (an image file holding the same bytes as an earlier one of the tree -> that one, both
    relative to the root: ``io.images.copies``)."""

    words: Mapping[str, int] = field(default_factory=dict)
    max_image_pixels: int = MAX_IMAGE_PIXELS
    category_map: Mapping[str, str] = field(default_factory=dict)
    shard_size: int | None = None
    pieces: str | None = None
    copies: Mapping[str, str] = field(default_factory=dict)

    def read_image(
        self, root: Path, path: Path, formats: tuple[str, ...] | None = None, modes: tuple[str, ...] | None = None
    ) -> DecodedImage:
        """``io.images.read_image`` of ``path`` under ``root``, at most ``max_image_pixels``;
        raises ValueError with the reason, also when the file is a copy of an earlier image
        (two ids would carry the same pixels)."""
        from regionbench.io import images

        relative = path.relative_to(root).as_posix()
        if (first := self.copies.get(relative)) is not None:
            raise ValueError(images.copy_reason(first))
        return images.read_image(path, self.max_image_pixels, formats, modes)


class ShardReader(Protocol):
    """One shard being read: ``records`` yields its accepted images one at a time, and after
    them ``report`` counts every item seen (``images``, ``regions``, per annotator when the
    layout has several) and the layout's own findings; the ledger's quirks are added by ingest,
    which counts more of them."""

    @property
    def ledger(self) -> Ledger: ...

    @property
    def annotators(self) -> tuple[str, ...]: ...

    def records(self) -> Iterator[ImageRecord]: ...

    def report(self) -> dict[Any, Any]: ...


@runtime_checkable
class Layout(Protocol):
    """A raw format: what the workflow and ingest ask of every layout. ``expects`` says what a
    tree of it holds (for the error when none fits); ``official_measures`` which of "features"
    and "relations" its trees may publish (their parity with the computed ones is then checked,
    through ``PublishesMeasures``).

    Optional capabilities are their own contracts below: ``PreparesPieces`` (a layout whose files
    each hold every shard's items), ``NamesCategories`` (a vocabulary can be derived from a tree),
    ``PublishesMeasures`` and ``Exports`` (a release written back in the layout)."""

    name: str
    expects: str
    about: About
    official_measures: tuple[str, ...]

    def detect(self, root: Path) -> bool:
        """Whether ``root`` is a tree of this layout."""

    def check(self, root: Path) -> None:
        """Raise IngestError when ``root``, detected as this layout, cannot be read as one: the
        message completes "raw_dir <root> ..." (what it has, how to fix)."""

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        """The shard names of the tree, in order."""

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        """The shard names of a tree about to be generated: ``images`` images, and ``folders``
        the folders they will be written to."""

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """Per shard, a fingerprint of every raw file reading it depends on (its pieces aside,
        which the workflow tracks as files): it changes when one does."""

    def shard_images(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, list[str]]:
        """Per shard, the image files its reader decodes (paths relative to ``root``, in the
        reader's order): where the build looks for one image file under two ids."""

    def inputs(self, root: Path) -> list[str]:
        """Files every shard reads, for the workflow to track."""

    def annotators(self, root: Path) -> list[str]:
        """The annotators of the tree."""

    def official_features(self, root: Path) -> list[str]:
        """The tree's files of published region features (parity is checked against them)."""

    def official_relations(self, root: Path) -> list[str]:
        """The tree's files of published spatial relations."""

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> ShardReader:
        """A reader of one shard."""


@runtime_checkable
class PreparesPieces(Layout, Protocol):
    """A layout whose files each hold every shard's items (COCO: one file per annotator).
    ``prepare`` reads them once into per-shard pieces under ``out`` (``pieces``: the files each
    shard has there); the workflow runs it as one job before the shards, and each shard reads
    only its pieces (``Reading.pieces``). ``listing_state`` fingerprints what the shards' runs
    depend on besides the annotator files."""

    pieces: tuple[str, ...]

    def prepare(self, root: Path, out: Path, shard_size: int | None) -> dict[str, Any]:
        """Write the shards' pieces under ``out``; returns the preparation's report."""

    def listing_state(self, root: Path, shard_size: int | None) -> str:
        """A fingerprint of the listing the shards are cut from."""


@dataclass(frozen=True)
class TreeVocabulary:
    """What a tree's own categories give its vocabulary: ``labels`` (the hierarchy's, root
    aside), ``counts`` for the log, and ``ids``: label -> id where the source numbers its labels
    (SAIAPR's ``wlist.txt``), which the registry keeps; a numbered word that is not a label is
    kept reserved."""

    labels: list[str]
    counts: dict[str, int]
    ids: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class NamesCategories(Layout, Protocol):
    """A layout whose files name their categories: a build without a vocabulary folder derives
    its vocabulary from the tree (``pipeline.vocabulary.derive``), which writes the candidate
    lists, curation and id registry around the layout's hierarchy."""

    def category_files(self, root: Path) -> list[str]:
        """The files the tree's categories are read from (an edit rederives the vocabulary)."""

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """Each annotator's categories as the source names them: rows of the release table
        ``source_categories`` (annotator, category_id, name, supercategory, label: the
        vocabulary label of ``reading.words`` it maps to, or None)."""

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """Write ``hierarchy.yaml`` and ``category_names.tsv`` (each source name that is not a label
        as it stands, with its label) of the tree's categories under ``out``."""


@runtime_checkable
class PublishesMeasures(Layout, Protocol):
    """A layout whose trees may publish region features and spatial relations of their own,
    which the build compares with the ones it computes."""

    def read_official_features(self, paths: Sequence[str]) -> dict[tuple[int, int], np.ndarray]:
        """The published features by (image id, region id)."""

    def features_parity(self, official: dict[tuple[int, int], np.ndarray], computed: pa.Table) -> dict[str, Any]:
        """Computed features against the published ones."""

    def read_official_relations(self, root: Path) -> tuple[dict[int, dict[str, np.ndarray]], list[dict[str, str]]]:
        """The published relations by image, and the files that could not be used."""

    def relations_parity(self, official: dict[int, dict[str, np.ndarray]], computed: pa.Table) -> dict[str, Any]:
        """Computed relations against the published ones."""


@runtime_checkable
class DescribesSource(Layout, Protocol):
    """A layout whose files say what the collection is: its name, home page, citation or the
    licence of its images (``pipeline.source.describe``)."""

    def describe_source(self, root: Path) -> dict[str, str | None]:
        """What the tree's files state of ``name``, ``homepage``, ``citation`` and ``license``
        (None where they say nothing)."""


@runtime_checkable
class KeepsSourceFiles(Layout, Protocol):
    """A layout whose annotation files state things of themselves that its export writes back
    (COCO's ``info`` and ``licenses`` table, whose ids the images name): the release keeps them
    (manifest ``source_files``, ``pipeline.source.files``)."""

    def source_files(self, root: Path) -> list[dict[str, Any]]:
        """Each annotation file of the tree: ``annotator``, ``file`` (its path below the tree),
        ``split``, ``folder`` (what its images' or maps' names are below) and what it states of
        itself, as given (``info`` and ``licenses``; None where it has none)."""


class ReleaseTables(Protocol):
    """What an export reads of a release (``regionbench.release.loader.Release`` is one): its
    folder, its manifest, and its tables as Arrow, verified as the release was."""

    folder: Path
    manifest: dict[str, Any]

    def arrow(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """The table ``name`` (only ``columns``, when given)."""

    def image_sources(self, ids: list[int], root: str | Path | None = None) -> dict[int, Path | bytes]:
        """Where the pixels of images ``ids`` are: their files under the raw tree ``root``, else
        the release's embedded bytes; an ``InputError`` names an image without them."""


def image_files(release: ReleaseTables, images: Path, ids: list[int]) -> Iterator[tuple[int, bytes]]:
    """(image id, its bytes) of each of ``ids`` from the raw tree ``images`` (``image_sources``),
    each checked against the sha256 the release records: what every export copies images by."""
    import hashlib

    recorded = release.arrow("images", ["image_id", "sha256"]).to_pydict()
    sha = dict(zip(recorded["image_id"], recorded["sha256"], strict=True))
    for image_id, source in release.image_sources(ids, images).items():
        content = source.read_bytes() if isinstance(source, Path) else source
        if hashlib.sha256(content).hexdigest() != sha[image_id]:
            where = source if isinstance(source, Path) else f"image {image_id}"
            raise IngestError(
                f"{where}: not the image the release records (sha256); pass the raw tree it was built from"
            )
        yield image_id, content


# The images table's columns that say what the source said of an image's rights and origin:
# every export writes them where its format has a place, else beside its files (docs/releases.md).
CREDITS = ("license", "license_url", "url", "original_url", "attribution")


def image_credits(release: ReleaseTables) -> dict[int, dict[str, str | None]]:
    """Each image's ``CREDITS`` by image id (None in a column that a release made before it lacks)."""
    images = release.arrow("images")
    present = [c for c in CREDITS if c in images.column_names]
    rows = images.select(["image_id", *present]).to_pylist()
    return {row.pop("image_id"): dict.fromkeys(CREDITS) | row for row in rows}


@runtime_checkable
class Exports(Protocol):
    """A layout a release can be written back in (``regionbench export --format NAME``,
    ``regionbench.client.exports``), so tools of that format read the release. One whose files
    hold every image's ``CREDITS`` says so with ``carries_credits = True``; for any other the
    door writes them beside its files."""

    name: str

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """Write ``release`` under ``out`` (a new folder); with ``images`` (the raw tree) the image
        files too, each checked against its sha256; ``annotator``: whose regions (None: the
        format's default). Returns what was written, a line each."""


CAPABILITIES = (PreparesPieces, NamesCategories, DescribesSource, KeepsSourceFiles, PublishesMeasures, Exports)


def _members(protocol: type) -> dict[str, inspect.Signature | None]:
    """A contract's own members (a ``typing.Protocol``): methods with their signatures, attributes with None."""
    members: dict[str, inspect.Signature | None] = {}
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass.__module__ == "typing":
            continue
        members.update(dict.fromkeys(getattr(klass, "__annotations__", {})))
        for name, value in vars(klass).items():
            if inspect.isfunction(value) and not name.startswith("_"):
                members[name] = inspect.signature(value)
    return members


def contract_problems(layout: object) -> list[str]:
    """What ``layout`` lacks of ``Layout`` and of each capability it claims (any of
    ``CAPABILITIES`` whose members it has one of): a missing member, or a method whose
    parameters are not the contract's, by name and order. Empty: it keeps the contract."""
    problems = []
    own = _members(Layout).keys()
    claimed = [Layout] + [c for c in CAPABILITIES if any(hasattr(layout, m) for m in _members(c).keys() - own)]
    for protocol in claimed:
        for name, signature in _members(protocol).items():
            if not hasattr(layout, name):
                problems.append(f"{protocol.__name__}.{name} missing")
            elif signature is not None:
                found = list(inspect.signature(getattr(layout, name)).parameters)
                wanted = [p for p in signature.parameters if p != "self"]
                if found != wanted:
                    problems.append(f"{name}({', '.join(found)}) should be {name}({', '.join(wanted)})")
    return sorted(set(problems))


@cache
def registry() -> dict[str, Layout]:
    """Layout name -> layout: the ``LAYOUT`` of every module and package of ``regionbench.io``."""
    import regionbench.io as package

    def offered(module: ModuleType) -> Layout | None:  # a module of helpers offers none
        return getattr(module, "LAYOUT", None)

    return {
        layout.name: layout
        for _, layout in plugins.scan(package, offered, contract_problems, "Layout contract", IngestError)
    }


def get(name: str) -> Layout:
    """The layout called ``name``; raises IngestError listing the known ones."""
    layouts = registry()
    if name not in layouts:
        raise IngestError(f"unknown layout {name!r}; the layouts are {', '.join(sorted(layouts))}")
    return layouts[name]


def detect(root: str | Path, named: str | None = None) -> Layout:
    """The layout of the tree ``root``: the one layout that recognises it, or ``named`` (a
    layout name), which must recognise it. Raises IngestError, one line: a tree no layout
    recognises (saying what each expects), one that is not ``named``'s, and one that two
    layouts recognise (set ``layout`` to say which)."""
    root = Path(root)
    chosen = get(named) if named else None
    found = [layout for layout in registry().values() if layout.detect(root)]
    if chosen is not None and chosen not in found:
        holds = f"a {found[0].name} tree" if found else "no tree of any layout"
        raise IngestError(
            f"layout is {chosen.name} but {root} holds {holds}; remove layout (it is detected) "
            "or point raw_dir at a tree of that layout"
        )
    if chosen is not None:
        return chosen
    if not found:
        raise IngestError(f"{root} holds {expected()}; check raw_dir or set layout in the config")
    if len(found) > 1:
        names = [layout.name for layout in found]
        raise IngestError(
            f"{root} holds both {' and '.join(f'a {n} tree' for n in names)}; set layout to one of {', '.join(names)}"
        )
    return found[0]


def expected() -> str:
    """What a raw tree holds, layout by layout: "neither a coco tree (...) nor a saiapr tree (...)"."""
    return "neither " + " nor ".join(f"a {name} tree ({layout.expects})" for name, layout in sorted(registry().items()))
