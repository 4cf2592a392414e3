"""Near-duplicate detection: how many injected near-copies of real photos are found, how many
distinct photos are paired by mistake, what the hashes add to ingest, and how the neighbour
index's cost grows with the collection.

    .venv/bin/python benchmarks/duplicates.py [--photos DIR] [--copies 8] [--sizes 1000 10000 30000 118000]
        [--ingest-images 200] [--thresholds 14 16 18 20 22 24 26 28]

1. Accuracy. The photos: the natural photographs that scikit-image and scikit-learn ship
   (astronaut, coffee, chelsea, camera, rocket, retina, immunohistochemistry, hubble deep
   field, motorcycle left, china, flower: no network), every JPEG/PNG under ``--photos`` (e.g.
   BSDS500's or COCO's images), and the 300 photos of the generated demo collection (distinct
   by construction; a larger set of distinct pairs). Each photo gets ``--copies`` near-copies of
   each kind, seeded: ``jpeg`` (re-encoded, quality 50-95), ``resize`` (50-150 %), ``crop``
   (keeping 90-100 % of the area, anywhere), ``brightness`` (+-10 %), ``mixed`` (all four),
   and ``flip`` (mirrored, reported apart: the hashes are not mirror-invariant). Everything is
   hashed as ingest hashes it and grouped as the build groups it
   (``audit.duplicates.near_pairs``, then connected components). Recall: copies in their
   photo's group. False-positive pairs: pairs of images made from two different photos, of all
   such pairs.
2. Ingest cost: a generated VOC tree (500x375 JPEGs) ingested with the hashes and without (the
   hash function replaced by a constant), alternately, best of three.
3. Index cost: hashes of n distinct smooth random images (natural images' spectra fall like
   theirs) with 5 % near-copies (a few bits flipped), grouped by the index, timed with its peak
   memory; an all-pairs comparison beside it up to 30,000 (it needs n^2 bytes), checked equal.

Prints a line per part and, last, one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance

from regionbench.audit import duplicates
from regionbench.core import hashes

KINDS = ("jpeg", "resize", "crop", "brightness", "mixed", "flip")
SKIMAGE = (
    "astronaut", "coffee", "chelsea", "camera", "rocket", "retina", "immunohistochemistry", "hubble_deep_field",
)  # fmt: skip


def photos(folder: Path | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(real photos, generated photos) as RGB uint8 arrays."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    real = [getattr(skimage.data, name)() for name in SKIMAGE]
    real.append(skimage.data.stereo_motorcycle()[0])
    real += list(load_sample_images().images)
    if folder is not None:
        real += [
            np.asarray(Image.open(p).convert("RGB"))
            for p in sorted(folder.rglob("*"))
            if p.suffix.lower() in (".jpg", ".jpeg", ".png")
        ]
    real = [np.stack([p] * 3, -1) if p.ndim == 2 else p[..., :3] for p in real]
    from regionbench.synthetic.saiapr import write_collection

    with tempfile.TemporaryDirectory() as tmp:
        list(write_collection(Path(tmp), "demo", seed=0, workers=1))
        generated = [np.asarray(Image.open(p).convert("RGB")) for p in sorted(Path(tmp).glob("*/images/*.jpg"))]
    return [p.astype(np.uint8) for p in real], generated


def near_copy(pixels: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A near-copy of ``pixels`` of one kind, its parameters drawn from ``rng``."""
    image = Image.fromarray(pixels)
    kinds = ("jpeg", "resize", "crop", "brightness") if kind == "mixed" else (kind,)
    for one in kinds:
        w, h = image.size
        if one == "jpeg":
            out = io.BytesIO()
            image.save(out, format="JPEG", quality=int(rng.integers(50, 96)))
            image = Image.open(out).convert("RGB")
        elif one == "resize":
            s = rng.uniform(0.5, 1.5)
            image = image.resize((max(8, round(w * s)), max(8, round(h * s))), Image.Resampling.BILINEAR)
        elif one == "crop":
            keep = math.sqrt(rng.uniform(0.9, 1.0))
            cw, ch = round(w * keep), round(h * keep)
            x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
            image = image.crop((x, y, x + cw, y + ch))
        elif one == "brightness":
            image = ImageEnhance.Brightness(image).enhance(rng.uniform(0.9, 1.1))
        elif one == "flip":
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return np.asarray(image)


def accuracy(sets: dict[str, list[np.ndarray]], copies: int, thresholds: list[int]) -> dict:
    """Recall per kind and false-positive pairs per threshold, per set of photos."""
    rng = np.random.default_rng(0)
    out: dict = {}
    for name, originals in sets.items():
        source: list[int] = []
        kind_of: list[str | None] = []
        values: list[tuple[str, str]] = []
        for k, pixels in enumerate(originals):
            values.append(hashes.image_hashes(pixels))
            source.append(k)
            kind_of.append(None)
            for kind in KINDS:
                for _ in range(copies):
                    values.append(hashes.image_hashes(near_copy(pixels, kind, rng)))
                    source.append(k)
                    kind_of.append(kind)
        phash = duplicates.as_integers(v[0] for v in values)
        dhash = duplicates.as_integers(v[1] for v in values)
        src = np.array(source)
        original_of = {k: n for n, (k, kind) in enumerate(zip(source, kind_of, strict=True)) if kind is None}
        per: dict = {}
        for threshold in thresholds:
            i, j, _ = duplicates.near_pairs(phash, dhash, threshold)
            group = duplicates.components(len(values), i, j)
            found = {
                kind: float(
                    np.mean(
                        [group[n] == group[original_of[source[n]]] for n in range(len(values)) if kind_of[n] == kind]
                    )
                )
                for kind in KINDS
            }
            wrong = int(np.sum(src[i] != src[j]))
            distinct = len(values) ** 2 // 2 - sum(np.bincount(src) ** 2) // 2  # pairs from two photos
            per[threshold] = {
                "recall": found,
                "recall_without_flip": float(np.mean([found[k] for k in KINDS if k != "flip"])),
                "false_positive_pairs": wrong,
                "false_positive_rate": wrong / distinct,
                "photos_paired_wrongly": len(
                    {int(x) for x in src[i][src[i] != src[j]]} | {int(x) for x in src[j][src[i] != src[j]]}
                ),
            }
            print(
                f"{name} ({len(originals)} photos, {len(values)} images), threshold {threshold}: recall "
                + ", ".join(f"{k} {v:.3f}" for k, v in found.items())
                + f"; false-positive pairs {wrong} ({wrong / distinct:.2e} of {distinct:,})",
                flush=True,
            )
        out[name] = {"photos": len(originals), "images": len(values), "thresholds": per}
    return out


def ingest_cost(images: int) -> dict:
    """Seconds to ingest a generated VOC tree with and without the hashes (best of three each)."""
    from regionbench.io import layouts, shards
    from regionbench.pipeline.ingest import IngestSettings, ingest_shard
    from regionbench.synthetic import voc

    real = shards.hashes.image_hashes
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "raw"
        list(voc.write_tree(root, images, seed=0, size=(500, 375)))
        layout = layouts.get("voc")
        vocabulary = Path(tmp) / "vocabulary"
        vocabulary.mkdir()
        tree = layout.write_vocabulary(root, vocabulary)
        words = tree.ids or {label: k for k, label in enumerate(tree.labels, start=1)}
        settings = IngestSettings(shard_size=10**6)
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(3):
            for case in ("without", "with"):
                shards.hashes.image_hashes = real if case == "with" else (lambda pixels: ("0" * 16, "0" * 16))  # type: ignore[assignment]
                start = time.perf_counter()
                for shard in layout.shards(root, 10**6):
                    ingest_shard(root, shard, words, layout=layout, settings=settings)
                times[case].append(time.perf_counter() - start)
        shards.hashes.image_hashes = real  # type: ignore[assignment]
    best = {case: min(t) for case, t in times.items()}
    print(
        f"ingest of {images} 500x375 VOC images: {best['without']:.2f} s without the hashes, {best['with']:.2f} s with ({best['with'] / best['without']:.3f}x)"
    )
    return {
        "images": images,
        "seconds_without": best["without"],
        "seconds_with": best["with"],
        "ratio": best["with"] / best["without"],
    }


def smooth_hashes(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of ``n`` random images whose spectrum falls as 1/f, as natural images' does."""
    freq = np.hypot(*np.meshgrid(np.fft.fftfreq(48), np.fft.rfftfreq(48), indexing="ij"))
    fall = 1.0 / np.maximum(freq, 1 / 48)
    values = []
    for _ in range(n):
        spectrum = (rng.standard_normal(fall.shape) + 1j * rng.standard_normal(fall.shape)) * fall
        field = np.fft.irfft2(spectrum, s=(48, 48))
        grey = np.clip(128 + 40 * field / field.std(), 0, 255).astype(np.uint8)
        values.append(hashes.image_hashes(grey))
    return duplicates.as_integers(v[0] for v in values), duplicates.as_integers(v[1] for v in values)


def index_cost(sizes: list[int], threshold: int) -> dict:
    """Seconds and peak memory of the grouping per size, an all-pairs comparison beside it."""
    rng = np.random.default_rng(1)
    phash, dhash = smooth_hashes(max(sizes), rng)
    rows = []
    for n in sizes:
        copies = n // 20
        source = rng.integers(0, n - copies, copies)
        p, d = phash[:n].copy(), dhash[:n].copy()
        for target, s in zip(range(n - copies, n), source, strict=True):
            flips = rng.choice(64, size=(2, int(rng.integers(0, 6))), replace=True)
            p[target], d[target] = p[s], d[s]
            for bit in flips[0]:
                p[target] ^= np.uint64(1) << np.uint64(bit)
            for bit in flips[1]:
                d[target] ^= np.uint64(1) << np.uint64(bit)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        i, _j, _ = duplicates.near_pairs(p, d, threshold)
        seconds = time.perf_counter() - start
        peak = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        row = {
            "images": n,
            "seconds": seconds,
            "pairs": len(i),
            "blocks": duplicates.block_count(n, threshold // 2),
            "peak_growth_bytes": peak,
        }
        if n <= 30_000:
            start = time.perf_counter()
            together = 0
            for first in range(0, n, 2000):  # all pairs, 2,000 rows at a time
                total = duplicates.distances(p[first : first + 2000, None], p[None, :]) + duplicates.distances(
                    d[first : first + 2000, None], d[None, :]
                )
                rows_i, cols = np.nonzero(total <= threshold)
                together += int(np.sum(rows_i + first < cols))
            row["all_pairs_seconds"] = time.perf_counter() - start
            assert together == len(i), (together, len(i))
        rows.append(row)
        print(
            f"index: {n:,} images, {len(i):,} pairs in {seconds:.2f} s"
            + (f" (all pairs: {row['all_pairs_seconds']:.2f} s)" if "all_pairs_seconds" in row else ""),
            flush=True,
        )
    first, last = rows[0], rows[-1]
    growth = math.log(last["seconds"] / first["seconds"]) / math.log(last["images"] / first["images"])
    print(f"index cost grows as n^{growth:.2f} from {first['images']:,} to {last['images']:,} images")
    return {"sizes": rows, "growth_exponent": growth}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--photos", type=Path, help="a folder of real photos (JPEG, PNG) to add")
    parser.add_argument("--copies", type=int, default=8, help="near-copies of each kind per photo")
    parser.add_argument("--thresholds", type=int, nargs="+", default=[14, 16, 18, 20, 22, 24, 26, 28])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 30000, 118000])
    parser.add_argument("--ingest-images", type=int, default=200)
    args = parser.parse_args()
    real, generated = photos(args.photos)
    result = {
        "threshold_default": duplicates.THRESHOLD,
        "accuracy": accuracy({"real photos": real, "generated photos": generated}, args.copies, args.thresholds),
        "ingest": ingest_cost(args.ingest_images),
        "index": index_cost(args.sizes, duplicates.THRESHOLD),
    }
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
