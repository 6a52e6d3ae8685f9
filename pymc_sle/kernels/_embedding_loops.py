r"""The numba loops behind ``pymc_sle.kernels._embedding_ops``: squared distances between the
rows of embeddings, dense, sparse (stored by column) and across two embeddings, and their
gradients (the bump embedding's loops: ``pymc_sle.kernels._bump_loops``).

**Accuracy.** The bulk of :math:`\Delta_{ij} = \lVert \phi_i - \phi_j \rVert^2` comes from the
expansion :math:`\nu_i + \nu_j - 2\,\phi_i \cdot \phi_j` (one matrix product), which loses its
digits to cancellation when the rows nearly coincide: its absolute error is a few
:math:`\varepsilon (\nu_i + \nu_j)`, so an entry of :math:`10^{-18}` next to norms of 1 can come
out as :math:`-10^{-16}`, and a kernel with a short length scale turns that into a Gram matrix
with negative eigenvalues. Two cheap measures make every entry non-negative and accurate to
rounding:

- the dense kernels subtract the column means first (:math:`\Delta` does not change under a
  common shift; the norms, and with them the cancellation, shrink wherever the rows are close to
  each other, e.g. for a radius much larger than the distances);
- every entry of the expansion below ``CANCELLATION`` :math:`(\nu_i + \nu_j)` is recomputed from
  differences, :math:`\sum_k (\phi_{ik} - \phi_{jk})^2` -- on the sparse path over the union of
  the two rows' supports. Such entries are rare except for near-duplicate embeddings, so the cost
  is a scan of the :math:`n^2` entries the expansion visits anyway.

An entry kept from the expansion has relative error below about :math:`m \varepsilon /`
``CANCELLATION``; a recomputed one, a few :math:`m \varepsilon`. Equal rows give exactly 0. An
expansion that overflows (``inf - inf``, embeddings beyond ~1e154) is recomputed too and gives
``inf``, the kernel's limit 0, not NaN.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_sle._linalg._euclidean import CANCELLATION
from pymc_sle._linalg._lapack import (
    gram_upper,
    is_symmetric,
    mirror_upper_inplace,
    symmetric_sum,
)

__all__ = [
    "by_row",
    "cross_forward",
    "dense_backward",
    "dense_forward",
    "sparse_backward",
    "sparse_forward",
]


@numba.njit(cache=True)
def _direct(a, i, b, j):
    """``sum_k (a[i, k] - b[j, k])**2``."""
    total = 0.0
    for k in range(a.shape[1]):
        difference = a[i, k] - b[j, k]
        total += difference * difference
    return total


@numba.njit(cache=True)
def _column_means(phi):
    n, m = phi.shape
    means = np.zeros(m)
    for i in range(n):  # along rows: C order
        for k in range(m):
            means[k] += phi[i, k]
    return means / max(n, 1)


@numba.njit(cache=True)
def _shifted(phi, shift):
    """``phi - shift`` (a row vector), C-contiguous, in one pass."""
    n, m = phi.shape
    out = np.empty((n, m))
    for i in range(n):
        for k in range(m):
            out[i, k] = phi[i, k] - shift[k]
    return out


@numba.njit(cache=True)
def _centred(phi):
    """``phi`` minus its column means, C-contiguous."""
    return _shifted(phi, _column_means(phi))


@numba.njit(cache=True)
def dense_forward(phi):
    """Squared distances between the rows of a dense ``(n, m)`` ``phi``; diagonal exactly 0."""
    centred = _centred(phi)
    out = gram_upper(centred)  # dsyrk: half the flops of a gemm
    norms = np.diag(out).copy()
    for i in range(out.shape[0]):
        out[i, i] = 0.0
        for j in range(i + 1, out.shape[0]):
            scale = norms[i] + norms[j]
            value = scale - 2.0 * out[i, j]
            out[i, j] = value if value > CANCELLATION * scale else _direct(centred, i, centred, j)
    mirror_upper_inplace(out)
    return out


@numba.njit(cache=True)
def _symmetrised(grad):
    """``(A, c)`` with ``c A = grad + grad.T``: ``(grad, 2)`` when ``grad`` is symmetric, as every
    gradient through a kernel matrix is (a read-only pass instead of a transposed copy)."""
    if is_symmetric(grad):
        return grad, 2.0
    return symmetric_sum(grad), 1.0


@numba.njit(cache=True)
def dense_backward(phi, grad):
    """Gradient of :func:`dense_forward` with respect to ``phi``, given ``grad`` with respect to
    its output: the module formula on the centred ``phi`` (the same value, less cancellation)."""
    symmetric, factor = _symmetrised(np.ascontiguousarray(grad))
    centred = _centred(phi)
    row_sums = symmetric.sum(axis=1).reshape((-1, 1))
    return (2.0 * factor) * (row_sums * centred - np.dot(symmetric, centred))


@numba.njit(cache=True)
def cross_forward(phi, phi_other):
    """Squared distances between the rows of ``phi`` (n, m) and of ``phi_other`` (n', m)."""
    shift = _column_means(phi)
    a, b = _shifted(phi, shift), _shifted(phi_other, shift)
    out = np.dot(a, b.T)
    norms_a = (a * a).sum(axis=1)
    norms_b = (b * b).sum(axis=1)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            scale = norms_a[i] + norms_b[j]
            value = scale - 2.0 * out[i, j]
            out[i, j] = value if value > CANCELLATION * scale else _direct(a, i, b, j)
    return out


@numba.njit(cache=True)
def by_row(col_ptr, row_index, n):
    """Row view of a CSC pattern: row ``i``'s entries are ``entries[row_ptr[i]:row_ptr[i + 1]]``
    (positions in CSC storage, by increasing column); ``cols[p]`` is entry ``p``'s column."""
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    for p in range(row_index.size):
        row_ptr[row_index[p] + 1] += 1
    for i in range(n):
        row_ptr[i + 1] += row_ptr[i]
    cursor = row_ptr[:-1].copy()
    entries = np.empty(row_index.size, dtype=np.int64)
    cols = np.empty(row_index.size, dtype=np.int64)
    for k in range(col_ptr.size - 1):
        for p in range(col_ptr[k], col_ptr[k + 1]):
            i = row_index[p]
            entries[cursor[i]] = p
            cursor[i] += 1
            cols[p] = k
    return row_ptr, entries, cols


@numba.njit(cache=True)
def _sparse_direct(values, row_ptr, entries, cols, i, j):
    """``sum_k (phi_ik - phi_jk)**2`` by merging the two rows' supports (sorted by column)."""
    s, s_end, t, t_end = row_ptr[i], row_ptr[i + 1], row_ptr[j], row_ptr[j + 1]
    total = 0.0
    while s < s_end or t < t_end:
        col_i = cols[entries[s]] if s < s_end else -1
        col_j = cols[entries[t]] if t < t_end else -1
        if col_j < 0 or (0 <= col_i < col_j):
            difference = values[entries[s]]
            s += 1
        elif col_i < 0 or col_j < col_i:
            difference = values[entries[t]]
            t += 1
        else:
            difference = values[entries[s]] - values[entries[t]]
            s += 1
            t += 1
        total += difference * difference
    return total


# Both kernels run row by row (Gustavson's order): every update of row i touches row i of an
# n x n matrix only, which stays in cache, where a column-by-column loop jumps between rows.


@numba.njit(cache=True)
def sparse_forward(values, col_ptr, row_index, n):
    """Squared distances between the ``n`` rows of an embedding stored by column (CSC)."""
    row_ptr, entries, cols = by_row(col_ptr, row_index, n)
    out = np.zeros((n, n))
    norms = np.zeros(n)
    for p in range(values.size):
        norms[row_index[p]] += values[p] * values[p]
    for i in range(n):
        for t in range(row_ptr[i], row_ptr[i + 1]):
            p = entries[t]
            vi = values[p]
            # Rows are sorted within a column: entries after p have rows j > i (upper triangle).
            for q in range(p + 1, col_ptr[cols[p] + 1]):
                out[i, row_index[q]] += vi * values[q]
        out[i, i] = 0.0
        # The expansion for the whole row in a loop the compiler vectorises, then the rare
        # cancelled entries (also NaN: inf - inf) from differences.
        norm_i = norms[i]
        cancelled = False
        for j in range(i + 1, n):
            scale = norm_i + norms[j]
            value = scale - 2.0 * out[i, j]
            out[i, j] = value
            cancelled |= not value > CANCELLATION * scale
        if cancelled:
            for j in range(i + 1, n):
                if not out[i, j] > CANCELLATION * (norm_i + norms[j]):
                    out[i, j] = _sparse_direct(values, row_ptr, entries, cols, i, j)
    mirror_upper_inplace(out)
    return out


@numba.njit(cache=True)
def sparse_backward(values, col_ptr, row_index, grad):
    """Gradient with respect to the stored values, given ``grad`` with respect to the output of
    :func:`sparse_forward`."""
    # out[p] = 2 (s_i v_p - sum_{q in column k} S_ij v_q) for entry p = (i, k), q = (j, k). Each
    # unordered pair {p, q} of a column is visited once, from the row of the smaller index.
    n = grad.shape[0]
    row_ptr, entries, cols = by_row(col_ptr, row_index, n)
    symmetric, factor = _symmetrised(grad)  # S = factor * symmetric
    sums = np.empty(n)  # off the diagonal, of `symmetric`
    for i in range(n):
        sums[i] = symmetric[i].sum() - symmetric[i, i]
    out = np.empty(values.size)
    for p in range(values.size):
        out[p] = factor * sums[row_index[p]] * values[p]
    for i in range(n):
        for t in range(row_ptr[i], row_ptr[i + 1]):
            p = entries[t]
            vi = values[p]
            total = 0.0
            for q in range(p + 1, col_ptr[cols[p] + 1]):
                s_ij = factor * symmetric[i, row_index[q]]
                total += s_ij * values[q]
                out[q] -= s_ij * vi
            out[p] -= total
    return 2.0 * out
