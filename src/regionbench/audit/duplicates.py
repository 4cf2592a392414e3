"""Near-duplicate images: pairs whose perceptual hashes are close, and the groups they make.

Two images are near-duplicates when the Hamming distances of their DCT hashes and of their
difference hashes sum to at most ``threshold`` (of 128 bits). The sum tolerates what one hash
alone does not: a 90% crop moves the DCT hash by up to 16 bits, while the difference hash of the
same crop moves less, and the reverse for a dark, flat image re-encoded. Groups are the connected
components of the relation (a copy of a copy is in its original's group).

The pairs are found without comparing all pairs (multi-index hashing, Norouzi, Punjani and Fleet,
CVPR 2012): a pair within ``threshold`` in sum is within ``threshold // 2`` in one of the two
hashes; a 64-bit hash within R bits of another agrees within ``R // m`` bits on one of its m
blocks (pigeonhole). Each block value is looked up, flipped in every way of at most ``R // m``
bits, in a table of the images by block value, and only the pairs looked up are compared. At
the default threshold (22: R = 11) and up to ~600,000 images, m = 4 blocks of 16 bits: an image
is compared with about 4 x 137 x n / 65,536 others, not n.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from math import comb

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

THRESHOLD = 22  # of 128 bits: the default, chosen by benchmarks/duplicates.py (docs/audit.md)
_CHUNK = 1 << 18  # block values looked up at once: bounds the candidate arrays

GROUPS = pa.schema(
    [
        ("group_id", pa.int64()),
        ("image_id", pa.int64()),
        ("nearest_image_id", pa.int64()),
        ("distance", pa.int32()),
    ]
)


def as_integers(hashes: Iterable[str | None]) -> np.ndarray:
    """Hex hashes (16 digits) as unsigned 64-bit integers; a missing hash raises ValueError."""
    try:
        return np.array([int(h, 16) for h in hashes], dtype=np.uint64)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError("an image has no perceptual hash (phash, dhash): rebuild the release") from None


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between unsigned 64-bit hashes, element by element."""
    return np.bitwise_count(np.bitwise_xor(a, b)).astype(np.int32)


def _flips(width: int, radius: int) -> np.ndarray:
    """Every ``width``-bit mask of at most ``radius`` ones."""
    masks = np.arange(1 << width, dtype=np.int64)
    return masks[np.bitwise_count(masks) <= radius]


def block_count(n: int, radius: int) -> int:
    """How many blocks to cut a 64-bit hash into for ``n`` hashes and ``radius``: the fewest
    look-ups plus compared pairs, n x m x F(64/m, R//m) x (1 + n / 2^(64/m)), F the masks of a
    block. Few blocks are wide (few hashes share a value) but need many masks each; the best
    count grows with n, which keeps the cost below n^2 (four blocks up to some 600,000 hashes)."""

    def cost(m: int) -> float:
        width = -(-64 // m)
        masks = sum(comb(width, k) for k in range(radius // m + 1))
        return m * masks * (1 + n / 2**width)

    return min(range(3, 9), key=lambda m: (cost(m), m))


def _blocks(values: np.ndarray, m: int) -> list[tuple[int, np.ndarray]]:
    """The ``m`` blocks of each hash, as (width, values): widths 64/m, the first ones a bit wider."""
    widths = [64 // m + (1 if b < 64 % m else 0) for b in range(m)]
    out, shift = [], 0
    for width in widths:
        mask = np.uint64((1 << width) - 1)
        out.append((width, ((values >> np.uint64(shift)) & mask).astype(np.int64)))
        shift += width
    return out


def close_pairs(values: np.ndarray, radius: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The pairs ``i < j`` whose hashes in ``values`` (uint64) may be within ``radius`` bits, in
    chunks: every such pair once, and others that are not (the caller measures the distance it
    needs and keeps what it wants, so memory holds one chunk of candidates, not all)."""
    n = len(values)
    m = block_count(n, radius)
    within = radius // m  # one block of a pair within radius differs in at most this many bits
    blocks = _blocks(values, m)
    for b, (width, keys) in enumerate(blocks):
        flips = _flips(width, within)
        order = np.argsort(keys, kind="stable")
        counts = np.bincount(keys, minlength=1 << width)
        starts = np.cumsum(counts) - counts
        # Queries in runs of at most _CHUNK candidates (at least one query a run): near-identical
        # images put every image in one bucket, where a fixed number of queries would not be bounded.
        load = counts[keys[:, None] ^ flips[None, :]].sum(axis=1)
        ends = np.searchsorted(np.cumsum(load), np.arange(1, int(load.sum()) // _CHUNK + 2) * _CHUNK, side="right")
        cuts = np.unique(np.concatenate([[0], np.maximum(ends, 1), [n]]).clip(0, n))
        for first, last in itertools.pairwise(cuts):
            query = np.arange(first, last)
            probe = (keys[query][:, None] ^ flips[None, :]).ravel()
            many = counts[probe]
            total = int(many.sum())
            if total == 0:
                continue
            i = np.repeat(np.repeat(query, len(flips)), many)
            offsets = np.arange(total) - np.repeat(np.cumsum(many) - many, many)
            j = order[np.repeat(starts[probe], many) + offsets]
            keep = i < j
            i, j = i[keep], j[keep]
            # A pair found in an earlier block was kept there: once is enough.
            for _, earlier in blocks[:b]:
                later = np.bitwise_count(earlier[i] ^ earlier[j]) > within
                i, j = i[later], j[later]
            yield i, j


def near_pairs(
    phash: np.ndarray, dhash: np.ndarray, threshold: int = THRESHOLD
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Near-duplicate pairs ``(i, j, distance)``, ``i < j`` positions in the hash arrays, sorted;
    distance = Hamming(phash) + Hamming(dhash) <= ``threshold`` (module docstring)."""
    n = len(phash)
    keys: list[np.ndarray] = [np.zeros(0, np.int64)]
    for values in (phash, dhash):
        for i, j in close_pairs(values, threshold // 2):
            total = distances(phash[i], phash[j]) + distances(dhash[i], dhash[j])
            keys.append((i * n + j)[total <= threshold])
    pairs = np.unique(np.concatenate(keys))
    i, j = pairs // max(n, 1), pairs % max(n, 1)
    return i, j, distances(phash[i], phash[j]) + distances(dhash[i], dhash[j])


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Each of ``n`` items' component under the edges ``(i, j)``: its smallest member."""
    return merged(np.arange(n), i, j)


def merged(root: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``root`` (each item's component: its smallest member, under the edges seen so far) with
    the edges ``(i, j)`` added: edges can come chunk by chunk, never all held at once."""
    while True:
        low = np.minimum(root[i], root[j])
        np.minimum.at(root, root[i], low)
        np.minimum.at(root, root[j], low)
        while not np.array_equal(root, root[root]):
            root = root[root]
        if np.array_equal(root[i], root[j]):
            return root


def groups(image_ids: np.ndarray, i: np.ndarray, j: np.ndarray, distance: np.ndarray) -> pa.Table:
    """The images that have a near-duplicate, as ``GROUPS`` rows: each image's group (its
    smallest image id), its nearest member and their distance (ties: the smaller image id);
    sorted by group, then image."""
    n = len(image_ids)
    if len(i) == 0:
        return GROUPS.empty_table()
    root = components(n, i, j)
    ends = np.concatenate([i, j])
    other = np.concatenate([j, i])
    dist = np.concatenate([distance, distance])
    # nearest: per item, the smallest (distance, image id) among its pairs
    order = np.lexsort((image_ids[other], dist, ends))
    ends, other, dist = ends[order], other[order], dist[order]
    first = np.ones(len(ends), bool)
    first[1:] = ends[1:] != ends[:-1]
    return _table(image_ids, root, ends[first], other[first], dist[first])


def _table(
    image_ids: np.ndarray, root: np.ndarray, member: np.ndarray, nearest: np.ndarray, distance: np.ndarray
) -> pa.Table:
    """``GROUPS`` rows of the positions ``member`` (their components ``root``, their nearest
    positions and distances), each group named by its smallest image id; sorted."""
    smallest = np.full(len(image_ids), np.iinfo(np.int64).max)
    np.minimum.at(smallest, root, image_ids)
    table = pa.table(
        {
            "group_id": pa.array(smallest[root[member]], pa.int64()),
            "image_id": pa.array(image_ids[member], pa.int64()),
            "nearest_image_id": pa.array(image_ids[nearest], pa.int64()),
            "distance": pa.array(distance, pa.int32()),
        },
        schema=GROUPS,
    )
    return table.sort_by([("group_id", "ascending"), ("image_id", "ascending")])


def duplicate_groups(images: pa.Table, threshold: int = THRESHOLD) -> pa.Table:
    """``GROUPS`` of an ``images`` table (image_id, phash, dhash): ``groups`` of its
    ``near_pairs``, computed from one chunk of candidate pairs at a time. The components grow by
    ``merged``, and each image's nearest member is kept as one number, ``distance * n + the rank
    of its image id``. Memory follows the images, not the pairs: 20,000 near-identical frames
    make 200 million pairs."""
    ids = np.asarray(images.column("image_id").to_numpy(), dtype=np.int64)
    phash = as_integers(images.column("phash").to_pylist())
    dhash = as_integers(images.column("dhash").to_pylist())
    n = len(ids)
    by_id = np.argsort(ids, kind="stable")
    rank = np.empty(n, np.int64)
    rank[by_id] = np.arange(n)
    root = np.arange(n)
    nothing = np.iinfo(np.int64).max
    nearest = np.full(n, nothing, np.int64)
    for values in (phash, dhash):
        for i, j in close_pairs(values, threshold // 2):
            total = distances(phash[i], phash[j]) + distances(dhash[i], dhash[j])
            near = total <= threshold
            i, j, total = i[near], j[near], total[near].astype(np.int64)
            if len(i):
                root = merged(root, i, j)
                np.minimum.at(nearest, i, total * n + rank[j])
                np.minimum.at(nearest, j, total * n + rank[i])
    member = np.flatnonzero(nearest != nothing)
    if len(member) == 0:
        return GROUPS.empty_table()
    return _table(ids, root, member, by_id[nearest[member] % n], nearest[member] // n)


RELEASE_COLUMNS = ("group_id", "image_id", "nearest_image_id", "distance", "split", "image_split", "subsets")


def release_table(groups: pa.Table, images: pa.Table, subsets: pa.Table) -> pa.Table:
    """The release's ``audit_duplicates``: ``groups`` (``GROUPS``) with each image's collection
    split (``images``: image_id, split), its side of the image split and the subsets A-H that
    hold one of its regions (``subsets``: subset, image_id, image_split)."""
    grouped = set(groups.column("image_id").to_pylist())
    split_of = {
        i: s
        for i, s in zip(images.column("image_id").to_pylist(), images.column("split").to_pylist(), strict=True)
        if i in grouped
    }
    side_of: dict[int, str] = {}
    held: dict[int, set[str]] = {}
    rows = subsets.filter(pc.is_in(subsets.column("image_id"), pa.array(sorted(grouped), pa.int64())))
    for subset, image, side in zip(
        rows.column("subset").to_pylist(),
        rows.column("image_id").to_pylist(),
        rows.column("image_split").to_pylist(),
        strict=True,
    ):
        side_of[image] = side
        held.setdefault(image, set()).add(subset)
    ids = groups.column("image_id").to_pylist()
    return (
        groups.append_column("split", pa.array([split_of.get(i) for i in ids], pa.string()))
        .append_column("image_split", pa.array([side_of.get(i) for i in ids], pa.string()))
        .append_column("subsets", pa.array([sorted(held.get(i, ())) for i in ids], pa.list_(pa.string())))
    )


def summary(groups: pa.Table, splits: dict[int, str | None]) -> dict:
    """Counts for a report and the card: groups, grouped images, the largest group, and the
    groups whose images lie in more than one of the collection's own ``splits`` (image -> split),
    each with its images per split."""
    members: dict[int, list[int]] = {}
    for group, image in zip(groups.column("group_id").to_pylist(), groups.column("image_id").to_pylist(), strict=True):
        members.setdefault(group, []).append(image)
    across = []
    for group, images in sorted(members.items()):
        by_split: dict[str, list[int]] = {}
        for image in images:
            by_split.setdefault(str(splits.get(image)), []).append(image)
        if len(by_split) > 1:
            across.append({"group_id": group, "images": dict(sorted(by_split.items()))})
    return {
        "groups": len(members),
        "images": groups.num_rows,
        "largest_group": max((len(m) for m in members.values()), default=0),
        "groups_across_source_splits": len(across),
        "across_source_splits": across,
    }
