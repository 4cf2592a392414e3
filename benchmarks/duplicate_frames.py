"""The near-duplicate audit on near-identical frames (a video's, a burst's): every image in one
hash bucket, n^2/2 near pairs. Its grouping's peak memory and time as the frames grow.

    .venv/bin/python benchmarks/duplicate_frames.py [--sizes 2500 5000 10000 20000]

Each size runs ``audit.duplicates.duplicate_groups`` in a fresh interpreter on frames whose
hashes differ from one base by two bits each (so every pair is within the threshold), and
reports the interpreter's peak RSS and the grouping's seconds. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys

RUN = """
import json, sys, time
import numpy as np, pyarrow as pa
from regionbench.audit import duplicates
n = int(sys.argv[1])
rng = np.random.default_rng(0)
def near(base):
    out = np.full(n, base, np.uint64)
    for _ in range(2):
        out ^= np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
    return out
base = rng.integers(0, 2**64, 2, dtype=np.uint64, endpoint=False)
images = pa.table({"image_id": np.arange(n, dtype=np.int64),
                   "phash": [f"{v:016x}" for v in near(base[0])], "dhash": [f"{v:016x}" for v in near(base[1])]})
start = time.perf_counter()
groups = duplicates.duplicate_groups(images)
print(json.dumps({"seconds": time.perf_counter() - start, "grouped": groups.num_rows,
                  "groups": len(set(groups.column("group_id").to_pylist()))}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000, 20000])
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run([sys.executable, "-c", RUN, str(n)], capture_output=True, text=True, check=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        row = json.loads(done.stdout) | {"frames": n, "pairs": n * (n - 1) // 2, "peak_mib": max(peak, before) / 1024}
        rows.append(row)
        print(f"{n:,} frames, {row['pairs']:,} near pairs: {row['seconds']:.1f} s, peak {row['peak_mib']:.0f} MiB, "
              f"{row['groups']} group of {row['grouped']:,} images", flush=True)  # fmt: skip
    first, last = rows[0], rows[-1]
    growth = math.log(last["peak_mib"] / first["peak_mib"]) / math.log(last["frames"] / first["frames"])
    print(f"peak memory grows as n^{growth:.2f} from {first['frames']:,} to {last['frames']:,} frames")
    print(json.dumps({"sizes": rows, "peak_growth_exponent": growth}, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
