import io
import subprocess
import sys

import numpy as np
import pytest
import scipy.io
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.io.matlab import _loadmat_apart, mat_bytes, read_mat, variable_shapes


def test_scipy_reads_what_we_write() -> None:
    seg = -np.ones((5, 7))
    seg[1:3, 2:6] = 0
    raw = scipy.io.loadmat(io.BytesIO(mat_bytes({"segimg_t": seg})))
    assert raw["segimg_t"].dtype == np.float64
    np.testing.assert_array_equal(raw["segimg_t"], seg)


def test_several_variables_and_determinism() -> None:
    arrays = {"topo": np.arange(6.0).reshape(2, 3), "x_rels": np.eye(3)}
    data = mat_bytes(arrays)
    assert data == mat_bytes(dict(reversed(arrays.items())))
    back = read_mat(data)
    assert sorted(back) == ["topo", "x_rels"]
    np.testing.assert_array_equal(back["topo"], arrays["topo"])


def test_reads_files_written_by_scipy() -> None:
    buf = io.BytesIO()
    scipy.io.savemat(buf, {"segimg_t": np.zeros((2, 2))})
    assert read_mat(buf.getvalue())["segimg_t"].shape == (2, 2)


def _scipy(data: bytes) -> dict[str, np.ndarray]:
    return {k: v for k, v in scipy.io.loadmat(io.BytesIO(data)).items() if not k.startswith("__")}


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return sorted(a) == sorted(b) and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a
    )


def test_the_direct_path_reads_every_demo_file_as_scipy_does(demo_quirks, tiny_raw) -> None:
    from regionbench.io.matlab import _read_direct

    files = sorted(demo_quirks.glob("*/*/*.mat")) + sorted(tiny_raw.glob("*/*/*.mat"))
    assert len(files) > 1000
    for path in files:
        data = path.read_bytes()
        assert same(_read_direct(data), _scipy(data)), path


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["f8", "f4", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]),
    st.integers(0, 6),
    st.integers(0, 6),
    st.booleans(),
    st.data(),
)
def test_the_direct_path_equals_scipy_on_any_matrix(
    dtype: str, rows: int, cols: int, compress: bool, data: st.DataObject
) -> None:
    """Any numeric matrix scipy writes, compressed or not: the same arrays both ways; and for a
    cut or flipped copy of the file, the same arrays or scipy's error."""
    values = data.draw(st.lists(st.integers(-100, 100), min_size=rows * cols, max_size=rows * cols))
    array = np.array(values, dtype=np.int64).reshape(rows, cols)
    array = np.abs(array).astype(dtype) if dtype.startswith("u") else array.astype(dtype)
    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"segimg_t": array, "other": np.eye(2)}, do_compression=compress)
    raw = buffer.getvalue()
    assert same(read_mat(raw), _scipy(raw))
    cut = data.draw(st.integers(0, len(raw) - 1))
    damaged = data.draw(st.sampled_from([raw[:cut], raw[:cut] + bytes([raw[cut] ^ 0x5A]) + raw[cut + 1 :]]))
    try:
        expected = _loadmat_apart(damaged)  # scipy, in a child: it may die of a damaged file
    except ValueError:  # whatever scipy raises (or dies of), read_mat raises
        with pytest.raises(ValueError):
            read_mat(damaged)
    else:
        assert same(read_mat(damaged), expected)


def test_a_reader_that_crashes_is_one_error_and_no_dump() -> None:
    """scipy's reader can die on a damaged file: the parent says so in one line, and the child,
    even with Python's fault handler on, writes no crash dump around it."""
    code = (
        "import ctypes\n"
        "from regionbench.io import matlab\n"
        "matlab._loadmat = lambda data: ctypes.string_at(0)\n"  # the child dies as scipy's reader can
        "try:\n"
        "    matlab._loadmat_apart(b'')\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "the MAT reader crashed on this file (damaged?)", done
    assert "Fatal Python error" not in done.stderr, done.stderr


def test_a_file_off_the_direct_path_is_read_in_a_pool_s_worker() -> None:
    """A scoring run reads its prediction files in a pool's (daemonic) worker: a file that needs
    scipy's reader is still read in a child of that worker."""
    import multiprocessing

    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"ucm2": np.eye(3)}, do_compression=True)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        found = pool.apply(_loadmat_apart, (buffer.getvalue(),))
    np.testing.assert_array_equal(found["ucm2"], np.eye(3))


def _plain(value: object) -> object:
    """A MAT variable as nested plain values, to compare two readers' outputs: a structured
    array as its fields, shape and elements; an object (cell) array as its shape and elements;
    a numeric array as its dtype, shape and bytes."""
    array = np.asarray(value)
    if array.dtype == object and array.ndim == 0 and not isinstance(array.item(), np.ndarray):
        return ("value", repr(array.item()))  # no array at all (what a damaged file may give)
    if array.dtype.names:
        return ("struct", array.shape, [(f, [_plain(r[f]) for r in array.ravel()]) for f in array.dtype.names])
    if array.dtype == object:
        return ("cell", array.shape, [_plain(v) for v in array.ravel()])
    return (array.dtype.str, array.shape, array.tobytes())


_NUMERIC = st.builds(
    lambda dtype, rows, cols, seed: np.random.default_rng(seed).integers(0, 100, (rows, cols)).astype(dtype),
    st.sampled_from(["f8", "f4", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "bool"]),
    st.integers(0, 4),
    st.integers(0, 4),
    st.integers(0, 2**16),
)
_FIELDS = st.lists(st.sampled_from(["Segmentation", "Boundaries", "a", "b_c"]), min_size=1, max_size=3, unique=True)


def _cells(children: st.SearchStrategy) -> st.SearchStrategy:
    """A cell of ``children`` or a struct (a dict: scipy writes a 1x1 struct) of them."""
    cell = st.lists(children, min_size=0, max_size=4).map(lambda items: _cell(items))
    struct = _FIELDS.flatmap(lambda names: st.fixed_dictionaries({n: children for n in names}))
    return cell | struct


def _cell(items: list) -> np.ndarray:
    out = np.empty((1, len(items)), dtype=object)
    for k, item in enumerate(items):
        out[0, k] = item
    return out


@settings(max_examples=150, deadline=None)
@given(st.recursive(_NUMERIC, _cells, max_leaves=8), st.booleans(), st.data())
def test_cells_and_structs_read_directly_as_scipy_reads_them(
    value: object, compress: bool, data: st.DataObject
) -> None:
    """Cells and structs of matrices, nested (BSDS500's groundTruth is a cell of structs of a
    uint16 and a logical matrix): the direct path reads what scipy writes as scipy reads it, so
    a collection's files never go the slow way; a damaged copy gives scipy's arrays or an error."""
    from regionbench.io.matlab import _read_direct

    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"groundTruth": value}, do_compression=compress)
    raw = buffer.getvalue()
    expected = _scipy(raw)
    assert _plain(_read_direct(raw)["groundTruth"]) == _plain(expected["groundTruth"])
    assert variable_shapes(raw) == {"groundTruth": expected["groundTruth"].shape}  # from the header alone
    cut = data.draw(st.integers(0, len(raw) - 1))
    damaged = data.draw(st.sampled_from([raw[:cut], raw[:cut] + bytes([raw[cut] ^ 0x5A]) + raw[cut + 1 :]]))
    try:
        again = _loadmat_apart(damaged)
    except ValueError:
        with pytest.raises(ValueError):
            read_mat(damaged)
    else:
        found = read_mat(damaged)
        assert sorted(found) == sorted(again) and all(_plain(found[k]) == _plain(again[k]) for k in found)


def test_bsds500_s_own_files_are_read_directly_as_scipy_reads_them(real_data) -> None:
    """Every ground-truth file of BSDS500's test set as distributed (MATLAB's, a cell of
    structs, compressed): read on the direct path, no fork and no scipy, as scipy reads it."""
    from regionbench.io.matlab import _read_direct

    files = sorted((real_data("bsds500") / "BSDS500/data/groundTruth/test").glob("*.mat"))
    assert len(files) == 200
    for path in files:
        data = path.read_bytes()
        assert _plain(_read_direct(data)["groundTruth"]) == _plain(_scipy(data)["groundTruth"]), path
