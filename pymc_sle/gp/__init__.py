"""The Gaussian-process likelihood: ``pm.gp.Marginal`` with an analytic gradient.

- :class:`Marginal` -- a drop-in :class:`pymc.gp.Marginal` whose marginal likelihood and its
  gradient cost one Cholesky factorisation;
- :class:`GaussianLogDensity` / :func:`gaussian_logp` -- the PyTensor Op behind it, on the C,
  NUMBA and JAX backends.
"""

from pymc_sle.gp._log_density import GaussianLogDensity, gaussian_logp
from pymc_sle.gp._marginal import Marginal

__all__ = ["GaussianLogDensity", "Marginal", "gaussian_logp"]
