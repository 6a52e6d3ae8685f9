r"""The latent GP by Laplace or EP: classification and counts with the hyperparameters sampled.

The modules, in the order the data flows:

- ``_likelihoods`` -- the observation models (Bernoulli logit and probit, Binomial, Poisson,
  Gaussian), their derivatives in the latent value and their tilted moments;
- ``_warm`` -- the warm starts: the mode or sites found at the nearest earlier inputs;
- ``_approximation`` -- Newton's method for the mode, the approximate log marginal likelihood
  and its gradient, on any structure of the latent covariance, and the dense structure;
- ``_ep`` -- expectation propagation: the sites, its marginal likelihood and gradient;
- ``_sparse`` -- the sparse SLE structure (``pymc_sle.gp._sparse``'s factorisation with a
  noise variance per point);
- ``_op`` -- :class:`LaplaceLogDensity`, the PyTensor Op, dense or sparse;
- ``_gp`` -- :class:`Laplace` and :class:`EP`, the GP classes a model uses, and their
  predictions.
"""

from pymc_sle.gp._laplace._approximation import NewtonError
from pymc_sle.gp._laplace._ep import EPError
from pymc_sle.gp._laplace._gp import EP, Laplace, LaplacePrediction
from pymc_sle.gp._laplace._likelihoods import Bernoulli, Binomial, Gaussian, Likelihood, Poisson
from pymc_sle.gp._laplace._op import LaplaceLogDensity

__all__ = [
    "Bernoulli",
    "Binomial",
    "EP",
    "EPError",
    "Gaussian",
    "Laplace",
    "LaplaceLogDensity",
    "LaplacePrediction",
    "Likelihood",
    "NewtonError",
    "Poisson",
]
