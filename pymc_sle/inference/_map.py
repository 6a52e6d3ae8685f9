"""Point estimates of GP hyperparameters: multi-start maximum a posteriori / likelihood."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize

from pymc_sle._pymc_compat import random_variable_of, value_transform

__all__ = ["MAPResult", "find_map"]


@dataclass(frozen=True)
class MAPResult:
    """Outcome of :func:`~pymc_sle.find_map`.

    Attributes
    ----------
    point : dict
        Values of every free variable (constrained and transformed) and deterministic.
    logp : float
        Log density at ``point`` (without Jacobian terms, as ``pm.find_MAP``).
    start_logps : numpy.ndarray
        Log density at every screened start; ``-inf`` where it was not finite.
    n_evaluations : int
        Log-density-and-gradient evaluations spent by the optimiser, all runs together.
    """

    point: dict
    logp: float
    start_logps: np.ndarray
    n_evaluations: int


def find_map(
    model: pm.Model | None = None,
    *,
    n_starts: int = 16,
    n_optimize: int = 2,
    seed: int | None = None,
    maxiter: int = 2000,
) -> MAPResult:
    r"""Multi-start MAP of a model with continuous free variables.

    GP marginal likelihoods are multimodal in their hyperparameters (the SLE radius and length
    scale trade off; a non-PSD baseline has regions of :math:`-\infty`), and ``pm.find_MAP``
    climbs from one start. This screens ``n_starts`` starts -- the model's initial point and
    ``n_starts - 1`` draws uniform on each variable's support where it is bounded (standard
    normal on the unconstrained scale otherwise) -- by their log density, then runs L-BFGS-B
    from the ``n_optimize`` best finite ones and keeps the highest optimum. One compiled
    function returns the log density and its gradient together, so each step costs one
    evaluation (``pm.find_MAP`` compiles and calls them separately). Like ``pm.find_MAP`` the
    objective omits the Jacobian terms of the transforms, so with flat priors the result is the
    bounded maximum-likelihood estimate.

    Parameters
    ----------
    model : pm.Model, optional
        Defaults to the model on the context stack.
    n_starts : int, default 16
        Starts screened (>= 1).
    n_optimize : int, default 2
        Best starts optimised (1 <= n_optimize <= n_starts).
    seed : int, optional
        Seed of the random starts.
    maxiter : int, default 2000
        L-BFGS-B iterations per run (>= 1).

    Returns
    -------
    MAPResult

    Raises
    ------
    ValueError
        On invalid arguments, or when no start has a finite log density (e.g. a covariance
        that is not positive definite anywhere the starts looked).
    """
    model = pm.modelcontext(model)
    for name, value, low in (("n_starts", n_starts, 1), ("n_optimize", n_optimize, 1),
                             ("maxiter", maxiter, 1)):  # fmt: skip
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"`{name}` must be an integer >= {low}, but got {value!r}")
    if n_optimize > n_starts:
        raise ValueError(
            f"`n_optimize` must be <= n_starts={n_starts}, but got n_optimize={n_optimize}"
        )
    value_vars = model.value_vars
    if any(v.dtype.startswith("int") for v in value_vars):
        raise ValueError("find_map needs continuous free variables only")
    logp = model.logp(jacobian=False)
    grads = pt.grad(logp, value_vars)
    fn = pm.pytensorf.compile([*value_vars], [logp, *grads], on_unused_input="ignore")
    shapes = [model.initial_point()[v.name].shape for v in value_vars]
    sizes = [int(np.prod(s)) for s in shapes]
    splits = np.cumsum(sizes)[:-1]

    def unravel(x):
        return [
            part.reshape(shape) for part, shape in zip(np.split(x, splits), shapes, strict=True)
        ]

    def negative(x):
        value, *gradient = fn(*unravel(x))
        if not np.isfinite(value):
            return np.inf, np.zeros_like(x)
        return -float(value), -np.concatenate([np.ravel(g) for g in gradient])

    rng = np.random.default_rng(seed)
    initial = model.initial_point()
    starts = [np.concatenate([np.ravel(initial[v.name]) for v in value_vars])]
    for _ in range(n_starts - 1):
        starts.append(_random_start(model, value_vars, sizes, rng))
    start_logps = np.array([-negative(x)[0] for x in starts])
    finite = np.flatnonzero(np.isfinite(start_logps))
    if finite.size == 0:
        raise ValueError(
            f"no finite log density at any of {n_starts} starts; the covariance may not be "
            "positive definite for these hyperparameters"
        )
    best, evaluations = None, 0
    for index in finite[np.argsort(-start_logps[finite])][:n_optimize]:
        result = optimize.minimize(
            negative, starts[index], jac=True, method="L-BFGS-B", options={"maxiter": maxiter}
        )
        evaluations += int(result.nfev)
        if np.isfinite(result.fun) and (best is None or result.fun < best.fun):
            best = result
    values = dict(zip([v.name for v in value_vars], unravel(best.x), strict=True))
    outputs = model.unobserved_value_vars
    constrained = model.compile_fn(outputs, inputs=value_vars, on_unused_input="ignore")(values)
    point = {**values, **{v.name: c for v, c in zip(outputs, constrained, strict=True)}}
    return MAPResult(point, -float(best.fun), start_logps, evaluations)


def _random_start(model, value_vars, sizes, rng) -> np.ndarray:
    """A start uniform on each bounded support (interval transform), standard normal else."""
    from pymc.distributions.transforms import Interval

    parts = []
    for value_var, size in zip(value_vars, sizes, strict=True):
        rv = random_variable_of(model, value_var)
        if isinstance(value_transform(model, rv), Interval):
            u = rng.uniform(0.001, 0.999, size)
            parts.append(np.log(u) - np.log1p(-u))
        else:
            parts.append(rng.standard_normal(size))
    return np.concatenate(parts)
