r"""The numba loops behind :mod:`pymc_sle.kernels._embedding_ops`: squared distances between the
rows of embeddings, dense, sparse (stored by column) and across two embeddings, and their
gradients; and the bump embedding of a distance block evaluated on its support only.

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

from pymc_sle._euclidean import CANCELLATION
from pymc_sle._lapack import (
    gram_upper,
    is_symmetric,
    mirror_upper_inplace,
    symmetric_sum,
)

__all__ = [
    "bump_backward",
    "bump_block_backward",
    "bump_embedding_backward",
    "bump_forward",
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


# -- The bump embedding on its support ----------------------------------------------------------
#
# phi_ik = a_k exp(beta_k - beta_k w_ik), w = 1 / (1 - u), u = (d_ik / r_k)**2, where u < 1, else 0
# (paper Eq. 5; ``pymc_sle.bump``). With b = phi_ik, its partial derivatives on the support are
#   db/da_k = b / a_k,  db/dbeta_k = -u w b,  db/dr_k = 2 beta_k u w**2 b / r_k,
#   db/dd_ik = -2 beta_k d_ik w**2 b / r_k**2,
# and outside it all four are 0: the bump vanishes with all its derivatives at u = 1. Where b
# underflows to 0 inside, w**2 <= 2**106 is finite, so every product is 0, never NaN.
#
# The forward takes one of two branches by the support's size, and its gradients the same one:
# - sparse (at most ``max_fill`` of the embedding non-zero): the support in CSC storage, the bump
#   evaluated there only, the sparse kernels; the support is ``(values, distance, col_ptr,
#   row_index)``;
# - dense: the bump element-wise on the whole block, the dense kernels; the support is the
#   embedding itself, ``(phi.ravel(), [], [], [])`` -- an empty ``col_ptr`` (a CSC one has m + 1
#   entries) tells the gradients which branch was taken.


@numba.njit(cache=True)
def _inside(d, r):
    """Whether ``(d / r)**2 < 1`` -- the bump's support exactly as ``pymc_sle.bump`` tests it; the
    division is taken only when ``d < r``, which it implies."""
    if not d < r:
        return False
    q = d / r
    return q * q < 1.0


@numba.njit(cache=True)
def _column_counts(block, order, ordered, radius):
    """The number of rows of every column of ``block`` inside the bump: from the prefixes of the
    sorted columns ``ordered`` when given (see :func:`_support_by_order`; work proportional to
    the support, contiguous reads), else by a scan of ``block``."""
    n, m = block.shape
    counts = np.zeros(m, dtype=np.int64)
    if order.shape[0] == 0:
        for i in range(n):
            for k in range(m):
                counts[k] += _inside(block[i, k], radius[k])
        return counts
    width = ordered.shape[1]
    for k in range(m):
        c = 0
        while c < width and _inside(ordered[k, c], radius[k]):
            c += 1
        counts[k] = c
    return counts


@numba.njit(cache=True)
def _column_pointers(counts):
    col_ptr = np.zeros(counts.size + 1, dtype=np.int64)
    for k in range(counts.size):
        col_ptr[k + 1] = col_ptr[k] + counts[k]
    return col_ptr


@numba.njit(cache=True)
def _support_by_scan(block, radius, col_ptr):
    """``(row_index, distance)``: the rows of the bump's support in an ``(n, m)`` ``block``, whose
    column pointers ``col_ptr`` are known, in CSC storage (rows increasing in each column), with
    the distance of every entry; one pass along the rows of ``block``."""
    n, m = block.shape
    cursor = col_ptr[:-1].copy()
    row_index = np.empty(col_ptr[m], dtype=np.int64)
    distance = np.empty(col_ptr[m])
    for i in range(n):
        for k in range(m):
            if _inside(block[i, k], radius[k]):
                row_index[cursor[k]] = i
                distance[cursor[k]] = block[i, k]
                cursor[k] += 1
    return row_index, distance


@numba.njit(cache=True)
def _support_by_order(order, ordered, col_ptr, n):
    """The same as :func:`_support_by_scan` for ``n`` rows, from the ``width`` smallest distances
    of every column in increasing order, ``ordered[k]``, and their rows, ``order[k]`` (both ``(m,
    width)``, ``width`` at most ``n``): column ``k``'s support is a prefix of ``order[k]``, of
    ``col_ptr[k + 1] - col_ptr[k]`` entries. A counting sort by row puts the rows of every column
    in increasing order."""
    m, width = order.shape
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(m):
        for c in range(col_ptr[k + 1] - col_ptr[k]):
            row_ptr[order[k, c] + 1] += 1
    for i in range(n):
        row_ptr[i + 1] += row_ptr[i]
    source = np.empty(col_ptr[m], dtype=np.int64)  # by row: position k * width + c in `ordered`
    cursor = row_ptr[:-1].copy()
    for k in range(m):  # columns increasing within every row
        for c in range(col_ptr[k + 1] - col_ptr[k]):
            i = order[k, c]
            source[cursor[i]] = k * width + c
            cursor[i] += 1
    row_index = np.empty(col_ptr[m], dtype=np.int64)
    distance = np.empty(col_ptr[m])
    column_cursor = col_ptr[:-1].copy()
    flat = ordered.ravel()
    for i in range(n):  # rows increasing within every column
        for t in range(row_ptr[i], row_ptr[i + 1]):
            k = source[t] // width
            row_index[column_cursor[k]] = i
            distance[column_cursor[k]] = flat[source[t]]
            column_cursor[k] += 1
    return row_index, distance


@numba.njit(cache=True)
def _bump_value(d, r, a, beta):
    """The bump at a distance ``d`` inside its support."""
    q = d / r
    return a * np.exp(beta - beta / (1.0 - q * q))


@numba.njit(cache=True)
def _u_and_w(d, r):
    """``(u, w)`` of the module notes at distance ``d`` inside the support; ``(0, 1)`` outside,
    where the bump is 0 and any finite pair makes its derivatives 0 (a select, not a branch: the
    dense loops run without mispredicted jumps over an irregular support)."""
    q = d / r
    u = q * q
    u = u if u < 1.0 else 0.0
    return u, 1.0 / (1.0 - u)


@numba.njit(cache=True)
def _parameter_gradients(by_amplitude, by_shape, by_radius, radius, amplitude, shape):
    """The gradients with respect to ``(radius, amplitude, shape)`` from the column sums of
    ``g b``, ``g b u w`` and ``g b u w**2`` over the support (``g`` the gradient with respect to
    the bump ``b``; module notes)."""
    return 2.0 * shape * by_radius / radius, by_amplitude / amplitude, -by_shape


@numba.njit(cache=True)
def _dense_bump(block, radius, amplitude, shape):
    """The bump embedding of the whole ``(n, m)`` ``block``, element-wise."""
    n, m = block.shape
    phi = np.zeros((n, m))
    for i in range(n):
        for k in range(m):
            if _inside(block[i, k], radius[k]):
                phi[i, k] = _bump_value(block[i, k], radius[k], amplitude[k], shape[k])
    return phi


@numba.njit(cache=True)
def _contiguous_parameters(radius, amplitude, shape):
    """The parameters C-contiguous (views when they are; ``pt.broadcast_to`` gives stride-0
    vectors), so that numba compiles the loops for that layout."""
    return (
        np.ascontiguousarray(radius),
        np.ascontiguousarray(amplitude),
        np.ascontiguousarray(shape),
    )


@numba.njit(cache=True)
def bump_forward(block, order, ordered, radius, amplitude, shape, max_fill):
    """Squared distances between the rows of the bump embedding of ``block``, by the branch its
    support's size selects (module notes), with the support the gradients take instead of finding
    it again. ``order`` and ``ordered`` are the sorted columns of :func:`_support_by_order`, or
    empty ``(0, 0)`` for a scan of ``block``. Parameters of another length than ``block``'s
    columns are an error, not a read past their end (a graph whose block was replaced by a wider
    one keeps the parameters broadcast to the old width)."""
    m = block.shape[1]
    if radius.shape[0] != m or amplitude.shape[0] != m or shape.shape[0] != m:
        raise ValueError("the bump parameters need one value per column of the distance block")
    block, order = np.ascontiguousarray(block), np.ascontiguousarray(order)
    ordered = np.ascontiguousarray(ordered)
    radius, amplitude, shape = _contiguous_parameters(radius, amplitude, shape)
    counts = _column_counts(block, order, ordered, radius)
    if counts.sum() > max_fill * block.size:
        phi = _dense_bump(block, radius, amplitude, shape)
        none = np.empty(0, dtype=np.int64)
        return dense_forward(phi), phi.ravel(), np.empty(0), none, none
    col_ptr = _column_pointers(counts)
    if order.shape[0] == 0:
        row_index, distance = _support_by_scan(block, radius, col_ptr)
    else:
        row_index, distance = _support_by_order(order, ordered, col_ptr, block.shape[0])
    values = np.empty(row_index.size)
    for k in range(block.shape[1]):
        for p in range(col_ptr[k], col_ptr[k + 1]):
            values[p] = _bump_value(distance[p], radius[k], amplitude[k], shape[k])
    out = sparse_forward(values, col_ptr, row_index, block.shape[0])
    return out, values, distance, col_ptr, row_index


@numba.njit(cache=True)
def bump_embedding_backward(block, values, col_ptr, row_index, grad):
    """The gradient with respect to the embedding's stored entries ``values`` (the support's
    values, or the raveled dense embedding), given ``grad`` with respect to the output of
    :func:`bump_forward` and the support it returned, for a ``block`` of shape ``(n, m)``. The
    products with ``grad``, the expensive part of the backward, done once for the gradients with
    respect to the parameters and to the block."""
    grad = np.ascontiguousarray(grad)
    if col_ptr.size == 0:  # dense
        n, m = block.shape
        return dense_backward(values.reshape((n, m)), grad).ravel()
    return sparse_backward(values, col_ptr, row_index, grad)


@numba.njit(cache=True)
def _add_parameter_terms(sums, k, gb, d, r):
    """Adds one entry's ``g b``, ``g b u w`` and ``g b u w**2`` to column ``k`` of ``sums``."""
    u, w = _u_and_w(d, r)
    gbuw = gb * u * w
    sums[0, k] += gb
    sums[1, k] += gbuw
    sums[2, k] += gbuw * w


@numba.njit(cache=True)
def _block_term(gb, d, r, beta):
    """One entry's gradient with respect to the distance ``d``, given ``g b``."""
    _, w = _u_and_w(d, r)
    return -2.0 * beta * d * w * w / (r * r) * gb


@numba.njit(cache=True)
def bump_backward(block, radius, amplitude, shape, support, g):
    """Gradients of :func:`bump_forward` with respect to ``radius``, ``amplitude`` and ``shape``
    (each of length ``m``), given ``g`` with respect to the embedding's stored entries
    (:func:`bump_embedding_backward`) and the ``support`` the forward returned."""
    radius, amplitude, shape = _contiguous_parameters(radius, amplitude, shape)
    values, distance, col_ptr, _ = support
    n, m = block.shape
    sums = np.zeros((3, m))
    if col_ptr.size == 0:  # dense: every entry, 0 outside the support
        phi, g_phi = values.reshape((n, m)), g.reshape((n, m))
        for i in range(n):
            for k in range(m):
                _add_parameter_terms(sums, k, g_phi[i, k] * phi[i, k], block[i, k], radius[k])
    else:
        for k in range(m):
            for p in range(col_ptr[k], col_ptr[k + 1]):
                _add_parameter_terms(sums, k, g[p] * values[p], distance[p], radius[k])
    return _parameter_gradients(sums[0], sums[1], sums[2], radius, amplitude, shape)


@numba.njit(cache=True)
def bump_block_backward(block, radius, amplitude, shape, support, g):
    """Gradient of :func:`bump_forward` with respect to ``block``, from the same arguments as
    :func:`bump_backward`: non-zero on the support only."""
    radius, amplitude, shape = _contiguous_parameters(radius, amplitude, shape)
    values, distance, col_ptr, row_index = support
    n, m = block.shape
    out = np.zeros((n, m))
    if col_ptr.size == 0:  # dense
        phi, g_phi = values.reshape((n, m)), g.reshape((n, m))
        for i in range(n):
            for k in range(m):
                gb = g_phi[i, k] * phi[i, k]
                out[i, k] = _block_term(gb, block[i, k], radius[k], shape[k])
        return out
    for k in range(m):
        for p in range(col_ptr[k], col_ptr[k + 1]):
            gb = g[p] * values[p]
            out[row_index[p], k] = _block_term(gb, distance[p], radius[k], shape[k])
    return out
