"""MATLAB level-5 MAT files: a small deterministic writer and a checked reader.

The official collection stores masks and spatial relations as MAT files of double matrices.
``scipy.io.savemat`` writes them too, but compresses with zlib at its default level, which
makes it the slowest step of generating a paper-scale collection. This writer compresses with
zlib-ng (the same zlib stream format, several times faster: 0.34 ms against 2.2 ms for a
480x360 mask) and puts no timestamp in the header, so the same arrays always give the same
bytes.

Reading a mask is almost all inflating its zlib stream (a 480x360 double matrix is 1.4 MB):
``scipy.io.loadmat`` costs what ``zlib.decompress`` costs. So the reader takes a direct path
for what the collections hold (little-endian level-5 files of real, non-sparse numeric or
logical matrices and cells and structs of them, as BSDS500's ``groundTruth`` cell of structs,
compressed or not, values stored in any numeric type as MATLAB narrows them) and
inflates with ISA-L (``isal``, the same stream, about twice as fast: 0.72 ms against 1.35 ms
a mask). Anything else goes to ``scipy.io.loadmat``, which also names what is wrong with a
damaged file; it reads in a forked child, because some damaged files make it die of a
segmentation fault, which would end the whole ingest job instead of rejecting one file. Both give the same arrays (a test reads every mask of the demo collections
both ways).
"""

from __future__ import annotations

import faulthandler
import io
import os
import pickle
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np

from regionbench.core import forked

_MI_INT8, _MI_INT32, _MI_UINT32, _MI_DOUBLE, _MI_MATRIX, _MI_COMPRESSED = 1, 5, 6, 9, 14, 15
_MX_DOUBLE_CLASS = 6
_HEADER_TEXT = b"MATLAB 5.0 MAT-file, written by regionbench"


def _element(dtype: int, payload: bytes) -> bytes:
    """Tag + payload, padded to a multiple of 8 bytes."""
    pad = (-len(payload)) % 8
    return struct.pack("<II", dtype, len(payload)) + payload + b"\0" * pad


def _matrix(name: str, array: np.ndarray) -> bytes:
    values = np.asarray(array, dtype="<f8")
    if values.ndim != 2:
        raise ValueError(f"MAT writer takes 2-D arrays, got shape {values.shape} for {name!r}")
    body = (
        _element(_MI_UINT32, struct.pack("<II", _MX_DOUBLE_CLASS, 0))
        + _element(_MI_INT32, struct.pack("<ii", *values.shape))
        + _element(_MI_INT8, name.encode("ascii"))
        + _element(_MI_DOUBLE, values.tobytes(order="F"))
    )
    return struct.pack("<II", _MI_MATRIX, len(body)) + body


def mat_bytes(variables: dict[str, np.ndarray], level: int = 2) -> bytes:
    """Serialise named 2-D arrays as a compressed level-5 MAT file (variables in name order)."""
    header = _HEADER_TEXT.ljust(116, b" ") + b"\0" * 8 + struct.pack("<H", 0x0100) + b"IM"
    parts = [header]
    for name in sorted(variables):
        from zlib_ng import zlib_ng  # the build extra: importing this module (the layouts' registry) needs it not

        compressed = zlib_ng.compress(_matrix(name, variables[name]), level)
        parts.append(struct.pack("<II", _MI_COMPRESSED, len(compressed)) + compressed)
    return b"".join(parts)


def write_mat(path: str | Path, variables: dict[str, np.ndarray]) -> None:
    Path(path).write_bytes(mat_bytes(variables))


# MAT data types -> NumPy dtypes of stored values; MATLAB classes -> the array's own dtype.
_STORED = {1: "<i1", 2: "<u1", 3: "<i2", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 9: "<f8", 12: "<i8", 13: "<u8"}
_CLASSES = {6: "<f8", 7: "<f4", 8: "<i1", 9: "<u1", 10: "<i2", 11: "<u2", 12: "<i4", 13: "<u4", 14: "<i8", 15: "<u8"}
_MATRIX_FLAGS_COMPLEX = 0x0800
_MX_CELL, _MX_STRUCT = 1, 2


class _Unsupported(Exception):
    """Not a file the direct path reads: scipy reads it, or says what is wrong."""


def _sub_element(body: bytes, at: int) -> tuple[int, bytes, int]:
    """(type, payload, next offset) of the sub-element at ``at``, in long or small format."""
    if at + 8 > len(body):
        raise _Unsupported
    kind, size = struct.unpack_from("<II", body, at)
    if kind >> 16:  # small data element: the size in the upper half, the data in the next 4 bytes
        size, kind = kind >> 16, kind & 0xFFFF
        if size > 4:
            raise _Unsupported
        return kind, body[at + 4 : at + 4 + size], at + 8
    end = at + 8 + size
    if end > len(body):
        raise _Unsupported
    return kind, body[at + 8 : end], end + (-size % 8)


def _dims(body: bytes, at: int) -> tuple[tuple[int, ...], int]:
    """The dimensions sub-element at ``at`` (at least two) and the next offset."""
    kind, dims, at = _sub_element(body, at)
    if kind != _MI_INT32 or len(dims) < 8 or len(dims) % 4:
        raise _Unsupported
    shape = struct.unpack(f"<{len(dims) // 4}i", dims)
    if min(shape) < 0:
        raise _Unsupported
    return shape, at


def _matrix_at(body: bytes, at: int) -> tuple[np.ndarray, int]:
    """The array of the miMATRIX element at ``at`` (a cell's or a struct field's, unnamed) and
    the next offset. An element of no bytes is MATLAB's empty matrix."""
    kind, payload, end = _sub_element(body, at)
    if kind != _MI_MATRIX:
        raise _Unsupported
    return (_matrix_of(payload, named=False)[1] if payload else np.zeros((0, 0))), end


def _matrix_of(body: bytes, named: bool = True) -> tuple[str, np.ndarray]:
    """Name and array of one miMATRIX element's body: a real, non-sparse numeric matrix (a
    logical one as its stored class, as scipy reads it), or a cell or struct array of them, as
    ``scipy.io.loadmat`` gives them (an object array of arrays; a structured array of object
    fields, each holding its array). ``named``: a variable's, whose name is not empty."""
    kind, flags, at = _sub_element(body, 0)
    if kind != _MI_UINT32 or len(flags) != 8:
        raise _Unsupported
    word = struct.unpack_from("<I", flags)[0]
    klass = word & 0xFF
    if (klass not in _CLASSES and klass not in (_MX_CELL, _MX_STRUCT)) or word & _MATRIX_FLAGS_COMPLEX:
        raise _Unsupported
    shape, at = _dims(body, at)
    kind, name, at = _sub_element(body, at)
    if kind != _MI_INT8 or not name.isascii() or (named and not name):
        raise _Unsupported
    count = int(np.prod(shape))
    if klass == _MX_CELL:
        cell = np.empty(count, dtype=object)
        for k in range(count):
            cell[k], at = _matrix_at(body, at)
        array = cell.reshape(shape, order="F")
    elif klass == _MX_STRUCT:
        kind, length, at = _sub_element(body, at)
        if kind != _MI_INT32 or len(length) != 4 or (width := struct.unpack("<i", length)[0]) <= 0:
            raise _Unsupported
        kind, names, at = _sub_element(body, at)
        if kind != _MI_INT8 or len(names) % width:
            raise _Unsupported
        fields = [
            names[i : i + width].split(b"\0", 1)[0].decode("ascii", "replace") for i in range(0, len(names), width)
        ]
        if not all(fields) or len(set(fields)) != len(fields):
            raise _Unsupported
        records = np.empty(count, dtype=[(field, object) for field in fields])
        for k in range(count):
            for field in fields:
                records[k][field], at = _matrix_at(body, at)
        array = records.reshape(shape, order="F")
    else:
        kind, values, at = _sub_element(body, at)
        stored = _STORED.get(kind)
        if stored is None or len(values) != count * np.dtype(stored).itemsize:
            raise _Unsupported
        array = np.frombuffer(values, dtype=stored).astype(_CLASSES[klass]).reshape(shape, order="F")
    if body[at:].strip(b"\0"):
        raise _Unsupported  # an imaginary part, or more
    return name.decode("ascii"), array


def _variables(data: bytes, head: int | None = None) -> Iterator[bytes]:
    """The body of each variable (a top-level miMATRIX element) of a little-endian level-5 MAT
    file, inflated where compressed: whole, or (``head``) only its first ``head`` bytes, enough
    for its flags, dimensions and name."""
    if len(data) < 128 or data[124:128] != b"\x00\x01IM":
        raise _Unsupported
    at = 128
    while at < len(data):
        if at + 8 > len(data):
            raise _Unsupported
        kind, size = struct.unpack_from("<II", data, at)
        payload = data[at + 8 : at + 8 + size]
        if len(payload) != size:
            raise _Unsupported
        at += 8 + size + (0 if kind == _MI_COMPRESSED else -size % 8)
        if kind == _MI_COMPRESSED:
            payload = _inflated(payload, head)
            if len(payload) < 8:
                raise _Unsupported
            kind, size = struct.unpack_from("<II", payload, 0)
            if head is None and len(payload) - 8 not in (size, size + (-size % 8)):
                raise _Unsupported
            payload = payload[8 : 8 + size] if head is None else payload[8:]
        if kind != _MI_MATRIX:
            raise _Unsupported
        yield payload


def _inflated(payload: bytes, head: int | None) -> bytes:
    """A compressed element inflated whole (ISA-L), or its first ``8 + head`` bytes (zlib's
    streaming inflate stops where asked; ISA-L's one-shot call cannot)."""
    failed: tuple[type[Exception], ...] = (_inflate_error(), zlib.error) if head is None else (zlib.error,)
    try:
        return _inflate(payload) if head is None else zlib.decompressobj().decompress(payload, 8 + head)
    except failed:
        raise _Unsupported from None


def _read_direct(data: bytes) -> dict[str, np.ndarray]:
    """The variables of a little-endian level-5 MAT file of real numeric matrices, and cells and
    structs of them."""
    out: dict[str, np.ndarray] = {}
    for body in _variables(data):
        name, array = _matrix_of(body)
        if name in out:
            raise _Unsupported
        out[name] = array
    return out


def variable_shapes(source: str | Path | bytes) -> dict[str, tuple[int, ...]]:
    """Each variable's dimensions, read from its header alone (a compressed variable inflated
    only as far as its name): how many humans a BSDS500 file's ``groundTruth`` cell holds without
    decoding their segmentations. A file off the direct path is read whole (``read_mat``);
    raises ValueError where that cannot read it."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        return _shapes_direct(data)
    except _Unsupported:
        return {name: tuple(np.shape(value)) for name, value in read_mat(data).items()}


def _shapes_direct(data: bytes) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for body in _variables(data, _HEAD):
        kind, flags, at = _sub_element(body, 0)
        if kind != _MI_UINT32 or len(flags) != 8:
            raise _Unsupported
        shape, at = _dims(body, at)
        kind, name, at = _sub_element(body, at)
        if kind != _MI_INT8 or not name or not name.isascii() or name.decode() in out:
            raise _Unsupported
        out[name.decode()] = shape
    return out


_HEAD = 4096  # bytes of a variable enough for its flags, dimensions and name (up to ~4,000 dimensions and characters)


def read_mat(source: str | Path | bytes) -> dict[str, np.ndarray]:
    """Variables of a MAT file (without scipy's ``__header__``-style entries): the direct path
    for the collections' files, ``scipy.io.loadmat`` for anything else (module docstring)."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        return _read_direct(data)
    except _Unsupported:
        return _loadmat_apart(data) if forked.may_fork() else _loadmat(data)


def _loadmat(data: bytes) -> dict[str, np.ndarray]:
    import scipy.io  # here: only files off the direct path need it, and every ingest job would pay its import

    raw = scipy.io.loadmat(io.BytesIO(data))
    return {k: v for k, v in raw.items() if not k.startswith("__")}


def _loadmat_apart(data: bytes) -> dict[str, np.ndarray]:
    """``scipy.io.loadmat`` of ``data`` in a forked child: its arrays, or its error raised here
    as ValueError; a child that dies (scipy's reader crashes on some damaged files) is a
    ValueError too. Forked by ``os.fork``, not ``multiprocessing``, which refuses a child to a
    pool's worker (a scoring run's files are read there)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns to the caller
        try:
            os.close(read_end)
            faulthandler.disable()  # a crash here is expected and told by the parent in one line, not dumped
            try:
                message: tuple[str, object] = ("arrays", _loadmat(data))
            except Exception as exc:  # whatever scipy raises: the caller names the file
                message = ("error", str(exc) or type(exc).__name__)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as given:
            kind, found = pickle.load(given)
    except (EOFError, pickle.UnpicklingError):
        kind, found = "error", "the MAT reader crashed on this file (damaged?)"
    finally:
        os.waitpid(pid, 0)
    if kind == "error":
        raise ValueError(found)
    return cast(dict[str, np.ndarray], found)


def _inflate(payload: bytes) -> bytes:
    """``payload`` inflated by ISA-L (the build extra, imported when a file is read: the client
    install imports this module through the layouts' registry without it)."""
    from isal import isal_zlib

    inflated: bytes = isal_zlib.decompress(payload)
    return inflated


def _inflate_error() -> type[Exception]:
    from isal import isal_zlib

    return cast(type[Exception], isal_zlib.error)  # isal's stubs do not type it as one
