"""Baseline covariances the SLE kernel is compared with."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Covariance, Stationary

from pymc_sle._validation import check_positive_parameter
from pymc_sle.cov import _resolve_inner
from pymc_sle.distance_matrix import DistanceMatrix, as_distance_matrix

__all__ = ["DistanceCovariance"]


class DistanceCovariance(Covariance):
    r"""A stationary kernel applied directly to a precomputed distance: :math:`h(d(x, x')/\ell)`.

    Positive semi-definite for every :math:`\ell` only when :math:`d` is conditionally negative
    definite (Schoenberg) -- true for Euclidean distances and sliced Wasserstein-2, false in
    general for geodesic, exact Wasserstein-2 or edit distances, whose Gram matrices can be
    indefinite. It is the baseline the SLE kernel replaces.

    Parameters
    ----------
    distances : DistanceMatrix or array_like of shape (n_points, n_points)
        Square distances; ``X[:, 0]`` holds row indices into it, as for :class:`pymc_sle.SLE`.
    ls : float or TensorVariable
        Length scale.
    inner : str or type, default "matern32"
        As for :class:`pymc_sle.SLE`.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle.baselines import DistanceCovariance
    >>> x = np.linspace(0.0, 1.0, 5)
    >>> cov = DistanceCovariance(np.abs(x[:, None] - x[None, :]), ls=0.5, inner="matern12")
    >>> K = cov(np.arange(5)[:, None]).eval()
    >>> bool(np.allclose(K[0, 1], np.exp(-0.25 / 0.5)))
    True
    """

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray,
        *,
        ls,
        inner: str | type[Stationary] = "matern32",
        input_dim: int = 1,
        active_dims=None,
    ):
        super().__init__(input_dim, active_dims)
        self.distances = as_distance_matrix(distances)
        if self.distances.n_points != self.distances.n_columns:
            raise ValueError(
                "`distances` must be square (points to points), but has shape "
                f"{self.distances.values.shape}"
            )
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        self.inner = _resolve_inner(inner, None)
        self._values = pt.constant(self.distances.values, name="distances")

    def _rows(self, X):
        return pt.cast(pt.as_tensor_variable(X)[:, int(self.active_dims[0])], "int64")

    def full(self, X, Xs=None):
        rows = self._rows(X)
        cols = rows if Xs is None else self._rows(Xs)
        return self.inner.full_from_distance(self._values[rows][:, cols] / self.ls, squared=False)

    def diag(self, X):
        return pt.ones(pt.as_tensor_variable(X).shape[0], dtype=self.ls.dtype)
