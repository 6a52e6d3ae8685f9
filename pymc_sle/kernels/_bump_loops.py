r"""The numba loops of the bump embedding on its support (``pymc_sle.kernels._bump_ops``).

The bump (paper Eq. 5; ``pymc_sle.bump``) is ``phi_ik = a_k exp(beta_k - beta_k w_ik)`` with
``w = 1 / (1 - u)``, ``u = (d_ik / r_k)**2``, where ``u < 1``, else 0. With ``b = phi_ik``, its
partial derivatives on the support are::

    db/da_k = b / a_k,  db/dbeta_k = -u w b,  db/dr_k = 2 beta_k u w**2 b / r_k,
    db/dd_ik = -2 beta_k d_ik w**2 b / r_k**2,

and outside it all four are 0: the bump vanishes with all its derivatives at ``u = 1``. Where
``b`` underflows to 0 inside, ``w**2 <= 2**106`` is finite, so every product is 0, never NaN.

The forward takes one of two branches by the support's size, and its gradients the same one:

- sparse (at most ``max_fill`` of the embedding non-zero): the support in CSC storage, the bump
  evaluated there only, the sparse kernels; the support is ``(values, distance, col_ptr,
  row_index)``;
- dense: the bump element-wise on the whole block, the dense kernels; the support is the
  embedding itself, ``(phi.ravel(), [], [], [])`` -- an empty ``col_ptr`` (a CSC one has m + 1
  entries) tells the gradients which branch was taken.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_sle.kernels._embedding_loops import (
    dense_backward,
    dense_forward,
    sparse_backward,
    sparse_forward,
)

__all__ = ["bump_backward", "bump_block_backward", "bump_embedding_backward", "bump_forward"]


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
