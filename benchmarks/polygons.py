"""Exact region polygons: the boundary walk against GEOS polygonize, on paper-profile masks.

    .venv/bin/python benchmarks/polygons.py [--images 400] [--cache resources/bench]

On the sample of benchmarks/features.py (every k-th planned image of the paper profile, written
once and cached), times ``geometry.mask_to_polygon`` (the compiled walk along the pixel edges)
and the polygonize construction the tests hold it to (tests/reference_geometry.py) over every
region mask, checks that both give the same WKB for every mask, and prints milliseconds a mask
and their ratio, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import shapely
from features import load, sample

from regionbench.core import geometry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import reference_geometry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=400)
    ap.add_argument("--cache", default="resources/bench")
    args = ap.parse_args()
    masks = [m for image, files in sample(Path(args.cache), args.images) for m in load(image, files)[1]]
    geometry.mask_to_polygon(masks[0][:, 1:])  # compiled (or loaded from numba's cache) once, as a job does
    timed = {}
    for name, polygon in (("walk", geometry.mask_to_polygon), ("polygonize", reference_geometry.mask_to_polygon)):
        start = time.perf_counter()
        wkb = [shapely.to_wkb(polygon(m)) for m in masks]
        timed[name] = (time.perf_counter() - start, wkb)
    if timed["walk"][1] != timed["polygonize"][1]:
        sys.exit("the walk and polygonize disagree on a mask: the timing means nothing")
    walk, geos = (timed[k][0] / len(masks) * 1e3 for k in ("walk", "polygonize"))
    print(f"sample: {len(masks)} region masks of the paper profile, the same WKB from both")
    print(f"walk (geometry.mask_to_polygon): {walk:7.3f} ms a mask")
    print(f"GEOS polygonize:                 {geos:7.3f} ms a mask   polygonize/walk = {geos / walk:.1f}")
    print(json.dumps({"masks": len(masks), "walk_ms": round(walk, 4), "polygonize_ms": round(geos, 4)}))


if __name__ == "__main__":
    main()
