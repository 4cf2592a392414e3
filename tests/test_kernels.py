"""The compiled loops against the NumPy implementation they replaced (tests/reference_features.py):
features within 1e-12 of the reference, numpy's sums bit for bit, the same bits on any CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import reference_features
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import ndimage

from regionbench.core import features, kernels, relations
from regionbench.pipeline.ingest import ingest_shard

# Relative to max(|reference|, 1). The skewness of a near-constant channel divides by a tiny
# spread, which magnifies the rounding of two summation orders past 1e-12 (seen at 1.06e-12).
TOLERANCE = 1e-11


def _close(got: np.ndarray, reference: np.ndarray) -> float:
    """Largest difference relative to max(|reference|, 1); NaN where both are NaN (an image one
    pixel wide has no spread of x to divide by) counts as equal."""
    assert np.array_equal(np.isnan(got), np.isnan(reference))
    both = ~np.isnan(reference)
    return float((np.abs(got - reference)[both] / np.maximum(np.abs(reference[both]), 1.0)).max(initial=0.0))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3000), st.floats(-1e6, 1e6), st.integers(0, 2**32 - 1))
def test_pairwise_sum_is_numpys_bit_for_bit(n: int, offset: float, seed: int) -> None:
    a = np.random.default_rng(seed).standard_normal(n) * 1e3 + offset
    assert kernels.pairwise_sum(a) == a.sum()


def test_pairwise_sum_on_long_arrays() -> None:
    rng = np.random.default_rng(0)
    for n in (8191, 8192, 8193, 65_537, 172_800, 1_000_003):
        a = rng.random(n) * 100 - 7
        assert kernels.pairwise_sum(a) == a.sum()


def _ulps(y: float, x: float) -> float:
    getcontext().prec = 60
    exact = Decimal(x) ** (Decimal(1) / Decimal(3))
    return float(abs(Decimal(y) - exact) / Decimal(np.spacing(y)))


@settings(max_examples=300, deadline=None)
@given(st.floats(2.0**-600, 2.0**600))
def test_cube_root_within_two_thirds_of_an_ulp(x: float) -> None:
    assert _ulps(float(kernels.cbrt(np.array([x]))[0]), x) < 0.67


def test_cube_root_of_cubes_and_zero() -> None:
    values = np.array([0.0, 1.0, 8.0, 0.125, 27.0, 2.0**-597, 2.0**600, 1e-6])
    expected = [0.0, 1.0, 2.0, 0.5, 3.0, 2.0**-199, 2.0**200, 1e-2]
    np.testing.assert_array_equal(kernels.cbrt(values), expected)


def test_lab_of_every_8_bit_colour_matches_the_reference() -> None:
    """All 2^24 colours, in chunks: the kernel's Lab within 1e-12 of NumPy's formula."""
    worst = 0.0
    for red in range(0, 256, 16):
        r, g, b = np.meshgrid(np.arange(red, red + 16), np.arange(256), np.arange(256), indexing="ij")
        rgb = np.stack([r, g, b], axis=-1).astype(np.uint8).reshape(1, -1, 3)
        got = np.moveaxis(kernels.lab_planes(rgb, kernels.XYZ), 0, 2)
        worst = max(worst, _close(got, reference_features.lab(rgb)))
    assert worst <= TOLERANCE


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 80), st.integers(0, 2**32 - 1))
def test_lab_of_an_image_is_each_pixels_alone_bit_for_bit(height: int, width: int, seed: int) -> None:
    """Pixels are converted in blocks (``kernels.LAB_BLOCK``); where an image's blocks end,
    whole or cut short, changes no bit of any pixel."""
    rgb = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    whole = kernels.lab_planes(rgb, kernels.XYZ)
    alone = np.stack(
        [kernels.lab_planes(np.ascontiguousarray(p.reshape(1, 1, 3)), kernels.XYZ) for p in rgb.reshape(-1, 3)]
    )
    np.testing.assert_array_equal(whole.reshape(3, -1).view(np.uint64), alone.reshape(-1, 3).T.view(np.uint64))


def test_lab_refuses_values_that_are_not_8_bit() -> None:
    for bad in (np.array([0.5, 1.0, 2.0]), np.array([300, 0, 0]), np.array([1, 2])):
        try:
            features.lab(bad)
        except ValueError as exc:
            assert "8-bit" in str(exc)
        else:
            raise AssertionError(f"{bad} accepted")


@st.composite
def images_and_masks(draw: st.DrawFn) -> tuple[np.ndarray, list[np.ndarray]]:
    h, w = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    gray = draw(st.booleans())
    shape = (h, w) if gray else (h, w, 3)
    image = draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, 255)))
    masks = []
    for _ in range(draw(st.integers(1, 4))):
        mask = draw(hnp.arrays(bool, (h, w)))
        if not mask.any():
            mask[draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))] = True
        masks.append(mask)
    return image, masks


@settings(max_examples=300, deadline=None)
@given(images_and_masks())
def test_features_match_the_numpy_reference(case: tuple[np.ndarray, list[np.ndarray]]) -> None:
    image, masks = case
    got, centres = features.measure(image, masks)
    with np.errstate(invalid="ignore"):
        reference = reference_features.reference_image_features(image, masks)
    assert _close(got, reference) <= TOLERANCE
    np.testing.assert_array_equal(centres, relations.centroids(masks))


def test_features_of_the_demo_collection_match_the_reference(demo_quirks: Path) -> None:

    shard = ingest_shard(demo_quirks, "00")
    regions = shard.regions.to_pylist()
    worst, compared = 0.0, 0
    for image in shard.images.to_pylist():
        from regionbench.core import geometry

        own = [r for r in regions if r["image_id"] == image["image_id"]]
        masks = [geometry.from_rle(r["mask"]) for r in own]
        pixels = features.decode_image(demo_quirks / image["path"])
        worst = max(
            worst,
            _close(features.image_features(pixels, masks), reference_features.reference_image_features(pixels, masks)),
        )
        compared += len(own)
    assert compared == shard.regions.num_rows > 100 and worst <= TOLERANCE


def _dilation_adjacency(masks: list[np.ndarray], r: int) -> np.ndarray:
    """Adjacency by dilating each mask by a (2r+1) square, as the NumPy implementation did."""
    n = len(masks)
    out = np.zeros((n, n), dtype=bool)
    square = np.ones((2 * r + 1, 2 * r + 1), dtype=bool)
    for a in range(n):
        grown = ndimage.binary_dilation(masks[a], structure=square) if r else masks[a]
        for b in range(n):
            if a != b:
                out[a, b] = bool((grown & masks[b]).any())
    return out


@settings(max_examples=300, deadline=None)
@given(images_and_masks(), st.integers(0, 3))
def test_adjacency_matches_dilation(case: tuple[np.ndarray, list[np.ndarray]], r: int) -> None:
    _, masks = case
    np.testing.assert_array_equal(relations.adjacency(masks, r), _dilation_adjacency(masks, r))


_PROBE = """
import json, sys
import numpy as np
from regionbench.core import features
rng = np.random.default_rng(7)
image = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
masks = [rng.random((60, 80)) < p for p in (0.2, 0.5, 0.9)]
print(json.dumps(features.image_features(image, masks).tobytes().hex()))
"""


def test_the_same_bits_on_a_cpu_without_avx(tmp_path: Path) -> None:
    """Compiled for a generic x86-64 (no AVX, no FMA) in a fresh cache, the features have the
    host's bits: no fused multiply-add, no CPU-dependent library call."""
    import os
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return
    host = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    env = {**os.environ, "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path)}
    generic = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, env=env)
    assert json.loads(host.stdout) == json.loads(generic.stdout)
