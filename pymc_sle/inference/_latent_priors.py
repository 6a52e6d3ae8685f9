r"""Data-adaptive priors for a latent SLE GP with a non-Gaussian likelihood (``sle.gp.Laplace``).

The latent field is :math:`f = c + g`, :math:`g \sim \mathcal{GP}(0, \eta^2 k_{\text{SLE}})`,
observed through the likelihood's link. The priors:

- ``radius`` and ``ls``: LogNormals between the bounds of :func:`~pymc_sle.suggest_bounds`,
  exactly as :func:`~pymc_sle.sle_priors` gives them (they depend on the distances alone);
- ``offset`` :math:`c \sim \mathcal N(g(\bar p), s)`, the link of the pooled observation
  (:math:`\bar p = (\sum_i y_i + \tfrac12) / (\sum_i n_i + 1)` for labels out of
  :math:`n_i` trials, :math:`(\sum_i y_i + \tfrac12) / n` for counts);
- ``eta`` :math:`\sim \text{HalfNormal}(s)`, the latent scale :math:`s` of the likelihood:

  ======================  ============================================================
  likelihood              :math:`s`
  ======================  ============================================================
  Bernoulli, Binomial     :math:`g(0.99) / \Phi^{-1}(0.975)`: the prior's 95 % quantile of
                          :math:`\eta` is the latent value at which the probability is 0.99
                          (2.34 for the logit, 1.19 for the probit)
  Poisson                 the standard deviation of :math:`\log(y_i + \tfrac12)`
  ======================  ============================================================

No grid search: the grid posterior of :func:`~pymc_sle.sle_priors` is the Gaussian model's
exact one, which a non-Gaussian likelihood does not have; NUTS starts at PyMC's default
point on log scales (``start="prior"``).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from pymc_sle.gp._laplace._likelihoods import Bernoulli, Binomial, Gaussian, Likelihood, Poisson

__all__ = ["check_likelihood", "latent_location_and_scale"]

#: The probability the latent scale of a binary or binomial likelihood reaches (module notes).
REACHED_PROBABILITY = 0.99


def check_likelihood(likelihood, y) -> np.ndarray:
    """``y`` checked by ``likelihood``, a non-Gaussian ``sle.gp`` likelihood.

    Raises
    ------
    TypeError
        If ``likelihood`` is not a likelihood of ``pymc_sle.gp``.
    ValueError
        If it is the Gaussian (whose priors :func:`~pymc_sle.sle_priors` searches without a
        likelihood), or ``y`` holds values it does not accept.
    """
    if not isinstance(likelihood, Likelihood):
        raise TypeError(
            "`likelihood` must be a likelihood of pymc_sle.gp (Bernoulli, Binomial, Poisson), "
            f"but got {type(likelihood).__name__}"
        )
    if isinstance(likelihood, Gaussian):
        raise ValueError(
            "`likelihood` must not be Gaussian: for Gaussian observations call sle_priors "
            "without a likelihood, which searches their exact posterior"
        )
    return likelihood.check(np.asarray(y, dtype=float))


def _link(likelihood, p: float) -> float:
    if isinstance(likelihood, Bernoulli) and likelihood.link == "probit":
        return float(special.ndtri(p))
    return float(special.logit(p))


def latent_location_and_scale(likelihood, y: np.ndarray) -> tuple[float, float]:
    """The offset's prior mean and the latent scale :math:`s` of checked observations ``y``
    (module notes)."""
    if isinstance(likelihood, Poisson):
        location = float(np.log((y.sum() + 0.5) / y.size))
        return location, float(np.std(np.log(y + 0.5)))
    trials = np.broadcast_to(likelihood.n, y.shape) if isinstance(likelihood, Binomial) else 1.0
    pooled = (y.sum() + 0.5) / (np.sum(np.broadcast_to(trials, y.shape)) + 1.0)
    scale = _link(likelihood, REACHED_PROBABILITY) / special.ndtri(0.975)
    return _link(likelihood, pooled), float(scale)
