"""Laplace--Beltrami eigenpairs of a mesh and the Matern spectrum on them (for mesh baselines)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from scipy import linalg
from scipy.sparse import linalg as sparse_linalg

from pymc_sle._validation import check_positive_parameter

__all__ = ["Eigenpairs", "laplace_beltrami", "matern_spectrum"]


@dataclass(frozen=True)
class Eigenpairs:
    """The smallest Laplace--Beltrami eigenvalues of a mesh and its eigenvectors on the vertices.

    Attributes
    ----------
    eigenvalues : numpy.ndarray of shape (k,)
        Non-negative, ascending.
    eigenvectors : numpy.ndarray of shape (n_vertices, k)
        Columns orthogonal with squared norm ``n_vertices``, so each has mean square 1 over the
        vertices.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray

    @property
    def n_eigenpairs(self) -> int:
        return int(self.eigenvalues.size)

    def truncate(self, k: int) -> Eigenpairs:
        """The first ``k`` pairs (1 <= k <= n_eigenpairs)."""
        if not isinstance(k, int | np.integer) or not 1 <= k <= self.n_eigenpairs:
            raise ValueError(f"`k` must be an integer in [1, {self.n_eigenpairs}], but got {k!r}")
        return Eigenpairs(self.eigenvalues[:k], self.eigenvectors[:, :k])


def laplace_beltrami(vertices, faces, n_eigenpairs: int) -> Eigenpairs:
    r"""The ``n_eigenpairs`` smallest eigenpairs of the mesh's Laplace--Beltrami operator.

    Solves the generalised problem :math:`L v = \lambda M v` for the robust cotangent Laplacian
    :math:`L` and lumped mass matrix :math:`M` of ``robust_laplacian`` (Sharp and Crane, 2020),
    by shift-invert Lanczos (dense ``eigh`` when every pair is asked for). The eigenvectors are
    then orthonormalised and scaled by :math:`\sqrt{n}` -- exactly what GeometricKernels'
    ``Mesh.get_eigensystem`` does, so kernels built on them match its ``MaternGeometricKernel``.

    Parameters
    ----------
    vertices : array_like of shape (n, 3)
    faces : array_like of int of shape (f, 3)
    n_eigenpairs : int
        Number of pairs, in ``[1, n]``.

    Returns
    -------
    Eigenpairs

    Raises
    ------
    ImportError
        Without ``robust-laplacian`` (``pip install 'pymc-sle[mesh]'``).
    """
    try:
        import robust_laplacian
    except ImportError as err:
        raise ImportError(
            "laplace_beltrami needs robust-laplacian: pip install 'pymc-sle[mesh]'"
        ) from err
    vertices = np.asarray(vertices, dtype=float)
    faces = np.asarray(faces)
    n = vertices.shape[0]
    if not isinstance(n_eigenpairs, int | np.integer) or not 1 <= n_eigenpairs <= n:
        raise ValueError(
            f"`n_eigenpairs` must be an integer in [1, {n}] (the number of vertices), but got "
            f"{n_eigenpairs!r}"
        )
    laplacian, mass = robust_laplacian.mesh_laplacian(vertices, faces)
    if n_eigenpairs >= n - 1:
        values, vectors = linalg.eigh(laplacian.toarray(), mass.toarray())
        values, vectors = values[:n_eigenpairs], vectors[:, :n_eigenpairs]
    else:
        # A few more pairs than asked for, from a seeded start vector: Lanczos can return a
        # member of the next eigenvalue cluster instead of the last member of a degenerate one
        # (a sphere's l = 3 cluster of 7), and with ARPACK's random start it did so now and then.
        wanted = min(n - 2, n_eigenpairs + max(5, n_eigenpairs // 5))
        start = np.random.default_rng(0).standard_normal(n)
        values, vectors = sparse_linalg.eigsh(laplacian, wanted, mass, sigma=1e-8, v0=start)
        order = np.argsort(values)[:n_eigenpairs]
        values, vectors = values[order], vectors[:, order]
    vectors, _ = np.linalg.qr(vectors)
    return Eigenpairs(np.clip(values, 0.0, None), vectors * np.sqrt(n))


def matern_spectrum(eigenvalues, *, ls, nu: float, dimension: int = 2, normalize: bool = True):
    r"""Weights of the Matern kernel on a compact manifold, per Laplace--Beltrami eigenvalue.

    .. math::

        S(\lambda_j) = \Bigl(\frac{2\nu}{\ell^2} + \lambda_j\Bigr)^{-\nu - d/2},

    divided by :math:`\sum_j S(\lambda_j)` when ``normalize`` (unit average prior variance over
    the vertices for eigenvectors of mean square 1), as in Borovitskiy et al. (2020) and
    GeometricKernels (computed on the log scale, so large :math:`\nu` does not underflow).
    ``nu=inf`` gives the heat (RBF) kernel :math:`e^{-\ell^2 \lambda_j / 2}`.
    Works on numpy arrays and PyTensor tensors alike.

    Parameters
    ----------
    eigenvalues : array_like or TensorVariable of shape (k,)
    ls : float or TensorVariable
        Length scale :math:`\ell > 0`, in mesh units.
    nu : float
        Smoothness, > 0 or ``inf``.
    dimension : int, default 2
        Manifold dimension (2 for surfaces).
    normalize : bool, default True
    """
    if not (nu > 0):
        raise ValueError(f"`nu` must be > 0 or inf, but got {nu!r}")
    check_positive_parameter("ls", ls, None)
    xp = np if _is_numpy(ls, eigenvalues) else pt
    if np.isinf(nu):
        log_weights = -(ls**2) / 2.0 * eigenvalues
    else:
        log_weights = (-nu - dimension / 2.0) * xp.log(2.0 * nu / ls**2 + eigenvalues)
    if not normalize:
        return xp.exp(log_weights)
    # Shifted by the largest log weight: large nu would otherwise underflow to 0 / 0.
    weights = xp.exp(log_weights - log_weights.max())
    return weights / weights.sum()


def _is_numpy(*values) -> bool:
    return all(isinstance(v, int | float | np.ndarray | np.generic) for v in values)
