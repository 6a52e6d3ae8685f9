"""PSD in floating point: embedding distances that do not cancel where embeddings nearly coincide.

The family of issue 16: points whose distances to one landmark differ by 1e-9 have embeddings
1e-9 apart next to norms of about 1; the expansion nu_i + nu_j - 2 phi_i . phi_j then loses every
digit, and a short length scale turned that into min eigenvalue / trace of -2.8e-5.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.sparse

import pymc_sle as sle
from pymc_sle._linalg._euclidean import squared_euclidean
from pymc_sle.kernels._embedding_loops import cross_forward, dense_forward, sparse_forward
from pymc_sle.kernels._embedding_ops import (
    cross_squared_distances,
    dense_squared_distances,
)
from tests.support import MODES

INNERS = ["matern12", "matern32", "matern52", "rbf"]
N_NEAR = 30


def near_duplicates(n_far_landmarks: int = 0) -> np.ndarray:
    """``(30, 1 + n_far)``: distances 0.3 + 1e-9 k to landmark 0, 5 (beyond radius 1) to the
    others -- extra landmarks make the embedding sparse without changing the kernel."""
    near = 0.3 + 1e-9 * np.arange(N_NEAR)
    return np.column_stack([near, np.full((N_NEAR, n_far_landmarks), 5.0)])


def direct_squared(a, b):
    """The reference: differences first, in numpy."""
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)


def compile_(outputs, mode):
    return pytensor.function([], outputs, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("ls", [1e-4, 1e-2, 1.0])
@pytest.mark.parametrize(("embedding", "far"), [("dense", 0), ("auto", 399)])
def test_near_duplicate_embeddings_give_a_psd_kernel(mode, inner, ls, embedding, far):
    """min eigenvalue >= -1e-12 trace on the dense and run-time-support (sparse) paths."""
    D = near_duplicates(far)
    X = np.arange(N_NEAR)[:, None]
    cov = sle.SLE(D, radius=1.0, ls=ls, inner=inner, embedding=embedding)
    K = np.asarray(compile_(cov(X), mode)())
    eigenvalues = np.linalg.eigvalsh(K)
    assert eigenvalues.min() >= -1e-12 * np.trace(K), (eigenvalues.min(), np.trace(K))


@pytest.mark.parametrize("mode", MODES)
def test_near_duplicates_have_a_finite_log_likelihood_with_small_noise(mode):
    """The issue's -inf: Matern-1/2, ls 1e-4, sigma 1e-3."""
    D = near_duplicates()
    y = np.sin(np.arange(N_NEAR))
    with pm.Model() as model:
        gp = sle.gp.Marginal(cov_func=sle.SLE(D, radius=1.0, ls=1e-4, inner="matern12"))
        gp.marginal_likelihood("y", X=np.arange(N_NEAR)[:, None], y=y, sigma=1e-3)
    assert np.isfinite(model.compile_logp(mode=mode)({}))


@pytest.mark.parametrize("mode", MODES)
def test_cross_covariance_of_near_duplicates_is_accurate(mode):
    """Prediction-time cross distances: equal rows exactly 0, near-duplicates to rounding."""
    D = near_duplicates()
    cov = sle.SLE(D, radius=1.0, ls=1.0)
    rows, cols = np.arange(N_NEAR)[:, None], np.arange(0, N_NEAR, 3)[:, None]
    squared = np.asarray(compile_(cov.square_embedding_distance(rows, cols), mode)())
    phi = sle.bump(D, 1.0)
    reference = direct_squared(phi, phi[cols[:, 0]])
    assert (squared[cols[:, 0], np.arange(cols.shape[0])] == 0).all()
    np.testing.assert_allclose(squared, reference, rtol=1e-10, atol=0)


@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
def test_loops_are_accurate_relative_to_each_entry(scale):
    """Every loop against the direct reference, entry by entry (relative error), on embeddings
    with clusters of near-duplicate rows far from the origin."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(0.5, 1.0, size=(6, 12))
    phi = np.repeat(centres, 5, axis=0) + 1e-10 * rng.normal(size=(30, 12))
    phi = scale * np.where(rng.uniform(size=phi.shape) < 0.7, phi, 0.0)
    reference = direct_squared(phi, phi)
    by_column = scipy.sparse.csc_array(phi)  # the sparse loops' layout: stored by landmark
    results = {
        "dense": dense_forward(phi),
        "sparse": sparse_forward(
            by_column.data, *(a.astype(np.int64) for a in (by_column.indptr, by_column.indices)), 30
        ),
        "cross": cross_forward(phi, phi.copy()),
        "numpy": squared_euclidean(phi),
    }
    for name, value in results.items():
        assert (value >= 0).all(), name
        np.testing.assert_allclose(value, reference, rtol=1e-8, atol=0, err_msg=name)
        assert (np.diag(value) == 0).all(), name


@pytest.mark.parametrize("mode", MODES)
def test_gradients_stay_exact_where_rows_are_recomputed(mode):
    """The refinement changes how Delta is evaluated, not its derivative: the one-product
    gradient still equals the generic one on near-duplicates."""
    phi = np.repeat(np.random.default_rng(1).uniform(size=(4, 6)), 3, axis=0)
    phi += 1e-9 * np.random.default_rng(2).normal(size=phi.shape)
    weights = np.random.default_rng(3).normal(size=(12, 12))
    phi_var = pt.dmatrix("phi")
    generic = pt.sum(pt.sqr(phi_var[:, None, :] - phi_var[None, :, :]), axis=-1)
    outputs = [
        pt.grad((o * weights).sum(), phi_var)
        for o in (
            generic,
            dense_squared_distances(phi_var),
            cross_squared_distances(phi_var, phi_var),
        )
    ]
    g_ref, g_dense, g_cross = pytensor.function([phi_var], outputs, mode=mode)(phi)
    np.testing.assert_allclose(np.asarray(g_dense), g_ref, atol=1e-9)
    np.testing.assert_allclose(np.asarray(g_cross), g_ref, atol=1e-9)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("inner", INNERS)
def test_an_overflowing_embedding_gives_the_kernels_limit_not_nan(mode, inner):
    """amplitude 1e160: squared embedding distances overflow to inf, the kernel to its limit 0."""
    D = near_duplicates() + 0.1 * np.arange(N_NEAR)[:, None]
    X = np.arange(N_NEAR)[:, None]
    cov = sle.SLE(D, radius=5.0, ls=1.0, amplitude=1e160, inner=inner)
    K = np.asarray(compile_(cov(X), mode)())
    np.testing.assert_array_equal(K, np.eye(N_NEAR))
