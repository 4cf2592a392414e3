"""What the leak audit (``regionbench audit --leaks``, run by ``regionbench challenge``) costs, by
the number of images of the release, half of them on the hidden side.

    .venv/bin/python benchmarks/challenge.py [--images 200 800 3200]

Per size: a private release's regions (ten a 640x480 image, boxes as COCO RLE, labels of 80) and
its public release: the visible half's regions as Parquet, a card of 200 lines a 100 images and a
JSON report of the same size. CPU seconds and peak memory of ``leaks.hidden_truth`` (reading the
private side) and ``leaks.audit`` (every public file) in this process. Prints a line per size and,
last, one JSON object: seconds, growth exponent b of cost ~ n^b, and the forecast for COCO's
val2017 (5,000 hidden images of 10,000).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pycocotools import mask as coco_mask

from regionbench.audit import leaks

H, W = 480, 640


class Private:
    """The private release as the audit reads it: its tables and manifest."""

    def __init__(self, tables: dict[str, pa.Table]) -> None:
        self.tables = tables
        self.manifest = {"digest": "0" * 64, "evaluation_split": "test"}
        self.folder = Path("private")

    def arrow(self, name: str, columns: list[str] | None = None) -> pa.Table:
        table = self.tables[name]
        return table.select(columns) if columns is not None else table


def release(images: int, seed: int = 0) -> tuple[Private, pa.Table]:
    """A private release of ``images`` images (every other one hidden) and its public regions."""
    rng = np.random.default_rng(seed)
    rows = []
    for image_id in range(images):
        for region_id in range(10):
            x, y = (int(v) for v in rng.integers([0, 0], [W - 100, H - 100]))
            w, h = (int(v) for v in rng.integers(10, 100, size=2))
            mask = np.zeros((H, W), dtype=np.uint8, order="F")
            mask[y : y + h, x : x + w] = 1
            counts = coco_mask.encode(mask)["counts"].decode()
            rows.append({"image_id": image_id, "region_id": region_id, "annotator": "coco",
                         "annotation_id": image_id * 10 + region_id, "label": f"label{int(rng.integers(80))}",
                         "mask": {"size": [H, W], "counts": counts}, "geometry": rng.bytes(40)})  # fmt: skip
    regions = pa.Table.from_pylist(rows)
    split = ["test" if k % 2 else "train" for k in range(images)]
    files = pa.table(
        {"image_id": list(range(images)), "split": split, "path": [f"{s}/{k}.jpg" for k, s in enumerate(split)]}
    )
    counted = regions.group_by("label").aggregate([("image_id", "count"), ("image_id", "count_distinct")])
    vocabulary = pa.table(
        {
            "label": counted["label"],
            "region_count": counted["image_id_count"],
            "image_count": counted["image_id_count_distinct"],
        }
    )
    public = regions.filter(pa.array([k % 2 == 0 for k in regions["image_id"].to_pylist()]))
    return Private({"images": files, "regions": regions, "vocabulary": vocabulary}), public


def public_folder(folder: Path, public: pa.Table, images: int) -> None:
    """The public release's files: its regions, a card and a report."""
    (folder / "data").mkdir(parents=True)
    pq.write_table(public, folder / "data/regions.parquet")
    lines = [f"| label{k % 80} | {k} | {k * 3} |" for k in range(2 * images)]
    (folder / "README.md").write_text("# card\n\n" + "\n".join(lines) + "\n")
    (folder / "results.json").write_text(
        json.dumps({"rows": [{"label": f"label{k % 80}", "n": k} for k in range(2 * images)]})
    )
    (folder / "manifest.json").write_text(json.dumps({"hidden": {"split": "test", "private": {"digest": "0" * 64}}}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, nargs="+", default=[200, 800, 3200])
    args = ap.parse_args()
    found: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.images:
            private, public = release(n)
            folder = Path(tmp) / str(n)
            public_folder(folder, public, n)
            start = time.process_time()
            assert leaks.audit(folder, private) == []  # type: ignore[arg-type]
            found[n] = time.process_time() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n} images ({n * 5} hidden regions): audit {found[n]:.2f} s CPU; peak {peak:.0f} MiB")
    small, large = min(args.images), max(args.images)
    growth = round(math.log(found[large] / found[small]) / math.log(large / small), 3)
    print(
        json.dumps(
            {
                "cpu_s": found,
                "growth_exponent": growth,
                "forecast_10000_images_s": round(found[large] * (10_000 / large) ** growth, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
