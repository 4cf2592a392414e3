"""A release written back in the SAIAPR TC-12 layout, so tools of the original format work."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from regionbench.core import geometry, tables
from regionbench.core.errors import InputError
from regionbench.io.layouts import ReleaseTables, image_files
from regionbench.io.saiapr import spatial, text
from regionbench.io.saiapr.ingest import ANNOTATOR
from regionbench.io.saiapr.writer import FolderRows, LayoutWriter


def export_release(
    release: ReleaseTables, out: str | Path, images: str | Path | None = None, annotator: str = ANNOTATOR
) -> dict[str, int]:
    """Write ``release`` (a loaded release, ``ReleaseTables``) in the SAIAPR TC-12 layout under ``out`` (a new folder).

    Writes ``wlist.txt`` (the vocabulary), per folder ``labels.txt``, ``ontology_path.txt``,
    ``features.txt``, ``segmentation_masks/<image>_<region>.mat`` and
    ``spatial_rels/<image>.mat`` (the release's relations as code matrices, sized by the
    image's highest region id), and the captions in their original encoding. The release does not carry pixels: with ``images`` (a raw tree) the JPEGs
    are copied from it, each checked against the sha256 the release records. The layout holds
    one annotator: ``annotator`` (default ``saiapr``) names whose regions are written.

    Returns the number of folders, images and regions written.
    """
    out = Path(out)
    image_rows = release.arrow("images").to_pylist()
    regions = release.arrow("regions")
    found = sorted(set(regions["annotator"].to_pylist()))
    if found and annotator not in found:
        raise InputError(
            f"{release.folder}: no regions by {annotator!r}; choose one of {', '.join(found)} with --annotator"
        )
    regions = regions.filter(pc.equal(regions["annotator"], annotator))
    vocabulary = release.arrow("vocabulary", ["label_id", "label"])
    writer = LayoutWriter(out)
    writer.wordlist(dict(zip(vocabulary["label_id"].to_pylist(), vocabulary["label"].to_pylist(), strict=True)))

    by_id = {image["image_id"]: image for image in image_rows}
    if images is not None:
        for image_id, data in image_files(release, Path(images), sorted(by_id)):
            writer.image(by_id[image_id]["folder"], image_id, data)
    for image in image_rows:
        if image["caption_encoding"] is not None:
            fields = {name.lower(): image[f"caption_{name.lower()}"] for name in text.CAPTION_FIELDS}
            writer.caption(image["folder"], image["image_id"], fields, image["caption_encoding"])

    rows: dict[str, FolderRows] = defaultdict(FolderRows)
    columns = ["image_id", "region_id", "label_id", "ontology_path", "mask", *tables.FEATURE_NAMES]
    for region in regions.select(columns).to_pylist():
        image = by_id[region["image_id"]]
        values = np.array([region[n] for n in tables.FEATURE_NAMES])
        rows[image["folder"]].add(
            region["image_id"], region["region_id"], region["label_id"], region["ontology_path"], values
        )
        if region["mask"] is not None:  # a region released without a mask (labels only) has no file
            writer.mask(image["folder"], region["image_id"], region["region_id"], geometry.from_rle(region["mask"]))
    sizes: dict[int, int] = {}
    for image_id, region_id in zip(*(regions.column(c).to_pylist() for c in ("image_id", "region_id")), strict=True):
        sizes[image_id] = max(sizes.get(image_id, 0), region_id)
    pairs = release.arrow("relations")
    pairs = pairs.filter(pc.equal(pairs["annotator"], annotator))
    for image_id, matrices in spatial.image_matrices(pairs, sizes).items():
        writer.spatial_relations(by_id[image_id]["folder"], image_id, matrices)
    folders = sorted({image["folder"] for image in image_rows})
    for folder in folders:
        writer.texts(folder, rows[folder])
    return {"folders": len(folders), "images": len(image_rows), "regions": regions.num_rows}
