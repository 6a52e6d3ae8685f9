r"""The eigenvalues of a symmetric matrix and one vector's coordinates in its eigenbasis.

The grid posterior (``pymc_sle.inference._grid``) needs, for each kernel matrix
:math:`C = U \operatorname{diag}(\lambda) U^\top`, only :math:`\lambda` and :math:`z = U^\top y`
for the one vector :math:`y` -- never :math:`U` itself. A full eigendecomposition (``eigh``)
spends more than half its time on :math:`U`. Here:

1. LAPACK's ``dsytrd`` reduces :math:`C = Q T Q^\top` with :math:`T` tridiagonal and :math:`Q =
   H_1 \cdots H_{n-1}` a product of Householder reflections (:math:`\tfrac43 n^3` flops, as in
   ``eigh``);
2. :math:`w = Q^\top y = H_{n-1} \cdots H_1 y`, applying the stored reflections (:math:`O(n^2)`);
3. the implicit QL iteration with Wilkinson-type shifts diagonalises :math:`T = V \Lambda V^\top`
   by plane rotations, :math:`V = G_1 G_2 \cdots`; instead of accumulating :math:`V`
   (:math:`O(n^3)`), each rotation is applied to the row vector :math:`w^\top` only, which ends as
   :math:`w^\top V = (V^\top Q^\top y)^\top = z^\top` (:math:`O(n^2)`; Golub and Welsch's device
   for Gauss quadrature, with :math:`w` in place of the first unit vector).

An off-diagonal entry is negligible below :math:`\varepsilon \lVert T \rVert`, the criterion of
EISPACK's ``tql2``, so eigenvalues carry the absolute error :math:`O(\varepsilon \lVert C \rVert)`
of a backward-stable method, as ``eigh``'s do. Within a cluster of equal eigenvalues the
individual :math:`z_i` are not unique (nor are ``eigh``'s); every spectral function
:math:`\sum_i f(\lambda_i) z_i^2 = y^\top f(C) y` is. Should the iteration not converge (it
takes about 1.7 sweeps per eigenvalue on kernel matrices), ``eigh`` is used instead.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.linalg import lapack

__all__ = ["eigenvalues_and_coordinates"]

#: QL sweeps allowed per eigenvalue before falling back to ``eigh`` (LAPACK allows 30).
_MAX_SWEEPS = 30


@numba.njit(cache=True)
def _reflected(reduced, tau, vector):
    """``Q^T vector`` for ``dsytrd``'s lower-storage reflections: ``H_k = I - tau_k v v^T`` with
    ``v = (0, ..., 0, 1, reduced[k + 2:, k])``, the 1 at position ``k + 1``."""
    out = vector.copy()
    n = out.size
    for k in range(n - 1):
        dot = out[k + 1]
        for i in range(k + 2, n):
            dot += reduced[i, k] * out[i]
        dot *= tau[k]
        out[k + 1] -= dot
        for i in range(k + 2, n):
            out[i] -= dot * reduced[i, k]
    return out


@numba.njit(cache=True)
def _rotation(f, g):
    """``(c, s, h)`` with ``h = hypot(f, g)``, ``s = f / h``, ``c = g / h``; the square root of
    the sum of squares unless that could underflow."""
    h = np.sqrt(f * f + g * g)
    if h < 1e-150:
        h = np.hypot(f, g)
    if h == 0.0:
        return 1.0, 0.0, 0.0
    inverse = 1.0 / h
    return g * inverse, f * inverse, h


@numba.njit(cache=True)
def _tridiagonal_ql(diagonal, off_diagonal, vector, max_sweeps):
    """Eigenvalues of the symmetric tridiagonal matrix and ``V^T vector``; ``ok`` False when an
    eigenvalue took more than ``max_sweeps`` QL sweeps."""
    n = diagonal.size
    d = diagonal.copy()
    e = np.zeros(n)
    e[: n - 1] = off_diagonal
    z = vector.copy()
    norm = 0.0
    for i in range(n):
        norm = max(norm, abs(d[i]) + abs(e[i]) + (abs(e[i - 1]) if i > 0 else 0.0))
    tolerance = np.finfo(np.float64).eps * norm
    for low in range(n):
        sweeps = 0
        while True:
            high = low  # the block [low, high] is unreduced; e[high] is negligible
            while high < n - 1 and abs(e[high]) > tolerance:
                high += 1
            if high == low:
                break
            sweeps += 1
            if sweeps > max_sweeps:
                return d, z, False
            # shift: the eigenvalue of the leading 2x2 block nearer d[low]
            g = (d[low + 1] - d[low]) / (2.0 * e[low])
            root = np.sqrt(g * g + 1.0)
            g = d[high] - d[low] + e[low] / (g + (root if g >= 0.0 else -root))
            s, c, p = 1.0, 1.0, 0.0
            deflated = False
            for i in range(high - 1, low - 1, -1):
                f, b = s * e[i], c * e[i]
                c, s, h = _rotation(f, g)
                e[i + 1] = h
                if h == 0.0:  # the block splits at i + 1: start again on the smaller one
                    d[i + 1] -= p
                    e[high] = 0.0
                    deflated = True
                    break
                g = d[i + 1] - p
                h = (d[i] - g) * s + 2.0 * c * b
                p = s * h
                d[i + 1] = g + p
                g = c * h - b
                # the rotation of columns i, i + 1 of V, applied to the row vector z^T only
                f = z[i + 1]
                z[i + 1] = s * z[i] + c * f
                z[i] = c * z[i] - s * f
            if not deflated:
                d[low] -= p
                e[low] = g
                e[high] = 0.0
    return d, z, True


def eigenvalues_and_coordinates(matrix, vector) -> tuple[np.ndarray, np.ndarray]:
    r"""``(lambda, U^T vector)`` for a symmetric ``matrix = U diag(lambda) U^T``.

    The eigenvalues are not sorted; ``lambda[i]`` goes with ``(U^T vector)[i]``. Only the lower
    triangle of ``matrix`` is read.

    Parameters
    ----------
    matrix : ndarray of shape (n, n)
        Symmetric, finite.
    vector : ndarray of shape (n,)

    Returns
    -------
    eigenvalues, coordinates : ndarray of shape (n,)
    """
    matrix = np.asarray(matrix, dtype=float)
    vector = np.ascontiguousarray(vector, dtype=float)
    n = vector.size
    if matrix.shape != (n, n):
        raise ValueError(
            f"`matrix` must have shape ({n}, {n}) to match `vector`, but has {matrix.shape}"
        )
    if not (np.all(np.isfinite(matrix)) and np.all(np.isfinite(vector))):
        raise ValueError("`matrix` and `vector` must be finite, but hold NaN or inf")
    if n < 2:
        return np.diagonal(matrix).copy(), vector.copy()
    work, _ = lapack.dsytrd_lwork(n, lower=1)  # blocked: a third faster than the default
    reduced, diagonal, off_diagonal, tau, info = lapack.dsytrd(matrix, lower=1, lwork=int(work))
    if info == 0:
        eigenvalues, coordinates, ok = _tridiagonal_ql(
            diagonal, off_diagonal, _reflected(reduced, tau, vector), _MAX_SWEEPS
        )
        if ok:
            return eigenvalues, coordinates
    eigenvalues, vectors = np.linalg.eigh(matrix)
    return eigenvalues, vectors.T @ vector
