"""The supernodal Cholesky factorisation: solves, the log determinant, the selected inverse and
products with the factor against dense linear algebra, and the symbolic analysis's checks."""

import numpy as np
import pytest
import scipy.sparse as sp

from pymc_sle._linalg import _supernodal
from pymc_sle._linalg._supernodal_analysis import analyse


def _random_spd(n, density, seed):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=seed)
    A = A + A.T
    A.data[:] = rng.uniform(-1, 1, A.nnz)
    A = (A + A.T) / 2 + sp.diags(np.abs(A).sum(axis=1).A1 + 0.5)
    return sp.tril(A).tocoo()


@pytest.mark.parametrize(
    ("n", "density", "seed"),
    [(1, 1.0, 0), (7, 0.0, 1), (40, 0.05, 2), (120, 0.02, 3), (60, 1.0, 4), (300, 0.01, 5)],
)
def test_factorisation_solve_and_selected_inverse_equal_dense(n, density, seed):
    lower = _random_spd(n, density, seed)
    dense = lower.toarray()
    dense = dense + np.tril(dense, -1).T
    symbolic = analyse(n, lower.row, lower.col)
    values = np.zeros(symbolic.n_values)
    values[symbolic.entry_index] = lower.data
    assert _supernodal.factorize(symbolic, values)
    s = symbolic
    log_det = _supernodal.log_determinant(values, s.sn_start, s.rows_ptr, s.l_ptr)
    np.testing.assert_allclose(log_det, np.linalg.slogdet(dense)[1], rtol=1e-12)
    rhs = np.random.default_rng(seed).standard_normal((n, 3))
    solved = _supernodal.solve(values, s.sn_start, s.rows_ptr, s.rows, s.l_ptr, rhs[s.perm].copy())
    back = np.empty_like(solved)
    back[s.perm] = solved
    np.testing.assert_allclose(back, np.linalg.solve(dense, rhs), atol=1e-12)
    inverse = _supernodal.selected_inverse(symbolic, values)[symbolic.entry_index]
    np.testing.assert_allclose(inverse, np.linalg.inv(dense)[lower.row, lower.col], atol=1e-13)
    product = _supernodal.multiply_factor(values, s.sn_start, s.rows_ptr, s.rows, s.l_ptr, rhs)
    factor = np.linalg.cholesky(dense[np.ix_(s.perm, s.perm)])
    np.testing.assert_allclose(product, factor @ rhs, atol=1e-12)


def test_factorisation_reports_an_indefinite_matrix():
    lower = sp.coo_matrix(([1.0, 2.0, 1.0], ([0, 1, 1], [0, 1, 0])), shape=(2, 2))
    lower.data[0] = -1.0
    symbolic = analyse(2, lower.row, lower.col)
    values = np.zeros(symbolic.n_values)
    values[symbolic.entry_index] = lower.data
    assert not _supernodal.factorize(symbolic, values)


def test_analyse_rejects_a_pattern_without_its_diagonal():
    with pytest.raises(ValueError, match="diagonal"):
        analyse(3, [1, 2], [0, 0])
    with pytest.raises(ValueError, match="row >= col"):
        analyse(2, [0, 0, 1], [0, 1, 1])
