"""Exact Wasserstein-2 distances between images, histograms and weighted point clouds."""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass

import numpy as np

from pymc_sle._linalg._euclidean import squared_euclidean
from pymc_sle.distances._matrix import DistanceMatrix
from pymc_sle.distances._pairwise import pairwise
from pymc_sle.distances._projected import bound_directions, max_sliced_lower_bound
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix

__all__ = ["as_measures", "grid_coordinates", "wasserstein"]


@dataclass(frozen=True)
class _Measures:
    """Probability measures in one of two layouts.

    ``grid_shape`` set: ``items[i] = (support, weights)`` with flat indices into a shared pixel
    grid of that shape and ``spacing``. ``grid_shape`` None: ``items[i] = (positions, weights)``.
    Weights are positive (zero-weight points dropped) and sum to 1.
    """

    items: list[tuple[np.ndarray, np.ndarray]]
    grid_shape: tuple[int, ...] | None
    spacing: float


def _normalised(name: str, index: int, weights: np.ndarray) -> np.ndarray:
    if not np.isfinite(weights).all():
        raise ValueError(f"`{name}[{index}]` has non-finite weights")
    if (weights < 0).any():
        raise ValueError(
            f"`{name}[{index}]` has negative weights (smallest {weights.min():.6g}); "
            "weights must be non-negative"
        )
    total = weights.sum()
    if not total > 0:
        raise ValueError(f"`{name}[{index}]` has zero total mass")
    return weights / total


def as_measures(measures, spacing: float = 1.0, *, name: str = "measures") -> _Measures:
    """Validate and normalise images or weighted point clouds (see :func:`wasserstein`); errors
    name the argument ``name``."""
    if not np.isfinite(spacing) or spacing <= 0:
        raise ValueError(f"`spacing` must be > 0, but got {spacing!r}")
    if isinstance(measures, np.ndarray) or (len(measures) and not isinstance(measures[0], tuple)):
        shapes = {np.shape(m) for m in measures}
        if len(shapes) != 1:
            raise ValueError(
                f"`{name}` images must share one grid, but have shapes {sorted(shapes)}"
            )
        images = np.asarray(measures, dtype=float)
        if images.ndim < 2 or images.shape[0] == 0:
            raise ValueError(
                f"`{name}` must be an array of shape (n, *grid) with n >= 1, but has shape "
                f"{images.shape}"
            )
        items = []
        for index, image in enumerate(images.reshape(images.shape[0], -1)):
            weights = _normalised(name, index, image)
            support = np.flatnonzero(weights)
            items.append((support, weights[support]))
        return _Measures(items, images.shape[1:], float(spacing))
    items, dims = [], set()
    for index, measure in enumerate(measures):
        if len(measure) != 2:
            raise ValueError(f"`{name}[{index}]` must be a (positions, weights) pair")
        positions = np.asarray(measure[0], dtype=float)
        if positions.ndim == 1:
            positions = positions[:, None]
        weights = np.asarray(measure[1], dtype=float)
        if positions.ndim != 2 or weights.shape != positions.shape[:1]:
            raise ValueError(
                f"`{name}[{index}]` must pair positions (k, d) with weights (k,), but has "
                f"shapes {positions.shape} and {weights.shape}"
            )
        if not np.isfinite(positions).all():
            raise ValueError(f"`{name}[{index}]` has non-finite positions")
        weights = _normalised(name, index, weights)
        keep = weights > 0
        items.append((positions[keep] * spacing, weights[keep]))
        dims.add(positions.shape[1])
    if len(dims) > 1:
        raise ValueError(f"`{name}` point clouds must share a dimension, but have {sorted(dims)}")
    if not items:
        raise ValueError(f"`{name}` is empty")
    return _Measures(items, None, float(spacing))


def measures_and_targets(measures, to, spacing: float) -> tuple[_Measures, _Measures | None]:
    """:func:`as_measures` of ``measures`` and of ``to`` (``None`` stays ``None``), which must
    share their grid (images) or dimension (point clouds)."""
    prepared = as_measures(measures, spacing)
    if to is None:
        return prepared, None
    targets = as_measures(to, spacing, name="to")
    if targets.grid_shape != prepared.grid_shape:
        raise ValueError(
            f"`to` must be on the grid of `measures` {prepared.grid_shape}, but is on "
            f"{targets.grid_shape}"
        )
    if prepared.grid_shape is None:
        dimension, other = prepared.items[0][0].shape[1], targets.items[0][0].shape[1]
        if dimension != other:
            raise ValueError(
                f"`to` point clouds must have the dimension of `measures` ({dimension}), but "
                f"have {other}"
            )
    return prepared, targets


def grid_coordinates(grid_shape: tuple[int, ...], spacing: float) -> np.ndarray:
    """Pixel-centre coordinates of shape (prod(grid_shape), len(grid_shape)), in row-major order."""
    return np.indices(grid_shape, dtype=float).reshape(len(grid_shape), -1).T * spacing


@functools.lru_cache(maxsize=4)
def _grid_cost(grid_shape: tuple[int, ...], spacing: float) -> np.ndarray:
    """Squared Euclidean cost between all pixel centres; built once per worker process."""
    return squared_euclidean(grid_coordinates(grid_shape, spacing))


@dataclass(frozen=True)
class ExactW2:
    """Exact W2 (or W2 squared) between two prepared measures, by POT's network simplex."""

    grid_shape: tuple[int, ...] | None
    spacing: float
    squared: bool
    num_iter_max: int

    def cost(self, a, b) -> np.ndarray:
        if self.grid_shape is not None:
            return _grid_cost(self.grid_shape, self.spacing)[np.ix_(a[0], b[0])]
        return squared_euclidean(a[0], b[0])

    def lower_bound(self, row_items, col_items) -> np.ndarray:
        """Certified lower bounds of every pair's value: max-sliced W2 on the coordinate axes
        and random directions (`pymc_sle.distances._projected`). With a ``cutoff``,
        :func:`~pymc_sle.distances.pairwise` solves only the pairs whose bound is below it."""
        if self.grid_shape is not None:
            coordinates = grid_coordinates(self.grid_shape, self.spacing)
            same = col_items is row_items
            row_items = [(coordinates[support], weights) for support, weights in row_items]
            col_items = row_items if same else [(coordinates[s], w) for s, w in col_items]
        directions = bound_directions(row_items[0][0].shape[1])
        return max_sliced_lower_bound(row_items, col_items, directions, self.squared)

    def __call__(self, a, b) -> float:
        import ot

        cost = self.cost(a, b)
        for limit in (self.num_iter_max, 10 * self.num_iter_max):
            with warnings.catch_warnings():  # non-convergence is handled below, not warned about
                warnings.simplefilter("ignore", UserWarning)
                value, log = ot.emd2(a[1], b[1], cost, numItermax=limit, log=True)
            if log["result_code"] == 1:  # optimal
                value = max(float(value), 0.0)
                return value if self.squared else float(np.sqrt(value))
        raise RuntimeError(
            f"the exact solver did not converge within {10 * self.num_iter_max} iterations "
            f"({log['warning']}); raise `num_iter_max`"
        )


def wasserstein(
    measures,
    rows=None,
    cols=None,
    *,
    to=None,
    squared: bool = False,
    spacing: float = 1.0,
    num_iter_max: int = 10_000_000,
    n_jobs: int = -1,
    chunk_size: int | None = None,
    store: str | os.PathLike | None = None,
    client=None,
    progress: bool = True,
    cutoff: float | str | None = None,
    per_bump: int = 32,
) -> DistanceMatrix | SparseDistanceMatrix:
    r"""Exact Wasserstein-2 distances between probability measures.

    .. math::

        W_2(\mu, \nu) = \Bigl(\min_{\gamma \in \Pi(\mu, \nu)}
        \sum_{k,l} \gamma_{kl} \lVert x_k - y_l \rVert^2\Bigr)^{1/2}

    solved exactly by POT's network simplex (``ot.emd2``) with a squared Euclidean ground cost.
    Each measure is normalised to unit mass, and zero-weight points are dropped before solving.
    A solve that stops at ``num_iter_max`` is retried with ten times the limit and otherwise
    raises -- POT's default limit (1e5) silently over-estimates W2 between full-support 64 x 64
    images. Pairs run in parallel through :func:`~pymc_sle.distances.pairwise`.

    W2 between distributions is not conditionally negative definite, so kernels of it are not
    PSD in general; use it with :class:`~pymc_sle.SLE`.

    Parameters
    ----------
    measures : array_like of shape ``(n, *grid)`` or sequence of (positions, weights)
        Images or histograms on one shared pixel grid (weights per pixel, coordinates are pixel
        indices times ``spacing``), or weighted point clouds: ``positions`` of shape (k, d) and
        ``weights`` of shape (k,).
    rows, cols : array_like of int, optional
        Measure indices (``cols``: into ``to`` when given); ``None`` means all.
    to : measures, optional
        Other measures for the columns, in the layout of ``measures``: ``wasserstein(new_images,
        to=landmark_images)`` computes the distances new points need after a fit, and nothing
        else.
    squared : bool, default False
        Return :math:`W_2^2` instead of :math:`W_2`.
    spacing : float, default 1.0
        Pixel size (or a scale applied to point-cloud positions).
    num_iter_max : int, default 10_000_000
        Network-simplex iteration limit of the first attempt.
    n_jobs, chunk_size, store, client, progress
        As in :func:`~pymc_sle.distances.pairwise`.
    cutoff : float, optional
        Keep only the distances below ``cutoff`` (on the scale returned: squared with
        ``squared``) and return a :class:`~pymc_sle.SparseDistanceMatrix`. The transport
        problem is solved only for the pairs whose certified lower bound is below the cutoff:
        the largest W2 between the measures' projections on the coordinate axes and 32 random
        directions (a projection on a unit direction never increases W2), so no pair within the
        cutoff is lost. Each bound costs a sort and a merge per direction, far less than a
        network-simplex solve. ``"auto"``: the cutoff at which a typical row reaches
        ``per_bump`` columns, as in :func:`~pymc_sle.distances.pairwise` (its up to 256 rows
        against every column are exact solves).
    per_bump : int, default 32
        With ``cutoff="auto"``: the number of columns (landmarks) a row's bump should reach.

    Returns
    -------
    DistanceMatrix of shape (len(rows), len(cols)), or SparseDistanceMatrix with ``cutoff``

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle.distances import wasserstein
    >>> clouds = [(np.array([[0.0, 0.0], [1.0, 0.0]]), np.ones(2)),
    ...           (np.array([[0.0, 3.0], [1.0, 3.0]]), np.ones(2))]
    >>> wasserstein(clouds, n_jobs=1, progress=False).values
    array([[0., 3.],
           [3., 0.]])
    """
    if not isinstance(num_iter_max, int | np.integer) or num_iter_max < 1:
        raise ValueError(f"`num_iter_max` must be a positive integer, but got {num_iter_max!r}")
    prepared, targets = measures_and_targets(measures, to, spacing)
    metric = ExactW2(prepared.grid_shape, prepared.spacing, bool(squared), int(num_iter_max))
    return pairwise(
        prepared.items,
        metric,
        rows,
        cols,
        to=None if targets is None else targets.items,
        n_jobs=n_jobs,
        chunk_size=chunk_size,
        store=store,
        client=client,
        progress=progress,
        metric_id=repr(metric),
        cutoff=cutoff,
        per_bump=per_bump,
    )
