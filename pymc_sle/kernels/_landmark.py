"""The landmark-embedding kernel family: a stationary kernel of embedding distances."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Covariance, Stationary

from pymc_sle._validation import as_index_array, check_positive_parameter
from pymc_sle.distance_matrix import DistanceMatrix, as_distance_matrix
from pymc_sle.kernels._embedding_ops import cross_squared_distances, dense_squared_distances
from pymc_sle.kernels._index import check_single_active_dim, distance_rows
from pymc_sle.kernels._inner import kernel_of_squared_distance, resolve_inner

__all__ = ["LandmarkCovariance"]


class LandmarkCovariance(Covariance):
    r"""Base of the landmark-embedding kernels: :math:`k(x, x') = h(\lVert \phi(x) - \phi(x')
    \rVert / \ell)` with :math:`\phi(x) \in \mathbb{R}^m` a function of the distances from
    :math:`x` to the landmarks.

    Subclasses define the embedding (``_embed_rows``); this class owns the distance block, index
    validation, the embedding distance (exactly 0 for equal rows, with a gradient-safe square
    root) and the inner kernel. See :class:`SLE` for the parameters they share.
    """

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray,
        landmarks=None,
        *,
        ls,
        inner: str | type[Stationary] = "matern32",
        inner_kwargs: dict | None = None,
        input_dim: int = 1,
        active_dims=None,
    ):
        super().__init__(input_dim, active_dims)
        check_single_active_dim(self.active_dims)
        self.distances = as_distance_matrix(distances)
        if landmarks is None:
            landmarks = np.arange(self.distances.n_columns)
        landmarks = as_index_array(
            "landmarks", landmarks, self.distances.n_columns, axis_name="columns of `distances`"
        )
        if landmarks.ndim != 1 or landmarks.size == 0:
            raise ValueError(
                f"`landmarks` must be a non-empty 1-D array of column indices, but has shape "
                f"{landmarks.shape}"
            )
        unique, counts = np.unique(landmarks, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"`landmarks` must be unique, but {unique[counts > 1][:5].tolist()} "
                "appear more than once"
            )
        self.landmarks = landmarks
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        self.inner = resolve_inner(inner, inner_kwargs)
        values = self.distances.values
        every_column = np.array_equal(landmarks, np.arange(self.distances.n_columns))
        # (n_points, m) is all the kernel reads; with every column a landmark, no copy is made.
        self._landmark_values = (
            values if every_column else np.ascontiguousarray(values[:, landmarks])
        )
        self._landmark_block = pt.constant(self._landmark_values, name="landmark_distances")

    @property
    def n_landmarks(self) -> int:
        """Embedding dimension ``m``."""
        return int(self.landmarks.size)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_points={self.distances.n_points}, "
            f"n_landmarks={self.n_landmarks}, inner={type(self.inner).__name__})"
        )

    def _rows(self, X, name: str):
        """Integer row indices from the active column of ``X``, validated when ``X`` is known."""
        return distance_rows(self, X, name)

    def _embed_rows(self, rows):
        raise NotImplementedError

    def _training_squared_distances(self, X, rows):
        return dense_squared_distances(self._embed_rows(rows))

    def _kernel_of_squared_distance(self, squared):
        return kernel_of_squared_distance(self.inner, squared, self.ls)

    def embed(self, X) -> pt.TensorVariable:
        r"""The landmark embedding :math:`\phi(X)` as a tensor of shape ``(n, m)``."""
        return self._embed_rows(self._rows(X, "X"))

    def square_embedding_distance(self, X, Xs=None) -> pt.TensorVariable:
        r""":math:`\lVert \phi(x_i) - \phi(x'_j) \rVert^2` as a tensor of shape ``(n, n')``.

        Entries for equal row indices are exactly 0, so duplicates and the diagonal are exact.
        """
        rows = self._rows(X, "X")
        if Xs is None:
            cols = rows
            squared = self._training_squared_distances(X, rows)
        else:
            cols = self._rows(Xs, "Xs")
            squared = cross_squared_distances(self._embed_rows(rows), self._embed_rows(cols))
        same_point = pt.eq(rows[:, None], cols[None, :])
        return pt.switch(same_point, 0.0, pt.maximum(squared, 0.0))

    def full(self, X, Xs=None) -> pt.TensorVariable:
        return self._kernel_of_squared_distance(self.square_embedding_distance(X, Xs))

    def diag(self, X) -> pt.TensorVariable:
        rows = self._rows(X, "X")
        return self._kernel_of_squared_distance(pt.zeros(rows.shape, dtype=self.ls.dtype))
