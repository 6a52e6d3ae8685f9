r"""Sample a radius posterior with several basins: NUTS in each, pooled by the basins' mass.

The SLE radius posterior can have basins separated by dips so deep that NUTS never crosses them
(``docs/hyperposterior.md``). Chains started in one basin then sample the posterior restricted to
it, :math:`p(\theta \mid y, \theta \in B_b)`, and the full posterior is the mixture

.. math::

    p(\theta \mid y) = \sum_b w_b\, p(\theta \mid y, \theta \in B_b), \qquad
    w_b = P(\theta \in B_b \mid y),

whose weights the grid posterior of :func:`pymc_sle.inference.priors.sle_priors` gives (exact up
to the grid's resolution). :func:`sample_basins` runs ``chains`` NUTS chains in every basin that
holds at least ``min_mass``, started at the basin's highest grid cell, and pools them: chain
``c`` of the result is chain ``c`` of every basin, each thinned to a number of draws proportional
to :math:`w_b` (renormalised over the sampled basins). Every pooled chain is thus a draw-for-draw
sample of the mixture, ready for ``pm.sample_posterior_predictive`` and ArviZ. Convergence is a
property of each basin's chains, so their diagnostics are stored in ``posterior.attrs``
(:func:`basin_diagnostics`)."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr

from pymc_sle.inference.priors import SLEPriors

__all__ = ["basin_diagnostics", "sample_basins"]

_ATTRS = ("basin_radius", "basin_weight", "basin_r_hat_max", "basin_ess_bulk_min",
          "basin_ess_tail_min", "basin_draws", "basin_outside")  # fmt: skip
#: Share of a basin's draws outside it above which sample_basins warns that pooling is biased.
_STRAY = 0.05


def _pool(fits: list[az.InferenceData], weights: np.ndarray, draws: int) -> az.InferenceData:
    """Chain ``c`` of the result: chain ``c`` of every fit, thinned to ``~weights[b] * draws``."""
    counts = np.round(weights * draws).astype(int)
    groups = {}
    for group in ("posterior", "sample_stats"):
        parts = []
        for fit, count in zip(fits, counts, strict=True):
            if count == 0:
                continue
            keep = np.unique(np.linspace(0, draws - 1, count).round().astype(int))
            parts.append(fit[group].isel(draw=keep).drop_vars("draw"))
        pooled = xr.concat(parts, dim="draw", coords="minimal", compat="override")
        groups[group] = pooled.assign_coords(draw=np.arange(pooled.sizes["draw"]))
    extra = {g: fits[0][g] for g in ("observed_data", "constant_data") if g in fits[0].groups()}
    return az.InferenceData(**groups, **extra), counts


@contextmanager
def _initial_values(model: pm.Model, start: dict[str, float]):
    """The model's initial values set to ``start`` for the duration: unlike ``pm.sample``'s
    ``initvals``, every NUTS implementation (nutpie included) starts from them."""
    saved = dict(model.rvs_to_initial_values)
    try:
        for name, value in start.items():
            model.set_initval(model[name], value)
        yield
    finally:
        model.rvs_to_initial_values.clear()
        model.rvs_to_initial_values.update(saved)


def sample_basins(
    priors: SLEPriors,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    target_accept: float = 0.9,
    min_mass: float = 0.01,
    random_seed: int | None = None,
    model: pm.Model | None = None,
    **sample_kwargs,
) -> az.InferenceData:
    """NUTS on every radius basin of ``priors`` holding at least ``min_mass``, pooled by mass.

    With one such basin this is ``pm.sample(draws, tune=tune, chains=chains, ...)`` (the chains
    start in it, as :func:`~pymc_sle.inference.priors.sle_priors` arranged). With several, each
    basin is sampled by ``chains`` chains started at its highest grid cell, and the draws are pooled
    in proportion to the basins' grid masses (module notes). ArviZ's r-hat and ESS of the pooled
    chains do not measure convergence; :func:`basin_diagnostics` gives each basin's.

    Parameters
    ----------
    priors : SLEPriors
        What :func:`~pymc_sle.inference.priors.sle_priors` returned (``start="mode"`` finds the
        basins).
    draws, tune, chains : int
        Per basin, as in :func:`pymc.sample`.
    target_accept : float, default 0.9
        NUTS's target acceptance rate, in ``(0, 1)``. Higher than PyMC's 0.8: on the mesh
        example's model 0.8 gave 47 and 49 divergences in 4 x (1000 + 1000), 0.9 gave 3 and 0,
        with bulk ESS above 800 in all four fits and about 20 % more wall time. It does not
        remove every divergence: 0.9 gave 14 and 0 on the W2-image example's model, 0.8 gave 4
        and 1 (``benchmarks/results/studies/example_mixing.md``).
    min_mass : float, default 0.01
        Basins with less posterior mass are not sampled (their mass is given to the others).
    random_seed : int, optional
        Seed; basin ``b`` uses ``random_seed + b``.
    model : pymc.Model, optional
        The model (default: the one on the context stack).
    **sample_kwargs
        Passed to :func:`pymc.sample` (``cores``, ``nuts_sampler``, ``init``, ...).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` and ``sample_stats`` with ``chains`` chains; with several basins, their
        ``attrs`` hold ``basin_radius``, ``basin_weight``, ``basin_draws`` and each basin's
        ``basin_r_hat_max``, ``basin_ess_bulk_min``, ``basin_ess_tail_min`` and
        ``basin_outside``, the share of its chains' draws outside it: when that exceeds 5 % a
        warning says the pooling is biased (the basins are not separated for NUTS).

    Raises
    ------
    TypeError
        If ``priors`` is not what ``sle_priors`` returns.
    ValueError
        If ``min_mass`` is not in ``[0, 1)``.
    """
    if not isinstance(priors, SLEPriors):
        raise TypeError(
            "`priors` must be what pymc_sle.priors.sle_priors returns, but got "
            f"{type(priors).__name__}"
        )
    if not 0.0 <= min_mass < 1.0:
        raise ValueError(f"`min_mass` must be in [0, 1), but got {min_mass!r}")
    if not 0.0 < target_accept < 1.0:
        raise ValueError(f"`target_accept` must be in (0, 1), but got {target_accept!r}")
    model = pm.modelcontext(model)
    basins = [b for b in priors.basins if b.mass >= min_mass]
    common = dict(draws=draws, tune=tune, chains=chains, target_accept=target_accept,
                  model=model, **sample_kwargs)  # fmt: skip
    if len(basins) <= 1:
        return pm.sample(random_seed=random_seed, **common)
    watched = priors.var_names(model)
    radius = priors["radius"].name
    fits, diagnostics, outside = [], [], []
    for b, basin in enumerate(basins):
        seed = None if random_seed is None else random_seed + b
        with _initial_values(model, basin.start):
            fit = pm.sample(random_seed=seed, **common)
        summary = az.summary(fit, var_names=watched, round_to="none")
        fits.append(fit)
        draws_radius = fit.posterior[radius].values
        outside.append(float(np.mean((draws_radius < basin.low) | (draws_radius > basin.high))))
        diagnostics.append((summary["r_hat"].max(), summary["ess_bulk"].min(),
                            summary["ess_tail"].min()))  # fmt: skip
    weights = np.array([b.mass for b in basins])
    weights /= weights.sum()
    pooled, counts = _pool(fits, weights, draws)
    attrs = {
        "basin_radius": [b.radius for b in basins],
        "basin_weight": weights.tolist(),
        "basin_r_hat_max": [float(d[0]) for d in diagnostics],
        "basin_ess_bulk_min": [float(d[1]) for d in diagnostics],
        "basin_ess_tail_min": [float(d[2]) for d in diagnostics],
        "basin_draws": counts.tolist(),
        "basin_outside": outside,
    }
    pooled.posterior.attrs.update(attrs)
    strays = [f"r = {b.radius:.3g}: {100 * o:.0f} %" for b, o in zip(basins, outside, strict=True)
              if o > _STRAY]  # fmt: skip
    if strays:
        warnings.warn(
            "Chains left the radius basin they were started in (share of draws outside it: "
            f"{', '.join(strays)}), so the basins are not separated for NUTS and pooling them by "
            "their grid mass counts some of the posterior twice. Sample with pm.sample instead.",
            UserWarning,
            stacklevel=2,
        )
    return pooled


def basin_diagnostics(idata: az.InferenceData) -> dict[str, list[float]] | None:
    """The per-basin diagnostics :func:`~pymc_sle.inference.sample_basins` stored, or ``None``
    for a single-basin (ordinary) posterior."""
    attrs = idata.posterior.attrs
    if "basin_weight" not in attrs:
        return None
    return {key: list(attrs[key]) for key in _ATTRS}
