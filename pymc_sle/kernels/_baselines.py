"""Baseline covariances the SLE kernel is compared with."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Covariance, Stationary

from pymc_sle._validation import check_positive_parameter
from pymc_sle.distances._matrix import DistanceMatrix, as_distance_matrix
from pymc_sle.kernels._inner import resolve_inner
from pymc_sle.kernels._inputs import check_single_active_dim, distance_rows, index_rows
from pymc_sle.kernels._landmark import LandmarkCovariance
from pymc_sle.kernels._spectral import Eigenpairs, matern_spectrum

__all__ = ["DistanceCovariance", "MeshMatern", "RawLandmarkEmbedding"]


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
    >>> from pymc_sle.kernels import DistanceCovariance
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
        check_single_active_dim(self.active_dims)
        self.distances = as_distance_matrix(distances)
        if self.distances.n_points != self.distances.n_columns:
            raise ValueError(
                "`distances` must be square (points to points), but has shape "
                f"{self.distances.values.shape}"
            )
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        self.inner = resolve_inner(inner)
        self._values = pt.constant(self.distances.values, name="distances")

    def _rows(self, X, name: str):
        """Integer row indices from the active column of ``X``, validated when ``X`` is known."""
        return distance_rows(self, X, name)

    def full(self, X, Xs=None):
        rows = self._rows(X, "X")
        cols = rows if Xs is None else self._rows(Xs, "Xs")
        return self.inner.full_from_distance(self._values[rows][:, cols] / self.ls, squared=False)

    def diag(self, X):
        return pt.ones(self._rows(X, "X").shape[0], dtype=self.ls.dtype)


class RawLandmarkEmbedding(LandmarkCovariance):
    r"""Landmark embedding by raw distances (D2KE style; the paper's ablation and "native" kernel).

    .. math::

        \phi(x)_j = d(x, z_j), \qquad k(x, x') = h\bigl(\lVert \phi(x) - \phi(x') \rVert_2
        / \ell\bigr).

    PSD for any distance, like :class:`pymc_sle.SLE`, but every landmark -- near or far --
    contributes, so the embedding is dense and far-field distances (the least trustworthy for
    geodesics and transport) dominate :math:`\lVert \phi(x) - \phi(x') \rVert`. The SLE's
    bump is exactly what this baseline lacks. Parameters as for :class:`pymc_sle.SLE`.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle.kernels import RawLandmarkEmbedding
    >>> x = np.array([0.0, 1.0, 3.0])
    >>> cov = RawLandmarkEmbedding(np.abs(x[:, None] - x[None, :]), ls=1.0, inner="matern12")
    >>> K = cov(np.arange(3)[:, None]).eval()
    >>> bool(np.isclose(K[0, 1], np.exp(-np.sqrt(1 + 1 + 1))))
    True
    """

    def _embed(self, to_landmarks):
        return to_landmarks


class MeshMatern(Covariance):
    r"""Riemannian (Geometric) Matern kernel on a mesh from Laplace--Beltrami eigenpairs.

    .. math::

        k(x, x') = \sum_{j=1}^{k} \tilde S_j\, f_j(x) f_j(x'), \qquad
        \tilde S_j = \frac{S(\lambda_j)}{\sum_i S(\lambda_i)}, \quad
        S(\lambda) = \Bigl(\frac{2\nu}{\ell^2} + \lambda\Bigr)^{-\nu - 1},

    the truncated Karhunen--Loeve form of Borovitskiy et al. (2020), normalised to unit average
    variance over the vertices exactly as GeometricKernels' ``MaternGeometricKernel`` (with
    eigenvectors from :func:`pymc_sle.kernels.laplace_beltrami`). Multiply by
    :math:`\sigma^2` for a signal variance; the paper's runs left it at 1. Its rank is at most
    ``k``, the number of eigenpairs.

    Parameters
    ----------
    eigenpairs : Eigenpairs
        ``k`` eigenpairs of the mesh; ``X[:, 0]`` holds vertex indices (rows of the
        eigenvectors).
    ls : float or TensorVariable
        Length scale in mesh units.
    nu : float, default 2.5
        Smoothness (> 0, or ``inf`` for the heat kernel).
    """

    def __init__(
        self, eigenpairs: Eigenpairs, *, ls, nu: float = 2.5, input_dim: int = 1, active_dims=None
    ):
        super().__init__(input_dim, active_dims)
        check_single_active_dim(self.active_dims)
        if not isinstance(eigenpairs, Eigenpairs):
            raise TypeError(
                "`eigenpairs` must be a pymc_sle.kernels.Eigenpairs (from laplace_beltrami), but "
                f"got {type(eigenpairs).__name__}"
            )
        self.eigenpairs = eigenpairs
        self.nu = float(nu)
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        self.weights = matern_spectrum(pt.constant(eigenpairs.eigenvalues), ls=self.ls, nu=self.nu)
        self._vectors = pt.constant(eigenpairs.eigenvectors, name="eigenvectors")

    def _features(self, X, name):
        rows = index_rows(
            X,
            int(self.active_dims[0]),
            self.eigenpairs.eigenvectors.shape[0],
            name=name,
            axis_name="mesh vertices",
            input_dim=self.input_dim,
        )
        return self._vectors[rows]

    def full(self, X, Xs=None):
        features = self._features(X, "X")
        other = features if Xs is None else self._features(Xs, "Xs")
        return pt.dot(features * self.weights[None, :], other.T)

    def diag(self, X):
        return pt.sum(pt.square(self._features(X, "X")) * self.weights[None, :], axis=1)
