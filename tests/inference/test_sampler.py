"""Sampling a posterior whose basins NUTS cannot cross: every basin, pooled by its mass."""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.distributions.transforms import Interval
from pymc.step_methods.hmc.quadpotential import QuadPotentialFullAdapt
from scipy import stats

import pymc_sle as sle
from pymc_sle import SLEPriors, basin_diagnostics, basin_models, sample_basins, sle_priors
from pymc_sle.evaluation import convergence
from pymc_sle.inference import DEFAULT_POLICY, Basin
from pymc_sle.inference._basins import cuts
from pymc_sle.inference._mass_matrix import pymc_nuts
from pymc_sle.inference._sampler import _intervals
from pymc_sle.inference._transforms import CenteredLog

SAMPLE = dict(draws=200, tune=200, chains=2, cores=1, progressbar=False,
              compute_convergence_checks=False)  # fmt: skip


def two_wells(weights=(0.7, 0.3)):
    """x has modes at -10 and +10 (sd 0.5): hundreds of nats apart, NUTS never crosses."""
    with pm.Model() as model:
        x = pm.NormalMixture("x", w=np.array(weights), mu=np.array([-10.0, 10.0]), sigma=0.5)
    basins = (
        Basin(-10.0, weights[0], -20.0, 0.0, {"x": -10.0}),
        Basin(10.0, weights[1], 0.0, 20.0, {"x": 10.0}),
    )
    return model, SLEPriors({"radius": x}, basins)


def test_plain_nuts_sees_one_well_and_sample_basins_both_by_their_mass():
    model, priors = two_wells()
    plain = pm.sample(model=model, random_seed=1, **SAMPLE)
    assert np.unique(np.sign(plain.posterior["x"].values)).size == 1  # the failure mode
    # the pooling under test, on plain pm.sample's mass matrix (one variable: nothing to correlate)
    pooled = sample_basins(priors, model=model, random_seed=1, init="jitter+adapt_diag", **SAMPLE)
    x = pooled.posterior["x"].values
    assert x.shape == (2, 200)
    for chain in x:  # every pooled chain is a sample of the mixture, draw counts by mass
        assert np.mean(chain < 0) == pytest.approx(0.7, abs=0.01)
    assert x.mean() == pytest.approx(0.7 * -10 + 0.3 * 10, abs=0.3)
    assert pooled.sample_stats["diverging"].shape == (2, 200)
    diagnostics = basin_diagnostics(pooled)
    assert diagnostics["basin_weight"] == pytest.approx([0.7, 0.3])
    assert diagnostics["basin_draws"] == [140, 60]
    assert diagnostics["basin_cuts"] == [0.0]
    assert pooled.posterior.attrs["target_accept"] == 0.95  # several basins
    assert all(r < 1.05 for r in diagnostics["basin_r_hat_max"])
    # ArviZ's own report of the pooled chains is valid: each chain mixes the basins throughout
    assert az.summary(pooled, kind="diagnostics")["r_hat"]["x"] < 1.02
    basin = pooled.sample_stats["basin"].values
    np.testing.assert_array_equal(basin, (x > 0).astype(int))  # which basin each draw is from
    assert basin_diagnostics(plain) is None
    _, worst = convergence(pooled, ["x"])  # what fit_and_score reports: the worst basin
    assert worst["basins"] == 2
    assert worst["r_hat_max"] == max(diagnostics["basin_r_hat_max"])
    assert worst["ess_bulk_min"] == min(diagnostics["basin_ess_bulk_min"])
    assert worst["divergences"] == sum(diagnostics["basin_divergences"])
    # which variable was worst, in each basin and overall (here the only one)
    assert diagnostics["basin_r_hat_var"] == diagnostics["basin_ess_bulk_var"] == ["x", "x"]
    assert worst["r_hat_var"] == worst["ess_bulk_var"] == "x"
    assert convergence(plain, ["x"])[1]["basins"] == 1
    assert model.rvs_to_initial_values[model["x"]] is None  # the model's start is restored


def _ar1(rng, mean, rho, chains, draws):
    """``chains`` stationary AR(1) chains of unit variance and lag-one correlation ``rho``."""
    x = np.empty((chains, draws))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=chains)
    return mean + x


@pytest.mark.parametrize("means", [(0.0, 0.0), (-10.0, 10.0)])
def test_pooled_chains_keep_each_basin_in_order_so_arviz_neither_flags_nor_inflates(means):
    """Two basins of autocorrelated draws (AR(1), rho 0.95) pooled half and half. Concatenating
    each chain's basins made r-hat flag well-mixed chains (1.30 on a two-basin SLE posterior);
    shuffling the draws would hide their autocorrelation and inflate the ESS. Interleaving at
    random while keeping each basin's order does neither: with equal means the ESS is that of the
    thinned chains (every second draw: lag-one correlation rho**2), and with far-apart means
    the MCSE still covers the real error (the weights are fixed, so the between-basin part of
    the error is zero and ArviZ's estimate is conservative)."""
    from pymc_sle.inference._sampler import _pool

    rng = np.random.default_rng(0)
    chains, draws, rho = 4, 2000, 0.95
    fits = [
        az.from_dict(posterior={"x": _ar1(rng, mean, rho, chains, draws)},
                     sample_stats={"diverging": np.zeros((chains, draws), dtype=bool)})
        for mean in means
    ]  # fmt: skip
    pooled, counts = _pool(fits, np.array([0.5, 0.5]), draws, np.random.default_rng(1))
    assert counts.tolist() == [1000, 1000]
    x, basin = pooled.posterior["x"].values, pooled.sample_stats["basin"].values
    keep = np.linspace(0, draws - 1, 1000).round().astype(int)
    for c in range(chains):  # each basin's thinned draws, in their order
        for b in (0, 1):
            np.testing.assert_array_equal(x[c, basin[c] == b], fits[b].posterior["x"][c, keep])
    summary = az.summary(pooled, kind="diagnostics").loc["x"]
    assert summary["r_hat"] < 1.02
    thinned = rho**2  # each basin keeps every second draw
    tau = (1 + thinned) / (1 - thinned)
    true_ess = chains * draws / tau  # both basins' within-basin error, equal weights
    if means[0] == means[1]:
        assert summary["ess_bulk"] == pytest.approx(true_ess, rel=0.3)  # a shuffle: ~8,000
    true_mcse = np.sqrt(0.5**2 * 2 * tau / (chains * 1000))  # between-basin part: none
    assert summary["mcse_mean"] >= 0.8 * true_mcse


def test_divergences_of_every_basin_draw_count_not_only_the_pooled_ones():
    """Pooling thins each basin's draws: a divergence in a dropped draw must still be reported."""
    rng = np.random.default_rng(0)
    diverging = np.zeros((2, 50), dtype=bool)
    diverging[0, 3] = True
    idata = az.from_dict(posterior={"x": rng.normal(size=(2, 50))},
                         sample_stats={"diverging": diverging})  # fmt: skip
    attrs = {"basin_weight": [0.5, 0.5], "basin_r_hat_max": [1.0, 1.0],
             "basin_ess_bulk_min": [400.0, 500.0], "basin_ess_tail_min": [300.0, 600.0],
             "basin_divergences": [3, 2]}  # fmt: skip
    idata.posterior.attrs.update({**attrs, "basin_radius": [1.0, 2.0], "basin_cuts": [1.5],
                                  "basin_draws": [25, 25]})  # fmt: skip
    assert convergence(idata, ["x"])[1]["divergences"] == 5
    # a result stored before the worst variables were kept: their names are unknown, not guessed
    assert convergence(idata, ["x"])[1]["r_hat_var"] == ""
    idata.posterior.attrs.update(basin_r_hat_var=["x", "y"], basin_ess_bulk_var=["z", "w"])
    assert convergence(idata, ["x"])[1]["ess_bulk_var"] == "z"  # the basin with ESS 400
    idata.posterior.attrs.clear()
    assert convergence(idata, ["x"])[1]["divergences"] == 1


def test_a_basin_just_above_the_default_min_mass_is_sampled_apart():
    """SAXS split 0's radius shoulder held 0.72 %: the default samples such a basin with chains
    of its own instead of leaving it to its neighbour's."""
    model, priors = two_wells(weights=(0.994, 0.006))
    pooled = sample_basins(priors, model=model, random_seed=4, **SAMPLE)
    assert basin_diagnostics(pooled)["basin_weight"] == pytest.approx([0.994, 0.006])
    assert np.mean(pooled.posterior["x"].values > 0) == pytest.approx(0.006, abs=0.003)


def test_basins_below_min_mass_are_dropped_and_one_basin_is_pm_sample():
    """With one basin, sample_basins is pm.sample with target_accept 0.9 (PyMC's is 0.8) and a
    dense mass matrix started from the curvature (PyMC's is diagonal)."""
    model, priors = two_wells(weights=(0.997, 0.003))
    assert priors.basins[1].mass < DEFAULT_POLICY.min_basin_mass <= priors.basins[0].mass
    one = sample_basins(priors, model=model, random_seed=3, **SAMPLE)
    # the chains start in the heavy basin, which holds the model's start
    nuts = pymc_nuts(model, chains=SAMPLE["chains"], target_accept=0.9, random_seed=3)
    reference = pm.sample(random_seed=3, model=model, **nuts, **SAMPLE)
    np.testing.assert_array_equal(one.posterior["x"].values, reference.posterior["x"].values)
    assert one.posterior.attrs["target_accept"] == 0.9
    assert basin_diagnostics(one) is None


def _record_sample_calls(monkeypatch) -> list[dict]:
    """Replace ``pm.sample`` under ``sample_basins`` by a stand-in that records its keyword
    arguments (the list returned) and returns an empty fit."""
    import pymc_sle.inference._sampler as basins

    seen = []

    def record(**kwargs):
        seen.append(kwargs)
        return az.from_dict(posterior={"x": np.zeros((1, 2))})

    monkeypatch.setattr(basins.pm, "sample", record)
    return seen


@pytest.mark.parametrize(
    "passed, expected",
    [
        (None, {"low_rank_modified_mass_matrix": True}),
        ({"low_rank_modified_mass_matrix": False}, {"low_rank_modified_mass_matrix": False}),
        ({"store_divergences": True},
         {"low_rank_modified_mass_matrix": True, "store_divergences": True}),
    ],
)  # fmt: skip
def test_nutpie_gets_the_low_rank_mass_matrix_unless_told_otherwise(monkeypatch, passed, expected):
    seen = _record_sample_calls(monkeypatch)
    model, priors = two_wells(weights=(1.0, 0.0))
    extra = {} if passed is None else {"nuts_sampler_kwargs": passed}
    sample_basins(priors, model=model, nuts_sampler="nutpie", **extra)
    sample_basins(priors, model=model)  # PyMC's NUTS: nutpie's settings not added
    assert seen[0]["nuts_sampler_kwargs"] == expected and "init" not in seen[0]
    assert "nuts_sampler_kwargs" not in seen[1]


def test_pymcs_nuts_gets_the_curvature_started_mass_matrix_unless_told_otherwise(monkeypatch):
    seen = _record_sample_calls(monkeypatch)
    model, priors = two_wells(weights=(1.0, 0.0))
    sample_basins(priors, model=model)
    sample_basins(priors, model=model, init="adapt_diag")
    sample_basins(priors, model=model, nuts_sampler="pymc", target_accept=0.85)
    own, init, named = seen
    assert isinstance(own["step"].potential, QuadPotentialFullAdapt) and "init" not in own
    assert own["step"].target_accept == 0.9 and len(own["initvals"]) == 4
    assert init["init"] == "adapt_diag" and "step" not in init and init["target_accept"] == 0.9
    assert named["step"].target_accept == 0.85
    with pytest.raises(ValueError, match=r"`step` cannot be passed.*basin_models"):
        sample_basins(priors, model=model, step=pm.Metropolis(model=model))


def test_the_dense_mass_matrix_warns_nothing():
    """PyMC calls its dense adaptation experimental; sample_basins chose it and says nothing."""
    model, priors = two_wells(weights=(1.0, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sample_basins(priors, model=model, random_seed=1, **SAMPLE)


class _Captured(Exception):
    """Raised by a stand-in ``pm.sample`` once it has seen its keyword arguments."""


@pytest.mark.parametrize(
    "weights, passed, expected",
    [
        ((1.0, 0.0), None, 0.9),  # one basin
        ((0.7, 0.3), None, 0.95),  # several
        ((0.7, 0.3), 0.85, 0.85),  # the caller's value wins
        ((1.0, 0.0), 0.97, 0.97),
    ],
)
def test_target_accept_defaults_to_0_9_with_one_basin_and_0_95_with_several(
    monkeypatch, weights, passed, expected
):
    import pymc_sle.inference._sampler as basins

    seen = []

    def capture(**kwargs):
        seen.append(kwargs["step"].target_accept)  # PyMC's NUTS, built by sample_basins
        raise _Captured

    monkeypatch.setattr(basins.pm, "sample", capture)
    model, priors = two_wells(weights=weights)
    extra = {} if passed is None else {"target_accept": passed}
    with pytest.raises(_Captured):
        sample_basins(priors, model=model, **extra)
    assert seen == [expected]
    assert (basins.ONE_BASIN_TARGET_ACCEPT, basins.BASINS_TARGET_ACCEPT) == (0.9, 0.95)


@pytest.mark.parametrize("cpus, passed, expected", [
    (2, None, 2),  # PyMC's own default would be 1 here: chains one after another
    (1, None, 1),
    (16, None, 4),
    (2, 1, 1),  # the caller's value wins
])  # fmt: skip
def test_pymcs_chains_run_one_per_cpu_unless_told(monkeypatch, cpus, passed, expected):
    import pymc_sle.inference._sampler as basins

    seen = []

    def capture(**kwargs):
        seen.append(kwargs["cores"])
        raise _Captured

    monkeypatch.setattr(basins.pm, "sample", capture)
    monkeypatch.setattr(basins.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    model, priors = two_wells(weights=(1.0, 0.0))
    with pytest.raises(_Captured):
        sample_basins(priors, model=model, **({} if passed is None else {"cores": passed}))
    assert seen == [expected]


@pytest.mark.parametrize(
    "weights, extra, limited",
    [
        ((1.0, 0.0), {"cores": 2}, True),  # parallel chains: one BLAS thread each
        ((0.7, 0.3), {"cores": 2}, True),  # every basin's run
        ((1.0, 0.0), {"cores": 1}, False),  # one chain at a time keeps the caller's threads
        ((1.0, 0.0), {"cores": 1, "nuts_sampler": "nutpie"}, True),  # chains as threads
        ((1.0, 0.0), {"cores": 2, "chains": 1}, False),
    ],
)
def test_parallel_chains_sample_with_one_blas_thread(monkeypatch, weights, extra, limited):
    from threadpoolctl import threadpool_info, threadpool_limits

    import pymc_sle.inference._sampler as basins

    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    seen = []

    def record(**kwargs):
        seen.append(blas_threads())
        shape = (kwargs["chains"], kwargs["draws"])
        stats = {"diverging": np.zeros(shape, bool)}
        return az.from_dict(posterior={"x": np.zeros(shape)}, sample_stats=stats)

    monkeypatch.setattr(basins.pm, "sample", record)
    model, priors = two_wells(weights=weights)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and max(before) == 2
        try:
            sample_basins(priors, model=model, **{"chains": 2, "draws": 2, **extra})
        finally:
            assert blas_threads() == before  # restored afterwards
    expected = [1] * len(before) if limited else before
    assert seen and all(threads == expected for threads in seen)


def test_sample_basins_validates():
    model, priors = two_wells()
    with pytest.raises(TypeError, match=r"`priors` must be what pymc_sle\.sle_priors"):
        sample_basins(dict(priors), model=model)
    with pytest.raises(ValueError, match=r"`min_mass` must be in \[0, 1\), but got 1.0"):
        sample_basins(priors, model=model, min_mass=1.0)
    for bad in (0.0, 1.0):
        message = rf"`target_accept` must be in \(0, 1\), but got {bad}"
        with pytest.raises(ValueError, match=message):
            sample_basins(priors, model=model, target_accept=bad)


def test_basin_models_are_what_sample_basins_samples():
    """One basin: the model itself. Several: confined copies in radius order, each starting at
    its basin's start and keeping its draws inside the basin's interval."""
    model, priors = two_wells(weights=(0.3, 0.7))
    [(only, same)] = basin_models(priors, model=model, min_mass=0.5)
    assert only is priors.basins[1] and same is model
    with model:  # the model on the context stack
        assert basin_models(SLEPriors({"radius": model["x"]}))[0] == (None, model)
    confined = basin_models(priors, model=model)
    assert [basin.radius for basin, _ in confined] == [-10.0, 10.0]
    for (basin, copy), sign in zip(confined, (-1, 1), strict=True):
        assert copy is not model
        assert copy.rvs_to_initial_values[copy["x"]] == basin.start["x"]
        draws = pm.sample(model=copy, random_seed=5, **{**SAMPLE, "draws": 50, "tune": 50})
        assert np.all(np.sign(draws.posterior["x"].values) == sign)
    with pytest.raises(TypeError, match=r"`priors` must be what pymc_sle\.sle_priors"):
        basin_models(dict(priors), model=model)
    with pytest.raises(ValueError, match=r"`min_mass` must be in \[0, 1\), but got -0.1"):
        basin_models(priors, model=model, min_mass=-0.1)


def test_sle_priors_reports_basins_with_starts_inside_them():
    x = np.sort(np.random.default_rng(0).uniform(size=30))
    D = np.abs(x[:, None] - x[None, :])
    with pm.Model() as model:
        priors = sle_priors(D, np.arange(30), np.sin(6 * x), names={"radius": "r"})
        assert isinstance(priors, SLEPriors) and sorted(priors) == ["eta", "ls", "radius", "sigma"]
        assert priors.basins and sum(b.mass for b in priors.basins) <= 1.0 + 1e-12
        masses = [b.mass for b in priors.basins]
        assert masses == sorted(masses, reverse=True)
        for basin in priors.basins:
            # keyed by the model's variables (renamed as the priors are), not the basin label
            assert set(basin.start) == {"r", "ls", "eta", "sigma"}
            assert priors.var_names(model) == ["r", "ls", "eta", "sigma", "r_basin"]
            assert basin.low <= basin.start["r"] <= basin.high
    with pm.Model():
        assert sle_priors(D, np.arange(30), np.sin(6 * x), start="prior").basins == ()


@pytest.mark.slow  # compiling the model for nutpie takes a minute or more on 2 cores
def test_nutpie_starts_every_basin_from_the_model_initial_values():
    pytest.importorskip("nutpie")
    model, priors = two_wells()
    pooled = sample_basins(priors, model=model, random_seed=2, nuts_sampler="nutpie", **SAMPLE)
    for chain in pooled.posterior["x"].values:
        assert np.mean(chain < 0) == pytest.approx(0.7, abs=0.01)


@pytest.mark.parametrize("transform", ["log", "decreasing"])
def test_a_well_cut_into_two_basins_is_sampled_exactly(transform):
    """log r ~ N(0, 1) cut at log r = 0.5 into two 'basins' that NUTS would cross freely: each
    sampled confined to its side, pooled by the exact masses, the normal comes back. Unconfined
    chains would count the straying draws twice; swapped weights would shift the mean by 0.6."""
    kwargs = {} if transform == "log" else {"default_transform": Interval(upper=1e6)}
    with pm.Model() as model:  # an initial value, as sle_priors sets
        r = pm.LogNormal("r", 0.0, 1.0, initval=1.0, **kwargs)
    below = stats.norm.cdf(0.5)
    basins = (
        Basin(np.exp(1.0), 1 - below, np.exp(0.6), np.exp(5.0), {"r": np.exp(1.0)}),
        Basin(np.exp(-0.5), below, np.exp(-5.0), np.exp(0.4), {"r": np.exp(-0.5)}),
    )
    sample = {**SAMPLE, "draws": 1000, "tune": 500}
    pooled = sample_basins(SLEPriors({"radius": r}, basins), model=model, random_seed=1, **sample)
    log_r = np.log(pooled.posterior["r"].values)
    diagnostics = basin_diagnostics(pooled)
    assert diagnostics["basin_cuts"] == pytest.approx([np.exp(0.5)])  # geometric midpoint
    assert diagnostics["basin_weight"] == pytest.approx([below, 1 - below])  # by radius
    for chain in log_r:  # no draw strays: exactly the basins' draw counts on either side
        assert np.sum(chain < 0.5) == diagnostics["basin_draws"][0]
    assert log_r.mean() == pytest.approx(0.0, abs=0.12)
    assert log_r.std() == pytest.approx(1.0, abs=0.08)
    assert np.quantile(log_r, [0.1, 0.9]) == pytest.approx(stats.norm.ppf([0.1, 0.9]), abs=0.15)
    assert model.rvs_to_initial_values[r] == 1.0  # the model is left as it was


def test_a_basin_too_light_to_sample_adds_its_mass_to_the_interval_holding_it():
    with pm.Model() as model:
        r = pm.LogNormal("r", 0.0, 1.0)
    basins = (
        Basin(0.5, 0.6, 0.3, 0.7, {"r": 0.5}),
        Basin(2.0, 0.397, 1.5, 3.0, {"r": 2.0}),
        Basin(1.0, 0.003, 0.8, 1.2, {"r": 1.0}),  # below the cut at sqrt(0.7 * 1.5) = 1.02
    )
    pooled = sample_basins(SLEPriors({"radius": r}, basins), model=model, random_seed=1, **SAMPLE)
    assert basin_diagnostics(pooled)["basin_weight"] == pytest.approx([0.603, 0.397])


def test_sle_model_with_two_basins_samples_each_inside_its_interval():
    """The README recipe on data whose radius posterior has two basins (76 % and 24 %): the
    model copies confine the chains (the radius's centred log transform, initial values set)."""
    x = np.sort(np.random.default_rng(2).uniform(size=30))
    D = np.abs(x[:, None] - x[None, :])
    with pm.Model() as model:
        priors = sle_priors(D, np.arange(30), np.sin(6 * x))
        cov = priors["eta"] ** 2 * sle.SLE(D, radius=priors["radius"], ls=priors["ls"])
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=np.arange(30)[:, None], y=np.sin(6 * x),
                               sigma=priors["sigma"])  # fmt: skip
    assert [round(b.mass, 2) for b in priors.basins] == [0.76, 0.24]
    sample = {**SAMPLE, "draws": 40, "tune": 40}
    pooled = sample_basins(priors, random_seed=1, model=model, **sample)
    diagnostics = basin_diagnostics(pooled)
    [cut] = diagnostics["basin_cuts"]
    for chain in pooled.posterior["radius"].values:
        assert np.sum(chain < cut) == diagnostics["basin_draws"][0]


def test_basin_intervals_in_the_radius_value_transform_space():
    """The cuts mapped by the radius's transform (sle_priors' centred log); outer ends open."""
    basins = [Basin(r, 0.25, r / 1.5, r * 1.5, {}) for r in (1.0, 4.0, 16.0)]
    transform = CenteredLog(2.0, 0.5)
    expected = (np.log([np.sqrt(1.5 * 4 / 1.5), np.sqrt(6.0 * 16 / 1.5)]) - np.log(2.0)) / 0.5
    intervals = _intervals(basins, cuts(basins), transform)
    assert [i[0] for i in intervals][1:] == pytest.approx(expected)
    assert [i[1] for i in intervals][:-1] == pytest.approx(expected)
    assert intervals[0][0] is None and intervals[-1][1] is None
