"""The numba-callable BLAS/LAPACK kernels behind the fast paths."""

import numpy as np
import pytest

from pymc_sle._linalg._lapack import (
    cholesky_inplace,
    cholesky_inverse_inplace,
    cholesky_solve_inplace,
    gram_upper,
    mirror_upper_inplace,
    symmetric_sum,
)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 130])
def test_tiled_transposes(n):
    a = np.random.default_rng(n).normal(size=(n, n))
    mirrored = a.copy()
    mirror_upper_inplace(mirrored)
    np.testing.assert_array_equal(mirrored, np.triu(a) + np.triu(a, 1).T)
    np.testing.assert_array_equal(symmetric_sum(a), a + a.T)


@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (5, 1), (70, 30), (30, 70)])
def test_gram_upper_is_the_upper_triangle_of_a_at(shape):
    a = np.random.default_rng(0).normal(size=shape)
    np.testing.assert_allclose(np.triu(gram_upper(a)), np.triu(a @ a.T), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("n", [1, 3, 50])
def test_cholesky_solve_and_inverse(n):
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n))
    K = A @ A.T + n * np.eye(n)
    b = rng.normal(size=n)
    factor = K.copy()
    assert cholesky_inplace(factor) == 0
    np.testing.assert_allclose(np.triu(factor), np.linalg.cholesky(K).T, rtol=1e-12)
    x = b.copy()
    assert cholesky_solve_inplace(factor, x) == 0
    np.testing.assert_allclose(x, np.linalg.solve(K, b), rtol=1e-10)
    assert cholesky_inverse_inplace(factor) == 0
    np.testing.assert_allclose(np.triu(factor), np.triu(np.linalg.inv(K)), rtol=1e-10, atol=1e-14)


def test_cholesky_reports_the_failing_minor():
    K = np.diag([1.0, 2.0, -1.0, 4.0])
    assert cholesky_inplace(K) == 3
