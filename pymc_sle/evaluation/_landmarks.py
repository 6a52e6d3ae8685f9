"""Landmark surgery: the landmark kernels of a covariance, and what a training point's own
landmark is (dropped by exact LOO) or a new point's would be (added by the own-landmark
predictive).

A training point is its own landmark when its distance row is a landmark column at distance 0.
Exact LOO with ``own_landmark="drop"`` removes that landmark from the model fitted without the
point (:func:`own_columns`); :func:`~pymc_sle.own_landmark_predictive`
predicts a new point as the training points were fitted, the point added to the landmarks
(:func:`new_landmark_distances`, after :func:`check_extendable`).

Both are one operation on a covariance graph that the kernels build as usual: a rebuild
(``pytensor.graph.graph_replace``) on other landmark distances (:func:`on_landmark_blocks`,
a dropped landmark's column set to ``inf``) or on other squared embedding distances
(:func:`on_squared_distances`, a new landmark's term added). The kernels are never changed.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Covariance
from pytensor.graph import graph_replace
from pytensor.graph.traversal import ancestors

from pymc_sle.kernels._landmark import LandmarkCovariance


def landmark_kernels(cov) -> list[LandmarkCovariance]:
    """Every landmark kernel inside the covariance ``cov`` (sums, products, scalings, ...)."""
    found, stack, seen = [], [cov], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, LandmarkCovariance):
            found.append(item)
        elif isinstance(item, Covariance):
            for value in vars(item).values():
                values = value if isinstance(value, list | tuple) else [value]
                stack.extend(v for v in values if isinstance(v, Covariance))
    return found


def own_columns(kernel: LandmarkCovariance, block: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each training row, the position of its own landmark among ``kernel``'s landmark
    columns, or -1.

    - A square distance matrix (every point against every point, as the README builds it): the
      column with the row's own number, if it is a landmark at distance 0 from the row. A
      duplicate of the point's input that is another landmark stays, as it would in the model
      fitted without the point.
    - Otherwise (a ``(n_points, n_landmarks)`` block): a landmark at distance 0 from the row,
      the first if several. For a metric, coincident inputs have equal distance columns, so
      dropping any one of them leaves the same kernel; a point that merely coincides with a
      landmark that is not a training point is taken for it.
    """
    zero = block[rows] == 0.0
    if kernel.distances.n_points != kernel.distances.n_columns:
        return np.where(zero.any(axis=1), zero.argmax(axis=1), -1)
    position = {int(column): p for p, column in enumerate(kernel.landmarks)}
    own = np.array([position.get(int(row), -1) for row in rows], dtype=np.int64)
    found = own >= 0
    found[found] = zero[np.flatnonzero(found), own[found]]
    return np.where(found, own, -1)


def new_landmark_distances(kernel, X: np.ndarray, X_new: np.ndarray):
    """``(to_new, own)``: the distances from the training points ``X`` to each new point's
    landmark, ``(n, n_new)``, and from each new point to its own, ``(n_new,)`` (0); ``inf``
    (a bump of 0) where the point gets no landmark in ``kernel``: it is one already, or the
    training points are not the kernel's landmarks. A point with a column in the distance matrix
    reads it; a point past the columns (a rectangular block, whose columns are the first rows)
    reads its row, which needs a symmetric distance."""
    dim = int(kernel.active_dims[0])
    rows, points = X[:, dim].astype(np.int64), X_new[:, dim].astype(np.int64)
    to_new = np.full((rows.size, points.size), np.inf)
    own = np.full(points.size, np.inf)
    if not training_points_are_landmarks(kernel, X):
        return to_new, own
    values = kernel.distances.values
    added = ~np.isin(points, kernel.landmarks)
    own[added] = 0.0
    in_columns = added & (points < kernel.distances.n_columns)
    to_new[:, in_columns] = values[np.ix_(rows, points[in_columns])]
    past = added & ~in_columns
    if past.any():
        block = np.asarray(values[np.ix_(rows, rows)], dtype=float)
        asymmetry = float(np.max(np.abs(block - block.T)))
        if asymmetry > 1e-5 * max(float(block.max()), np.finfo(float).tiny):
            raise ValueError(
                "`own_landmark_predictive` reads the distances to a new point past the columns "
                "of a rectangular distance matrix from its row, which needs a symmetric "
                f"distance, but the training points' distances of {kernel!r} differ from their "
                f"transpose by up to {asymmetry:.3g}; pass a square matrix over every point"
            )
        to_new[:, past] = values[np.ix_(points[past], rows)].T
    return to_new, own


def training_points_are_landmarks(kernel, X: np.ndarray) -> bool:
    """Whether every training point of ``X`` is one of ``kernel``'s landmarks (``True``) or none
    is (``False``); some but not all is an error: a new point cannot then enter the model as the
    training points did."""
    rows = X[:, int(kernel.active_dims[0])].astype(np.int64)
    among = np.isin(rows, kernel.landmarks)
    if among.any() and not among.all():
        raise ValueError(
            "`own_landmark_predictive` predicts a new point as the training points were fitted: "
            f"each its own landmark, or none; but {int(among.sum())} of the {among.size} "
            f"training points are landmarks of {kernel!r}. Predict with gp.conditional"
        )
    return bool(among.all())


def check_extendable(kernel) -> None:
    """A new point can join ``kernel``'s landmarks: index mode (the point's distances are in the
    distance matrix) and one bump for every landmark (the new landmark gets the same)."""
    if kernel.feature_mode:
        raise ValueError(
            "`own_landmark_predictive` needs every landmark kernel in index mode (a new point's "
            f"distances to the training points read from its distance matrix), but {kernel!r} "
            "takes distances as features"
        )
    per_landmark = [name for name in ("radius", "amplitude", "shape")
                    if getattr(kernel, name, pt.constant(0.0)).ndim > 0]  # fmt: skip
    if per_landmark:
        raise ValueError(
            "`own_landmark_predictive` gives a new landmark the kernel's bump, so the bump "
            f"parameters must be scalars, but {per_landmark} of {kernel!r} vary per landmark"
        )


def on_squared_distances(outputs, kernels, squared) -> list:
    """``outputs`` rebuilt with each landmark kernel's squared embedding distances replaced by
    ``squared`` (one tensor per kernel, of the shape they replace): the covariance of points
    whose embedding distances were computed elsewhere, e.g. with a landmark added. Finds the
    tensors each kernel's ``full`` tagged (:meth:`~pymc_sle.kernels.LandmarkCovariance.full`)."""
    replacement = {id(kernel): value for kernel, value in zip(kernels, squared, strict=True)}
    found = {}
    for variable in ancestors(outputs):
        kernel = getattr(variable.tag, "squared_embedding_of", None)
        if kernel is not None and id(kernel) in replacement:
            found[variable] = replacement[id(kernel)]
    missing = {id(k) for k in kernels} - {id(v.tag.squared_embedding_of) for v in found}
    if missing:
        raise RuntimeError("a landmark kernel's squared embedding distances are not in the graph")
    return graph_replace(outputs, found, strict=False)


def on_landmark_blocks(outputs, kernels, blocks) -> list:
    """``outputs`` rebuilt on other landmark distances: each index-mode kernel's
    :attr:`~pymc_sle.kernels.LandmarkCovariance.landmark_block` replaced by ``blocks`` (one
    per kernel, e.g. with a landmark's column set to ``inf`` to drop it)."""
    replacement = {k.landmark_block: b for k, b in zip(kernels, blocks, strict=True)}
    return graph_replace(outputs, replacement, strict=False)
