"""Sample a GP with NUTS, predict held-out points and score them, with convergence diagnostics.

The one fit-predict-score routine of the library: the demo, the examples and every benchmark
that reports a posterior call :func:`fit_and_score`, so they sample, thin, predict and report in
the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from pymc.gp.util import JITTER_DEFAULT
from threadpoolctl import threadpool_limits

from pymc_sle._pymc_compat import build_conditional_marginals
from pymc_sle.evaluation._metrics import evaluate
from pymc_sle.evaluation._new_points import own_landmark_predictive
from pymc_sle.inference._priors import SLEPriors
from pymc_sle.inference._sampler import (
    ONE_BASIN_TARGET_ACCEPT,
    basin_diagnostics,
    sample_basins,
    worst_values,
)

__all__ = ["HoldoutFit", "NutsSettings", "convergence", "fit_and_score", "holdout_predictive"]


#: How ``fit_and_score`` predicts the test points.
_PREDICTIONS = ("conditional", "own_landmark")
#: What each sampler is told to keep divergence records (``NutsSettings.divergence_records``).
_DIVERGENCE_RECORDS = {
    "pymc": {"keep_warning_stat": True},
    "nutpie": {"nuts_sampler_kwargs": {"store_divergences": True}},
}


@dataclass(frozen=True)
class NutsSettings:
    """How :func:`~pymc_sle.evaluation.fit_and_score` samples.

    Attributes
    ----------
    draws, tune, chains, cores : int
        As in :func:`pymc.sample`.
    target_accept : float or None
        NUTS target acceptance rate, in ``(0, 1)``. ``None``: with ``priors`` in
        :func:`fit_and_score`, :func:`~pymc_sle.sample_basins`'s choice (0.9 with one
        radius basin, 0.95 with several); without, 0.9.
    init : str
        PyMC's initialisation and mass-matrix adaptation, e.g. ``"jitter+adapt_diag"`` or
        ``"jitter+adapt_full"`` (ignored by other NUTS implementations).
    nuts_sampler : str
        ``"pymc"``, ``"nutpie"``, ``"numpyro"`` or ``"blackjax"``.
    seed : int
        Seed of the sampler and of the posterior predictive draws.
    predictive_draws : int or None
        Predict from about this many posterior draws, evenly thinned; ``None`` uses them all.
        With ``prediction="own_landmark"``, the number of draws sampled from the predictive.
    own_landmark_draws : int
        With ``prediction="own_landmark"`` in :func:`fit_and_score`: about this many posterior
        draws, evenly thinned, are weighed by
        :func:`~pymc_sle.own_landmark_predictive` (one factorisation per
        test point and draw, or a low-rank update of one), in ``cores`` threads.
    progressbar : bool
        Show the sampler's progress bar (PyMC's or nutpie's).
    divergence_records : bool
        Keep where each divergent trajectory left from, not only the draw it records (an
        earlier state): nutpie's ``store_divergences=True`` (``divergence_start`` in the sample
        stats) or PyMC's ``keep_warning_stat=True`` (``SamplerWarning.divergence_point_source``).
        Only for ``nuts_sampler`` ``"pymc"`` and ``"nutpie"``.
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    cores: int = 2
    target_accept: float | None = None
    init: str = "jitter+adapt_diag"
    nuts_sampler: str = "pymc"
    seed: int = 0
    predictive_draws: int | None = None
    own_landmark_draws: int = 100
    progressbar: bool = False
    divergence_records: bool = False

    def __post_init__(self):
        if self.target_accept is not None and not 0.0 < self.target_accept < 1.0:
            raise ValueError(
                f"`target_accept` must be in (0, 1) or None, but got {self.target_accept!r}"
            )
        if self.divergence_records and self.nuts_sampler not in _DIVERGENCE_RECORDS:
            raise ValueError(
                "`divergence_records=True` needs `nuts_sampler` 'pymc' or 'nutpie', but got "
                f"{self.nuts_sampler!r}"
            )


@dataclass
class HoldoutFit:
    """A sampled GP, its held-out scores and its convergence diagnostics.

    Attributes
    ----------
    idata : arviz.InferenceData
        Posterior, sample stats and the posterior predictive of ``y_test`` (and ``f_test``);
        ``posterior.attrs["target_accept"]`` is the target acceptance NUTS ran at.
    scores : dict
        ``{"rmse", "crps", "picp", "nlpd"}`` of ``y_test``
        (:func:`pymc_sle.evaluate`).
    diagnostics : dict
        ``{"r_hat_max", "ess_bulk_min", "ess_tail_min", "divergences", "basins"}`` over the free
        variables, and with ``priors`` the deterministic ``ls`` (see :func:`convergence`).
    summary : pandas.DataFrame
        ``arviz.summary`` of the same variables.
    sampling_seconds, seconds : float
        Wall time of ``pm.sample`` (compilation included), and of the whole fit (sampling,
        prediction and scoring).
    pareto_k : numpy.ndarray or None
        With ``prediction="own_landmark"``: the Pareto shape of each test point's weights
        (:class:`~pymc_sle.OwnLandmarkPredictive`; ``f_test``'s are the
        same); ``None`` otherwise.
    """

    idata: az.InferenceData
    scores: dict[str, float]
    diagnostics: dict[str, float]
    summary: pd.DataFrame
    sampling_seconds: float
    seconds: float
    pareto_k: np.ndarray | None = None


def convergence(idata, var_names) -> tuple[pd.DataFrame, dict[str, float]]:
    """ArviZ's summary of ``var_names`` and its worst values: largest r-hat, smallest bulk and
    tail ESS, the number of divergent transitions (0 when the sampler reports none), and the
    variables with the largest r-hat and the smallest bulk ESS (``r_hat_var``, ``ess_bulk_var``,
    as the summary names them, e.g. ``"sigma"`` or ``"w[3]"``; ``""`` where undefined, e.g. for
    one chain).

    For a posterior pooled from several radius basins
    (:func:`~pymc_sle.sample_basins`), r-hat and ESS are the worst over the basins'
    own chains, which is what measures convergence there, and the divergences are counted over
    all their draws (not only the pooled ones); ``basins`` counts them (1 otherwise). The worst
    variables are then the worst basin's (``""`` for a result stored without them).
    """
    summary = az.summary(idata, var_names=list(var_names), round_to="none")
    worst = {**worst_values(idata, summary), "basins": 1}
    per_basin = basin_diagnostics(idata)
    if per_basin is not None:
        r_hat, ess_bulk = per_basin["basin_r_hat_max"], per_basin["basin_ess_bulk_min"]
        slowest, least = int(np.argmax(r_hat)), int(np.argmin(ess_bulk))
        worst.update(
            r_hat_max=r_hat[slowest],
            ess_bulk_min=ess_bulk[least],
            ess_tail_min=min(per_basin["basin_ess_tail_min"]),
            divergences=sum(per_basin["basin_divergences"]),
            basins=len(per_basin["basin_weight"]),
            r_hat_var=per_basin.get("basin_r_hat_var", [""] * len(r_hat))[slowest],
            ess_bulk_var=per_basin.get("basin_ess_bulk_var", [""] * len(ess_bulk))[least],
        )
    return summary, worst


def _marginal_predictive(gp: pm.gp.Marginal, name: str, X_test, pred_noise: bool):
    """``name ~ Normal(mu_i, sd_i)`` independently at each test input: the marginals of
    ``gp.conditional(name, X_test, pred_noise)``. Held-out scores read one point at a time, and
    these draws cost O(n_test) after the training solve, where the joint ``MvNormal`` factorises
    an n_test x n_test covariance per posterior draw. The latent variance gets the jitter that
    ``gp.conditional`` adds to the joint covariance's diagonal; round-off below zero is clipped."""
    mu, var = build_conditional_marginals(gp, X_test, pred_noise, JITTER_DEFAULT)
    if not pred_noise:
        var = var + JITTER_DEFAULT
    return pm.Normal(name, mu=mu, sigma=pt.sqrt(pt.maximum(var, 0.0)))


def fit_and_score(
    model: pm.Model,
    gp: pm.gp.Marginal,
    X_test,
    y_test,
    settings: NutsSettings | None = None,
    *,
    latent: bool = False,
    priors: SLEPriors | None = None,
    prediction: str = "conditional",
) -> HoldoutFit:
    """Sample ``model`` with NUTS, predict ``y_test`` at ``X_test`` and score the prediction.

    Sampling runs with one BLAS thread per process: parallel chains each start a BLAS thread
    pool otherwise, and on a small machine they fight over the cores (:doc:`/performance`). The
    prediction adds ``y_test`` (with noise) and, with ``latent=True``, the noise-free ``f_test``
    to the posterior predictive, drawn from the marginals of ``gp.conditional`` at each test
    point: every score (and every predictive band) reads one point at a time, and joint draws
    would factorise an ``n_test x n_test`` covariance per posterior draw, which costs hours at
    thousands of test points. Use ``gp.conditional`` yourself for correlated draws.

    Parameters
    ----------
    model : pymc.Model
        The model holding ``gp``'s marginal likelihood.
    gp : pymc.gp.Marginal
        The GP (``pm.gp.Marginal`` or :class:`pymc_sle.gp.Marginal`).
    X_test : array_like
        Inputs of the held-out points, in ``gp``'s input format.
    y_test : array_like of shape (n_test,)
        Held-out observations.
    settings : NutsSettings, optional
        Sampler settings (default: ``NutsSettings()``).
    latent : bool, default False
        Also draw the latent ``f_test``.
    priors : SLEPriors, optional
        The model's :func:`~pymc_sle.sle_priors`: sample with
        :func:`~pymc_sle.sample_basins`, every radius basin pooled by its mass (the
        same as ``pm.sample`` when there is one basin).
    prediction : {"conditional", "own_landmark"}, default "conditional"
        ``"conditional"``: the marginals of ``gp.conditional``. ``"own_landmark"``: each test
        point predicted with its own landmark, as every training point is
        (:func:`~pymc_sle.own_landmark_predictive` on
        ``settings.own_landmark_draws`` posterior draws, sampled ``predictive_draws`` times);
        it needs the landmark kernels in index mode.

    Returns
    -------
    HoldoutFit
    """
    settings = settings or NutsSettings()
    _check_prediction(prediction)
    start = time.perf_counter()
    with model, threadpool_limits(limits=1, user_api="blas"):
        options = dict(
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.cores,
            init=settings.init,
            target_accept=settings.target_accept,
            nuts_sampler=settings.nuts_sampler,
            random_seed=settings.seed,
            progressbar=settings.progressbar,
            compute_convergence_checks=False,
        )
        if settings.divergence_records:
            options.update(_DIVERGENCE_RECORDS[settings.nuts_sampler])
        if priors is not None:
            idata = sample_basins(priors, **options)
        else:
            if settings.target_accept is None:
                options["target_accept"] = ONE_BASIN_TARGET_ACCEPT
            idata = pm.sample(**options)
            idata.posterior.attrs["target_accept"] = options["target_accept"]
        sampling_seconds = time.perf_counter() - start
        # what NUTS sampled, before the prediction adds variables: sample_basins' pooled draws
        # of several basins have no basin label
        watched = (
            [rv.name for rv in model.free_RVs] if priors is None else priors.var_names(model, idata)
        )
        predictive, pareto_k = holdout_predictive(
            idata, gp, X_test, settings, model=model, latent=latent, prediction=prediction
        )
    idata.add_groups(posterior_predictive=predictive.posterior_predictive)
    summary, diagnostics = convergence(idata, watched)
    return HoldoutFit(
        idata=idata,
        scores=evaluate(idata, np.asarray(y_test), "y_test"),
        diagnostics=diagnostics,
        summary=summary,
        sampling_seconds=sampling_seconds,
        seconds=time.perf_counter() - start,
        pareto_k=pareto_k,
    )


def holdout_predictive(
    idata: az.InferenceData,
    gp: pm.gp.Marginal,
    X_test,
    settings: NutsSettings | None = None,
    *,
    model: pm.Model | None = None,
    latent: bool = False,
    prediction: str = "conditional",
) -> tuple[az.InferenceData, np.ndarray | None]:
    """The posterior predictive of held-out points from a sampled posterior, drawn as
    :func:`~pymc_sle.evaluation.fit_and_score` draws it: ``y_test`` (with noise) and,
    with ``latent=True``, the noise-free ``f_test``, independently at each test point.

    Use it to predict a posterior :func:`fit_and_score` sampled in the other way, e.g. the
    own-landmark predictive of a fit scored with ``gp.conditional``'s marginals.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of ``model``.
    gp : pymc.gp.Marginal
        The GP (``pm.gp.Marginal`` or :class:`pymc_sle.gp.Marginal`).
    X_test : array_like
        Inputs of the held-out points, in ``gp``'s input format.
    settings : NutsSettings, optional
        ``seed``, ``predictive_draws``, ``own_landmark_draws``, ``cores`` (threads of the
        own-landmark predictive) and ``chains x draws`` (the posterior's size, for thinning), as
        in :func:`fit_and_score` (default: ``NutsSettings()``).
    model : pymc.Model, optional
        The model holding ``gp``'s marginal likelihood; defaults to the model on the context
        stack. ``prediction="conditional"`` adds the variables ``y_test`` (and ``f_test``) to
        it, so it predicts once per model.
    latent : bool, default False
        Also draw the latent ``f_test``.
    prediction : {"conditional", "own_landmark"}, default "conditional"
        As in :func:`fit_and_score`.

    Returns
    -------
    predictive : arviz.InferenceData
        Its group ``posterior_predictive`` holds ``y_test`` (and ``f_test``).
    pareto_k : numpy.ndarray or None
        With ``prediction="own_landmark"``, the Pareto shape of each test point's importance
        weights; ``None`` otherwise.
    """
    settings = settings or NutsSettings()
    _check_prediction(prediction)
    model = pm.modelcontext(model)
    targets = {"y_test": True, **({"f_test": False} if latent else {})}
    if prediction == "conditional":
        with model, threadpool_limits(limits=1, user_api="blas"):
            for name, noise in targets.items():
                _marginal_predictive(gp, name, X_test, pred_noise=noise)
            predictive = pm.sample_posterior_predictive(
                _thinned(idata, settings, settings.predictive_draws), var_names=list(targets),
                random_seed=settings.seed, progressbar=False,
            )  # fmt: skip
        return predictive, None
    source = _thinned(idata, settings, settings.own_landmark_draws)
    own = {name: own_landmark_predictive(source, gp, X_test, model=model, pred_noise=noise,
                                         n_jobs=settings.cores)
           for name, noise in targets.items()}  # fmt: skip
    count = settings.predictive_draws or settings.chains * settings.draws
    predictive = az.from_dict(posterior_predictive={  # y_test, f_test: two streams
        name: new.sample(count, seed=[settings.seed, i])[None]
        for i, (name, new) in enumerate(own.items())
    })  # fmt: skip
    return predictive, own["y_test"].pareto_k


def _check_prediction(prediction) -> None:
    if prediction not in _PREDICTIONS:
        raise ValueError(f"`prediction` must be one of {_PREDICTIONS}, but got {prediction!r}")


def _thinned(idata: az.InferenceData, settings: NutsSettings, draws: int | None):
    """``idata`` with about ``draws`` of the ``chains x draws`` that ``settings`` samples, evenly
    thinned (all for ``None``)."""
    if draws is None:
        return idata
    step = max(1, settings.chains * settings.draws // draws)
    return idata.sel(draw=slice(None, None, step))
