"""The COCO layout as a ``regionbench.io.layouts.Layout``: a shard is a run of image file names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from regionbench.hierarchy import Hierarchy
from regionbench.io.coco.ingest import (
    ShardReader,
    _all_names,
    _instance_files,
    annotators,
    default_shard_size,
    read_instances,
    tree_state,
)
from regionbench.io.layouts import About, Reading


def _shard_names(images: int, shard_size: int | None) -> list[str]:
    """Shards 00, 01, ... of ``shard_size`` images (``default_shard_size`` when None); at least one."""
    size = shard_size or default_shard_size(images)
    return [f"{k:02d}" for k in range(max(1, -(-images // size)))]


class CocoLayout:
    """``images/`` and one COCO instances file per annotator, ``annotations/<annotator>.json``."""

    name = "coco"
    expects = "images/ and annotations/<annotator>.json"
    about = About(
        summary=(
            "from annotation-tool exports in the COCO layout (`images/` and one COCO instances file per "
            "annotator); an image's id is the number its file name carries, else the first 63 bits of the "
            "sha256 of its file name, and the images carry no captions"
        ),
        tag="coco",
        keyword="COCO",
    )
    official_measures = ()
    names_categories = True

    def detect(self, root: Path) -> bool:
        return (Path(root) / "images").is_dir() and bool(_instance_files(root))

    def check(self, root: Path) -> None:
        """Nothing beyond ``detect``: each file's problems are ingest's to report."""

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        """Runs of ``shard_size`` file names over every image file and every image an annotator
        lists (reading every annotation file)."""
        files = {name: read_instances(path) for name, path in annotators(root).items()}
        return _shard_names(len(_all_names(Path(root), files)), shard_size)

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        return _shard_names(images, shard_size)

    def shard_states(self, root: Path, shards: Sequence[str]) -> dict[str, str]:
        """Any image or annotation file changed reruns every shard: a file lists images of all."""
        return dict.fromkeys(shards, tree_state(root))

    def inputs(self, root: Path) -> list[str]:
        return [str(p) for p in annotators(root).values()]

    def annotators(self, root: Path) -> list[str]:
        return list(annotators(root))

    def official_features(self, root: Path) -> list[str]:
        return []

    def official_relations(self, root: Path) -> list[str]:
        return []

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> ShardReader:
        return ShardReader(root, int(shard), reading)

    def write_vocabulary(self, root: Path, out: Path) -> tuple[list[str], dict[str, int]]:
        """The vocabulary files of the tree's categories but the ids (``categories.write_vocabulary``)."""
        from regionbench.io.coco.categories import write_vocabulary

        return write_vocabulary(root, out)

    def synthetic_annotators(self, requested: int) -> int:
        return requested
