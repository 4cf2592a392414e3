"""The label audit against injected errors: how many of the regions made wrong it ranks first,
beside cleanlab's ``find_label_issues`` on the same out-of-fold probabilities alone, and how its
memory grows with the number of regions.

    .venv/bin/python benchmarks/label_errors.py [--images 1000] [--share 0.05] [--disagreement 0.3 0.1] [--sizes 10000 30000 100000]

1. A generated COCO collection (``--images`` images, three annotators tracing each scene at
   each ``--disagreement``: 0.3 is the generator's default and confuses labels often, 0.1 is
   closer to careful annotators) is ingested as the build ingests it. The audited regions are the first
   annotator's whose label has at least five regions (so a fold can hold each out). ``--share``
   of them are made wrong, seeded, in five equal kinds: relabelled to a sibling in the hierarchy
   (``sibling``) or to any other label (``random``); the mask dilated or eroded by 3-6 pixels
   (``dilate``, ``erode``); half of the mask dropped (``drop``). The masks' features are measured
   again. Then, with k = the number made wrong:
   - ``ours``: ``audit.labels.audit`` (confident learning first, then the two other annotators'
     and the features' evidence);
   - ``ours, one annotator``: the same without the other annotators (a single-annotator release);
   - ``cleanlab``: ``cleanlab.filter.find_label_issues(filter_by="confident_learning",
     return_indices_ranked_by="self_confidence")`` on the same out-of-fold probabilities,
     its first k.
   Precision at k (= recall at k) overall, and the recall of each kind.
2. Memory: ``audit.labels.audit`` on n generated regions (27 features, 100 labels) in a child
   process, its peak RSS and seconds per size; bytes per region.

Prints a line per part and, last, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from cleanlab.filter import find_label_issues
from PIL import Image
from scipy import ndimage

from regionbench.audit import labels
from regionbench.core import features, geometry, tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.io import layouts
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.synthetic import coco, plans

KINDS = ("sibling", "random", "dilate", "erode", "drop")


def collection(
    images: int, folder: Path, disagreement: float = 0.3
) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table, Hierarchy, Path]:
    """(images, regions with masks, features, coverage, hierarchy, raw root) of a generated COCO tree."""
    plans.PROFILES["labels-bench"] = plans.Profile("labels-bench", images, ("00", "01"), 5 * images)
    root = folder / "raw"
    list(coco.write_collection(root, "labels-bench", seed=0, annotators=3, disagreement=disagreement, workers=2))
    layout = layouts.get("coco")
    vocabulary = folder / "vocabulary"
    vocabulary.mkdir()
    tree = layout.write_vocabulary(root, vocabulary)
    hierarchy = Hierarchy.from_yaml(vocabulary / "hierarchy.yaml")
    words = tree.ids or {label: k for k, label in enumerate(tree.labels, start=1)}
    parts = [
        ingest_shard(root, shard, words, hierarchy, layout=layout, settings=IngestSettings(shard_size=10**6))
        for shard in layout.shards(root, 10**6)
    ]
    return (
        tables.concat([p.images for p in parts]),
        tables.concat([p.regions for p in parts]),
        tables.concat([p.features for p in parts]),
        tables.concat([p.coverage for p in parts]),
        hierarchy,
        root,
    )


def perturb(
    regions: pa.Table, keys: pa.Table, x: np.ndarray, hierarchy: Hierarchy, root: Path, images: pa.Table, share: float
) -> tuple[pa.Table, pa.Table, np.ndarray, dict[int, str]]:
    """``share`` of the audited regions made wrong: (regions, keys, features, row -> kind)."""
    rng = np.random.default_rng(0)
    n = keys.num_rows
    chosen = rng.choice(n, size=round(share * n), replace=False)
    kind_of = {int(row): KINDS[i % len(KINDS)] for i, row in enumerate(chosen)}
    label = keys["label"].to_pylist()
    known = sorted(set(label))
    x = x.copy()
    key_rows = {
        (r["image_id"], r["annotator"], r["region_id"]): i
        for i, r in enumerate(keys.select(tables.REGION_KEY).to_pylist())
    }
    path_of = dict(zip(images["image_id"].to_pylist(), images["path"].to_pylist(), strict=True))
    rows = regions.to_pylist()
    for region in rows:
        row = key_rows.get((region["image_id"], region["annotator"], region["region_id"]))
        if row is None or row not in kind_of:
            continue
        kind = kind_of[row]
        if kind in ("sibling", "random"):
            parent = hierarchy.parent(label[row])
            siblings = [other for other in known if other != label[row] and hierarchy.parent(other) == parent]
            pool = siblings if kind == "sibling" and siblings else [other for other in known if other != label[row]]
            label[row] = region["label"] = str(rng.choice(pool))
            continue
        mask = geometry.from_rle(region["mask"])
        if kind == "dilate":
            mask = ndimage.binary_dilation(mask, iterations=int(rng.integers(3, 7)))
        elif kind == "erode":
            eroded = ndimage.binary_erosion(mask, iterations=int(rng.integers(3, 7)))
            mask = eroded if eroded.any() else mask
        else:  # drop: the half of the mask right of its centre
            columns = np.flatnonzero(mask.any(axis=0))
            mask = mask.copy()
            mask[:, (columns[0] + columns[-1]) // 2 + 1 :] = False
        region["mask"] = {"size": list(mask.shape), "counts": geometry.encode_rle(mask)}
        pixels = np.asarray(Image.open(root / path_of[region["image_id"]]).convert("RGB"))
        x[row] = features.saiapr27(pixels, mask)
    keys = keys.set_column(keys.schema.get_field_index("label"), "label", pa.array(label, pa.string()))
    return pa.Table.from_pylist(rows, schema=regions.schema), keys, x, kind_of


def at_k(ranked: list[int], kind_of: dict[int, str]) -> dict:
    """Precision at k = the number made wrong, and each kind's recall in the first k."""
    top = set(ranked[: len(kind_of)])
    found = {kind: [row in top for row, k in kind_of.items() if k == kind] for kind in KINDS}
    return {
        "precision_at_k": sum(row in top for row in kind_of) / len(kind_of),
        "recall": {kind: float(np.mean(hits)) for kind, hits in found.items()},
    }


MEMORY_CHILD = """
import json, sys, time
import numpy as np, pyarrow as pa
from regionbench.audit import labels
n = int(sys.argv[1])
rng = np.random.default_rng(n)
y = rng.integers(0, 100, n)
x = rng.normal(0, 3, (100, 27))[y] + rng.normal(0, 1, (n, 27))
keys = pa.table({"image_id": np.arange(n, dtype=np.int64), "annotator": ["a"] * n,
                 "region_id": np.ones(n, np.int32), "label": [f"l{j}" for j in y]})
def peak():  # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024
before = peak()
start = time.perf_counter()
labels.audit(keys, x, {})
print(json.dumps([time.perf_counter() - start, before, peak()]))
"""


def memory(sizes: list[int]) -> list[dict]:
    """Seconds and peak RSS of the audit of n generated regions (27 features, 100 labels), each
    size in a fresh interpreter; the peak before the audit (imports, the data) beside it."""
    out = []
    for n in sizes:
        done = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(n)], capture_output=True, text=True, check=True)
        seconds, before, peak = json.loads(done.stdout.strip().splitlines()[-1])
        out.append({"regions": n, "seconds": seconds, "peak_rss_bytes": peak, "before_audit_bytes": before})
        print(
            f"memory: {n:,} regions audited in {seconds:.1f} s, peak {peak / 2**20:.0f} MiB "
            f"({before / 2**20:.0f} MiB before the audit)",
            flush=True,
        )
    return out


def one_run(args: argparse.Namespace, tmp: Path, disagreement: float) -> dict:
    """Errors injected into one generated collection, found by each contender."""
    image_table, regions, found_features, coverage, hierarchy, root = collection(args.images, tmp, disagreement)
    annotator = sorted(set(regions["annotator"].to_pylist()) - {tables.CONSENSUS})[0]
    mine = regions.filter(pc.equal(regions["annotator"], annotator))
    counts = mine.group_by("label").aggregate([([], "count_all")]).to_pylist()
    kept = {c["label"] for c in counts if c["count_all"] >= labels.FOLDS}
    order = [(k, "ascending") for k in tables.REGION_KEY]
    keys = (
        mine.filter(pc.is_in(mine["label"], pa.array(sorted(kept))))
        .select([*tables.REGION_KEY, "label"])
        .sort_by(order)
    )
    joined = keys.join(found_features, keys=tables.REGION_KEY).sort_by(order)
    x = np.column_stack([joined[name].to_numpy() for name in tables.FEATURE_NAMES])
    changed, keys, x, kind_of = perturb(regions, keys, x, hierarchy, root, image_table, args.share)
    said = labels.annotator_evidence(changed, coverage, annotator)
    y = np.unique(np.asarray(keys["label"].to_pylist(), dtype=object), return_inverse=True)[1]
    p = labels.out_of_fold(x, y, int(y.max()) + 1)
    row_of = {
        (i, r): n
        for n, (i, r) in enumerate(zip(keys["image_id"].to_pylist(), keys["region_id"].to_pylist(), strict=True))
    }
    results = {}
    for name, evidence in (("ours", said), ("ours, one annotator", {})):
        table = labels.audit(keys, x, evidence).table
        ranked = [
            row_of[(i, r)] for i, r in zip(table["image_id"].to_pylist(), table["region_id"].to_pylist(), strict=True)
        ]
        results[name] = at_k(ranked, kind_of) | {"listed": table.num_rows}
    issues = find_label_issues(y, p, filter_by="confident_learning", return_indices_ranked_by="self_confidence")
    results["cleanlab"] = at_k([int(i) for i in issues], kind_of) | {"listed": len(issues)}
    for name, r in results.items():
        print(
            f"disagreement {disagreement}, {name}: precision at k={len(kind_of)} of {keys.num_rows} regions "
            f"{r['precision_at_k']:.3f} ({r['listed']} listed); recall "
            + ", ".join(f"{k} {v:.2f}" for k, v in r["recall"].items()),
            flush=True,
        )
    return {"regions": keys.num_rows, "made_wrong": len(kind_of), "at_k": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument(
        "--disagreement", type=float, nargs="*", default=[0.3, 0.1], help="the annotators' (one run each)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    args = parser.parse_args()
    runs = {}
    for disagreement in args.disagreement:
        with tempfile.TemporaryDirectory() as tmp:
            runs[str(disagreement)] = one_run(args, Path(tmp), disagreement)
    result = {"disagreement": runs, "memory": memory(args.sizes)}
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
