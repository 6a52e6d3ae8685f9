r"""Sample a radius posterior with several basins: NUTS in each, pooled by the basins' mass.

The SLE radius posterior can have basins separated by dips that NUTS crosses too rarely to mix
within a run (:doc:`/hyperposterior`). Cut the radius axis at the dips into intervals
:math:`B_b` (at ``cuts``); then exactly

.. math::

    p(\theta \mid y) = \sum_b w_b\, p(\theta \mid y, r \in B_b), \qquad
    w_b = P(r \in B_b \mid y),

whose weights the grid posterior of :func:`~pymc_sle.sle_priors` gives, up to the grid's
resolution. :func:`sample_basins` samples each restricted posterior
:math:`p(\theta \mid y, r \in B_b)` with ``chains`` NUTS chains: the radius's value transform
is followed by an interval transform onto :math:`B_b` (the model's densities are unchanged
inside it, so the restricted posterior is exact), and the chains start at the basin's highest
grid cell; the outer two intervals are open.

Chain ``c`` of the result is chain ``c`` of every basin, each thinned to a number of draws
proportional to :math:`w_b` (renormalised over the sampled basins), and interleaved: the basins'
draws take the chain's positions in a random order, each basin's in its own order
(``sample_stats["basin"]`` says which basin each draw is from). Every pooled chain is thus a
sample of the mixture from start to end, so ArviZ's standard diagnostics are valid on it: r-hat
compares chains that each hold every basin in proportion, and rises when one basin's chains
disagree; the ESS keeps each basin's autocorrelation (a shuffle would inflate it), and counts
the basin labels as independent draws -- conservative, since the weights are fixed and the
label counts exact. Each basin's own diagnostics are in ``posterior.attrs``
(:func:`basin_diagnostics`). Without the restriction, chains started in one basin and straying
into another would count that posterior mass twice.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr
from pymc.distributions.transforms import Interval
from pymc.logprob.transforms import ChainedTransform
from pymc.model.transform.conditioning import change_value_transforms
from threadpoolctl import threadpool_limits

from pymc_sle._pymc_compat import (
    initial_values,
    value_transform,
    value_transforms,
    without_initial_values,
)
from pymc_sle.inference._basins import Basin, BasinJump, at_start, coordinates, cuts
from pymc_sle.inference._mass_matrix import pymc_nuts
from pymc_sle.inference._priors import SLEPriors
from pymc_sle.inference._search import DEFAULT_POLICY

__all__ = ["basin_diagnostics", "basin_models", "sample_basins"]

_ATTRS = ("basin_radius", "basin_weight", "basin_cuts", "basin_r_hat_max", "basin_ess_bulk_min",
          "basin_ess_tail_min", "basin_divergences", "basin_draws")  # fmt: skip
#: Which variable had each basin's worst r-hat and smallest bulk ESS (results written before
#: these were kept lack them).
_WORST_VARIABLE_ATTRS = ("basin_r_hat_var", "basin_ess_bulk_var")


def worst_values(idata: az.InferenceData, summary) -> dict:
    """The worst diagnostics of ``summary``, an ArviZ summary of ``idata``'s posterior: largest
    r-hat, smallest bulk and tail ESS, the number of divergent transitions (0 when the sampler
    reports none), and the variables with the largest r-hat and the smallest bulk ESS
    (``r_hat_var``, ``ess_bulk_var``, as the summary names them; ``""`` where the diagnostic is
    undefined: one chain, or too few draws)."""

    def worst(column: str, largest: bool) -> str:
        values = summary[column]
        if values.isna().all():
            return ""
        return str(values.idxmax() if largest else values.idxmin())

    diverging = idata.sample_stats.get("diverging")
    return {
        "r_hat_max": float(summary["r_hat"].max()),
        "ess_bulk_min": float(summary["ess_bulk"].min()),
        "ess_tail_min": float(summary["ess_tail"].min()),
        "divergences": 0 if diverging is None else int(diverging.sum()),
        "r_hat_var": worst("r_hat", True),
        "ess_bulk_var": worst("ess_bulk", False),
    }


def _pool(
    fits: list[az.InferenceData], weights: np.ndarray, draws: int, rng: np.random.Generator
) -> tuple[az.InferenceData, np.ndarray]:
    """Chain ``c`` of the result: chain ``c`` of every fit, thinned to ``~weights[b] * draws``,
    interleaved in a random order that keeps each fit's draws in their order (module notes).
    ``sample_stats["basin"]`` says which fit each draw came from."""
    counts = np.round(weights * draws).astype(int)
    keeps = [np.linspace(0, draws - 1, count).round().astype(int) for count in counts]
    labels = np.repeat(np.arange(len(fits)), counts)  # the basin of each stacked draw
    # Position t of a chain takes the next draw of basin shuffled[t]: stacked draw order[t].
    order = []
    for _ in range(fits[0].posterior.sizes["chain"]):
        shuffled = rng.permutation(labels)
        order.append(np.argsort(np.argsort(shuffled, kind="stable"), kind="stable"))
    order = np.stack(order)
    basin = labels[order]
    groups = {}
    for group in ("posterior", "sample_stats"):
        parts = [
            fit[group].isel(draw=keep).drop_vars("draw")
            for fit, keep in zip(fits, keeps, strict=True)
        ]
        stacked = xr.concat(parts, dim="draw", coords="minimal", compat="override")
        taken = xr.DataArray(order, dims=("chain", "draw"))
        groups[group] = stacked.isel(draw=taken).assign_coords(draw=np.arange(order.shape[1]))
    groups["sample_stats"]["basin"] = (("chain", "draw"), basin)
    extra = {g: fits[0][g] for g in ("observed_data", "constant_data") if g in fits[0].groups()}
    return az.InferenceData(**groups, **extra), counts


@contextlib.contextmanager
def _sampling(chains: int, sample_kwargs: dict):
    """One BLAS thread per chain (:func:`_blas_limit`), and PyMC's dense mass-matrix adaptation
    without its "experimental feature" warning, where a caller's ``init`` asks for it
    (``pymc_nuts`` silences its own)."""
    with _blas_limit(chains, sample_kwargs), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "QuadPotentialFullAdapt is an experimental feature")
        yield


def default_cores() -> int:
    """The chain processes :func:`sample_basins` runs at once unless told: one per CPU this
    process may use, at most 4. (PyMC's own default halves the CPU count, taking every second
    CPU for a hyperthread, so on a 2-core machine its chains run one after another.)"""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return min(4, available)


def _blas_limit(chains: int, sample_kwargs: dict):
    """One BLAS thread per process while several chains run at once: otherwise every chain's
    BLAS starts a thread per core and the chains fight over the cores (:doc:`/performance`). A
    single chain at a time keeps the caller's BLAS threads."""
    cores = sample_kwargs["cores"]  # sample_basins sets its default first
    threaded = sample_kwargs.get("nuts_sampler", "pymc") != "pymc"  # chains as threads
    if chains > 1 and (cores > 1 or threaded):
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


def _intervals(basins: list[Basin], meeting: list[float], transform) -> list[tuple]:
    """Each of ``basins`` (sorted by radius) as an interval of the radius's value in
    ``transform``'s space, between their ``cuts``; the outer ends
    are open (``None``)."""

    cut, (first, last) = coordinates(transform, meeting, [basins[0].radius, basins[-1].radius])
    cut = cut.tolist()
    if first > last:  # a decreasing transform
        return list(zip([*cut, None], [None, *cut], strict=True))
    return list(zip([None, *cut], [*cut, None], strict=True))


def _restricted(model: pm.Model, name: str, interval, start: dict[str, float]) -> pm.Model:
    """A copy of ``model`` whose variable ``name`` is confined to ``interval`` of its value (its
    value transform followed by an interval transform; the densities are unchanged inside it),
    starting at ``start`` (set as the model's initial values: nutpie ignores ``pm.sample``'s
    ``initvals``)."""
    original = value_transform(model, model[name])
    confine = Interval(*interval)
    transform = confine if original is None else ChainedTransform([original, confine])
    restricted = _copy(model, lambda m: change_value_transforms(m, {name: transform}))
    for key, value in start.items():
        restricted.set_initval(restricted[key], value)
    return restricted


def _copy(model: pm.Model, change) -> pm.Model:
    """``change(model)``, a PyMC model transformation, which copies only models without initial
    values (``sle_priors`` sets them): they are dropped meanwhile, and the copy keeps them."""
    saved = initial_values(model)
    with without_initial_values(model):
        copied = change(model)
    free = {rv.name for rv in copied.free_RVs}  # an observed basin label needs no start
    for rv, value in saved.items():
        if value is not None and rv.name in free:
            copied.set_initval(copied[rv.name], value)
    return copied


def _without_jumps(model: pm.Model, name: str) -> pm.Model:
    """``model``, or, where ``sle_priors`` added a basin label that moves the variables between
    radius basins (``pymc_sle.inference._basins``), a copy with the label fixed at the start's
    basin and every variable on its transform without basins: one basin at a time, for any NUTS
    sampler."""
    jump = value_transform(model, model[name])
    if not isinstance(jump, BasinJump):
        return model
    changed = {
        rv.name: at_start(transform)
        for rv, transform in value_transforms(model).items()
        if at_start(transform) is not transform
    }

    def change(m):
        return pm.observe(change_value_transforms(m, changed), {jump.label.name: 0})

    return _copy(model, change)


def basin_models(
    priors: SLEPriors,
    *,
    min_mass: float = DEFAULT_POLICY.min_basin_mass,
    model: pm.Model | None = None,
) -> list[tuple[Basin | None, pm.Model]]:
    """The model :func:`~pymc_sle.sample_basins` samples for each radius basin.

    With at most one basin holding ``min_mass``: ``[(that basin or None, model)]``, the model
    itself, or, where ``sle_priors`` added a basin label for plain ``pm.sample``
    (``pymc_sle.inference._basins``), a copy with the label fixed at the start's basin. With
    several: for each, in order of radius, a copy of ``model`` (the label fixed likewise) whose
    radius is confined to the basin's interval (module notes) and whose initial values are the
    basin's highest grid cell. Sample one yourself to give a basin its own sampler settings, or
    to keep records that pooling thins away (e.g. nutpie's ``store_divergences=True``).

    Parameters
    ----------
    priors : SLEPriors
        What :func:`~pymc_sle.sle_priors` returned.
    min_mass : float, default 0.005
        As in :func:`~pymc_sle.sample_basins`.
    model : pymc.Model, optional
        The model (default: the one on the context stack).

    Returns
    -------
    list of (Basin or None, pymc.Model)

    Raises
    ------
    TypeError
        If ``priors`` is not what ``sle_priors`` returns.
    ValueError
        If ``min_mass`` is not in ``[0, 1)``.
    """
    if not isinstance(priors, SLEPriors):
        raise TypeError(
            f"`priors` must be what pymc_sle.sle_priors returns, but got {type(priors).__name__}"
        )
    if not 0.0 <= min_mass < 1.0:
        raise ValueError(f"`min_mass` must be in [0, 1), but got {min_mass!r}")
    radius = priors["radius"].name
    model = _without_jumps(pm.modelcontext(model), radius)
    basins = sorted((b for b in priors.basins if b.mass >= min_mass), key=lambda b: b.radius)
    if len(basins) <= 1:
        return [(basins[0] if basins else None, model)]
    intervals = _intervals(basins, cuts(basins), value_transform(model, model[radius]))
    return [
        (basin, _restricted(model, radius, interval, basin.start))
        for basin, interval in zip(basins, intervals, strict=True)
    ]


#: :func:`~pymc_sle.sample_basins`'s default NUTS target acceptance with one radius
#: basin (its docstring gives the measurements).
ONE_BASIN_TARGET_ACCEPT = 0.9
#: :func:`~pymc_sle.sample_basins`'s default NUTS target acceptance with several
#: radius basins.
BASINS_TARGET_ACCEPT = 0.95

#: nutpie's settings under :func:`sample_basins` unless the caller's ``nuts_sampler_kwargs``
#: say otherwise.
NUTPIE_DEFAULTS = {"low_rank_modified_mass_matrix": True}


def sample_basins(
    priors: SLEPriors,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    target_accept: float | None = None,
    min_mass: float = DEFAULT_POLICY.min_basin_mass,
    random_seed: int | None = None,
    model: pm.Model | None = None,
    **sample_kwargs,
) -> az.InferenceData:
    """NUTS on every radius basin of ``priors`` holding at least ``min_mass``, pooled by mass.

    With one such basin this is ``pm.sample(draws, tune=tune, chains=chains, ...)`` (the chains
    start in it, as :func:`~pymc_sle.sle_priors` arranged). With several, each
    basin is sampled by ``chains`` chains confined to its radius interval and started at its
    highest grid cell, and the draws are pooled in proportion to the basins' grid masses,
    interleaved so that ArviZ's r-hat and ESS of the pooled chains are valid (module notes);
    :func:`basin_diagnostics` gives each basin's.

    When chains run in parallel (``cores`` > 1, or nutpie's and numpyro's threads), sampling
    runs with one BLAS thread per process (``threadpoolctl``): without it each chain's BLAS
    starts a thread per core and the chains fight over the cores. There is no need to wrap
    the call in ``threadpool_limits``.

    Parameters
    ----------
    priors : SLEPriors
        What :func:`~pymc_sle.sle_priors` returned (``start="mode"`` finds the
        basins).
    draws, tune, chains : int
        Per basin, as in :func:`pymc.sample`.
    target_accept : float, optional
        NUTS's target acceptance rate, in ``(0, 1)``. By default ``ONE_BASIN_TARGET_ACCEPT``
        (0.9, above PyMC's 0.8, which left divergences on the examples' models) with one basin
        and ``BASINS_TARGET_ACCEPT`` (0.95) with several, whose chains sample ``eta`` and
        ``sigma`` on centred log scales (:doc:`/hyperposterior`). Raise it to 0.95 when a
        one-basin fit reports divergences.
    min_mass : float, default ``DEFAULT_POLICY.min_basin_mass`` (0.005)
        Basins with less posterior mass are not sampled: they lie in the interval of a sampled
        neighbour, whose weight includes their mass. Each sampled basin costs a run of
        ``chains`` chains.
    random_seed : int, optional
        Seed; basin ``b`` uses ``random_seed + b``.
    model : pymc.Model, optional
        The model (default: the one on the context stack).
    **sample_kwargs
        Passed to :func:`pymc.sample` (``cores``, ``nuts_sampler``, ``init``, ...).
        ``cores`` defaults to one chain process per CPU, at most 4 (PyMC's own default
        would run a 2-core machine's chains one after another). Both
        samplers adapt a mass matrix with the posterior's correlations -- ``eta`` with ``ls``
        above all, which a diagonal one cannot follow (:doc:`/how-to/samplers`): PyMC's NUTS
        a dense one started from the curvature at the mode it climbs to from the chains'
        start (L-BFGS, then 2d gradient evaluations for d variables) unless you pass
        ``init``, nutpie with
        ``nuts_sampler_kwargs`` defaulting to ``{"low_rank_modified_mass_matrix": True}``
        (keys you pass win).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` and ``sample_stats`` with ``chains`` chains. ``posterior.attrs`` holds the
        ``target_accept`` used. With several basins, ``sample_stats["basin"]`` is each draw's
        basin (0, 1, ... in order of radius), and the ``attrs`` hold, per basin in order of
        radius, ``basin_radius``, ``basin_weight``, ``basin_draws``, ``basin_cuts`` (the radii
        where neighbouring intervals meet) and each basin's ``basin_r_hat_max``,
        ``basin_ess_bulk_min``, ``basin_ess_tail_min`` and
        ``basin_divergences`` (all of its chains' draws: the pooled ``sample_stats`` keep only
        the thinned ones), with the variables of its worst r-hat and smallest bulk ESS
        (``basin_r_hat_var``, ``basin_ess_bulk_var``).

    Raises
    ------
    TypeError
        If ``priors`` is not what ``sle_priors`` returns.
    ValueError
        If ``target_accept`` is given and not in ``(0, 1)``, ``min_mass`` is not in
        ``[0, 1)``, or a ``step`` is passed.
    """
    if target_accept is not None and not 0.0 < target_accept < 1.0:
        raise ValueError(f"`target_accept` must be in (0, 1), but got {target_accept!r}")
    if "step" in sample_kwargs:
        raise ValueError(
            "`step` cannot be passed: sample_basins samples a copy of the model per radius "
            "basin and builds each one's NUTS; to sample with your own step method, sample the "
            "models of sle.basin_models(priors) yourself"
        )
    model = pm.modelcontext(model)
    confined = basin_models(priors, min_mass=min_mass, model=model)
    if sample_kwargs.get("cores") is None:
        sample_kwargs["cores"] = default_cores()
    if sample_kwargs.get("nuts_sampler") == "nutpie":
        sample_kwargs["nuts_sampler_kwargs"] = {
            **NUTPIE_DEFAULTS,
            **(sample_kwargs.get("nuts_sampler_kwargs") or {}),
        }
    if target_accept is None:
        target_accept = ONE_BASIN_TARGET_ACCEPT if len(confined) == 1 else BASINS_TARGET_ACCEPT

    def sample(model: pm.Model, seed: int | None) -> az.InferenceData:
        with _sampling(chains, sample_kwargs):
            if sample_kwargs.get("nuts_sampler", "pymc") != "pymc" or "init" in sample_kwargs:
                nuts = {"target_accept": target_accept}
            else:
                nuts = pymc_nuts(model, chains=chains, target_accept=target_accept,
                                 random_seed=seed)  # fmt: skip
            idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed,
                              model=model, **nuts, **sample_kwargs)  # fmt: skip
        idata.posterior.attrs["target_accept"] = target_accept
        return idata

    if len(confined) == 1:
        return sample(confined[0][1], random_seed)
    basins = [basin for basin, _ in confined]
    meeting = cuts(basins)
    fits, diagnostics = [], []
    for b, (_, restricted) in enumerate(confined):
        fit = sample(restricted, None if random_seed is None else random_seed + b)
        fits.append(fit)
        summary = az.summary(fit, var_names=priors.var_names(model, fit), round_to="none")
        diagnostics.append(worst_values(fit, summary))
    # A basin too light to sample lies in a sampled one's interval, which holds its mass too.
    weights = np.zeros(len(basins))
    np.add.at(weights, np.searchsorted(meeting, [b.radius for b in priors.basins]),
              [b.mass for b in priors.basins])  # fmt: skip
    weights /= weights.sum()
    pooled, counts = _pool(fits, weights, draws, np.random.default_rng(random_seed))
    pooled.posterior.attrs.update(
        {
            "basin_radius": [b.radius for b in basins],
            "basin_weight": weights.tolist(),
            "basin_cuts": meeting,
            **{f"basin_{key}": [d[key] for d in diagnostics] for key in diagnostics[0]},
            "basin_draws": counts.tolist(),
            "target_accept": target_accept,
        }
    )
    return pooled


def basin_diagnostics(idata: az.InferenceData) -> dict[str, list[float]] | None:
    """The per-basin diagnostics :func:`~pymc_sle.sample_basins` stored, or ``None``
    for a single-basin (ordinary) posterior. The worst variables' names are included when the
    result has them."""
    attrs = idata.posterior.attrs
    if "basin_weight" not in attrs:
        return None
    keys = _ATTRS + tuple(k for k in _WORST_VARIABLE_ATTRS if k in attrs)
    return {key: list(attrs[key]) for key in keys}
