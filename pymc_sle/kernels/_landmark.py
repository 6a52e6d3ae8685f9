"""The landmark-embedding kernel family: a stationary kernel of embedding distances."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Covariance, Stationary

from pymc_sle._validation import (
    as_index_array,
    can_change,
    check_positive_parameter,
    constant_value,
)
from pymc_sle.distances._matrix import DistanceMatrix, as_distance_matrix
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.kernels._densify import DenseDistances
from pymc_sle.kernels._densify import dense_limit as dense_limit_bytes
from pymc_sle.kernels._embedding_ops import cross_squared_distances, dense_squared_distances
from pymc_sle.kernels._inner import kernel_of_squared_distance, resolve_inner
from pymc_sle.kernels._inputs import check_single_active_dim, distance_rows, feature_block

__all__ = ["LandmarkCovariance"]


class LandmarkCovariance(Covariance):
    r"""Base of the landmark-embedding kernels: :math:`k(x, x') = h(\lVert \phi(x) - \phi(x')
    \rVert / \ell)` with :math:`\phi(x) \in \mathbb{R}^m` a function of the distances from
    :math:`x` to the landmarks.

    The distances reach the kernel in one of two ways:

    - **index mode** (``distances`` given): ``X[:, active_dims[0]]`` holds row numbers into
      ``distances``, whose ``landmarks`` columns are gathered;
    - **feature mode** (``distances=None``): the active columns of ``X`` *are* each point's
      distances to the ``m = len(active_dims)`` landmarks, so new points need only their
      distances to the landmarks, computed whenever they arrive.

    Index mode gathers the rows and continues as feature mode: one implementation of the
    embedding and of its distances. Subclasses define the embedding (``_embed``); this class owns
    the inputs, their validation, the embedding distance (non-negative and exactly 0 between equal
    distance rows) and the inner kernel. See :class:`~pymc_sle.SLE` for the parameters they share.
    """

    #: Whether the embedding vanishes beyond a radius, so that a distance a
    #: :class:`~pymc_sle.SparseDistanceMatrix` does not store can be read as "far" (the SLE's).
    _reads_sparse_distances = False

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray | None = None,
        landmarks=None,
        *,
        ls,
        inner: str | type[Stationary] = "matern32",
        inner_kwargs: dict | None = None,
        input_dim: int = 1,
        active_dims=None,
        dense_limit: float | None = None,
    ):
        super().__init__(input_dim, active_dims)
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        #: The largest dense block of sparse distances a graph may form, in bytes.
        self.dense_limit = dense_limit_bytes(dense_limit)
        self.inner = resolve_inner(inner, inner_kwargs)
        if distances is None:
            if landmarks is not None:
                raise ValueError(
                    "`landmarks` selects columns of `distances`; without `distances` the "
                    "landmarks are the active columns of X (`input_dim`, `active_dims`), so "
                    f"`landmarks` must be None, but got {landmarks!r}"
                )
            self.distances = self.landmarks = None
            self._n_landmarks = len(self.active_dims)
            return
        check_single_active_dim(self.active_dims)
        if isinstance(distances, SparseDistanceMatrix):
            self._refuse_sparse("distances")
            self.distances = distances
        else:
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
        self._n_landmarks = int(landmarks.size)

    @cached_property
    def _landmark_values(self) -> np.ndarray:
        """Index mode on dense distances: ``(n_points, m)``, all the kernel reads; with every
        column a landmark, no copy is made."""
        values = self.distances.values
        every_column = np.array_equal(self.landmarks, np.arange(self.distances.n_columns))
        return values if every_column else np.ascontiguousarray(values[:, self.landmarks])

    @cached_property
    def _landmark_block(self) -> pt.TensorVariable:
        """Index mode: the distances the graph gathers its rows from; on sparse distances a
        :class:`~pymc_sle.kernels._densify.DenseDistances` node, formed only if the graph runs."""
        if isinstance(self.distances, SparseDistanceMatrix):
            every_column = np.array_equal(self.landmarks, np.arange(self.distances.n_columns))
            chosen = self.distances if every_column else self.distances.take(cols=self.landmarks)
            return DenseDistances(chosen, self.dense_limit)()
        return pt.constant(self._landmark_values, name="landmark_distances")

    @property
    def landmark_block(self) -> pt.TensorConstant | None:
        """Index mode: the distances from every row of ``distances`` to the landmarks, shape
        ``(n_points, m)``, as the constant the covariance graph gathers its rows from (``None`` in
        feature mode). Replacing it in a graph built on a symbolic ``X``
        (``pytensor.graph.graph_replace``) evaluates the kernel with other distances, e.g. a
        landmark set to ``inf`` to drop it (:func:`~pymc_sle.exact_loo`)."""
        return None if self.feature_mode else self._landmark_block

    @property
    def n_landmarks(self) -> int:
        """Embedding dimension ``m``."""
        return self._n_landmarks

    @property
    def feature_mode(self) -> bool:
        """Whether ``X`` holds distances to the landmarks (``True``) or row indices."""
        return self.distances is None

    def __repr__(self) -> str:
        points = "features" if self.feature_mode else f"n_points={self.distances.n_points}"
        return (
            f"{type(self).__name__}({points}, n_landmarks={self.n_landmarks}, "
            f"inner={type(self.inner).__name__})"
        )

    def _to_landmarks(self, X, name: str) -> pt.TensorVariable:
        """Distances from the points of ``X`` to the landmarks, ``(n, m)``, validated (at build
        time when ``X`` is known, at run time when it can change)."""
        if isinstance(X, SparseDistanceMatrix) and self.feature_mode:
            return DenseDistances(self.sparse_to_landmarks(X, name), self.dense_limit)()
        if self.feature_mode:
            return feature_block(X, self.active_dims, name=name, input_dim=self.input_dim)
        return self._landmark_block[distance_rows(self, X, name)]

    def _refuse_sparse(self, name: str) -> None:
        if not self._reads_sparse_distances:
            raise TypeError(
                f"`{name}` must hold dense distances for {type(self).__name__}, whose embedding "
                "reads every distance, but got a SparseDistanceMatrix (it does not store the "
                "large ones). Only pymc_sle.SLE, whose bump vanishes beyond the radius, reads "
                "sparse distances."
            )

    def sparse_to_landmarks(self, X, name: str = "X") -> SparseDistanceMatrix:
        """The distances from the points of a fixed ``X`` to the landmarks, ``(n, m)``, stored
        only where the embedding can be non-zero: what the sparse likelihood and prediction
        read. Embeddings that read every distance have none (``TypeError``)."""
        self._refuse_sparse(name)
        raise NotImplementedError

    def _fixed_to_landmarks(self, X) -> np.ndarray | None:
        """The same as numbers, when ``X`` is fixed (numbers or a constant; call after
        ``_to_landmarks`` has validated it). ``pm.Data`` does not count: ``pm.set_data`` could
        change it after a sparsity pattern was built from it. Sparse distances neither: their
        dense block is formed only when a graph runs."""
        if can_change(X) or self._reads_sparse(X):
            return None
        concrete = constant_value(X)
        if self.feature_mode:
            return np.asarray(concrete[:, self.active_dims], dtype=float)
        return self._landmark_values[concrete[:, int(self.active_dims[0])].astype(np.int64)]

    def _reads_sparse(self, X) -> bool:
        """Whether ``X`` reaches its distances through a sparse matrix."""
        return isinstance(self.distances, SparseDistanceMatrix) or isinstance(
            X, SparseDistanceMatrix
        )

    def _embed(self, to_landmarks):
        """The embedding ``(n, m)`` of points with these distances to the landmarks."""
        raise NotImplementedError

    def _training_squared_distances(self, X, to_landmarks):
        return dense_squared_distances(self._embed(to_landmarks))

    def _kernel_of_squared_distance(self, squared):
        return kernel_of_squared_distance(self.inner, squared, self.ls)

    def embed(self, X) -> pt.TensorVariable:
        r"""The landmark embedding :math:`\phi(X)` as a tensor of shape ``(n, m)``."""
        return self._embed(self._to_landmarks(X, "X"))

    def square_embedding_distance(self, X, Xs=None) -> pt.TensorVariable:
        r""":math:`\lVert \phi(x_i) - \phi(x'_j) \rVert^2` as a tensor of shape ``(n, n')``.

        Non-negative, accurate where embeddings nearly coincide, and exactly 0 between equal
        distance rows (duplicates, the diagonal): see ``pymc_sle.kernels._embedding_loops``.
        """
        to_landmarks = self._to_landmarks(X, "X")
        if Xs is None:
            return self._training_squared_distances(X, to_landmarks)
        return cross_squared_distances(
            self._embed(to_landmarks), self._embed(self._to_landmarks(Xs, "Xs"))
        )

    def full(self, X, Xs=None) -> pt.TensorVariable:
        """The kernel of :meth:`square_embedding_distance`. That tensor is tagged with this
        kernel (``tag.squared_embedding_of``), so that a graph built on it can be rebuilt on
        other squared distances (``pymc_sle.evaluation._landmarks.on_squared_distances``)."""
        squared = self.square_embedding_distance(X, Xs)
        squared.tag.squared_embedding_of = self
        return self._kernel_of_squared_distance(squared)

    def diag(self, X) -> pt.TensorVariable:
        n = self._to_landmarks(X, "X").shape[0]
        return self._kernel_of_squared_distance(pt.zeros((n,), dtype=self.ls.dtype))
