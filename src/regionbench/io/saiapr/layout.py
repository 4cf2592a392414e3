"""The SAIAPR TC-12 layout as a ``regionbench.io.layouts.Layout``: a shard is a numbered folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from regionbench.core.hierarchy import Hierarchy
from regionbench.io.layouts import (
    About,
    Exports,
    NamesCategories,
    PublishesMeasures,
    Reading,
    ReleaseTables,
    TreeVocabulary,
)
from regionbench.io.saiapr.ingest import ANNOTATOR, FolderReader, folder_state, image_files, image_names_state
from regionbench.io.saiapr.ontology import NO_LABEL
from regionbench.io.saiapr.spatial import FOLDER as SPATIAL_FOLDER
from regionbench.io.saiapr.spatial import parity as relations_parity
from regionbench.io.saiapr.spatial import read_spatial_relations
from regionbench.io.saiapr.text import features_parity, read_official_features, read_wordlist
from regionbench.io.shards import IngestError

ORIGINAL = "https://www.imageclef.org/SIAPRdata"  # the home of SAIAPR TC-12, whose recipe is followed
CITATION = (
    "@article{escalante2010saiapr, title={The segmented and annotated {IAPR} {TC-12} benchmark}, "
    "author={Escalante, Hugo Jair and Hern{\\'a}ndez, Carlos A. and Gonzalez, Jesus A. and "
    "L{\\'o}pez-L{\\'o}pez, A. and Montes, Manuel and Morales, Eduardo F. and Sucar, L. Enrique and "
    "Villase{\\~n}or, Luis and Grubinger, Michael}, journal={Computer Vision and Image Understanding}, "
    "volume={114}, number={4}, pages={419--428}, year={2010}}"
)


class SaiaprLayout(PublishesMeasures, NamesCategories, Exports):
    """``wlist.txt`` and folder shards ``NN/`` (images, segmentation_masks, labels.txt ...)."""

    name = "saiapr"
    expects = "wlist.txt and folders 00, 01, ..."
    about = About(
        summary="in the layout of the segmented and annotated IAPR TC-12 benchmark (SAIAPR TC-12)",
        tag="saiapr-tc-12",
        keyword="SAIAPR TC-12",
        name="SAIAPR TC-12, the segmented and annotated IAPR TC-12 benchmark",
        fields={
            "images.image_id": "the IAPR TC-12 id of the image, the number its file name carries",
            "regions.image_id": "the IAPR TC-12 id of the image, the number its file name carries",
            "images.folder": "the SAIAPR folder of the image (00-40)",
            "images.caption_title": "TITLE of the image's IAPR TC-12 caption; null without one",
            "regions.annotator": "who drew the region mask: 'saiapr' for the official segmentation",
            "regions.label_id": "id of the label in the vocabulary (vocabulary.label_id): the tree's wlist.txt id when "
            "the vocabulary is the tree's own",
        },
        creators="expert-generated",
        original=ORIGINAL,
        classifiers=True,
        source_dataset="extended|iapr-tc-12",
        citation=CITATION,
    )
    official_measures = ("features", "relations")

    def detect(self, root: Path) -> bool:
        return (Path(root) / "wlist.txt").is_file()

    def check(self, root: Path) -> None:
        """A word list needs folder shards beside it."""
        if not self.shards(root):
            raise IngestError("has wlist.txt but no folder shard (00, 01, ...); give the root of a SAIAPR TC-12 tree")

    def shards(self, root: Path, shard_size: int | None = None) -> list[str]:
        """The folder shards (00, 01, ...); ``shard_size`` does not apply."""
        return sorted(p.name for p in Path(root).iterdir() if p.is_dir() and p.name.isdigit())

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None = None) -> list[str]:
        return sorted(set(folders))

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        """Each folder's files and captions (``folder_state``), and the names of every folder's
        images: an image added or removed in another folder may share an id with this one."""
        names = image_names_state(root)
        return {shard: f"{folder_state(root, shard)}:{names}" for shard in shards}

    def shard_images(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, list[str]]:
        """Each folder's ``images/`` entries."""
        found: dict[str, list[str]] = {shard: [] for shard in shards}
        for folder, name in image_files(root):
            if folder in found:
                found[folder].append(f"{folder}/images/{name}")
        return found

    def inputs(self, root: Path) -> list[str]:
        """The word list; each shard's own files are tracked by its state."""
        return [str(Path(root) / "wlist.txt")]

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]  # one annotation per region in this layout

    def official_features(self, root: Path) -> list[str]:
        return [str(p) for p in sorted(Path(root).glob("*/features.txt"))]

    def official_relations(self, root: Path) -> list[str]:
        return [str(p) for p in sorted(Path(root).glob(f"*/{SPATIAL_FOLDER}"))]

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> FolderReader:
        # region label ids are the vocabulary's (wlist.txt's stay as category_id); none given: wlist.txt's
        return FolderReader(root, shard, reading, dict(reading.words) or None)

    def read_official_features(self, paths: Sequence[str]) -> dict[Any, Any]:
        """The published features by (image id, region id) (``text.read_official_features``)."""
        return read_official_features(paths)

    def features_parity(self, official: dict[Any, Any], computed: pa.Table) -> dict[Any, Any]:
        """Computed features against the published ones, to their printed precision."""
        return features_parity(official, computed)

    def read_official_relations(self, root: Path) -> tuple[dict[int, dict[str, np.ndarray]], list[dict[str, str]]]:
        """The published relations, and the files that could not be used (``spatial``)."""
        return read_spatial_relations(root)

    def relations_parity(self, official: dict[Any, Any], computed: pa.Table) -> dict[Any, Any]:
        """Computed relations against the published code matrices, per relation group."""
        return relations_parity(official, computed)

    def category_files(self, root: Path) -> list[str]:
        texts = sorted(p for name in ("labels.txt", "ontology_path.txt") for p in Path(root).glob(f"*/{name}"))
        return [str(Path(root) / "wlist.txt")] + [str(p) for p in texts]

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """The tree's own hierarchy, from its ``ontology_path.txt`` files, with ``wlist.txt``'s ids
        (``ontology.write_vocabulary``)."""
        from regionbench.io.saiapr.ontology import write_vocabulary

        return write_vocabulary(root, out)

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """The words of ``wlist.txt`` by id but ``n.a.`` (no annotation), each its own label where
        the vocabulary has it."""
        words = read_wordlist(Path(root) / "wlist.txt")
        return [
            {"annotator": ANNOTATOR, "category_id": i, "name": word, "supercategory": None,
             "label": word if word in reading.words else None}
            for i, word in sorted(words.items())
            if word != NO_LABEL
        ]  # fmt: skip

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as SAIAPR TC-12 files (``export.export_release``): one annotator's regions."""
        from regionbench.io.saiapr.export import export_release

        counts = export_release(release, out, images=images, annotator=annotator or ANNOTATOR)
        return [f"{out}: {counts['folders']} folders, {counts['images']} images, {counts['regions']} regions written"]
