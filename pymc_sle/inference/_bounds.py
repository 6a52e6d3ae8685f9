"""Data-adaptive bounds of the SLE GP's hyperparameters, LogNormal priors between bounds, and
the training data they are read from, validated once (:class:`TrainingData`, which also gives
the dense block the grid search reads: :meth:`TrainingData.searched`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import special

from pymc_sle._validation import as_index_array
from pymc_sle.distances._matrix import DistanceMatrix, as_distance_matrix
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.kernels._embedding import embedding_distances

__all__ = [
    "SLEBounds",
    "Subsample",
    "TrainingData",
    "bounds_of_block",
    "lognormal_between",
    "radius_bounds",
    "suggest_bounds",
    "target_scale",
    "training_data",
]


class Subsample(NamedTuple):
    """The dense problem the grid search runs on at scale (:meth:`TrainingData.subsample`).

    Attributes
    ----------
    block : ndarray of shape (len(positions), len(columns))
        The chosen points' distances to the landmarks any of them reaches below the cutoff; the
        pairs not stored hold the cutoff (where every bump with a radius up to it is 0).
    y : ndarray
        The chosen points' observations.
    positions : ndarray of int
        The chosen points, as sorted positions into the training rows.
    columns : ndarray of int
        The landmark columns of ``block``, into the sparse matrix's columns.
    """

    block: np.ndarray
    y: np.ndarray
    positions: np.ndarray
    columns: np.ndarray


@dataclass(frozen=True, eq=False)
class TrainingData:
    """The training points of an SLE GP, validated once where they enter the library
    (:func:`training_data`): what the bounds, the grid and the search read.

    Attributes
    ----------
    distances : DistanceMatrix or SparseDistanceMatrix
        Every point's distances to the landmark candidates, ``(n_points, n_columns)``.
    rows : ndarray of int of shape (n,)
        The training points' rows.
    y : ndarray of float of shape (n,)
        Their observations.
    landmarks : ndarray of int of shape (m,)
        The landmark columns.
    y_scale : float
        The standard deviation of ``y`` (:func:`target_scale`).
    """

    distances: DistanceMatrix | SparseDistanceMatrix
    rows: np.ndarray
    y: np.ndarray
    landmarks: np.ndarray
    y_scale: float

    @property
    def block(self) -> np.ndarray:
        """The training points' distances to the landmarks, ``(n, m)`` (dense distances only)."""
        return self.distances.values[np.ix_(self.rows, self.landmarks)]

    def searched(self, search_points: int) -> tuple[np.ndarray, np.ndarray, SLEBounds]:
        """What the grid search reads: a dense training block, its observations and their
        bounds (:func:`bounds_of_block`) -- every training point on dense distances, a
        :meth:`subsample` of ``search_points`` on a :class:`SparseDistanceMatrix`."""
        if isinstance(self.distances, SparseDistanceMatrix):
            block, y, *_ = self.subsample(search_points)
        else:
            block, y = self.block, self.y
        return block, y, bounds_of_block(block, target_scale(y))

    def subsample(self, size: int, seed: int = 0) -> Subsample:
        """The :class:`Subsample` of ``size`` random training points (all of them when
        ``size >= n``; sparse distances only). Every landmark is kept, so the kernel between
        the chosen points is exactly the full model's.

        Raises
        ------
        ValueError
            If ``size`` is not an integer of at least 10.
        """
        if not isinstance(size, int | np.integer) or isinstance(size, bool) or size < 10:
            raise ValueError(f"`search_points` must be an integer >= 10, but got {size!r}")
        distances, rows = self.distances, self.rows
        positions = np.arange(rows.size)
        if size < rows.size:
            positions = np.sort(np.random.default_rng(seed).choice(rows.size, size, replace=False))
        block = distances.take(rows[positions], self.landmarks)
        reached = np.unique(block.indices)
        dense = block.take(None, reached).to_dense(fill=distances.cutoff)
        return Subsample(dense, self.y[positions], positions, self.landmarks[reached])


def training_data(distances, rows, y, landmarks=None, *, sparse: bool = False) -> TrainingData:
    """Validate an SLE GP's training data: ``distances`` (a :class:`DistanceMatrix` or a 2-D
    array; a :class:`SparseDistanceMatrix` where ``sparse``), ``rows`` and ``landmarks`` (indices
    of its rows and columns; ``None``: every column) and ``y`` (one finite, not constant,
    observation per row).

    Raises
    ------
    ValueError, TypeError
        Naming the argument that is not as described.
    """
    if not (sparse and isinstance(distances, SparseDistanceMatrix)):
        distances = as_distance_matrix(distances)
    rows = as_index_array("rows", np.ravel(rows), distances.n_points, axis_name="rows")
    if landmarks is None:
        landmarks = np.arange(distances.n_columns)
    landmarks = as_index_array("landmarks", landmarks, distances.n_columns, axis_name="columns")
    if np.shape(y) != rows.shape:
        raise ValueError(f"`y` must have shape {rows.shape} to match `rows`, but has {np.shape(y)}")
    y = np.asarray(y, dtype=float)
    return TrainingData(distances, rows, y, landmarks, target_scale(y))


@dataclass(frozen=True)
class SLEBounds:
    """Plausible ranges ``(low, high)`` for the SLE GP's hyperparameters.

    Attributes
    ----------
    radius : tuple of float
        Bump radius, in distance units.
    ls : tuple of float
        Inner-kernel length scale, in embedding-distance units (amplitude 1).
    signal : tuple of float
        Signal standard deviation, in units of ``y``.
    noise : tuple of float
        Noise standard deviation, in units of ``y``.
    """

    radius: tuple[float, float]
    ls: tuple[float, float]
    signal: tuple[float, float]
    noise: tuple[float, float]


def target_scale(y) -> float:
    """The standard deviation of ``y``: the scale of the signal and noise priors.

    Raises
    ------
    ValueError
        If ``y`` is not finite or is constant.
    """
    scale = float(np.std(np.asarray(y, dtype=float)))
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(
            f"`y` must be finite and not constant, but its standard deviation is {scale}"
        )
    return scale


def radius_bounds(distances, rows=None, cols=None, *, lower: str = "min") -> tuple[float, float]:
    """Radius bounds from a block of distances: ``(low, largest non-zero distance)``.

    Parameters
    ----------
    distances : DistanceMatrix or array_like of shape (n_points, n_columns)
    rows, cols : array_like of int, optional
        The training rows and the landmark columns (``None``: all). For a square all-points matrix
        with the training points as landmarks, pass the training indices as both.
    lower : {"min", "nearest"}, default "min"
        ``"min"`` is the paper's choice, the smallest non-zero distance. It is hostage to a single
        near-duplicate pair, at whose radius every embedding is one-hot. ``"nearest"`` is the
        median over rows of the distance to the nearest other point, the radius at which about
        half the points reach a neighbour.

    Returns
    -------
    (low, high) : tuple of float

    Raises
    ------
    ValueError
        If the block has no positive distance (all its points coincide).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import radius_bounds
    >>> x = np.array([0.0, 0.1, 0.3, 1.0])
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> radius_bounds(D)
    (0.1, 1.0)
    >>> radius_bounds(D, lower="nearest")
    (0.15, 1.0)
    """
    return _radius_bounds_of_block(as_distance_matrix(distances).take(rows, cols).values, lower)


def _radius_bounds_of_block(block: np.ndarray, lower: str) -> tuple[float, float]:
    if lower not in ("min", "nearest"):
        raise ValueError(f"`lower` must be 'min' or 'nearest', but got {lower!r}")
    positive = block[block > 0]
    if positive.size == 0:
        raise ValueError(
            "`distances` has no positive entry in the selected block, so no radius can separate "
            f"its points (block shape {block.shape})"
        )
    if lower == "min":
        return float(positive.min()), float(positive.max())
    nearest = np.where(block > 0, block, np.inf).min(axis=1)
    return float(np.median(nearest[np.isfinite(nearest)])), float(positive.max())


def _embedding_distance_range(block: np.ndarray, radii: np.ndarray) -> tuple[float, float]:
    """(min over radii of the median nearest-neighbour, max over radii of the largest) embedding
    distance between the rows of ``block``."""
    low, high = np.inf, 0.0
    for radius in radii:
        distances = embedding_distances(block, radius=radius)
        high = max(high, float(distances.max()))
        np.fill_diagonal(distances, np.inf)
        nearest = distances.min(axis=1)
        nearest = nearest[(nearest > 0) & np.isfinite(nearest)]
        if nearest.size:
            low = min(low, float(np.median(nearest)))
    if not np.isfinite(low) or high <= low:
        raise ValueError(
            "the training points have identical embeddings at every radius in the bounds; "
            "check that `rows` index distinct points"
        )
    return low, high


def suggest_bounds(
    distances, rows, y, *, landmarks=None, radius_lower: str = "nearest", n_radii: int = 5
) -> SLEBounds:
    """Data-adaptive bounds for every SLE GP hyperparameter.

    - radius: :func:`radius_bounds` over training rows and landmark columns; the lower bound is
      the median nearest-neighbour distance by default (``radius_lower="min"`` for the paper's
      smallest non-zero distance);
    - ls: from the median nearest-neighbour to the largest embedding distance between training
      points, over ``n_radii`` radii spread geometrically across the radius bounds;
    - signal sd: ``[0.1, sqrt(10)] * std(y)`` (the paper's variance bounds, ``[0.01, 10] Var y``);
    - noise sd: ``[0.001, 1] * std(y)``.

    Parameters
    ----------
    distances : DistanceMatrix or array_like of shape (n_points, n_columns)
    rows : array_like of int of shape (n,)
        Rows of the training points (the model's ``X[:, 0]``).
    y : array_like of shape (n,)
        Training targets.
    landmarks : array_like of int, optional
        Landmark columns, as given to :class:`~pymc_sle.SLE` (default: all columns).
    radius_lower : {"nearest", "min"}, default "nearest"
        Lower radius bound, see :func:`radius_bounds`.
    n_radii : int, default 5
        Radii at which embedding distances are measured.
    """
    data = training_data(distances, rows, y, landmarks)
    return bounds_of_block(data.block, data.y_scale, radius_lower=radius_lower, n_radii=n_radii)


def bounds_of_block(
    block: np.ndarray, scale: float, *, radius_lower: str = "nearest", n_radii: int = 5
) -> SLEBounds:
    """:func:`suggest_bounds` of validated data: the training points' distances to the
    landmarks, ``block`` ``(n, m)``, and the standard deviation of their observations."""
    radius = _radius_bounds_of_block(block, radius_lower)
    ls = _embedding_distance_range(block, np.geomspace(*radius, n_radii))
    return SLEBounds(
        radius=radius,
        ls=ls,
        signal=(0.1 * scale, np.sqrt(10.0) * scale),
        noise=(1e-3 * scale, scale),
    )


def lognormal_between(lower: float, upper: float, mass: float = 0.95) -> dict[str, float]:
    r"""Parameters ``{"mu", "sigma"}`` of the LogNormal with ``mass`` between the bounds.

    Equal tails: the median is the geometric mean of the bounds and
    :math:`\sigma = \log(\text{upper}/\text{lower}) / (2 z)` with
    :math:`z = \Phi^{-1}((1 + \text{mass})/2)`.

    A LogNormal rather than an InverseGamma: its upper tail is light. For the radius this
    matters, because beyond the data diameter the bump is :math:`b(d) \approx 1 - \beta d^2/r^2`
    and the kernel depends on :math:`r^2 \ell` only -- a ridge that a heavy-tailed prior lets
    NUTS wander along.

    Examples
    --------
    >>> from scipy import stats
    >>> from pymc_sle import lognormal_between
    >>> p = lognormal_between(0.1, 10.0)
    >>> dist = stats.lognorm(p["sigma"], scale=np.exp(p["mu"]))
    >>> round(float(dist.cdf(10.0) - dist.cdf(0.1)), 6)
    0.95
    """
    if not (np.isfinite(lower) and np.isfinite(upper) and 0 < lower < upper):
        raise ValueError(f"bounds must satisfy 0 < lower < upper, but got ({lower}, {upper})")
    if not 0.0 < mass < 1.0:
        raise ValueError(f"`mass` must be in (0, 1), but got {mass!r}")
    z = special.ndtri((1.0 + mass) / 2.0)
    return {
        "mu": float(0.5 * (np.log(lower) + np.log(upper))),
        "sigma": float(np.log(upper / lower) / (2.0 * z)),
    }
