r"""Exact 1-D Wasserstein-2 between discrete measures, and the lower bound of W2 it gives.

On the line, :math:`W_2^2(\mu, \nu) = \int_0^1 (Q_\mu(t) - Q_\nu(t))^2\,dt` with the quantile
functions :math:`Q`, which are piecewise constant for discrete measures: a merge walk over both
cumulative weights is exact (:func:`w2_squared_1d`). Sliced W2 averages it over projections.

A projection :math:`x \mapsto \theta^\top x` with :math:`\lVert\theta\rVert = 1` is 1-Lipschitz,
so it maps every coupling of :math:`\mu, \nu` to one of their projections at no greater cost:
:math:`W_2(\theta_\#\mu, \theta_\#\nu) \le W_2(\mu, \nu)` for every direction, and the maximum
over any set of directions (max-sliced W2 on that set) is a **certified lower bound** of W2.
:func:`max_sliced_lower_bound` evaluates it on the coordinate axes plus random directions;
:func:`~pymc_sle.distances.wasserstein` with a ``cutoff`` solves the exact transport problem
only for the pairs whose bound is below it.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["bound_directions", "max_sliced_lower_bound", "w2_squared_1d"]

#: Random directions added to the coordinate axes for the lower bound.
N_BOUND_DIRECTIONS = 32
#: The bound is shrunk by this relative margin, so that rounding cannot make it pass W2.
_ROUNDING_MARGIN = 1e-9


@numba.njit(cache=True)
def w2_squared_1d(values_a, levels_a, values_b, levels_b):
    """Exact 1-D W2 squared of two discrete measures, by a merge walk.

    ``values_*`` are each measure's sorted support, ``levels_*`` its cumulative weights
    (non-decreasing, last entry 1). On each piece of [0, 1] between consecutive merged levels
    both quantile functions are constant.
    """
    i = 0
    j = 0
    t = 0.0
    total = 0.0
    while i < values_a.size and j < values_b.size:
        a = levels_a[i]
        b = levels_b[j]
        upper = a if a < b else b
        if upper > t:
            gap = values_a[i] - values_b[j]
            total += gap * gap * (upper - t)
            t = upper
        if a <= upper:
            i += 1
        if b <= upper:
            j += 1
    return total


def bound_directions(dimension: int, seed: int = 0) -> np.ndarray:
    """The coordinate axes and ``N_BOUND_DIRECTIONS`` random unit directions, as columns."""
    random = np.random.default_rng(seed).standard_normal((dimension, N_BOUND_DIRECTIONS))
    random /= np.linalg.norm(random, axis=0, keepdims=True)
    return np.hstack([np.eye(dimension), random])


def _sorted_projections(items, direction):
    """Every measure projected on ``direction``: sorted values and cumulative weights, ragged
    (concatenated, with offsets)."""
    sizes = np.array([weights.size for _, weights in items])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    values = np.empty(offsets[-1])
    levels = np.empty(offsets[-1])
    for k, (positions, weights) in enumerate(items):
        projected = positions @ direction
        order = np.argsort(projected, kind="stable")
        cumulative = np.minimum(np.cumsum(weights[order]), 1.0)
        cumulative[-1] = 1.0  # exact unit mass despite round-off in the cumulative sum
        values[offsets[k] : offsets[k + 1]] = projected[order]
        levels[offsets[k] : offsets[k + 1]] = cumulative
    return values, levels, offsets


@numba.njit(cache=True)
def _maximise(out, row_values, row_levels, row_offsets, col_values, col_levels, col_offsets):
    for i in range(row_offsets.size - 1):
        first, last = row_offsets[i], row_offsets[i + 1]
        for j in range(col_offsets.size - 1):
            start, stop = col_offsets[j], col_offsets[j + 1]
            value = w2_squared_1d(
                row_values[first:last],
                row_levels[first:last],
                col_values[start:stop],
                col_levels[start:stop],
            )
            if value > out[i, j]:
                out[i, j] = value


def max_sliced_lower_bound(row_items, col_items, directions: np.ndarray, squared: bool):
    """``(len(row_items), len(col_items))`` lower bounds of W2 (of W2 squared with ``squared``)
    between weighted point clouds ``(positions (k, d), weights (k,))``: the largest projected
    W2 over the unit ``directions`` (columns), less a relative rounding margin."""
    out = np.zeros((len(row_items), len(col_items)))
    for direction in directions.T:
        rows = _sorted_projections(row_items, direction)
        cols = rows if col_items is row_items else _sorted_projections(col_items, direction)
        _maximise(out, *rows, *cols)
    bound = out if squared else np.sqrt(out)
    return bound * (1.0 - _ROUNDING_MARGIN)
