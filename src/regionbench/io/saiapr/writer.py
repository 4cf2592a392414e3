"""Writing the SAIAPR TC-12 layout: the one writer behind the synthetic collections and
``export-saiapr``. Callers hand it decoded values (JPEG bytes, masks, label ids, features);
it owns the file names, the formats and the encodings (docs/inputs.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from regionbench.io.matlab import mat_bytes
from regionbench.io.saiapr import text

MASK_VARIABLE = "segimg_t"
TEXT_FILES = ("labels.txt", "ontology_path.txt", "features.txt")


@dataclass
class FolderRows:
    """The rows of a folder's text files, in the order they will be written."""

    labels: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)

    def add(self, image_id: int, region_id: int, label_id: int, path: str | None, features: np.ndarray | None) -> None:
        """One region's rows; ``path`` (as written) or ``features`` may be absent."""
        self.labels.append(text.key_row(image_id, region_id, str(label_id)))
        if path is not None:
            self.paths.append(text.key_row(image_id, region_id, path))
        if features is not None:
            self.features.append(text.feature_row(image_id, region_id, features, label_id))

    def extend(self, other: FolderRows) -> None:
        self.labels += other.labels
        self.paths += other.paths
        self.features += other.features

    def sorted(self, key: Callable[[Any], Any]) -> FolderRows:
        return FolderRows(sorted(self.labels, key=key), sorted(self.paths, key=key), sorted(self.features, key=key))


class LayoutWriter:
    """Writes one collection under ``root``: ``wlist.txt``, per folder the images, masks,
    spatial relations and text files, and the captions."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def folder(self, folder: str) -> Path:
        return self.root / folder

    def wordlist(self, words: Mapping[int, str]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        text.write_wordlist(self.root / "wlist.txt", dict(words))

    def image(self, folder: str, image_id: int, data: bytes) -> None:
        """An image file, as encoded bytes (JPEG)."""
        path = self.folder(folder) / "images" / f"{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def mask(self, folder: str, image_id: int, region_id: int, mask: np.ndarray) -> None:
        """A region mask as ``segimg_t``: 0 inside, -1 outside."""
        path = self.folder(folder) / "segmentation_masks" / f"{image_id}_{region_id}.mat"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(mat_bytes({MASK_VARIABLE: np.where(mask, 0.0, -1.0)}))

    def spatial_relations(self, folder: str, image_id: int, matrices: Mapping[str, np.ndarray]) -> None:
        """``spatial_rels/<image_id>.mat`` with the ``topo``, ``x_rels`` and ``y_rels`` matrices."""
        path = self.folder(folder) / "spatial_rels" / f"{image_id}.mat"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(mat_bytes(dict(matrices)))

    def caption(
        self, folder: str, image_id: int, fields: Mapping[str, str | None], encoding: str = text.CAPTION_ENCODING
    ) -> None:
        path = self.root / "annotations_complete_eng" / folder / f"{image_id}.eng"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.format_caption(folder, image_id, dict(fields)).encode(encoding))

    def texts(self, folder: str, rows: FolderRows, trailer: str = "") -> int:
        """A folder's ``labels.txt``, ``ontology_path.txt`` and ``features.txt``; returns the region count."""
        self.folder(folder).mkdir(parents=True, exist_ok=True)
        for name, lines in zip(TEXT_FILES, (rows.labels, rows.paths, rows.features), strict=True):
            text.write_lines(self.folder(folder) / name, lines, trailer)
        return len(rows.labels)
