"""What the evaluations of a fitted GP share: their checks of the posterior and the GP, the free
variables a graph needs, and ArviZ's relative efficiency of the draws."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr
from pytensor.graph import ancestors

NOT_POSITIVE_DEFINITE = (
    "the training covariance is not positive definite at some posterior draws; increase `jitter`"
)


def check_posterior_and_gp(idata, gp) -> None:
    """``idata`` holds a posterior and ``gp`` is a marginal GP that has been given its data."""
    if not isinstance(idata, az.InferenceData) or "posterior" not in idata.groups():
        raise TypeError(
            f"`idata` must be an arviz.InferenceData with a posterior group, got {type(idata)!r}"
        )
    if not isinstance(gp, pm.gp.Marginal):
        raise TypeError(f"`gp` must be a pm.gp.Marginal, got {type(gp).__name__}")
    if getattr(gp, "X", None) is None:
        raise ValueError(
            "`gp` must be a pm.gp.Marginal whose marginal_likelihood has been called, but "
            "gp.marginal_likelihood was not called"
        )


def free_inputs(model: pm.Model, outputs) -> list:
    """The free variables ``outputs`` depend on, in the model's order. Only those: variables
    added after sampling (the test predictions of ``gp.conditional``) are not in the posterior."""
    needed = set(ancestors(outputs))
    return [rv for rv in model.free_RVs if rv in needed]


def relative_efficiency(posterior: xr.Dataset, n_samples: int) -> float:
    """``arviz.loo``'s estimate: the mean ESS ("mean" method) over every value of ``posterior``,
    over the number of draws; 1 for a single chain, and where ArviZ cannot estimate the ESS
    (fewer than 4 draws per chain)."""
    if posterior.sizes["chain"] == 1 or posterior.sizes["draw"] < 4 or not posterior.data_vars:
        return 1.0
    ess = az.ess(posterior, method="mean")
    return float(np.mean(np.hstack([ess[v].values.ravel() for v in ess.data_vars])) / n_samples)
