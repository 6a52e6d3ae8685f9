r"""Predictive mean and pointwise variance of the sparse SLE-RBF model at new points.

With the notation of ``pymc_sle.gp._sparse_likelihood``, a new point :math:`x_*` with embedding
:math:`\phi_*`, :math:`u_* = e^{-\gamma\lVert\phi_*\rVert^2/2}` and
:math:`G_{*i} = \phi_*^\top\phi_i` has the cross-covariance

.. math::

    k_{*i} = s\,e^{-\gamma E_{*i}/2} = s\,(\tilde k_{*i} + u_* u_i), \qquad
    \tilde k_{*i} = u_* u_i \bigl(e^{\gamma G_{*i}} - 1\bigr),

sparse plus rank one: :math:`\tilde k_{*i} = 0` unless :math:`x_*` shares a landmark with
:math:`x_i`. With :math:`\alpha = C^{-1} r`, :math:`z = B^{-1} u`, :math:`c = 1 + s\,u^\top z`
and :math:`C^{-1} = B^{-1} - s\,zz^\top/c`,

.. math::

    \mu_* = m(x_*) + s\,\tilde k_*^\top\alpha + s\,u_*\,u^\top\alpha, \qquad
    \sigma_*^2 = s - k_*^\top B^{-1} k_* + \frac{s\,(z^\top k_*)^2}{c},

    k_*^\top B^{-1} k_* = s^2\bigl(\lVert L^{-1} P \tilde k_*\rVert^2
        + 2u_*\, z^\top\tilde k_* + u_*^2\, u^\top z\bigr), \qquad
    z^\top k_* = s\,(z^\top\tilde k_* + u_*\, u^\top z),

one forward solve with the training factor per new point (in batches), plus the noise variance
for observations. The mean needs none.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import sparse

from pymc_sle.gp import _supernodal
from pymc_sle.gp._sparse_likelihood import SparseSLEProblem, _embedding, _factor, _norms

__all__ = ["predict"]

#: New points per forward solve (columns of one right-hand side).
_BATCH = 64


@numba.njit(cache=True)
def _cross_batch(
    new_indptr, new_indices, new_phi, col_ptr, col_rows, col_phi, start, stop, new_u, u, gamma,
    position, alpha, z,
):  # fmt: skip
    """For new points ``start:stop``: the dense right-hand side ``P k~`` (factor numbering) and
    ``alpha^T k~``, ``z^T k~``."""
    n = u.size
    count = stop - start
    rhs = np.zeros((n, count))
    alpha_dot = np.zeros(count)
    z_dot = np.zeros(count)
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
            value = new_u[m] * u[i] * np.expm1(gamma * inner[i])
            rhs[position[i], v] = value
            alpha_dot[v] += alpha[i] * value
            z_dot[v] += z[i] * value
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
    factor, u, gamma, *_ = _factor(problem, radius, amplitude, shape, ls, scale, noise)
    if factor is None:
        raise ValueError(
            "the SLE covariance at these parameters is not numerically positive definite; "
            "no prediction exists"
        )
    symbolic = problem.symbolic
    args = (factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.rows, symbolic.l_ptr)
    solved_f = _supernodal.solve(*args, np.column_stack([residual, u])[symbolic.perm])
    solved = np.empty_like(solved_f)
    solved[symbolic.perm] = solved_f
    b_residual, z = np.ascontiguousarray(solved[:, 0]), np.ascontiguousarray(solved[:, 1])
    c = 1.0 + scale * (u @ z)
    alpha = b_residual - (scale * (u @ b_residual) / c) * z
    u_alpha, u_z = u @ alpha, u @ z

    phi = _embedding(problem.distances, radius, amplitude, shape)[0]
    by_landmark = sparse.csr_matrix(
        (phi, problem.indices, problem.indptr), shape=(problem.n, new_distances.shape[1])
    ).tocsc()
    by_landmark.sort_indices()
    new_phi = _embedding(new_distances.data.astype(float), radius, amplitude, shape)
    new_indptr = new_distances.indptr.astype(np.int64)
    new_norms = _norms(new_indptr, *new_phi)[0]
    new_u = np.exp(-0.5 * gamma * new_norms)
    position = np.empty(problem.n, dtype=np.int64)
    position[symbolic.perm] = np.arange(problem.n)
    n_new = new_distances.shape[0]
    mean = np.empty(n_new)
    variance = np.empty(n_new)
    for start in range(0, n_new, _BATCH):
        stop = min(start + _BATCH, n_new)
        rhs, alpha_dot, z_dot = _cross_batch(
            new_indptr, new_distances.indices.astype(np.int64), new_phi[0],
            by_landmark.indptr.astype(np.int64), by_landmark.indices.astype(np.int64),
            by_landmark.data, start, stop, new_u, u, gamma, position, alpha, z,
        )  # fmt: skip
        whitened = _supernodal.forward_solve(*args, rhs)
        batch_u = new_u[start:stop]
        mean[start:stop] = scale * (alpha_dot + batch_u * u_alpha)
        quadratic = scale**2 * (
            np.einsum("ij,ij->j", whitened, whitened) + 2 * batch_u * z_dot + batch_u**2 * u_z
        )
        z_k = scale * (z_dot + batch_u * u_z)
        variance[start:stop] = scale - quadratic + scale * z_k**2 / c
    return mean, np.maximum(variance, 0.0)
