r"""Predictive mean and pointwise variance of the sparse SLE model at new points.

With the notation of ``pymc_sle.gp._sparse._likelihood``, a new point :math:`x_*` with embedding
:math:`\phi_*`, :math:`n_* = \lVert\phi_*\rVert^2`, :math:`u^k_* = e^{-c_k n_*}` and
:math:`G_{*i} = \phi_*^\top\phi_i` has the cross-covariance

.. math::

    k_{*i} = s \sum_k w_k e^{-c_k E_{*i}} = \tilde k_{*i} + (U \gamma_*)_i, \qquad
    \tilde k_{*i} = s \sum_k w_k u^k_* u^k_i \bigl(e^{2c_k G_{*i}} - 1\bigr), \qquad
    \gamma_{*k} = \sqrt{s w_k}\, u^k_*,

sparse plus low rank: :math:`\tilde k_{*i} = 0` unless :math:`x_*` shares a landmark with
:math:`x_i`. With :math:`\alpha = C^{-1} r`, :math:`Z = B^{-1} U`, :math:`M = I + U^\top Z =
L_M L_M^\top` and :math:`C^{-1} = B^{-1} - Z M^{-1} Z^\top`,

.. math::

    \mu_* = m(x_*) + \tilde k_*^\top\alpha + \gamma_*^\top U^\top\alpha, \qquad
    \sigma_*^2 = s \sum_k w_k - k_*^\top B^{-1} k_* + \lVert L_M^{-1} Z^\top k_* \rVert^2,

    k_*^\top B^{-1} k_* = \lVert L^{-1} P \tilde k_*\rVert^2
        + 2\gamma_*^\top Z^\top\tilde k_* + \gamma_*^\top U^\top Z \gamma_*, \qquad
    Z^\top k_* = Z^\top\tilde k_* + Z^\top U \gamma_*,

one forward solve with the training factor per new point (in batches), plus the noise variance
for observations. The mean needs none.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import linalg, sparse

from pymc_sle._linalg._supernodal import forward_solve
from pymc_sle.gp._sparse._likelihood import (
    bump_embedding,
    factorise,
    posterior_weights,
    row_norms,
)
from pymc_sle.gp._sparse._problem import SparseSLEProblem

__all__ = ["predict"]

#: New points per forward solve (columns of one right-hand side).
_BATCH = 64


@numba.njit(cache=True, nogil=True)
def _cross_batch(
    new_indptr, new_indices, new_phi, new_norms, col_ptr, col_rows, col_phi, norms, start,
    stop, rates, weights, scale, position, alpha, z,
):  # fmt: skip
    """For new points ``start:stop``: the dense right-hand side ``P k~`` (factor numbering),
    ``alpha^T k~`` and ``Z^T k~``."""
    n = norms.size
    count = stop - start
    rhs = np.zeros((n, count))
    alpha_dot = np.zeros(count)
    z_dot = np.zeros((count, z.shape[1]))
    inner = np.zeros(n)
    touched = np.empty(n, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)
    for v in range(count):
        m = start + v
        n_touched = 0
        for p in range(new_indptr[m], new_indptr[m + 1]):
            weight = new_phi[p]
            if weight == 0.0:
                continue
            landmark = new_indices[p]
            for q in range(col_ptr[landmark], col_ptr[landmark + 1]):
                i = col_rows[q]
                if stamp[i] != m:
                    stamp[i] = m
                    touched[n_touched] = i
                    n_touched += 1
                inner[i] += weight * col_phi[q]
        for t in range(n_touched):
            i = touched[t]
            both = new_norms[m] + norms[i]
            squared = max(both - 2.0 * inner[i], 0.0)
            value = 0.0
            for k in range(rates.size):
                c = rates[k]
                if c * squared > 745.0:
                    break
                if 2.0 * c * inner[i] < 1.0:
                    value += weights[k] * np.exp(-c * both) * np.expm1(2.0 * c * inner[i])
                else:
                    value += weights[k] * (np.exp(-c * squared) - np.exp(-c * both))
            value *= scale
            rhs[position[i], v] = value
            alpha_dot[v] += alpha[i] * value
            for q in range(z.shape[1]):
                z_dot[v, q] += z[i, q] * value
            inner[i] = 0.0
    return rhs, alpha_dot, z_dot


def predict(
    problem: SparseSLEProblem, new_distances, residual, radius, amplitude, shape, ls, scale, noise
):
    """Mean offset ``k_*^T alpha`` and variance of the latent function at new points.

    Parameters
    ----------
    problem : SparseSLEProblem
    new_distances : scipy.sparse.csr_matrix of shape (n_new, m)
        The new points' distances to the landmarks below the cutoff (stored zeros kept).
    residual : ndarray of shape (n,)
        Training observations minus the mean function.
    radius, amplitude, shape, ls, scale, noise : float
        The parameters, ``noise`` being the training noise variance with jitter.
    """
    factor, low_rank, kept, gamma, norms, _ = factorise(
        problem, radius, amplitude, shape, ls, scale, noise
    )
    weights_out = None if factor is None else posterior_weights(problem, factor, low_rank, residual)
    if weights_out is None:
        raise ValueError(
            "the SLE covariance at these parameters is not numerically positive definite; "
            "no prediction exists"
        )
    alpha, z, chol_m, _ = weights_out
    rates, weights = problem.mixture.rates * gamma, problem.mixture.weights
    u_alpha, u_z = low_rank.T @ alpha, low_rank.T @ z

    phi = bump_embedding(problem.distances, radius, amplitude, shape)[0]
    by_landmark = sparse.csr_matrix(
        (phi, problem.indices, problem.indptr), shape=(problem.n, new_distances.shape[1])
    ).tocsc()
    by_landmark.sort_indices()
    new_phi = bump_embedding(new_distances.data.astype(float), radius, amplitude, shape)
    new_indptr = new_distances.indptr.astype(np.int64)
    new_norms = row_norms(new_indptr, *new_phi)[0]
    new_low = np.sqrt(scale * weights[kept]) * np.exp(-np.outer(new_norms, rates[kept]))
    symbolic = problem.symbolic
    args = (factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.rows, symbolic.l_ptr)
    position = np.empty(problem.n, dtype=np.int64)
    position[symbolic.perm] = np.arange(problem.n)
    n_new = new_distances.shape[0]
    mean = np.empty(n_new)
    variance = np.empty(n_new)
    prior = scale * weights.sum()
    for start in range(0, n_new, _BATCH):
        stop = min(start + _BATCH, n_new)
        rhs, alpha_dot, z_dot = _cross_batch(
            new_indptr, new_distances.indices.astype(np.int64), new_phi[0], new_norms,
            by_landmark.indptr.astype(np.int64), by_landmark.indices.astype(np.int64),
            by_landmark.data, norms[0], start, stop, rates, weights, scale, position, alpha,
            np.ascontiguousarray(z),
        )  # fmt: skip
        whitened = forward_solve(*args, rhs)
        low = new_low[start:stop]
        mean[start:stop] = alpha_dot + low @ u_alpha
        quadratic = (
            np.einsum("ij,ij->j", whitened, whitened)
            + 2.0 * np.einsum("iq,iq->i", low, z_dot)
            + np.einsum("iq,qr,ir->i", low, u_z, low)
        )
        z_k = z_dot + low @ u_z  # u_z = U^T Z is symmetric
        correction = linalg.solve_triangular(chol_m, z_k.T, lower=True)
        variance[start:stop] = prior - quadratic + np.einsum("qi,qi->i", correction, correction)
    return mean, np.maximum(variance, 0.0)
