"""Every use of PyMC's private or internal API, in one place.

PyMC offers no public way to do these things: its private methods (``Marginal._build_*``,
``Prod._factor_list``, ``Interval.get_a_and_b``) and the model's internal maps between random
variables, value variables, transforms and initial values (``Model.rvs_to_values``,
``rvs_to_transforms``, ``values_to_rvs``, ``rvs_to_initial_values``). Each wrapper is pinned
by a test in ``tests/test_pymc_compat.py`` that fails loudly, naming the call, when a PyMC
release changes it.
"""

from __future__ import annotations

import contextlib

import pymc as pm
from pymc.distributions.transforms import Interval

from pymc_sle._validation import constant_value

__all__ = [
    "build_conditional_marginals",
    "build_marginal_likelihood",
    "constant_upper_bound",
    "initial_values",
    "product_factors",
    "random_variable_of",
    "value_transform",
    "value_transforms",
    "value_variable",
    "without_initial_values",
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
    transform = value_transform(model, variable)
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


def value_variable(model: pm.Model, variable):
    """The value variable of a model's random ``variable`` (``Model.rvs_to_values``): what its
    log density is evaluated at, and for an observed variable its data."""
    return model.rvs_to_values[variable]


def random_variable_of(model: pm.Model, value):
    """The random variable whose value variable is ``value`` (``Model.values_to_rvs``)."""
    return model.values_to_rvs[value]


def value_transform(model: pm.Model, variable):
    """The transform a model samples ``variable`` on (``Model.rvs_to_transforms``; ``None``:
    none)."""
    return model.rvs_to_transforms.get(variable)


def value_transforms(model: pm.Model) -> dict:
    """``{random variable: transform}`` of every variable of ``model`` that has a transform."""
    return {rv: t for rv, t in model.rvs_to_transforms.items() if t is not None}


def initial_values(model: pm.Model) -> dict:
    """``{random variable: initial value}`` of every free variable (``None``: PyMC's default
    start), from ``Model.rvs_to_initial_values``."""
    return dict(model.rvs_to_initial_values)


@contextlib.contextmanager
def without_initial_values(model: pm.Model):
    """``model`` with its initial values cleared while the block runs, then restored:
    PyMC's model transformations copy only models without them."""
    saved = initial_values(model)
    try:
        model.rvs_to_initial_values.update(dict.fromkeys(saved))
        yield model
    finally:
        model.rvs_to_initial_values.update(saved)
