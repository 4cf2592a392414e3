"""Region features and spatial relations of a shard, measured where its raw items are decoded.

Ingest hands every accepted image to ``Measures.add`` while its pixels and masks are in memory,
so no stage decodes a JPEG or a mask a second time: the features and relations tables are
stage outputs of the ingest job (docs/layout.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import numpy as np
import pyarrow as pa

from regionbench.core import features, relations, tables


@dataclass
class Measures:
    """Features (``features.image_features``) of every region and relations
    (``relations.pairwise``, within each annotator) of every ordered pair of one shard (of its
    near pairs only in an image of more than ``settings.max_regions`` regions)."""

    settings: relations.RelationSettings = field(default_factory=relations.RelationSettings)
    _keys: list[tuple[int, str, int]] = field(default_factory=list)
    _values: list[np.ndarray] = field(default_factory=list)
    _relations: dict[str, list] = field(default_factory=lambda: {name: [] for name in tables.RELATIONS.names})
    crowded: int = 0  # images (one annotator's regions) related by their near pairs only

    def add(self, image_id: int, pixels: np.ndarray, regions: list[tuple[dict, np.ndarray]]) -> None:
        """Measure one image: ``pixels`` H x W x 3 uint8, ``regions`` its ``regions`` rows
        (``io.shards.region_row``) and boolean masks, of every annotator."""
        regions = sorted(regions, key=lambda r: (r[0]["annotator"], r[0]["region_id"]))
        if not regions:
            return
        self._keys += [(image_id, row["annotator"], row["region_id"]) for row, _ in regions]
        boxes = np.array([(row["bbox_x"], row["bbox_y"], row["bbox_w"], row["bbox_h"]) for row, _ in regions])
        values, centres = features.measure(pixels, [mask for _, mask in regions], boxes)
        self._values.append(values)
        out = self._relations
        at = 0
        for annotator, group in groupby(regions, key=lambda r: r[0]["annotator"]):
            members = list(group)
            own = slice(at, at + len(members))
            at += len(members)
            masks = [m for _, m in members]
            settings = self.settings
            pairs = relations.pairwise(
                masks,
                pixels.shape[:2],
                settings.tau,
                settings.adjacency_px,
                boxes[own],
                centres[own],
                settings.max_regions,
            )
            self.crowded += settings.max_regions is not None and len(masks) > settings.max_regions
            ids = np.array([row["region_id"] for row, _ in members])
            out["image_id"] += [image_id] * len(pairs.i)
            out["annotator"] += [annotator] * len(pairs.i)
            out["region_id"] += ids[pairs.i].tolist()
            out["other_region_id"] += ids[pairs.j].tolist()
            for name in relations.GROUPS:
                out[name] += getattr(pairs, name).tolist()

    def add_known(self, key: tuple[int, str, int], values: np.ndarray) -> None:
        """The features of a region without a mask, as a source file gives them (the official
        ``features.txt``); such a region has no relations."""
        self._keys.append(key)
        self._values.append(np.asarray(values, dtype=np.float64).reshape(1, -1))

    def features(self) -> pa.Table:
        """The stage table ``features``, sorted by region key."""
        order = sorted(range(len(self._keys)), key=self._keys.__getitem__)
        matrix = np.concatenate(self._values)[order] if self._values else np.empty((0, len(features.FEATURE_NAMES)))
        keys = [self._keys[n] for n in order]
        columns: dict[str, Any] = {name: [k[n] for k in keys] for n, name in enumerate(tables.REGION_KEY)}
        columns.update({name: matrix[:, k] for k, name in enumerate(features.FEATURE_NAMES)})
        return pa.table(columns, schema=tables.FEATURES)

    def relations(self) -> pa.Table:
        """The stage table ``relations``, sorted by region key and the other region."""
        table = pa.table(self._relations, schema=tables.RELATIONS)
        return table.sort_by([(k, "ascending") for k in (*tables.REGION_KEY, "other_region_id")])
