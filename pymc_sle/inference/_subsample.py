r"""The hyperparameter search at scale: the grid posterior given a random subset of observations.

:func:`~pymc_sle.inference.priors.sle_priors` locates the posterior's mass with a grid of
eigendecompositions of the ``n x n`` training Gram, which stops near a thousand points. On
sparse distances (:class:`~pymc_sle.SparseDistanceMatrix`) it runs the same search on a
*subproblem*: the model's posterior given the observations :math:`y_S` of ``search_points``
random training points :math:`S`, with the kernel unchanged -- every landmark is kept, so
:math:`k(x_i, x_j)` for :math:`i, j \in S` is exactly the full model's. The subproblem's
posterior is exact; what it approximates is the full posterior, which conditions on more data:
its mass lies where the full posterior's does, and it is wider.
``benchmarks/results/subsample_search.md`` measures how far apart the two are where both run;
two variants lost there (``benchmarks/results/CHANGELOG.md``).
"""

from __future__ import annotations

import numpy as np

from pymc_sle._validation import as_index_array
from pymc_sle.distance_matrix import DistanceMatrix
from pymc_sle.sparse_distance_matrix import SparseDistanceMatrix

__all__ = ["Subproblem", "subproblem"]


class Subproblem:
    """The dense subproblem the search runs on (module notes).

    Attributes
    ----------
    distances : DistanceMatrix
        The chosen points' distances to the landmarks any of them reaches below the cutoff,
        ``len(positions) x len(columns)``; the pairs not stored hold the cutoff (where every
        bump with a radius up to the cutoff is 0).
    positions : ndarray of int
        The chosen points, as sorted positions into the training ``rows``.
    columns : ndarray of int
        The landmark columns of ``distances``, into the sparse matrix's columns.
    landmarks : ndarray of int
        Every landmark column of the model (validated), of which ``columns`` are those reached.
    y : ndarray
        The chosen points' observations.
    cutoff : float
        The largest radius the subproblem (and the model) may take.
    """

    def __init__(self, distances, positions, columns, landmarks, y, cutoff):
        self.distances = distances
        self.positions, self.columns, self.landmarks, self.y = positions, columns, landmarks, y
        self.cutoff = float(cutoff)


def subproblem(distances: SparseDistanceMatrix, rows, y, landmarks, size: int, seed=0):
    """The :class:`Subproblem` of ``size`` random training points of the sparse ``distances``
    (all of them when ``size >= len(rows)``).

    Raises
    ------
    ValueError
        If ``size`` is not an integer of at least 10, or ``y`` does not match ``rows``.
    """
    if not isinstance(size, int | np.integer) or isinstance(size, bool) or size < 10:
        raise ValueError(f"`search_points` must be an integer >= 10, but got {size!r}")
    rows = as_index_array("rows", np.ravel(rows), distances.n_points, axis_name="rows")
    if landmarks is None:
        landmarks = np.arange(distances.n_columns)
    landmarks = as_index_array("landmarks", landmarks, distances.n_columns, axis_name="columns")
    y = np.asarray(y, dtype=float)
    if y.shape != rows.shape:
        raise ValueError(f"`y` must have shape {rows.shape} to match `rows`, but has {y.shape}")
    positions = np.arange(rows.size)
    if size < rows.size:
        positions = np.sort(np.random.default_rng(seed).choice(rows.size, size, replace=False))
    block = distances.take(rows[positions], landmarks)
    reached = np.unique(block.indices)
    dense = block.take(None, reached).to_dense(fill=distances.cutoff)
    return Subproblem(
        DistanceMatrix(dense, metadata={"subproblem_of": list(distances.shape)}),
        positions,
        landmarks[reached],
        landmarks,
        y[positions],
        distances.cutoff,
    )
