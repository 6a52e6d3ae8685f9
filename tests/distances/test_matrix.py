import json

import numpy as np
import pytest

from pymc_sle import DistanceMatrix


@pytest.fixture
def values(rng):
    x = rng.uniform(size=(6, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)[:, :4]


def test_stores_read_only_float64_copy(values):
    D = DistanceMatrix(values)
    assert D.dtype == np.float64 and D.shape == (6, 4) and D.n_points == 6 and D.n_columns == 4
    values[0, 0] = 99.0
    assert D.values[0, 0] != 99.0
    with pytest.raises(ValueError, match="read-only"):
        D.values[0, 0] = 1.0


def test_float32_storage_on_request(values):
    D = DistanceMatrix(values, dtype="float32")
    assert D.dtype == np.float32
    np.testing.assert_allclose(D.values, values, rtol=1e-7)  # float32 round-off


def test_integer_input_is_converted(values):
    assert DistanceMatrix(np.array([[0, 1], [1, 0]])).dtype == np.float64


def test_take_selects_block(values):
    D = DistanceMatrix(values, metadata={"metric": "euclidean"})
    block = D.take(rows=[5, 0], cols=[3])
    np.testing.assert_array_equal(block.values, values[[5, 0]][:, [3]])
    assert block.metadata == {"metric": "euclidean"}


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_save_load_round_trip(tmp_path, values, suffix, dtype):
    D = DistanceMatrix(values, dtype=dtype, metadata={"metric": "geodesic", "n_jobs": 2})
    path = D.save(tmp_path / f"d{suffix}")
    assert DistanceMatrix.load(path) == D


def test_npy_sidecar_is_readable_json(tmp_path, values):
    DistanceMatrix(values, metadata={"metric": "w2"}).save(tmp_path / "d.npy")
    header = json.loads((tmp_path / "d.json").read_text())
    assert header["shape"] == [6, 4] and header["metadata"] == {"metric": "w2"}


def test_plain_npy_without_sidecar_loads(tmp_path, values):
    np.save(tmp_path / "plain.npy", values.astype(np.float32))
    D = DistanceMatrix.load(tmp_path / "plain.npy")
    assert D.dtype == np.float32 and D.metadata == {}


def test_load_rejects_inconsistent_header(tmp_path, values):
    DistanceMatrix(values).save(tmp_path / "d.npy")
    np.save(tmp_path / "d.npy", values[:3])
    with pytest.raises(ValueError, match=r"header shape \(6, 4\) but values have shape \(3, 4\)"):
        DistanceMatrix.load(tmp_path / "d.npy")


def test_load_rejects_foreign_archive(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a DistanceMatrix archive"):
        DistanceMatrix.load(tmp_path / "other.npz")


@pytest.mark.parametrize(
    ("sidecar", "match"),
    [
        ("{truncated", "cannot be read as a DistanceMatrix .*JSONDecodeError"),
        ("[1, 2]", "invalid header: must be a JSON object, but is list"),
        ('{"format_version": "one"}', "'format_version' must be an integer"),
        ('{"shape": "6x4"}', "'shape' must be a list of integers"),
        ('{"metadata": [1]}', "'metadata' must be an object, but is list"),
        ('{"dtype": 64}', "'dtype' must be a string"),
    ],
)
def test_load_rejects_a_tampered_header_naming_the_file(tmp_path, values, sidecar, match):
    DistanceMatrix(values).save(tmp_path / "d.npy")
    (tmp_path / "d.json").write_text(sidecar)
    with pytest.raises(ValueError, match=rf"{tmp_path / 'd.npy'}.*{match}"):
        DistanceMatrix.load(tmp_path / "d.npy")


def test_load_rejects_a_truncated_archive_naming_the_file(tmp_path, values):
    path = DistanceMatrix(values).save(tmp_path / "d.npz")
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(ValueError, match=rf"{path} cannot be read as a DistanceMatrix"):
        DistanceMatrix.load(path)


def test_save_rejects_unknown_suffix(tmp_path, values):
    with pytest.raises(ValueError, match=r"`path` must end in '.npz' or '.npy', but got 'd.csv'"):
        DistanceMatrix(values).save(tmp_path / "d.csv")


def test_rejects_nan():
    with pytest.raises(ValueError, match="`values` must be finite, but 2 entries are NaN"):
        DistanceMatrix(np.array([[0.0, np.nan], [np.nan, 0.0]]))


def test_rejects_inf():
    with pytest.raises(ValueError, match="`values` must be finite, but 1 entry is infinite"):
        DistanceMatrix(np.array([[0.0, np.inf]]))


def test_rejects_negative():
    with pytest.raises(
        ValueError,
        match=r"`values` must be non-negative, but 1 entry is negative \(smallest -0.5\)",
    ):
        DistanceMatrix(np.array([[0.0, -0.5]]))


def test_accepts_zero_boundary():
    assert DistanceMatrix(np.zeros((2, 2))).values.sum() == 0.0


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2)])
def test_rejects_wrong_ndim(shape):
    with pytest.raises(
        ValueError, match=r"`values` must be a 2-D array \(n_points, n_columns\), but has shape"
    ):
        DistanceMatrix(np.zeros(shape))


def test_rejects_empty():
    with pytest.raises(ValueError, match=r"`values` must not be empty, but has shape \(0, 3\)"):
        DistanceMatrix(np.zeros((0, 3)))


@pytest.mark.parametrize(
    "bad", [np.array([["a", "b"]]), np.array([[True, False]]), np.array([[1j, 0]])]
)
def test_rejects_non_real(bad):
    with pytest.raises(TypeError, match="`values` must be"):
        DistanceMatrix(bad)


def test_rejects_unknown_dtype(values):
    with pytest.raises(
        ValueError, match=r"`dtype` must be one of \['float32', 'float64'\], but got 'float16'"
    ):
        DistanceMatrix(values, dtype="float16")


def test_rejects_float32_overflow():
    with pytest.raises(ValueError, match="overflow in float32"):
        DistanceMatrix(np.array([[0.0, 1e300]]), dtype="float32")


def test_rejects_unserialisable_metadata(values):
    with pytest.raises(TypeError, match="`metadata` must be JSON-serialisable"):
        DistanceMatrix(values, metadata={"f": object()})


def test_take_rejects_out_of_range(values):
    with pytest.raises(
        ValueError, match=r"`cols` must index the 4 columns \(0 to 3\), but contains 4"
    ):
        DistanceMatrix(values).take(cols=[4])


def test_append_adds_rows_and_keeps_dtype_and_metadata():
    D = DistanceMatrix(
        np.array([[0.0, 1.0], [1.0, 0.0]]), dtype="float32", metadata={"metric": "m"}
    )
    grown = D.append([[0.5, 2.0], [3.0, 0.25]]).append(DistanceMatrix([[1.0, 1.0]]))
    np.testing.assert_array_equal(
        grown.values, np.array([[0, 1], [1, 0], [0.5, 2], [3, 0.25], [1, 1]], dtype=np.float32)
    )
    assert grown.dtype == np.float32 and grown.metadata == {"metric": "m", "appended": [2, 1]}
    assert D.shape == (2, 2)  # unchanged


@pytest.mark.parametrize(
    ("rows", "error", "fragment"),
    [
        ([[0.5, -1.0]], ValueError, "negative"),
        ([[0.5, np.nan]], ValueError, "NaN"),
        ([0.5, 1.0], ValueError, "2-D"),
        ([[0.5, 1.0, 2.0]], ValueError, r"one column per column of this matrix \(2\)"),
        ([["a", "b"]], TypeError, "numeric"),
        (DistanceMatrix([[1.0, 1.0]], metadata={"metric": "other"}), ValueError, "'other'"),
    ],
    ids=["negative", "nan", "1-D", "columns", "strings", "other metric"],
)
def test_append_rejects_rows_that_do_not_fit(rows, error, fragment):
    D = DistanceMatrix(np.array([[0.0, 1.0], [1.0, 0.0]]), metadata={"metric": "m"})
    with pytest.raises(error, match=fragment) as caught:
        D.append(rows)
    assert "`rows`" in str(caught.value)
