"""A third raw layout, the smallest there is: label-map PNGs (as VOC, Cityscapes or ADE20K ship
them). The test drops this one file into ``regionbench/io/`` and builds a release from it, to
show that a new format touches nothing else: reading it, and writing a release back in it
(``export``, the ``Exports`` capability: ``regionbench export --format labelmap``).

``<root>/labelmap.txt`` (``value<TAB>label`` per line), ``<root>/images/<id>.png`` and
``<root>/maps/<id>.png``: pixel value v of a map is the region of label v, 0 is unlabelled. One
annotator, ``labelmap``; one shard, ``00``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from regionbench.core import geometry
from regionbench.io.layouts import About, Exports, ImageRecord, Layout, Reading, ReleaseTables
from regionbench.io.shards import Ledger, image_row, region_row, trees_state

ANNOTATOR = "labelmap"


class Reader:
    annotators = (ANNOTATOR,)

    def __init__(self, root: Path, reading: Reading) -> None:
        self.root, self.reading, self.ledger = Path(root), reading, Ledger(Path(root))
        rows = (line.split("\t") for line in (self.root / "labelmap.txt").read_text().splitlines() if line)
        self.labels = {int(value): label for value, label in rows}
        self.counts = {"images": [0, 0], "regions": [0, 0]}  # seen, accepted

    def records(self) -> Iterator[ImageRecord]:
        for path in sorted((self.root / "images").glob("*.png")):
            self.counts["images"][0] += 1
            image = self.reading.read_image(self.root, path, ("PNG",), ("RGB",))
            self.counts["images"][1] += 1
            labels = np.asarray(Image.open(self.root / "maps" / path.name))
            row = image_row(int(path.stem), "00", f"images/{path.name}", image)
            regions: list[tuple[dict[str, Any], np.ndarray | None]] = []
            for value in sorted(set(np.unique(labels).tolist()) - {0}):
                self.counts["regions"][0] += 1
                label = self.labels.get(value)
                if label is None or label not in self.reading.words:
                    self.ledger.reject(
                        f"maps/{path.name}", f"{path.stem}/{value}", "region", f"value {value} has no label"
                    )
                    continue
                self.counts["regions"][1] += 1
                mask = labels == value
                regions.append(
                    (
                        region_row(
                            row["image_id"], ANNOTATOR, len(regions) + 1, self.reading.words[label], label, mask
                        ),
                        mask,
                    )
                )
            yield ImageRecord(path.name, image, row, regions, self.annotators)

    def report(self) -> dict:
        counts = {k: {"seen": s, "accepted": a, "rejected": s - a} for k, (s, a) in self.counts.items()}
        return {"folder": "00", **counts}


class LabelMapLayout(Layout, Exports):
    name = "labelmap"
    expects = "labelmap.txt, images/ and maps/"
    about = About(summary="from label-map PNGs", tag="label-map", keyword="label maps")
    official_measures = ()

    def detect(self, root: Path) -> bool:
        return (Path(root) / "labelmap.txt").is_file() and (Path(root) / "maps").is_dir()

    def check(self, root: Path) -> None:
        pass

    def shards(self, root: Path, shard_size: int | None) -> list[str]:
        return ["00"]

    def planned_shards(self, images: int, folders: Sequence[str], shard_size: int | None) -> list[str]:
        return ["00"]

    def shard_states(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, str]:
        return {"00": trees_state(root, ("images", "maps"))}

    def shard_images(self, root: Path, shards: Sequence[str], shard_size: int | None) -> dict[str, list[str]]:
        return {"00": sorted(p.relative_to(root).as_posix() for p in (Path(root) / "images").glob("*.png"))}

    def inputs(self, root: Path) -> list[str]:
        return [str(Path(root) / "labelmap.txt")]

    def annotators(self, root: Path) -> list[str]:
        return [ANNOTATOR]

    def official_features(self, root: Path) -> list[str]:
        return []

    def official_relations(self, root: Path) -> list[str]:
        return []

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: object) -> Reader:
        return Reader(root, reading)

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """One 16-bit map per image, the label of each of ``annotator``'s regions (default: this
        layout's) painted with its value in ``labelmap.txt`` (label ids, as the release numbers them)."""
        who = annotator or ANNOTATOR
        regions = release.arrow("regions", ["image_id", "annotator", "label_id", "label", "mask"]).to_pylist()
        sizes = {
            r["image_id"]: (r["height"], r["width"])
            for r in release.arrow("images", ["image_id", "height", "width"]).to_pylist()
        }
        (out / "maps").mkdir(parents=True)
        maps = {image_id: np.zeros(size, np.uint16) for image_id, size in sizes.items()}  # ids pass 255
        labels = {}
        for region in regions:
            if region["annotator"] == who:
                maps[region["image_id"]][geometry.from_rle(region["mask"])] = region["label_id"]
                labels[region["label_id"]] = region["label"]
        for image_id, labelled in sorted(maps.items()):
            Image.fromarray(labelled).save(out / "maps" / f"{image_id}.png")
        (out / "labelmap.txt").write_text("".join(f"{v}\t{label}\n" for v, label in sorted(labels.items())))
        return [f"{out}: {len(maps)} label maps of {len(labels)} labels"]


LAYOUT = LabelMapLayout()
