"""Landmark embeddings and the distances between them, in numpy.

The covariances compute these in PyTensor (``pymc_sle.kernels._embedding_ops``); these are
the same quantities for analysis, priors and benchmarks: what the kernel sees of the data.
"""

from __future__ import annotations

import numpy as np

from pymc_sle._linalg._euclidean import squared_euclidean
from pymc_sle.kernels._bump import bump

__all__ = ["embedding_distances", "raw_embedding_distances"]


def _as_block(name: str, values, n_columns: int | None = None) -> np.ndarray:
    block = np.asarray(values, dtype=float)
    if block.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (points x landmarks), but has shape {block.shape}")
    if n_columns is not None and block.shape[1] != n_columns:
        raise ValueError(
            f"`{name}` must have one column per landmark ({n_columns}), but has shape {block.shape}"
        )
    return block


def _distances_between(phi, phi_other, squared: bool) -> np.ndarray:
    out = squared_euclidean(phi, phi_other)
    return out if squared else np.sqrt(out)


def embedding_distances(
    distances, other=None, *, radius, amplitude=1.0, shape=1.0, squared: bool = False
) -> np.ndarray:
    r"""Distances :math:`\lVert \phi(x_i) - \phi(x'_j) \rVert` between SLE embeddings.

    .. math::

        \phi(x)_k = b\bigl(d(x, z_k);\, a_k, r_k, \beta_k\bigr),

    with :func:`pymc_sle.bump` :math:`b`, for the points whose distances to the landmarks
    :math:`z_1, \dots, z_m` are the rows of ``distances`` (and of ``other``). The SLE kernel is
    :math:`h(\lVert \phi(x) - \phi(x') \rVert / \ell)` of exactly these numbers. Entries between
    nearly equal embeddings are computed from differences, not by cancellation: non-negative and
    accurate, exactly 0 for equal rows.

    Parameters
    ----------
    distances : array_like of shape (n, m)
        Distances from ``n`` points to the ``m`` landmarks.
    other : array_like of shape (n', m), optional
        Distances from other points to the same landmarks (default: ``distances``).
    radius, amplitude, shape : float or array_like of shape (m,)
        Bump parameters, as for :class:`pymc_sle.SLE`.
    squared : bool, default False
        Return squared distances.

    Returns
    -------
    ndarray of shape (n, n')

    See Also
    --------
    raw_embedding_distances : the same without the bump (:math:`\phi(x)_k = d(x, z_k)`).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import embedding_distances
    >>> D = np.array([[0.0, 2.0], [2.0, 0.0], [0.5, 2.0]])
    >>> E = embedding_distances(D, radius=1.0)
    >>> bool(np.isclose(E[0, 1], np.sqrt(2.0)))  # one-hot embeddings at this radius
    True
    """
    block = _as_block("distances", distances)
    phi = bump(block, radius, amplitude, shape)
    if other is None:
        return _distances_between(phi, None, squared)
    other_phi = bump(_as_block("other", other, block.shape[1]), radius, amplitude, shape)
    return _distances_between(phi, other_phi, squared)


def raw_embedding_distances(distances, other=None, *, squared: bool = False) -> np.ndarray:
    r"""Distances :math:`\lVert \phi(x_i) - \phi(x'_j) \rVert` between raw-distance embeddings
    :math:`\phi(x)_k = d(x, z_k)` (the D2KE-style baseline
    :class:`pymc_sle.kernels.RawLandmarkEmbedding`).

    Parameters as for :func:`embedding_distances`, without the bump's.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import raw_embedding_distances
    >>> raw_embedding_distances(np.array([[0.0, 3.0], [4.0, 0.0]])).tolist()
    [[0.0, 5.0], [5.0, 0.0]]
    """
    block = _as_block("distances", distances)
    if other is None:
        return _distances_between(block, None, squared)
    return _distances_between(block, _as_block("other", other, block.shape[1]), squared)
