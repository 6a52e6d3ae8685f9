"""The Gaussian-process likelihood: ``pm.gp.Marginal`` with an analytic gradient.

- :class:`Marginal` -- a drop-in :class:`pymc.gp.Marginal` whose marginal likelihood and its
  gradient cost one Cholesky factorisation;
- :class:`GaussianLogDensity` / :func:`gaussian_logp` -- the PyTensor Op behind it, on the C,
  NUMBA and JAX backends;
- :class:`SparseSLELogDensity` -- the exact SLE likelihood through a sparse factorisation,
  which :class:`Marginal` takes on a :class:`~pymc_sle.SparseDistanceMatrix` (large data).
"""

from pymc_sle.gp._log_density import GaussianLogDensity, gaussian_logp
from pymc_sle.gp._marginal import Marginal
from pymc_sle.gp._sparse._op import SparseSLELogDensity

__all__ = ["GaussianLogDensity", "Marginal", "SparseSLELogDensity", "gaussian_logp"]
