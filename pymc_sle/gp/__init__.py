"""The Gaussian-process likelihood: an analytic gradient, dense or through a sparse
factorisation.

Importing this package registers the logprob rewrite (``_rewrite``) that gives
``pm.gp.Marginal(cov_func=SLE(...))`` -- and any ``pm.MvNormal`` whose covariance is a scalar
times an SLE plus scalar noise -- the library's likelihood; ``import pymc_sle`` imports it with
the first name that builds a model (``sle.SLE``, ``sle.sle_priors``, ...).

- :class:`Marginal` -- :class:`pymc.gp.Marginal` whose ``predict`` and forward draws are
  sparse on sparse distances too, and whose likelihood costs one Cholesky factorisation for
  any covariance;
- :class:`GaussianLogDensity` / :func:`gaussian_logp` -- the PyTensor Op behind it, on the C,
  NUMBA and JAX backends;
- :class:`SparseSLELogDensity` -- the exact SLE likelihood through a sparse factorisation,
  which :class:`Marginal` takes on a :class:`~pymc_sle.SparseDistanceMatrix` (large data);
- :class:`Laplace` -- a latent GP with a non-Gaussian likelihood (:class:`Bernoulli`,
  :class:`Binomial`, :class:`Poisson`; :class:`Gaussian` as the exact check), whose
  hyperparameters NUTS samples through the Laplace approximation, dense or sparse
  (``_laplace``); :class:`EP` the same through expectation propagation.
"""

from pymc_sle.gp._laplace import (
    EP,
    Bernoulli,
    Binomial,
    EPError,
    Gaussian,
    Laplace,
    LaplaceLogDensity,
    LaplacePrediction,
    Likelihood,
    NewtonError,
    Poisson,
)
from pymc_sle.gp._log_density import GaussianLogDensity, gaussian_logp
from pymc_sle.gp._marginal import Marginal
from pymc_sle.gp._sparse._op import SparseSLELogDensity

__all__ = [
    "Bernoulli",
    "Binomial",
    "EP",
    "EPError",
    "Gaussian",
    "GaussianLogDensity",
    "Laplace",
    "LaplaceLogDensity",
    "LaplacePrediction",
    "Likelihood",
    "Marginal",
    "NewtonError",
    "Poisson",
    "SparseSLELogDensity",
    "gaussian_logp",
]

import pymc_sle.gp._rewrite
