"""Every use of PyMC's private API, in one place.

PyMC offers no public way to do these things; each wrapper is pinned by a test in
``tests/test_pymc_compat.py`` that fails loudly, naming the private call, when a PyMC release
changes it.
"""

from __future__ import annotations

import pymc as pm
from pymc.distributions.transforms import Interval

from pymc_sle._validation import constant_value

__all__ = [
    "build_conditional_marginals",
    "build_marginal_likelihood",
    "constant_upper_bound",
    "product_factors",
]


def constant_upper_bound(variable) -> float | None:
    """The constant scalar upper bound of a model variable's support, if it has one.

    Bounded priors (``pm.Uniform``, ``pm.Truncated``, ...) carry an ``Interval`` transform whose
    bounds PyMC reads with the private ``Interval.get_a_and_b`` from the private
    ``Model.rvs_to_transforms`` map. ``None`` outside a model, for unbounded variables and for
    bounds that are not constant scalars.
    """
    try:
        model = pm.modelcontext(None)
    except TypeError:  # no model on the context stack
        return None
    transform = model.rvs_to_transforms.get(variable)
    if not isinstance(transform, Interval):
        return None
    _, upper, _, upper_bounded = transform.get_a_and_b(variable.owner.inputs)
    upper = constant_value(upper) if upper_bounded else None
    return None if upper is None or upper.ndim > 0 else float(upper)


def build_marginal_likelihood(gp: pm.gp.Marginal, X, noise_func, jitter):
    """``(mu, cov)`` of a marginal GP's observations, from the private
    ``pm.gp.Marginal._build_marginal_likelihood``: the mean at ``X`` and ``K(X, X) + noise``,
    jittered, exactly as ``pm.gp.Marginal.marginal_likelihood`` builds them."""
    return gp._build_marginal_likelihood(X=X, noise_func=noise_func, jitter=jitter)


def build_conditional_marginals(gp: pm.gp.Marginal, Xnew, pred_noise: bool, jitter):
    """``(mu, var)`` of a marginal GP's conditional at ``Xnew``, from the private
    ``pm.gp.Marginal._build_conditional`` with ``diag=True``: the mean and the diagonal of the
    covariance that :meth:`pymc.gp.Marginal.conditional` draws from jointly, conditioned on the
    data given to ``gp.marginal_likelihood``. ``jitter`` stabilises the training covariance."""
    givens = gp._get_given_vals(None)
    return gp._build_conditional(Xnew, pred_noise, True, *givens, jitter)


def product_factors(cov) -> list:
    """The factors of a ``pm.gp.cov.Prod`` (covariances and scalars, nested products flattened),
    from its private ``_factor_list``; ``[cov]`` for anything else."""
    if isinstance(cov, pm.gp.cov.Prod):
        return list(cov._factor_list)
    return [cov]
