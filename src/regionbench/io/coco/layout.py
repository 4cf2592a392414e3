"""The COCO layout as a ``regionbench.io.layouts.Layout``: a shard is a run of image file names."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from regionbench.core.hierarchy import Hierarchy
from regionbench.io.coco import split
from regionbench.io.coco.ingest import ShardReader, annotators, check_sources, sources
from regionbench.io.layouts import (
    About,
    DescribesSource,
    Exports,
    KeepsSourceFiles,
    NamesCategories,
    PreparesPieces,
    Reading,
    ReleaseTables,
    TreeVocabulary,
)
from regionbench.io.shards import default_shard_size, files_state, shard_names


class CocoLayout(PreparesPieces, NamesCategories, DescribesSource, KeepsSourceFiles, Exports):
    """``images/`` and one COCO instances file per annotator, ``annotations/<annotator>.json``; or
    COCO's and LVIS's own tree: split folders and one file per split (``split.shape``)."""

    name = "coco"
    carries_credits = True  # its images entries and licenses table hold every image's licence and addresses
    expects = (
        "images/ and annotations/<annotator>.json, or COCO's own train2017/, val2017/ and "
        "annotations/instances_<split>.json (LVIS: annotations/lvis_v1_<split>.json)"
    )
    about = About(
        summary=(
            "from COCO instances files: COCO as distributed (`train2017/`, `val2017/` and an instances file "
            "per split, its ids as the files give them), or annotation-tool exports in the COCO layout "
            "(`images/` and an instances file per annotator; an image's id the number its file name carries, "
            "else the first 63 bits of the sha256 of its file name)"
        ),
        tag="coco",
        keyword="COCO",
        fields={
            "images.image_id": "image id: the number its file name carries, else the first 63 bits of sha256(file name);"
            " the id each annotator's file gives it is coverage.source_image_id",
            "images.folder": "the shard of the raw tree: its run of file names (00, 01, ...)",
            "images.caption_title": "null: the COCO layout has no captions",
            "regions.label_id": "id of the label in the vocabulary (vocabulary.label_id); the category id of the "
            "annotator's file is category_id",
            "coverage.neg_category_ids": "an LVIS file's neg_category_ids of the image: the categories verified absent",
            "coverage.not_exhaustive_category_ids": "an LVIS file's not_exhaustive_category_ids of the image: "
            "categories present whose every instance is not annotated",
        },
        evaluation_splits=("val2017", "val2014"),  # COCO's published figures (LVIS: val, by the common names)
    )
    official_measures = ()

    def detect(self, root: Path) -> bool:
        the_shape = split.shape(root)
        if any(split.holds_pairs(source.path) for source in the_shape.sources):
            return False  # SA-Co's pairs files: the saco layout's
        return bool(the_shape.sources) and (not the_shape.distributed or bool(the_shape.folders))

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are ingest's to report."""

    pieces = split.PIECES

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        """Runs of ``shard_size`` image files, from the listing of the image folders alone."""
        return split.plan(root, shard_size).names()

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        return shard_names(split.shard_count(images, shard_size or default_shard_size(images)))

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """The files of each shard's run of images (``io.shards.files_state``); what the annotator files
        say of a shard is in its pieces, which ``prepare`` rewrites only when they change."""
        the_plan = split.plan(root, shard_size)
        base = the_plan.shape.base
        return {shard: files_state(root, [f"{base}{name}" for name in the_plan.run(int(shard))]) for shard in shards}

    def shard_images(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, list[str]]:
        """Each shard's run of image files (below ``images/``, or COCO's split folders)."""
        the_plan = split.plan(root, shard_size)
        base = the_plan.shape.base
        return {shard: [f"{base}{name}" for name in the_plan.run(int(shard))] for shard in shards}

    def inputs(self, root: Path) -> list[str]:
        return [str(source.path) for source in sources(root)]

    def listing_state(self, root: Path, shard_size: int | None) -> str:
        """A fingerprint of the image names and the shard size: the shards' runs."""
        the_plan = split.plan(root, shard_size)
        return hashlib.sha256("\n".join([str(the_plan.size), *the_plan.on_disk]).encode()).hexdigest()

    def prepare(self, root: Path, out: Path, shard_size: int | None) -> dict[Any, Any]:
        """Every annotator file read once into the shards' pieces under ``out`` (``split.split``)."""
        return split.split(root, check_sources(root), out, shard_size)

    def annotators(self, root: Path) -> list[str]:
        return list(annotators(root))

    def official_features(self, root: Path) -> list[str]:
        return []

    def official_relations(self, root: Path) -> list[str]:
        return []

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> ShardReader:
        return ShardReader(root, int(shard), reading)

    def category_files(self, root: Path) -> list[str]:
        return self.inputs(root)

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The hierarchy of the tree's categories (``categories.write_vocabulary``)."""
        from regionbench.io.coco.categories import write_vocabulary

        return write_vocabulary(root, out)

    def describe_source(self, root: Path) -> dict[str, str | None]:
        """The files' ``info`` and ``licenses`` (``categories.describe_source``)."""
        from regionbench.io.coco.categories import describe_source

        return describe_source(root)

    def source_files(self, root: Path) -> list[dict[str, Any]]:
        """Each instances file, its ``info`` and ``licenses`` as given (``categories.source_files``)."""
        from regionbench.io.coco.categories import source_files

        return source_files(root)

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """Each annotator file's categories as listed (``categories.source_categories``)."""
        from regionbench.io.coco.categories import source_categories

        return source_categories(root, reading)

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as a COCO tree (``export.export_release``): one instances file per annotator."""
        from regionbench.io.coco.export import export_release

        counts = export_release(release, out, images=images, annotator=annotator)
        return [
            f"{out}: {counts['files']} files of {counts['annotators']} annotators, {counts['images']} images, "
            f"{counts['regions']} regions" + ("" if images else "; no image files: copy them in, or pass --images ROOT")
        ]
