"""Covariances on distances beside the SLE, and what every landmark kernel is built on.

- :class:`LandmarkCovariance` -- the base of every kernel of landmark-embedding distances (the
  SLE, :class:`RawLandmarkEmbedding`);
- :class:`DistanceCovariance`, :class:`RawLandmarkEmbedding`, :class:`MeshMatern` -- the
  kernels the SLE is measured against (a stationary kernel of the raw distance, the
  raw-distance embedding, the mesh's Laplace-Beltrami Matern);
- :func:`laplace_beltrami`, :func:`matern_spectrum`, :class:`Eigenpairs` -- the mesh spectrum
  the Matern baseline is made of;
- ``SPARSE_FILL_THRESHOLD`` -- where the SLE's ``embedding="auto"`` takes sparse products;
- :class:`DenseFromSparseWarning` -- a graph forms the dense distances of a
  :class:`~pymc_sle.SparseDistanceMatrix`.

The SLE covariance itself, the bump and the embedding distances are at the top level
(:class:`pymc_sle.SLE`, :func:`pymc_sle.bump`, :func:`pymc_sle.embedding_distances`).
"""

from pymc_sle.kernels._baselines import DistanceCovariance, MeshMatern, RawLandmarkEmbedding
from pymc_sle.kernels._densify import DenseFromSparseWarning
from pymc_sle.kernels._landmark import LandmarkCovariance
from pymc_sle.kernels._sle import SPARSE_FILL_THRESHOLD
from pymc_sle.kernels._spectral import Eigenpairs, laplace_beltrami, matern_spectrum

__all__ = [
    "SPARSE_FILL_THRESHOLD",
    "DenseFromSparseWarning",
    "DistanceCovariance",
    "Eigenpairs",
    "LandmarkCovariance",
    "MeshMatern",
    "RawLandmarkEmbedding",
    "laplace_beltrami",
    "matern_spectrum",
]
