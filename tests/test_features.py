"""saiapr27 against a slow reference written straight from the formulas of docs/features.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from regionbench.core import features, tables
from regionbench.core.features import FEATURE_NAMES
from regionbench.io.saiapr import features_parity, num2str, num2str_tolerance, read_official_features
from regionbench.pipeline.ingest import ingest_shard


def reference_lab(r: float, g: float, b: float) -> tuple[float, float, float]:
    R, G, B = r / 255, g / 255, b / 255
    X = (0.412453 * R + 0.357580 * G + 0.180423 * B) / 0.950456
    Y = 0.212671 * R + 0.715160 * G + 0.072169 * B
    Z = (0.019334 * R + 0.119193 * G + 0.950227 * B) / 1.088754

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    L = 116 * Y ** (1 / 3) - 16 if Y > 0.008856 else 903.3 * Y
    return L, 500 * (f(X) - f(Y)), 200 * (f(Y) - f(Z))


def matlab_std(v: list[float]) -> float:
    n = len(v)
    if n == 1:
        return 0.0
    m = sum(v) / n
    return (sum((x - m) ** 2 for x in v) / (n - 1)) ** 0.5


def matlab_skew(v: list[float]) -> float:
    n = len(v)
    m = sum(v) / n
    m2 = sum((x - m) ** 2 for x in v) / n
    m3 = sum((x - m) ** 3 for x in v) / n
    return 0.0 if m2 <= (1e-10 * max(abs(m), 1.0)) ** 2 else m3 / m2**1.5  # rounding-only spread is none


def reference(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=2)
    H, W = mask.shape
    pix = [(r, c) for r in range(H) for c in range(W) if mask[r, c]]
    xs = [c + 1 for _, c in pix]
    ys = [r + 1 for r, _ in pix]
    all_x = [c + 1 for r in range(H) for c in range(W)]
    all_y = [r + 1 for r in range(H) for c in range(W)]
    n = len(pix)
    bw, bh = max(xs) - min(xs) + 1, max(ys) - min(ys) + 1

    def outside(r: int, c: int) -> bool:
        return not (0 <= r < H and 0 <= c < W) or not mask[r, c]

    boundary = sum(any(outside(r + dr, c + dc) for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))) for r, c in pix)
    out = [n / (H * W), bw / W, bh / H, sum(xs) / n / W, sum(ys) / n / H,
           matlab_std(xs) / matlab_std(all_x), matlab_std(ys) / matlab_std(all_y), boundary / n, 1 - n / (bw * bh)]  # fmt: skip
    rgb = [[float(image[r, c, k]) for r, c in pix] for k in range(3)]
    labs = [reference_lab(*(float(image[r, c, k]) for k in range(3))) for r, c in pix]
    lab = [[v[k] for v in labs] for k in range(3)]
    for channels in (rgb, lab):
        out += [sum(ch) / n for ch in channels]
        out += [matlab_std(ch) for ch in channels]
        out += [matlab_skew(ch) for ch in channels]
    return np.array(out)


def assert_matches(image: np.ndarray, mask: np.ndarray) -> None:
    np.testing.assert_allclose(features.saiapr27(image, mask), reference(image, mask), rtol=1e-9, atol=1e-12)


def test_names() -> None:
    assert len(FEATURE_NAMES) == 27 and len(set(FEATURE_NAMES)) == 27
    assert FEATURE_NAMES[:9] == (
        "area_norm",
        "width_norm",
        "height_norm",
        "mean_x_norm",
        "mean_y_norm",
        "std_x_norm",
        "std_y_norm",
        "boundary_area",
        "convexity",
    )
    assert FEATURE_NAMES[9:12] == ("rgb_mean_r", "rgb_mean_g", "rgb_mean_b") and FEATURE_NAMES[-1] == "lab_skew_b"


@pytest.mark.parametrize("seed", range(12))
def test_random_masks_on_random_images(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, w = rng.integers(5, 24, size=2)
    image = rng.integers(0, 256, size=(h, w) if seed % 3 == 0 else (h, w, 3), dtype=np.uint8)  # some grayscale
    mask = rng.random((h, w)) < rng.uniform(0.05, 0.95)
    mask[rng.integers(h), rng.integers(w)] = True
    assert_matches(image, mask)


@pytest.mark.parametrize("case", ["single", "full", "hline", "vline", "hole", "border", "corner", "flat"])
def test_edge_cases(case: str) -> None:
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, size=(9, 11, 3), dtype=np.uint8)
    m = np.zeros((9, 11), dtype=bool)
    if case == "single":
        m[4, 5] = True
    elif case == "full":
        m[:] = True
    elif case == "hline":
        m[3, 2:9] = True
    elif case == "vline":
        m[1:8, 6] = True
    elif case == "hole":
        m[1:8, 1:9] = True
        m[3:5, 4:6] = False
    elif case == "border":
        m[0, :] = m[:, -1] = True
    elif case == "corner":
        m[-3:, :2] = True
    elif case == "flat":  # zero variance: skewness 0
        m[2:5, 2:5] = True
        image[2:5, 2:5] = 77
    assert_matches(image, m)


def test_dark_pixels_use_the_linear_branch() -> None:
    image = np.zeros((4, 4, 3), dtype=np.uint8)
    image[:2] = 1  # Y below 0.008856
    image[2:] = 200
    assert_matches(image, np.ones((4, 4), dtype=bool))


def test_lab_of_white_and_black() -> None:
    np.testing.assert_allclose(features.lab(np.array([255, 255, 255])), [100, 0, 0], atol=1e-3)
    np.testing.assert_allclose(features.lab(np.array([0, 0, 0])), [0, 0, 0], atol=1e-12)


def test_batch_equals_single_and_boxes() -> None:
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    masks = [rng.random((30, 40)) < 0.1 for _ in range(4)]
    batch = features.image_features(image, masks)
    for m, row in zip(masks, batch, strict=True):
        np.testing.assert_allclose(row, features.saiapr27(image, m), rtol=1e-12)


def test_num2str_format() -> None:
    row = np.array([0.1063021, 1.0, 103.66631, -0.0683496, 12.4])
    text = num2str(row)
    assert text == "0.1063021             1      103.6663    -0.0683496          12.4"  # %14.7g each
    back = np.array(text.split(), dtype=float)
    assert (np.abs(back - row) <= num2str_tolerance(back)).all()


def test_convexity_invariant_on_demo(demo_quirks: Path, demo_ingest: Path) -> None:
    for folder in ("00", "01"):
        table = tables.read_parquet(demo_ingest / folder / "features.parquet")
        f = {name: table.column(name).to_numpy() for name in ("convexity", "area_norm", "width_norm", "height_norm")}
        expected = 1 - f["area_norm"] / (f["width_norm"] * f["height_norm"])
        np.testing.assert_allclose(f["convexity"], expected, rtol=1e-12, atol=1e-12)
        assert table.num_rows == tables.read_parquet(demo_ingest / folder / "regions.parquet").num_rows


def test_parity_with_generated_features_txt(tiny_raw: Path) -> None:

    shard = ingest_shard(tiny_raw, "00")
    computed = shard.features
    report = features_parity(read_official_features([tiny_raw]), computed)
    assert report["rows_compared"] == computed.num_rows and report["rows_only_computed"] == 0
    assert all(c["excess"] == 0 for c in report["columns"].values()), report["worst_rows"]
    assert max(c["max_abs_diff"] for c in report["columns"].values()) > 0  # rounding is really there
    # A wrong value is caught.
    column = computed.schema.get_field_index("rgb_mean_r")
    tampered = computed.set_column(column, "rgb_mean_r", [computed.column("rgb_mean_r").to_numpy() + 0.01])
    assert features_parity(read_official_features([tiny_raw]), tampered)["columns"]["rgb_mean_r"]["excess"] > 0


def test_keeping_freed_memory_changes_no_bit() -> None:
    """The allocator setting of the workflow's jobs takes on this C library and leaves every
    feature bit as it was (each run in its own process: the setting is process-wide)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from regionbench.core import allocator, features\n"
        "kept = allocator.keep_freed_memory() if sys.argv[1] == 'on' else None\n"
        "rng = np.random.default_rng(3)\n"
        "image = rng.integers(0, 256, size=(360, 480, 3), dtype=np.uint8)\n"
        "masks = [rng.random((360, 480)) < p for p in (0.2, 0.5, 0.9)]\n"
        "sys.stdout.write(repr(kept) + ' ' + features.image_features(image, masks).tobytes().hex())\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, check=True).stdout.split()
        for mode in ("off", "on")
    ]
    assert runs[1][0] == "True" and runs[0][1] == runs[1][1]
