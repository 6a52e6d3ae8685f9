"""``cutoff="auto"``: the cutoff at which a typical row reaches ``per_bump`` columns."""

import numpy as np
import pytest

from pymc_sle.distances import geodesic, pairwise
from pymc_sle.distances._cutoff import SAMPLED_ROWS, resolve_cutoff


def _median_kth(dense, k, positions):
    return float(np.median(np.sort(dense[positions], axis=1)[:, k - 1]))


@pytest.mark.parametrize("per_bump", [1, 5, 32])
def test_auto_cutoff_is_the_median_per_bump_th_nearest_column_of_the_rows(per_bump):
    x = np.random.default_rng(0).uniform(0, 10, 300)
    dense = np.abs(np.subtract.outer(x, x[::3]))
    sparse = pairwise(x, lambda a, b: abs(a - b), cols=np.arange(0, 300, 3), n_jobs=1,
                      progress=False, cutoff="auto", per_bump=per_bump)  # fmt: skip
    positions = np.unique(np.linspace(0, 299, SAMPLED_ROWS).astype(int))
    expected = _median_kth(dense, per_bump, positions)
    assert sparse.cutoff == np.nextafter(expected, np.inf)
    np.testing.assert_array_equal(sparse.to_dense(), np.where(dense < sparse.cutoff, dense, np.inf))
    # half the sampled rows keep at least per_bump columns, half at most (no ties)
    stored = np.diff(sparse.indptr)[positions]
    assert (stored >= per_bump).mean() >= 0.5 and (stored <= per_bump).mean() >= 0.5
    assert sparse.metadata["per_bump"] == per_bump


def test_auto_cutoff_on_a_sphere_is_the_disc_holding_per_bump_columns():
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.icosphere(subdivisions=4)  # 2,562 vertices on the unit sphere
    cols = np.arange(0, mesh.vertices.shape[0], 4)
    D = geodesic(mesh.vertices, mesh.faces, cols=cols, cutoff="auto", per_bump=32)
    dense = geodesic(mesh.vertices, mesh.faces, cols=cols).values
    np.testing.assert_array_equal(D.to_dense(), np.where(dense < D.cutoff, dense, np.inf))
    # a cap of geodesic radius c on the unit sphere has area 2 pi (1 - cos c); with the columns
    # spread evenly, 32 of them fill 32 / n of the sphere's 4 pi. Graph distances over-estimate
    # the surface distance by a few per cent, so the cutoff is a little larger.
    disc = np.arccos(1 - 2 * 32 / cols.size)
    assert disc < D.cutoff < 1.15 * disc
    assert 28 <= np.median(np.diff(D.indptr)) <= 36


def test_auto_cutoff_is_deterministic_and_follows_the_rows_given():
    x = np.random.default_rng(1).uniform(0, 1, 1000)
    first = pairwise(x, lambda a, b: abs(a - b), cols=np.arange(50), n_jobs=1, progress=False,
                     cutoff="auto", per_bump=4)  # fmt: skip
    second = pairwise(x, lambda a, b: abs(a - b), cols=np.arange(50), n_jobs=1, progress=False,
                      cutoff="auto", per_bump=4)  # fmt: skip
    assert first.cutoff == second.cutoff


@pytest.mark.parametrize(
    ("cutoff", "per_bump", "error", "match"),
    [
        ("automatic", 32, ValueError, "number, None or 'auto', but got 'automatic'"),
        ("auto", 0, ValueError, r"between 1 and the number of columns \(10\), but got 0"),
        ("auto", 11, ValueError, r"between 1 and the number of columns \(10\), but got 11"),
        ("auto", 2.5, TypeError, "`per_bump` must be an integer, but got 2.5"),
        ("auto", True, TypeError, "`per_bump` must be an integer, but got True"),
        (-1.0, 32, ValueError, "`cutoff` must be positive and finite"),
        ([1.0], 32, TypeError, "`cutoff` must be a number"),
    ],
)  # fmt: skip
def test_resolve_cutoff_refuses_bad_arguments(cutoff, per_bump, error, match):
    with pytest.raises(error, match=match):
        resolve_cutoff(cutoff, per_bump, 20, 10, lambda positions: np.ones((positions.size, 10)))


def test_auto_cutoff_names_unreachable_and_duplicate_columns():
    with pytest.raises(ValueError, match="reach fewer"):
        resolve_cutoff("auto", 2, 20, 10, lambda p: np.full((p.size, 10), np.inf))
    with pytest.raises(ValueError, match="duplicate items"):
        resolve_cutoff("auto", 2, 20, 10, lambda p: np.zeros((p.size, 10)))


def test_resolve_cutoff_keeps_none_and_numbers():
    assert resolve_cutoff(None, 32, 5, 5, None) is None
    assert resolve_cutoff(0.5, 32, 5, 5, None) == 0.5
