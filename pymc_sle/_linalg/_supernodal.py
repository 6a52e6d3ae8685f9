r"""Sparse Cholesky factorisation and selected inversion of a symmetric positive definite matrix.

For :math:`A = L L^\top` (after a fill-reducing permutation), the log-likelihood of a sparse
Gaussian process needs :math:`\log|A| = 2\sum_i \log L_{ii}`, solves with :math:`A`, and the
entries of :math:`\Sigma = A^{-1}` on the pattern of :math:`A` (the trace terms of the gradient).
All three come from one factor:

- **Ordering and supernodes** (`pymc_sle._linalg._supernodal_analysis`, once per pattern): nested
  dissection, then dense column-major blocks of columns that share their row structure.
- **Factorisation (multifrontal).** Supernodes in postorder: the frontal matrix of :math:`s` is
  :math:`A`'s columns plus the children's update matrices, scattered by relative indices; then
  ``dpotrf`` on the diagonal block, ``dtrsm`` for the rows below, and ``dsyrk`` for the update
  matrix :math:`F_{22} - L_{21}L_{21}^\top` handed to the parent. All flops are BLAS-3.
- **Selected inversion (Takahashi).** Supernodes in reverse: with :math:`R` the rows of
  :math:`s` below its diagonal block and :math:`Y = L_{21}L_{11}^{-1}`,

  .. math::

      \Sigma_{R,s} = -\Sigma_{R,R}\, Y, \qquad
      \Sigma_{s,s} = (L_{11}L_{11}^\top)^{-1} - Y^\top \Sigma_{R,s}.

  :math:`R` is a clique of the filled graph, so :math:`\Sigma_{R,R}` is a sub-block of the
  parent's dense :math:`\Sigma` front, gathered with the same relative indices. The cost is a
  small multiple of the factorisation's (the same BLAS-3 shapes), and :math:`\Sigma` is returned
  on the whole pattern of :math:`L`, which contains :math:`A`'s.

`factorize`, `solve` and `selected_inverse` run per evaluation, on the structure that `analyse`
built once.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_sle._linalg._lapack import (
    blocked_cholesky,
    blocked_cholesky_inverse,
    blocked_gemm,
    blocked_syrk_update,
    blocked_trsm,
)
from pymc_sle._linalg._supernodal_analysis import SymbolicFactor

__all__ = [
    "backward_solve",
    "factorize",
    "forward_solve",
    "log_determinant",
    "multiply_factor",
    "selected_inverse",
    "solve",
]


@numba.njit(cache=True, nogil=True)
def _factorize(values, sn_start, rows_ptr, relative, l_ptr, child_ptr, children):
    n_sn = sn_start.size - 1
    updates = [np.empty(0) for _ in range(n_sn)]
    for s in range(n_sn):
        k = sn_start[s + 1] - sn_start[s]
        m = rows_ptr[s + 1] - rows_ptr[s]
        front = np.zeros(m * m)
        front[: k * m] = values[l_ptr[s] : l_ptr[s] + k * m]
        for c in range(child_ptr[s], child_ptr[s + 1]):
            child = children[c]
            update = updates[child]
            below = rows_ptr[child + 1] - rows_ptr[child] - (sn_start[child + 1] - sn_start[child])
            where = relative[rows_ptr[child + 1] - below : rows_ptr[child + 1]]
            for b in range(below):
                column = where[b] * m
                for a in range(b, below):
                    front[column + where[a]] += update[b * below + a]
            updates[child] = np.empty(0)
        if blocked_cholesky(front, 0, k, m) != 0:
            return False
        if m > k:
            below = m - k
            blocked_trsm("R", "T", below, k, front, 0, m, front, k, m)
            blocked_syrk_update(below, k, front, k, m, front, k * m + k, m)
            update = np.empty(below * below)
            for b in range(below):
                update[b * below : (b + 1) * below] = front[(k + b) * m + k : (k + b + 1) * m]
            updates[s] = update
        values[l_ptr[s] : l_ptr[s] + k * m] = front[: k * m]
    return True


def factorize(symbolic: SymbolicFactor, values: np.ndarray) -> bool:
    """Overwrite ``values`` (the matrix's entries scattered to ``symbolic.entry_index``, zeros
    elsewhere) with its Cholesky factor. Returns False if the matrix is not numerically positive
    definite (``values`` is then garbage)."""
    s = symbolic
    return _factorize(values, s.sn_start, s.rows_ptr, s.relative, s.l_ptr, s.child_ptr, s.children)


@numba.njit(cache=True, nogil=True)
def log_determinant(factor, sn_start, rows_ptr, l_ptr):
    """``log |A| = 2 sum log L_ii``."""
    total = 0.0
    for s in range(sn_start.size - 1):
        m = rows_ptr[s + 1] - rows_ptr[s]
        for c in range(sn_start[s + 1] - sn_start[s]):
            total += np.log(factor[l_ptr[s] + c * m + c])
    return 2.0 * total


@numba.njit(cache=True, nogil=True)
def forward_solve(factor, sn_start, rows_ptr, rows, l_ptr, rhs):
    """``L^{-1} rhs`` for ``rhs`` of shape (n, q), in the factor's numbering, in place.

    Per supernode: the triangular solve on its own (contiguous) rows, then the rows below
    accumulated in a dense buffer along the factor's contiguous columns and scattered once."""
    q = rhs.shape[1]
    buffer = np.empty((q, np.max(np.diff(rows_ptr))))
    for s in range(sn_start.size - 1):
        first, m, base = sn_start[s], rows_ptr[s + 1] - rows_ptr[s], l_ptr[s]
        k = sn_start[s + 1] - first
        below = m - k
        buffer[:, :below] = 0.0
        for c in range(k):
            offset = base + c * m
            for v in range(q):
                x = rhs[first + c, v] / factor[offset + c]
                rhs[first + c, v] = x
                for r in range(c + 1, k):
                    rhs[first + r, v] -= factor[offset + r] * x
                for b in range(below):
                    buffer[v, b] += factor[offset + k + b] * x
        for b in range(below):
            row = rows[rows_ptr[s] + k + b]
            for v in range(q):
                rhs[row, v] -= buffer[v, b]
    return rhs


@numba.njit(cache=True, nogil=True)
def backward_solve(factor, sn_start, rows_ptr, rows, l_ptr, rhs):
    """``L^{-T} rhs`` for ``rhs`` of shape (n, q), in the factor's numbering, in place.

    Per supernode: the rows below gathered once into a dense buffer, then one dot product per
    column along the factor's contiguous entries."""
    q = rhs.shape[1]
    buffer = np.empty((q, np.max(np.diff(rows_ptr))))
    for s in range(sn_start.size - 2, -1, -1):
        first, m, base = sn_start[s], rows_ptr[s + 1] - rows_ptr[s], l_ptr[s]
        k = sn_start[s + 1] - first
        below = m - k
        for b in range(below):
            row = rows[rows_ptr[s] + k + b]
            for v in range(q):
                buffer[v, b] = rhs[row, v]
        for c in range(k - 1, -1, -1):
            offset = base + c * m
            for v in range(q):
                total = rhs[first + c, v]
                for b in range(below):
                    total -= factor[offset + k + b] * buffer[v, b]
                for r in range(c + 1, k):
                    total -= factor[offset + r] * rhs[first + r, v]
                rhs[first + c, v] = total / factor[offset + c]
    return rhs


@numba.njit(cache=True, nogil=True)
def solve(factor, sn_start, rows_ptr, rows, l_ptr, rhs):
    """``A^{-1} rhs`` for ``rhs`` of shape (n, q), in the factor's numbering, in place."""
    forward_solve(factor, sn_start, rows_ptr, rows, l_ptr, rhs)
    return backward_solve(factor, sn_start, rows_ptr, rows, l_ptr, rhs)


@numba.njit(cache=True, nogil=True)
def multiply_factor(factor, sn_start, rows_ptr, rows, l_ptr, x):
    """``L x`` for ``x`` of shape (n, q), in the factor's numbering."""
    out = np.zeros_like(x)
    for s in range(sn_start.size - 1):
        first, m, base = sn_start[s], rows_ptr[s + 1] - rows_ptr[s], l_ptr[s]
        for c in range(sn_start[s + 1] - first):
            for r in range(c, m):
                weight = factor[base + c * m + r]
                row = rows[rows_ptr[s] + r]
                for v in range(x.shape[1]):
                    out[row, v] += weight * x[first + c, v]
    return out


@numba.njit(cache=True, nogil=True)
def _selected_inverse(factor, sn_start, sn_parent, rows_ptr, relative, l_ptr, child_ptr, children):
    n_sn = sn_start.size - 1
    inverse = np.empty_like(factor)
    fronts = [np.empty(0) for _ in range(n_sn)]
    for s in range(n_sn - 1, -1, -1):
        k = sn_start[s + 1] - sn_start[s]
        m = rows_ptr[s + 1] - rows_ptr[s]
        below = m - k
        block = factor[l_ptr[s] : l_ptr[s] + k * m].copy()
        diagonal = np.zeros(k * k)
        for c in range(k):
            for r in range(c, k):
                diagonal[c * k + r] = block[c * m + r]
        blocked_cholesky_inverse(diagonal, 0, k, k)
        for c in range(k):
            for r in range(c + 1, k):
                diagonal[r * k + c] = diagonal[c * k + r]
        front = np.empty(m * m)
        if below:
            parent = sn_parent[s]
            parent_front = fronts[parent]
            parent_m = rows_ptr[parent + 1] - rows_ptr[parent]
            where = relative[rows_ptr[s + 1] - below : rows_ptr[s + 1]]
            for b in range(below):
                column = where[b] * parent_m
                target = (k + b) * m + k
                for a in range(below):
                    front[target + a] = parent_front[column + where[a]]
            blocked_trsm("R", "N", below, k, block, 0, m, block, k, m)  # Y = L21 L11^-1
            blocked_gemm(
                "N", below, k, below, -1.0, front, k * m + k, m, block, k, m, 0.0, front, k, m
            )
            blocked_gemm("T", k, k, below, -1.0, block, k, m, front, k, m, 1.0, diagonal, 0, k)
            for c in range(k):
                for a in range(below):
                    front[(k + a) * m + c] = front[c * m + k + a]
            if s == children[child_ptr[parent]]:  # the parent's last child in reverse order
                fronts[parent] = np.empty(0)
        for c in range(k):
            for r in range(c, k):
                value = diagonal[c * k + r]
                front[c * m + r] = value
                front[r * m + c] = value
        inverse[l_ptr[s] : l_ptr[s] + k * m] = front[: k * m]
        if child_ptr[s + 1] > child_ptr[s]:
            fronts[s] = front
    return inverse


def selected_inverse(symbolic: SymbolicFactor, factor: np.ndarray) -> np.ndarray:
    """The entries of ``A^{-1}`` on the factor's pattern, laid out as ``factor``."""
    s = symbolic
    return _selected_inverse(
        factor, s.sn_start, s.sn_parent, s.rows_ptr, s.relative, s.l_ptr, s.child_ptr, s.children
    )
