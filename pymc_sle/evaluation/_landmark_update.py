r"""One new point's predictive when the point joins the landmarks, from the fitted model's.

Adding a landmark changes the training covariance ``C`` in the rows and columns ``K`` of the
training points its bump reaches: ``C' = C + E`` there. Where ``2k`` (``k = |K|``) is small,
:func:`low_rank_change` updates the fitted inverse at rank ``2k``; elsewhere
:func:`refactorised_change` factorises ``C'`` anew. Both return the change of the predictive
mean and variance and the log importance ratio of the point's draws
(``pymc_sle.evaluation._new_points`` has the derivation).
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import linalg

from pymc_sle._linalg._lapack import cholesky_inplace, cholesky_solve_inplace


def low_rank_change(E, K, inverse, a_hat, w_hat):
    """``(mean change, variance change, log ratio)`` of one point by the rank-``2k`` update
    (``new_points._OwnLandmarkPrediction.predict``); ``None`` where ``C'`` comes out not
    positive definite (the sign of ``det M`` disagrees), for the factorisation to decide."""
    k = K.size
    U = np.hstack([inverse @ E.T, inverse[:, K]])
    M = U.T @ U
    M[:k, :k] += E[:, K]
    M[:k, k:] += np.eye(k)
    M[k:, :k] += np.eye(k)
    lu, pivots = linalg.lu_factor(M, check_finite=False)
    diagonal = np.diagonal(lu)
    swaps = np.count_nonzero(pivots != np.arange(2 * k))
    if np.prod(np.sign(diagonal)) * (-1) ** swaps != (-1) ** k:
        return None
    b, c = U.T @ a_hat, U.T @ w_hat
    x = linalg.lu_solve((lu, pivots), np.column_stack([b, c]), check_finite=False)
    return -c @ x[:, 0], c @ x[:, 1], 0.5 * (b @ x[:, 0] - np.sum(np.log(np.abs(diagonal))))


def refactorised_change(C, E, K, residual, k_star, fitted_log_det, a_hat, w_hat):
    """The same by factorising ``C' = C + E`` anew (``fitted_log_det``: ``log det C``). With
    ``x = C'^{-1} [y - m, k'_*]``: ``k'^T_* C'^{-1} (y - m)``, ``k'^T_* C'^{-1} k'_*`` and
    ``(y - m)^T C'^{-1} (y - m)`` are inner products with ``x``; ``a_hat`` and ``w_hat`` give
    the fitted model's."""
    as_float = [np.ascontiguousarray(a, dtype=np.float64) for a in (C, E, residual, k_star)]
    log_det, cross, quadratic, fit = _factorised_products(*as_float[:2], K, *as_float[2:])
    if not np.isfinite(log_det):
        raise np.linalg.LinAlgError("the covariance with the new landmark is not positive definite")
    return (cross - w_hat @ a_hat, w_hat @ w_hat - quadratic,
            -0.5 * (log_det - fitted_log_det + fit - a_hat @ a_hat))  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _factorised_products(C, E, K, residual, k_star):
    """``(log det C', k'^T_* x_y, k'^T_* x_k, (y - m)^T x_y)`` with ``C'`` = ``C`` whose rows and
    columns ``K`` are ``C[K] + E``, and ``[x_y, x_k] = C'^{-1} [y - m, k'_*]``; ``log det`` is
    ``-inf`` where ``C'`` is not positive definite. Compiled without the GIL, so that a thread
    pool factorises several points at once (SciPy's ``cholesky`` holds it); LAPACK's ``dpotrf``
    needs C-contiguous float64 arrays."""
    n = C.shape[0]
    changed = C.copy()
    for r in range(K.size):
        for j in range(n):
            changed[K[r], j] += E[r, j]
    for r in range(K.size):
        for j in range(n):
            changed[j, K[r]] = changed[K[r], j]
    if cholesky_inplace(changed) != 0:
        return -np.inf, 0.0, 0.0, 0.0
    log_det = 0.0
    for i in range(n):
        log_det += 2.0 * np.log(changed[i, i])
    solved = np.empty((2, n))
    solved[0] = residual
    solved[1] = k_star
    cholesky_solve_inplace(changed, solved)
    return log_det, k_star @ solved[0], k_star @ solved[1], residual @ solved[0]
