"""The dense and sparse squared embedding distances and their gradients, against a numpy
reference."""

import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_sle.kernels._embedding_loops import sparse_backward, sparse_forward
from pymc_sle.kernels._embedding_ops import dense_squared_distances
from tests.support import MODES, compile_fn


def sparse_embedding(n, m, fill, seed):
    rng = np.random.default_rng(seed)
    mask = rng.uniform(size=(n, m)) < fill
    return mask, np.where(mask, rng.uniform(0.1, 1.0, size=(n, m)), 0.0)


def reference_squared(phi):
    return ((phi[:, None, :] - phi[None, :, :]) ** 2).sum(-1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("n", "m", "fill"), [(1, 3, 1.0), (9, 4, 0.5), (25, 40, 0.2), (30, 7, 0.0)]
)
def test_dense_and_sparse_distances_equal_the_reference(mode, n, m, fill):
    """The dense Op, and the sparse loops on the embedding stored by landmark (the layout the
    bump's sparse branch builds), forward and gradient."""
    mask, phi = sparse_embedding(n, m, fill, seed=n + m)
    weights = np.random.default_rng(0).normal(size=(n, n))
    phi_var = pt.dmatrix("phi")
    generic = pt.sum(pt.sqr(phi_var[:, None, :] - phi_var[None, :, :]), axis=-1)
    dense = dense_squared_distances(phi_var)
    outputs = [generic, dense] + [pt.grad((o * weights).sum(), phi_var) for o in (generic, dense)]
    ref, d, g_ref, g_dense = compile_fn([phi_var], outputs, mode)(phi)
    cols, rows = np.nonzero(mask.T)  # column by column
    col_ptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=m))]).astype(np.int64)
    values, rows = phi[rows, cols], rows.astype(np.int64)
    s = sparse_forward(values, col_ptr, rows, n)
    g_sparse = sparse_backward(values, col_ptr, rows, weights)
    np.testing.assert_allclose(ref, reference_squared(phi), atol=1e-12)
    np.testing.assert_allclose(d, ref, atol=1e-12)
    np.testing.assert_allclose(s, ref, atol=1e-12)
    assert (np.diag(s) == 0).all()
    np.testing.assert_allclose(g_dense, g_ref, atol=1e-10)
    np.testing.assert_allclose(g_sparse, g_ref[rows, cols], atol=1e-10)
