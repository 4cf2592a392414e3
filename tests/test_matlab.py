import io

import numpy as np
import scipy.io

from regionbench.io.matlab import mat_bytes, read_mat


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
