"""Covariances on distances: the SLE kernel, its building blocks and the baselines it is compared
with.

- :func:`~pymc_sle.bump` -- the compactly supported bump of a distance (paper Eq. 5);
- :class:`~pymc_sle.SLE` -- the Sparse Landmark Embedding covariance (Eqs. 5-7), a
  ``pm.gp.cov.Covariance``;
- :class:`LandmarkCovariance` -- the base of every kernel of landmark-embedding distances;
- :func:`~pymc_sle.embedding_distances`, :func:`~pymc_sle.raw_embedding_distances` -- what
  those kernels see of the data, in numpy;
- :mod:`~pymc_sle.kernels.baselines` and :mod:`~pymc_sle.kernels.spectral` -- the kernels SLE is
  measured against (a kernel of the raw distance, the raw-distance embedding, the mesh Matern).
"""

from pymc_sle.kernels import baselines, spectral
from pymc_sle.kernels._bump import bump
from pymc_sle.kernels._embedding import embedding_distances, raw_embedding_distances
from pymc_sle.kernels._inner import INNER_KERNELS
from pymc_sle.kernels._landmark import LandmarkCovariance
from pymc_sle.kernels._sle import SLE, SPARSE_FILL_THRESHOLD

__all__ = [
    "INNER_KERNELS",
    "SLE",
    "SPARSE_FILL_THRESHOLD",
    "LandmarkCovariance",
    "baselines",
    "bump",
    "embedding_distances",
    "raw_embedding_distances",
    "spectral",
]

# Last: the JAX backend needs the Ops above (pymc_sle._jax imports them).
from pymc_sle import _jax
