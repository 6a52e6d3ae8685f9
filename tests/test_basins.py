"""Sampling a posterior whose basins NUTS cannot cross: every basin, pooled by its mass."""

import numpy as np
import pymc as pm
import pytest

from pymc_sle.evaluation.holdout import convergence
from pymc_sle.inference import basin_diagnostics, sample_basins
from pymc_sle.priors import Basin, SLEPriors, sle_priors

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
    pooled = sample_basins(priors, model=model, random_seed=1, **SAMPLE)
    x = pooled.posterior["x"].values
    assert x.shape == (2, 200)
    for chain in x:  # every pooled chain is a sample of the mixture, draw counts by mass
        assert np.mean(chain < 0) == pytest.approx(0.7, abs=0.01)
    assert x.mean() == pytest.approx(0.7 * -10 + 0.3 * 10, abs=0.3)
    assert pooled.sample_stats["diverging"].shape == (2, 200)
    diagnostics = basin_diagnostics(pooled)
    assert diagnostics["basin_weight"] == pytest.approx([0.7, 0.3])
    assert diagnostics["basin_draws"] == [140, 60]
    assert diagnostics["basin_outside"] == [0.0, 0.0]
    assert all(r < 1.05 for r in diagnostics["basin_r_hat_max"])
    assert basin_diagnostics(plain) is None
    _, worst = convergence(pooled, ["x"])  # what fit_and_score reports: the worst basin
    assert worst["basins"] == 2
    assert worst["r_hat_max"] == max(diagnostics["basin_r_hat_max"])
    assert worst["ess_bulk_min"] == min(diagnostics["basin_ess_bulk_min"])
    assert convergence(plain, ["x"])[1]["basins"] == 1
    assert model.rvs_to_initial_values[model["x"]] is None  # the model's start is restored


def test_basins_below_min_mass_are_dropped_and_one_basin_is_pm_sample():
    """With one basin, sample_basins is pm.sample with target_accept 0.9 (PyMC's is 0.8)."""
    model, priors = two_wells(weights=(0.995, 0.005))
    one = sample_basins(priors, model=model, random_seed=3, **SAMPLE)
    with model:
        reference = pm.sample(random_seed=3, target_accept=0.9, **SAMPLE)
    np.testing.assert_array_equal(one.posterior["x"].values, reference.posterior["x"].values)
    assert basin_diagnostics(one) is None


def test_sample_basins_validates():
    model, priors = two_wells()
    with pytest.raises(TypeError, match=r"`priors` must be what pymc_sle\.priors\.sle_priors"):
        sample_basins(dict(priors), model=model)
    with pytest.raises(ValueError, match=r"`min_mass` must be in \[0, 1\), but got 1.0"):
        sample_basins(priors, model=model, min_mass=1.0)
    for bad in (0.0, 1.0):
        message = rf"`target_accept` must be in \(0, 1\), but got {bad}"
        with pytest.raises(ValueError, match=message):
            sample_basins(priors, model=model, target_accept=bad)


def test_sle_priors_reports_basins_with_starts_inside_them():
    x = np.sort(np.random.default_rng(0).uniform(size=30))
    D = np.abs(x[:, None] - x[None, :])
    with pm.Model():
        priors = sle_priors(D, np.arange(30), np.sin(6 * x), names={"radius": "r"})
        assert isinstance(priors, SLEPriors) and sorted(priors) == ["eta", "ls", "radius", "sigma"]
        assert priors.basins and sum(b.mass for b in priors.basins) <= 1.0 + 1e-12
        masses = [b.mass for b in priors.basins]
        assert masses == sorted(masses, reverse=True)
        for basin in priors.basins:
            assert set(basin.start) == {"r", "ls_rel", "eta", "sigma"}  # the sampled variables
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


def test_sample_basins_warns_when_chains_leave_their_basin():
    """One well split at 0 into two 'basins': the chains cross, and pooling would double count."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
    basins = (Basin(-1.0, 0.5, -20.0, 0.0, {"x": -1.0}), Basin(1.0, 0.5, 0.0, 20.0, {"x": 1.0}))
    with pytest.warns(UserWarning, match=r"Chains left the radius basin .*r = -1: \d+ %"):
        pooled = sample_basins(SLEPriors({"radius": x}, basins), model=model, random_seed=1,
                               **SAMPLE)  # fmt: skip
    assert all(0.3 < share < 0.7 for share in basin_diagnostics(pooled)["basin_outside"])
