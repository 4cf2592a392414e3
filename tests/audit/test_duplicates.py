"""Perceptual hashes equal imagehash's; the neighbour index finds exactly the pairs an all-pairs
comparison finds; groups are the connected components and never lose a pair."""

from __future__ import annotations

import imagehash
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from regionbench.audit import duplicates
from regionbench.core import hashes


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.uint8, st.tuples(st.integers(1, 127), st.integers(1, 127), st.just(3))),
    st.booleans(),
)
def test_hashes_are_imagehash_s_below_the_reducing_size(pixels: np.ndarray, smooth: bool) -> None:
    """Under 128 pixels a side (36x32 for the difference hash) Pillow reduces nothing: the hashes
    are imagehash's, bit for bit."""
    if smooth:  # photos are smooth: the DCT's low frequencies then carry the image
        pixels = np.cumsum(pixels, axis=1, dtype=np.uint64).astype(np.uint8)
    image = Image.fromarray(pixels)
    phash, dhash = hashes.image_hashes(pixels)
    assert phash == str(imagehash.phash(image))
    if pixels.shape[0] < 32 and pixels.shape[1] < 36:
        assert dhash == str(imagehash.dhash(image))


def smooth_photo(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A grey image whose spectrum falls as 1/f, as a photograph's does."""
    fy, fx = np.meshgrid(np.fft.fftfreq(height), np.fft.rfftfreq(width), indexing="ij")
    fall = 1.0 / np.maximum(np.hypot(fy, fx), 1.0 / max(height, width))
    spectrum = (rng.standard_normal(fall.shape) + 1j * rng.standard_normal(fall.shape)) * fall
    field = np.fft.irfft2(spectrum, s=(height, width))
    return np.clip(128 + 40 * field / field.std(), 0, 255).astype(np.uint8)


def test_large_images_hash_within_a_few_bits_of_imagehash() -> None:
    """Above that size the box reduction moves a photograph's hashes by a bit or two."""
    rng = np.random.default_rng(0)
    apart = []
    for _ in range(60):
        pixels = smooth_photo(rng, int(rng.integers(130, 900)), int(rng.integers(130, 900)))
        image = Image.fromarray(pixels)
        ours = hashes.image_hashes(pixels)
        theirs = (str(imagehash.phash(image)), str(imagehash.dhash(image)))
        apart.append([bin(int(a, 16) ^ int(b, 16)).count("1") for a, b in zip(ours, theirs, strict=True)])
    distance = np.array(apart)
    assert distance.mean(axis=0).max() <= 2.0 and distance.max() <= 10, distance.mean(axis=0)


def test_grey_pixels_hash_as_their_rgb() -> None:
    grey = np.add.outer(np.arange(40), np.arange(60)).astype(np.uint8)
    assert hashes.image_hashes(grey) == hashes.image_hashes(np.stack([grey] * 3, axis=-1))


def _near(rng: np.random.Generator, values: np.ndarray, bits: int) -> np.ndarray:
    out = values.copy()
    for _ in range(bits):
        out ^= np.uint64(1) << rng.integers(0, 64, len(values)).astype(np.uint64)
    return out


@st.composite
def collections(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Hash pairs of distinct images and of near-copies (a few bits flipped, chains of copies)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 300))
    phash = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    dhash = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    for _ in range(draw(st.integers(0, 3))):
        if len(phash) == 0:
            break
        source = rng.integers(0, len(phash), draw(st.integers(1, 60)))
        bits = draw(st.integers(0, 16))
        phash = np.concatenate([phash, _near(rng, phash[source], bits)])
        dhash = np.concatenate([dhash, _near(rng, dhash[source], bits)])
    return phash, dhash


def _all_pairs(phash: np.ndarray, dhash: np.ndarray, threshold: int) -> set[tuple[int, int]]:
    total = duplicates.distances(phash[:, None], phash[None, :]) + duplicates.distances(dhash[:, None], dhash[None, :])
    i, j = np.nonzero(np.triu(total <= threshold, 1))
    return set(zip(i.tolist(), j.tolist(), strict=True))


@settings(max_examples=80, deadline=None)
@given(collections(), st.integers(0, 40))
def test_index_finds_every_pair_an_all_pairs_comparison_finds(hashed: tuple, threshold: int) -> None:
    phash, dhash = hashed
    i, j, distance = duplicates.near_pairs(phash, dhash, threshold)
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == _all_pairs(phash, dhash, threshold)
    assert np.array_equal(distance, duplicates.distances(phash[i], phash[j]) + duplicates.distances(dhash[i], dhash[j]))
    assert list(zip(i, j, strict=True)) == sorted(zip(i, j, strict=True))


@settings(max_examples=80, deadline=None)
@given(collections())
def test_groups_are_the_connected_components(hashed: tuple) -> None:
    phash, dhash = hashed
    n = len(phash)
    ids = np.arange(n, dtype=np.int64) * 7 + 3  # image ids are not positions
    i, j, distance = duplicates.near_pairs(phash, dhash)
    table = duplicates.groups(ids, i, j, distance).to_pydict()
    _, label = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    grouped = {int(ids[k]) for k in set(i.tolist()) | set(j.tolist())}
    assert set(table["image_id"]) == grouped  # every image with a pair, and no other
    position = {int(v): k for k, v in enumerate(ids)}
    for image, group, nearest, dist in zip(
        table["image_id"], table["group_id"], table["nearest_image_id"], table["distance"], strict=True
    ):
        members = ids[label == label[position[image]]]
        assert group == members.min()
        assert label[position[nearest]] == label[position[image]] and nearest != image
        pairs = {(a, b): d for a, b, d in zip(i.tolist(), j.tolist(), distance.tolist(), strict=True)}
        a, b = sorted((position[image], position[nearest]))
        assert pairs[(a, b)] == dist
        own = [d for (x, y), d in pairs.items() if position[image] in (x, y)]
        assert dist == min(own)


def test_an_image_without_hashes_is_one_line() -> None:
    images = pa.table({"image_id": [1, 2], "phash": ["00ff00ff00ff00ff", None], "dhash": ["0" * 16, "1" * 16]})
    try:
        duplicates.duplicate_groups(images)
    except ValueError as exc:
        assert "no perceptual hash" in str(exc)
    else:
        raise AssertionError("a missing hash was taken")


def test_block_count_grows_with_the_collection() -> None:
    counts = [duplicates.block_count(n, 11) for n in (10**3, 10**5, 10**6, 10**8)]
    assert counts == sorted(counts, reverse=True) and counts[1] == 4 and counts[-1] == 3


@settings(max_examples=60, deadline=None)
@given(collections(), st.integers(0, 2**32 - 1), st.integers(0, 400), st.booleans())
def test_groups_made_chunk_by_chunk_are_those_of_all_pairs(hashed: tuple, seed: int, frames: int, small: bool) -> None:
    """The build's grouping (candidates a chunk at a time, never all pairs held) gives the table
    that all the pairs give, whatever the chunks: near-identical frames (every image in one hash
    bucket, as a video's are) mixed with distinct images and shuffled ids."""
    import unittest.mock

    phash, dhash = hashed
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, 2, dtype=np.uint64, endpoint=False)
    phash = np.concatenate([phash, _near(rng, np.repeat(base[:1], frames), 2)])
    dhash = np.concatenate([dhash, _near(rng, np.repeat(base[1:], frames), 2)])
    ids = rng.permutation(len(phash)).astype(np.int64) * 11 + 5
    images = pa.table({"image_id": ids, "phash": [f"{v:016x}" for v in phash], "dhash": [f"{v:016x}" for v in dhash]})
    with unittest.mock.patch.object(duplicates, "_CHUNK", 64 if small else duplicates._CHUNK):
        chunked = duplicates.duplicate_groups(images)
    assert chunked.equals(duplicates.groups(ids, *duplicates.near_pairs(phash, dhash)))
