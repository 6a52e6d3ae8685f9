"""One model on one trial: a MAP fit or a NUTS fit, scored on the test set."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np

from benchmarks.paper.models import ModelSpec, build
from benchmarks.paper.problem import Context
from pymc_sle import find_map, score_gaussian
from pymc_sle.evaluation import NutsSettings, fit_and_score

__all__ = ["PAPER_NUTS", "QUICK_NUTS", "fit_map", "fit_nuts", "gram", "params_of"]

#: The reproduction's NUTS: 2 chains of 250 + 250 in the worker's own process, predictions from
#: 200 posterior draws. ``init="jitter+adapt_full"`` adapts a dense mass matrix: the SLE's
#: amplitude and ls trade off along a straight ridge in log space, which a diagonal mass matrix
#: can only follow with long trajectories (on Teddy, n = 200, one diagonal-adapted fit did not
#: finish in 16 min; the dense one took 7.5 min with r-hat <= 1.02). It helps, but does not make
#: SLE's SAXS chains mix (r-hat up to 1.83 at n = 250).
PAPER_NUTS = NutsSettings(
    chains=2, cores=1, tune=250, draws=250, predictive_draws=200, init="jitter+adapt_full"
)
QUICK_NUTS = dataclasses.replace(PAPER_NUTS, chains=1, tune=30, draws=30, predictive_draws=20)


def params_of(model, point) -> dict:
    """The model's hyperparameters at ``point`` (not their ``log_`` parametrisation)."""
    names = [v.name for v in model.deterministics] + [
        v.name for v in model.free_RVs if not v.name.startswith("log_")
    ]
    out = {}
    for name in names:
        value = np.asarray(point[name])
        out[name] = float(value) if value.ndim == 0 else value.tolist()
    return out


def gram(model, cov, X: np.ndarray, point: dict) -> np.ndarray:
    """``cov(X)`` as a numpy matrix at the hyperparameters of ``point`` (e.g. a MAP)."""
    matrix = model.replace_rvs_by_values([cov(X)])[0]
    fn = model.compile_fn(matrix, inputs=model.value_vars, on_unused_input="ignore")
    return fn({v.name: point[v.name] for v in model.value_vars})


def fit_map(spec: ModelSpec, ctx: Context, y_test: np.ndarray) -> dict:
    """MAP fit and Gaussian scores; ``params`` holds the fitted hyperparameters and the
    maximised log density ``max_logp``: the log marginal likelihood plus the flat priors'
    constant log density, so comparable between models with the same free variables."""
    model, gp, cov = build(spec, ctx)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = find_map(seed=ctx.trial.seed)
        point = result.point
        mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=True)
    # A kernel that is not PSD can predict negative variances; count them, score them as ~0.
    row = score_gaussian(y_test, mu, np.sqrt(np.maximum(var, 1e-300)))
    row["nonpositive_variances"] = int((var <= 0).sum())
    row["params"] = json.dumps({**params_of(model, point), "max_logp": float(result.logp)})
    if spec.psd_check:
        every_point = np.arange(ctx.points.size)[:, None]
        row["min_eigenvalue"] = float(np.linalg.eigvalsh(gram(model, cov, every_point, point))[0])
    return row


def fit_nuts(spec: ModelSpec, ctx: Context, y_test: np.ndarray, settings: NutsSettings) -> dict:
    """NUTS fit, seeded by the trial, scored by the posterior predictive draws; ``params`` holds
    the posterior means of the scalar hyperparameters."""
    model, gp, _ = build(spec, ctx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_and_score(
            model, gp, ctx.X_test, y_test, dataclasses.replace(settings, seed=ctx.trial.seed)
        )
    posterior = fit.idata.posterior
    return {
        **fit.scores,
        "rhat_max": fit.diagnostics["r_hat_max"],
        "ess_bulk_min": fit.diagnostics["ess_bulk_min"],
        "divergences": fit.diagnostics["divergences"],
        "params": json.dumps(
            {
                name: float(posterior[name].mean())
                for name in posterior.data_vars
                if posterior[name].ndim == 2 and not name.startswith("log_")
            }
        ),
    }
