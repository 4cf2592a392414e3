"""Features + relations against the decode floor and a straightforward peer implementation.

    .venv/bin/python benchmarks/features.py [--images 400] [--cache resources/bench]

On a sample of the paper profile (every k-th planned image, written once and cached), one run
times, over the same files:
  (a) floor: decode every JPEG and load every mask (.mat) - nothing else;
  (b) ours:  the same loading, then what each ingest job runs on them: regionbench.core.features.measure
             (the compiled kernel) and relations.pairwise given the regions' centroids;
  (c) peer:  the same loading, then per region skimage.measure.regionprops with scipy.stats.skew
             (Lab by the same formula in NumPy), and per ordered pair a Python loop with a dilation.
All three run with the allocator setting of the workflow's jobs (``regionbench.core.allocator``).
Prints the three times and the ratios b/a and c/b, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import ndimage, stats
from skimage.measure import regionprops

from regionbench.core import allocator, features, kernels, relations
from regionbench.io.matlab import read_mat
from regionbench.synthetic import plans
from regionbench.synthetic.saiapr import write_folder


def sample(cache: Path, n_images: int) -> list[tuple[Path, list[Path]]]:
    """(image, masks) files of a paper-profile sample, generating it on first use."""
    root = cache / f"paper_sample_{n_images}"
    planned = plans.plan_collection("paper", seed=0)
    chosen = planned[:: max(len(planned) // n_images, 1)][:n_images]
    if not (root / "done").exists():
        by_folder: dict[str, list] = {}
        for plan in chosen:
            by_folder.setdefault(plan.folder, []).append(plan)
        for folder, group in sorted(by_folder.items()):
            write_folder(root, folder, group)
        (root / "done").write_text("")
    return [
        (
            root / p.folder / "images" / f"{p.image_id}.jpg",
            [root / p.folder / "segmentation_masks" / f"{p.image_id}_{r}.mat" for r in range(1, len(p.labels) + 1)],
        )
        for p in chosen
    ]


def load(image: Path, masks: list[Path]) -> tuple[np.ndarray, list[np.ndarray]]:
    return features.decode_image(image), [read_mat(m)["segimg_t"] == 0 for m in masks]


def numpy_lab(rgb: np.ndarray) -> np.ndarray:
    """The Lab formula of regionbench.core.features.lab, written in NumPy as a peer would."""
    xyz = rgb @ (kernels.RGB_TO_XYZ / (255.0 * kernels.WHITE[:, None])).T
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    light = np.where(xyz[:, 1] > 0.008856, 116.0 * f[:, 1] - 16.0, 903.3 * xyz[:, 1])
    return np.column_stack([light, 500.0 * (f[:, 0] - f[:, 1]), 200.0 * (f[:, 1] - f[:, 2])])


def peer_features(image: np.ndarray, masks: list[np.ndarray]) -> np.ndarray:
    h, w = image.shape[:2]
    all_x = np.tile(np.arange(1, w + 1), h)
    all_y = np.repeat(np.arange(1, h + 1), w)
    out = []
    cross = ndimage.generate_binary_structure(2, 1)
    for m in masks:
        p = regionprops(m.astype(np.uint8))[0]
        r0, c0, r1, c1 = p.bbox
        y, x = p.coords[:, 0] + 1.0, p.coords[:, 1] + 1.0
        boundary = m & ~ndimage.binary_erosion(m, structure=cross, border_value=0)
        row = [p.area / (h * w), (c1 - c0) / w, (r1 - r0) / h, x.mean() / w, y.mean() / h,
               np.std(x, ddof=1) / np.std(all_x, ddof=1), np.std(y, ddof=1) / np.std(all_y, ddof=1),
               boundary.sum() / p.area, 1 - p.area / ((c1 - c0) * (r1 - r0))]  # fmt: skip
        pixels = image[m].astype(np.float64)
        for values in (pixels, numpy_lab(pixels)):
            row += [values[:, c].mean() for c in range(3)]
            row += [np.std(values[:, c], ddof=1) for c in range(3)]
            row += [stats.skew(values[:, c]) for c in range(3)]
        out.append(row)
    return np.array(out)


def peer_relations(masks: list[np.ndarray], shape: tuple[int, int], tau: float = 0.1) -> list[tuple]:
    h, w = shape
    out = []
    square = np.ones((3, 3), dtype=bool)
    centres = [regionprops(m.astype(np.uint8))[0].centroid for m in masks]
    for i, a in enumerate(masks):
        for j, b in enumerate(masks):
            if i == j:
                continue
            near = (ndimage.binary_dilation(a, structure=square) & b).any()
            (yi, xi), (yj, xj) = centres[i], centres[j]
            horizontal = "x_aligned" if abs(xi - xj) <= tau * w else "beside"
            vertical = "y_aligned" if abs(yi - yj) <= tau * h else ("above" if yi < yj else "below")
            out.append((i, j, "adjacent" if near else "disjoint", horizontal, vertical))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=400)
    ap.add_argument("--cache", default="resources/bench")
    args = ap.parse_args()
    kept = allocator.keep_freed_memory()  # as every workflow job does, for all three measurements
    files = sample(Path(args.cache), args.images)
    features.measure(*load(*files[0]))  # compiled (or loaded from numba's cache) once, as a job does
    n_regions = sum(len(m) for _, m in files)

    start = time.perf_counter()
    for image, masks in files:
        load(image, masks)
    floor = time.perf_counter() - start

    start = time.perf_counter()
    for image, masks in files:
        pixels, ms = load(image, masks)
        _, centres = features.measure(pixels, ms)
        relations.pairwise(ms, pixels.shape[:2], centres=centres)
    ours = time.perf_counter() - start

    start = time.perf_counter()
    for image, masks in files:
        pixels, ms = load(image, masks)
        peer_features(pixels, ms)
        peer_relations(ms, pixels.shape[:2])
    peer = time.perf_counter() - start

    # The peer must compute the same numbers, or its time means nothing.
    pixels, ms = load(*files[0])
    np.testing.assert_allclose(peer_features(pixels, ms), features.image_features(pixels, ms), rtol=1e-6, atol=1e-9)

    print(f"sample: {len(files)} images, {n_regions} regions of the paper profile; freed memory kept: {kept}")
    print(f"(a) floor, decode + load masks: {floor:8.2f} s")
    print(f"(b) ours, + features/relations: {ours:8.2f} s   b/a = {ours / floor:.2f}  (target <= 1.5)")
    print(f"(c) peer, regionprops + loops:  {peer:8.2f} s   c/b = {peer / ours:.2f}  (target >= 5)")
    print(json.dumps({"images": len(files), "regions": n_regions, "floor_s": round(floor, 3), "ours_s": round(ours, 3),
                      "peer_s": round(peer, 3), "ours_over_floor": round(ours / floor, 3), "peer_over_ours": round(peer / ours, 3),
                      "freed_memory_kept": kept}))  # fmt: skip


if __name__ == "__main__":
    main()
