"""SparseDistanceMatrix: validation, conversion, slicing, storage, and the cutoff builders."""

import numpy as np
import pytest

from pymc_sle import SparseDistanceMatrix
from pymc_sle.distances import geodesic


def _dense(n=8, seed=0):
    x = np.random.default_rng(seed).uniform(0, 1, (n, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)


def test_from_dense_keeps_exactly_the_entries_below_the_cutoff():
    D = _dense()
    S = SparseDistanceMatrix.from_dense(D, cutoff=0.4, metadata={"metric": "euclidean"})
    assert S.shape == D.shape and S.nnz == int((D < 0.4).sum())
    np.testing.assert_array_equal(S.to_dense(), np.where(D < 0.4, D, np.inf))
    np.testing.assert_array_equal(S.to_dense(fill=-1.0), np.where(D < 0.4, D, -1.0))
    assert "nnz" in repr(S) and S == SparseDistanceMatrix.from_dense(
        D, cutoff=0.4, metadata={"metric": "euclidean"}
    )


def test_take_selects_rows_and_columns_and_keeps_stored_zeros():
    D = _dense()
    S = SparseDistanceMatrix.from_dense(D, cutoff=0.5)
    rows, cols = [3, 0, 5], [5, 3]
    part = S.take(rows=rows, cols=cols)
    np.testing.assert_array_equal(part.to_dense(), S.to_dense()[np.ix_(rows, cols)])
    assert part.nnz == int(np.isfinite(part.to_dense()).sum())  # the zeros at (3, 3), (5, 5)
    assert part.cutoff == S.cutoff


@pytest.mark.parametrize("cutoff", [0.5, 0.31, 1e-3])
def test_truncate_equals_building_at_the_smaller_cutoff(cutoff):
    D = _dense(12, seed=2)
    S = SparseDistanceMatrix.from_dense(D, cutoff=0.5, metadata={"metric": "euclidean"})
    assert S.truncate(cutoff) == SparseDistanceMatrix.from_dense(
        D, cutoff=cutoff, metadata={"metric": "euclidean"}
    )
    with pytest.raises(ValueError, match=r"`cutoff` must be at most the matrix's cutoff 0\.5"):
        S.truncate(0.6)
    with pytest.raises(ValueError, match="cutoff"):
        S.truncate(0.0)


def test_save_and_load_round_trip(tmp_path):
    S = SparseDistanceMatrix.from_dense(_dense(), cutoff=0.3, metadata={"metric": "euclidean"})
    path = S.save(tmp_path / "d.npz")
    assert SparseDistanceMatrix.load(path) == S
    with pytest.raises(ValueError, match=r"must end in '\.npz'"):
        S.save(tmp_path / "d.npy")
    np.savez(tmp_path / "other.npz", values=np.zeros(3))
    with pytest.raises(ValueError, match="cannot be read as a SparseDistanceMatrix"):
        SparseDistanceMatrix.load(tmp_path / "other.npz")


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"cutoff": 0.0}, ValueError, "`cutoff` must be positive and finite, but got 0.0"),
        ({"cutoff": np.inf}, ValueError, "`cutoff` must be positive and finite"),
        ({"cutoff": "far"}, TypeError, "`cutoff` must be a number"),
        ({"shape": (3,)}, ValueError, "`shape` must be \\(n_points, n_columns\\)"),
        ({"shape": (0, 3)}, ValueError, "`shape` must be positive"),
        ({"indptr": [0, 1, 2]}, ValueError, "`indptr` must be a non-decreasing array of 4"),
        ({"indptr": [0, 2, 1, 3]}, ValueError, "`indptr` must be a non-decreasing"),
        ({"indptr": [0.0, 1.0, 2.0, 3.0]}, TypeError, "`indptr` must be a 1-D integer array"),
        ({"indices": [0, 1]}, ValueError, "`indices` and `values` must each hold"),
        ({"indices": [0, 1, 3]}, ValueError, "`indices` must be column numbers in \\[0, 3\\)"),
        ({"values": [0.0, -0.1, 0.2]}, ValueError, "values"),
        ({"values": [0.0, np.nan, 0.2]}, ValueError, "values"),
        ({"values": [0.0, 0.1, 0.5]}, ValueError, "`values` must be below `cutoff` = 0.5"),
        ({"metadata": {"f": object()}}, TypeError, "`metadata` must be JSON-serialisable"),
    ],
)
def test_every_validator_names_its_argument(change, error, match):
    arguments = {
        "indptr": [0, 1, 2, 3],
        "indices": [0, 1, 2],
        "values": [0.0, 0.1, 0.2],
        "shape": (3, 3),
        "cutoff": 0.5,
    }
    arguments.update(change)
    with pytest.raises(error, match=match):
        SparseDistanceMatrix(**arguments)


def test_unsorted_columns_are_refused():
    with pytest.raises(ValueError, match="strictly increasing within each row, but row 0"):
        SparseDistanceMatrix([0, 2], [1, 0], [0.1, 0.2], shape=(1, 2), cutoff=1.0)


@pytest.mark.parametrize("cutoff", [0.3, 0.8, 5.0])
def test_geodesic_cutoff_equals_the_dense_distances_below_it(cutoff):
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.icosphere(subdivisions=2)
    rows, cols = np.arange(0, 162, 2), np.arange(1, 162, 3)
    dense = geodesic(mesh.vertices, mesh.faces, rows=rows, cols=cols).values
    sparse = geodesic(mesh.vertices, mesh.faces, rows=rows, cols=cols, cutoff=cutoff, n_jobs=2)
    assert isinstance(sparse, SparseDistanceMatrix) and sparse.cutoff == cutoff
    np.testing.assert_allclose(sparse.to_dense(), np.where(dense < cutoff, dense, np.inf))


def test_geodesic_cutoff_needs_the_graph_method():
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.icosphere(subdivisions=1)
    with pytest.raises(ValueError, match="`cutoff` needs method='graph'"):
        geodesic(mesh.vertices, mesh.faces, method="heat", cutoff=0.5)
    with pytest.raises(ValueError, match="`cutoff` must be positive and finite"):
        geodesic(mesh.vertices, mesh.faces, cutoff=-1.0)


class _CountingAbs:
    """|a - b| with a certified lower bound (the bound itself): counts the pairs it evaluates."""

    def __init__(self):
        self.calls = 0

    def __call__(self, a, b):
        self.calls += 1
        return abs(a - b)

    def lower_bound(self, row_items, col_items):
        return np.abs(np.subtract.outer(np.asarray(row_items), np.asarray(col_items)))


@pytest.mark.parametrize("cols", [None, [0, 3, 9, 17]])
def test_pairwise_cutoff_equals_the_dense_matrix_below_it_and_skips_bounded_pairs(cols):
    from pymc_sle.distances import pairwise

    x = np.sort(np.random.default_rng(0).uniform(0, 10, 40))
    metric = _CountingAbs()
    sparse = pairwise(x, metric, cols=cols, n_jobs=1, progress=False, cutoff=1.0, chunk_size=8)
    dense = pairwise(x, lambda a, b: abs(a - b), cols=cols, n_jobs=1, progress=False).values
    np.testing.assert_array_equal(sparse.to_dense(), np.where(dense < 1.0, dense, np.inf))
    # the bound is exact here, so only the pairs below the cutoff were evaluated (each unordered
    # pair once when symmetric, the diagonal not at all)
    near = dense < 1.0
    expected = (near.sum() - 40) // 2 if cols is None else near.sum()
    assert metric.calls == expected


def test_edit_distance_cutoff_equals_the_dense_matrix_below_it(tmp_path):
    from pymc_sle.distances import edit_distance, pairwise

    rng = np.random.default_rng(1)
    words = ["".join(rng.choice(list("acgt"), rng.integers(2, 9))) for _ in range(50)]
    dense = pairwise(words, edit_distance, n_jobs=1, progress=False).values
    for cutoff in (0.5, 2.0, 2.5, 4.0):
        sparse = pairwise(
            words,
            edit_distance,
            n_jobs=2,
            progress=False,
            cutoff=cutoff,
            store=tmp_path / f"store-{cutoff}",
            chunk_size=16,
        )
        np.testing.assert_array_equal(sparse.to_dense(), np.where(dense < cutoff, dense, np.inf))
    with pytest.raises(ValueError, match="`cutoff` must be positive and finite"):
        pairwise(words, edit_distance, n_jobs=1, progress=False, cutoff=0.0)
