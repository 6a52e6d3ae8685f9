r"""PyMC's NUTS with its dense mass matrix started from the posterior's curvature.

PyMC's ``init="jitter+adapt_full"`` starts the dense mass-matrix adaptation from the identity,
weighted as 10 draws. The SLE hyperparameters' posterior scales on their sampled (log)
coordinates are far below 1 and correlated (``eta`` with ``ls``), so early in the tuning the
step size shrinks to the identity's worst direction and every trajectory takes many leapfrog
steps, until the windows of draws have re-estimated the covariance (:doc:`/how-to/samplers`).

:func:`pymc_nuts` first climbs from the model's initial point to the mode :math:`\hat x` of
the density NUTS samples (the model's log density on the sampled, unconstrained coordinates,
Jacobians included) by L-BFGS: ``sle_priors`` starts the chains at its grid's best cell, which
the grid chose on a subsample at scale and which can lie many posterior standard deviations
from the mode (:doc:`/results/nuts_cost`), and the draws on the way in would inflate the
first adaptation window's covariance. It then starts the adaptation from the Laplace
covariance there:

.. math::

    \Sigma_0 = V \operatorname{diag}(1/\lambda') V^\top, \qquad
    H = -\nabla^2 \log p(\hat x) = V \operatorname{diag}(\lambda) V^\top, \qquad
    \lambda' = \operatorname{clip}(|\lambda|, \lambda_{\min}, \lambda_{\max}),

with :math:`H` by central differences of the gradient (:math:`2d` gradient evaluations for
:math:`d` coordinates), symmetrised. Away from a mode some curvatures are negative; their
absolute values still give the local scale (as in the SoftAbs metric), and the clip keeps every
initial standard deviation in ``[1/sqrt(lambda_max), 1/sqrt(lambda_min)]``. The adaptation
weighs :math:`\Sigma_0` as ``INITIAL_WEIGHT`` draws, as PyMC weighs its identity, and replaces
it with the draws' covariance at the end of PyMC's first adaptation window. Chain :math:`c`
starts at :math:`\hat x + \operatorname{clip}(L z_c, -1, 1)`, :math:`L L^\top = \Sigma_0`,
:math:`z_c \sim N(0, I)`: spread like the posterior, never further than PyMC's own jitter
(uniform in ``[-1, 1]``), halved until the log density and its gradient there are finite.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
from pymc.step_methods.hmc.quadpotential import QuadPotentialFullAdapt
from scipy import optimize

__all__ = ["laplace_covariance", "pymc_nuts"]

#: The draws' weight of the initial covariance in PyMC's dense adaptation (PyMC's for its
#: identity).
INITIAL_WEIGHT = 10
#: The clip of the Hessian's absolute eigenvalues: initial standard deviations in [1e-5, 10].
CURVATURE_RANGE = (1e-2, 1e10)
#: The most L-BFGS iterations of the climb to the mode.
MODE_ITERATIONS = 100
#: Relative step of the central differences.
_STEP = 1e-4


def _ravel(point: dict, names: list[str]) -> np.ndarray:
    return np.concatenate([np.ravel(point[name]) for name in names]).astype(np.float64)


def _unravel(x: np.ndarray, like: dict, names: list[str]) -> dict:
    out, at = {}, 0
    for name in names:
        shape = np.shape(like[name])
        size = int(np.prod(shape))
        out[name] = x[at : at + size].reshape(shape)
        at += size
    return out


def _density(model: pm.Model):
    """The names of ``model``'s continuous value variables, its initial point, PyMC's compiled
    log density and gradient of their raveled values (on the sampled coordinates; the NUTS step
    reuses it), that as a function returning ``(logp, dlogp)``, and a function of the raveled
    values returning the free variables' own values there."""
    names = [v.name for v in model.continuous_value_vars]
    start = model.initial_point()
    logp_dlogp = model.logp_dlogp_function(
        model.continuous_value_vars, ravel_inputs=True, initial_point=start
    )
    logp_dlogp.set_extra_values(start)  # the variables NUTS does not move (NUTS sets them too)
    own = model.compile_fn(model.replace_rvs_by_values(model.free_RVs))

    def density(x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, dlogp = logp_dlogp(np.asarray(x, dtype=np.float64))
        return float(logp), np.asarray(dlogp, dtype=np.float64)

    def own_values(x: np.ndarray) -> list:
        return own({**start, **_unravel(x, start, names)})

    return names, start, logp_dlogp, density, own_values


def _mode(density, x0: np.ndarray) -> np.ndarray:
    """The mode of ``density`` (what :func:`_density` returns) climbed to from ``x0`` by L-BFGS,
    or ``x0`` where the climb found nothing higher."""

    def objective(x):
        logp, dlogp = density(x)
        if not (np.isfinite(logp) and np.all(np.isfinite(dlogp))):
            return np.inf, np.zeros_like(x)
        return -logp, -dlogp

    result = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B",
                               options={"maxiter": MODE_ITERATIONS})  # fmt: skip
    return result.x if result.fun < objective(x0)[0] else x0


def laplace_covariance(gradient, x0: np.ndarray) -> np.ndarray:
    r"""The covariance :math:`\Sigma_0` of the module notes at ``x0``, from ``gradient``, a
    log density's gradient as a function of the raveled coordinates; the identity where a
    neighbour's gradient is not finite (PyMC's own start).

    Raises
    ------
    ValueError
        If the gradient is not finite at ``x0``.
    """
    if not np.all(np.isfinite(gradient(x0))):
        raise ValueError(f"the model's gradient is not finite at the start {x0.tolist()}")
    hessian = np.empty((x0.size, x0.size))
    for i in range(x0.size):
        step = np.zeros_like(x0)
        step[i] = _STEP * max(1.0, abs(x0[i]))
        hessian[:, i] = (gradient(x0 + step) - gradient(x0 - step)) / (2 * step[i])
    curvature = -(hessian + hessian.T) / 2
    if not np.all(np.isfinite(curvature)):
        return np.eye(x0.size)
    values, vectors = np.linalg.eigh(curvature)
    values = np.clip(np.abs(values), *CURVATURE_RANGE)
    return (vectors / values) @ vectors.T


def pymc_nuts(
    model: pm.Model, *, chains: int, target_accept: float, random_seed: int | None = None
) -> dict:
    r"""``pm.sample``'s ``step`` and ``initvals`` for ``chains`` chains of PyMC's NUTS on
    ``model`` with a dense mass matrix adapted from :math:`\Sigma_0` (module notes).

    Example: ``pm.sample(chains=4, model=model, **pymc_nuts(model, chains=4,
    target_accept=0.9))``.

    Raises
    ------
    ValueError
        If the model's gradient is not finite at its initial point (and the climb found
        nothing higher).
    """
    names, start, logp_dlogp, density, own_values = _density(model)
    x0 = _mode(density, _ravel(start, names))
    cov = laplace_covariance(lambda x: density(x)[1], x0)
    chol = np.linalg.cholesky(cov)
    rng = np.random.default_rng(random_seed)
    initvals = []
    for _ in range(chains):
        jitter = np.clip(chol @ rng.standard_normal(x0.size), -1.0, 1.0)
        for _ in range(10):
            logp, dlogp = density(x0 + jitter)
            if np.isfinite(logp) and np.all(np.isfinite(dlogp)):
                break
            jitter /= 2
        else:
            jitter = np.zeros_like(x0)
        # The variables' own values: PyMC cannot map a start on the sampled coordinates back
        # where a transform depends on other variables (as sle_priors' do).
        values = own_values(x0 + jitter)
        initvals.append({rv.name: v for rv, v in zip(model.free_RVs, values, strict=True)})
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "QuadPotentialFullAdapt is an experimental feature")
        potential = QuadPotentialFullAdapt(
            x0.size, x0, cov, INITIAL_WEIGHT, rng=np.random.default_rng(rng.integers(2**32))
        )
    logp_dlogp.trust_input = True  # as PyMC sets on the function it compiles for NUTS
    step = pm.NUTS(
        vars=model.continuous_value_vars,
        potential=potential,
        target_accept=target_accept,
        model=model,
        logp_dlogp_func=logp_dlogp,  # compiled once, for the climb and for sampling
    )
    return {"step": step, "initvals": initvals}
