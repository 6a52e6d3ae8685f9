"""Squared Euclidean distances between the rows of two arrays, accurate near zero."""

from __future__ import annotations

import numpy as np

__all__ = ["CANCELLATION", "squared_euclidean"]

#: Entries below this fraction of ``|a_i|^2 + |b_j|^2`` lost most of their digits to cancellation
#: in the expansion and are recomputed from differences. The numba loops of
#: ``pymc_sle.kernels._embedding_loops`` compile this value in: clear their cache (``__pycache__``)
#: after changing it.
CANCELLATION = 1e-6


def squared_euclidean(a, b=None) -> np.ndarray:
    r""":math:`\lVert a_i - b_j \rVert^2` for the rows of ``a`` (n, d) and ``b`` (n', d).

    The bulk comes from the expansion :math:`\lVert a_i \rVert^2 + \lVert b_j \rVert^2 - 2 a_i
    \cdot b_j` (one matrix product, after subtracting the column means of ``a`` from both); the
    entries where that expansion cancels -- nearly equal rows -- are recomputed as
    :math:`\sum_k (a_{ik} - b_{jk})^2`, so every entry is non-negative and accurate to rounding,
    and equal rows give exactly 0. ``b=None`` means ``b = a``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle._linalg._euclidean import squared_euclidean
    >>> squared_euclidean(np.array([[0.0, 0.0], [3.0, 4.0]])).tolist()
    [[0.0, 25.0], [25.0, 0.0]]
    >>> near = squared_euclidean(np.array([[1e4, 1.0]]), np.array([[1e4, 1.0 + 1e-6]]))
    >>> bool(abs(near[0, 0] - 1e-12) < 1e-20)  # the expansion alone would give 0 or ~1e-8
    True
    """
    a = np.asarray(a, dtype=float)
    b = a if b is None else np.asarray(b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"`a` and `b` must be 2-D with the same number of columns, but have shapes {a.shape} "
            f"and {b.shape}"
        )
    shift = a.mean(axis=0) if a.shape[0] else 0.0
    a, b = a - shift, b - shift
    norms_a = np.einsum("ij,ij->i", a, a)
    norms_b = np.einsum("ij,ij->i", b, b)
    scale = norms_a[:, None] + norms_b[None, :]
    squared = scale - 2.0 * (a @ b.T)
    rows, cols = np.nonzero(~(squared > CANCELLATION * scale))  # also NaN: overflow
    if rows.size:
        squared[rows, cols] = np.einsum("ij,ij->i", a[rows] - b[cols], a[rows] - b[cols])
    return squared
