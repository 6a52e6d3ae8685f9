"""``fit_and_score``'s prediction (independent draws from the conditional's marginals, or from
the own-landmark predictive), its settings, and ``convergence``'s worst values."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.gp.util import JITTER_DEFAULT

import pymc_sle as sle
from pymc_sle import own_landmark_predictive
from pymc_sle.evaluation import NutsSettings, convergence, fit_and_score, holdout_predictive
from pymc_sle.evaluation._holdout import _marginal_predictive


@pytest.mark.parametrize("pred_noise", [False, True])
def test_marginal_predictive_draws_match_the_conditional_marginals(pred_noise):
    rng = np.random.default_rng(1)
    X, Xnew = rng.uniform(0, 1, (10, 1)), np.linspace(-0.2, 1.2, 6)[:, None]
    y = np.cos(5 * X[:, 0])
    with pm.Model():
        gp = pm.gp.Marginal(cov_func=0.8**2 * pm.gp.cov.ExpQuad(1, ls=0.25))
        gp.marginal_likelihood("y", X=X, y=y, sigma=0.3)
        mean, var = gp.predict(Xnew, point={}, diag=True, pred_noise=pred_noise)
        draws = pm.draw(_marginal_predictive(gp, "y_new", Xnew, pred_noise), 20_000, random_seed=2)
    sd = np.sqrt(var + (0.0 if pred_noise else JITTER_DEFAULT))
    assert draws.shape == (20_000, 6)
    # Monte-Carlo error of the mean is sd / sqrt(20000) ~ 0.007 sd; of the sd, ~0.005 sd.
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=float(0.03 * sd.max()))
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.03)
    # Independent across points: joint draws of nearby inputs would correlate strongly.
    corr = np.corrcoef(draws.T)[np.triu_indices(6, 1)]
    assert np.abs(corr).max() < 0.05


def test_divergence_records_need_a_sampler_that_keeps_them():
    for sampler in ("pymc", "nutpie"):
        assert NutsSettings(nuts_sampler=sampler, divergence_records=True).divergence_records
    assert not NutsSettings(nuts_sampler="numpyro").divergence_records  # off by default
    with pytest.raises(
        ValueError, match="needs `nuts_sampler` 'pymc' or 'nutpie', but got 'numpyro'"
    ):
        NutsSettings(nuts_sampler="numpyro", divergence_records=True)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, 1.2])
def test_nuts_settings_refuse_a_target_accept_outside_the_open_unit_interval(bad):
    with pytest.raises(
        ValueError, match=rf"`target_accept` must be in \(0, 1\) or None, but got {bad}"
    ):
        NutsSettings(target_accept=bad)
    assert NutsSettings().target_accept is None  # sample_basins's choice; 0.9 without priors


@pytest.mark.parametrize("passed, expected", [(None, 0.9), (0.8, 0.8)])
def test_fit_and_score_without_priors_samples_at_0_9_unless_told(monkeypatch, passed, expected):
    import pymc_sle.evaluation._holdout as holdout

    seen = []

    def capture(**kwargs):
        seen.append(kwargs["target_accept"])
        raise RuntimeError("captured")

    monkeypatch.setattr(holdout.pm, "sample", capture)
    with pm.Model() as model:
        gp = pm.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=0.3))
        gp.marginal_likelihood("y", X=np.zeros((3, 1)), y=np.zeros(3), sigma=pm.HalfNormal("s"))
    with pytest.raises(RuntimeError, match="captured"):
        fit_and_score(model, gp, np.zeros((2, 1)), np.zeros(2), NutsSettings(target_accept=passed))
    assert seen == [expected]


def test_convergence_names_the_worst_variables():
    """``stuck``'s chains sit apart (large r-hat), ``sticky`` is an AR(1) chain with small ESS,
    ``fine`` is white noise: the worst of each diagnostic is named, as the summary names it."""
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(4, 500))
    sticky = np.zeros((4, 500))
    for t in range(1, 500):
        sticky[:, t] = 0.97 * sticky[:, t - 1] + rng.normal(size=4)
    posterior = {"fine": noise, "stuck": noise + np.arange(4)[:, None], "sticky": sticky}
    stats = {"diverging": np.zeros((4, 500), dtype=bool)}
    idata = az.from_dict(posterior=posterior, sample_stats=stats)
    summary, worst = convergence(idata, list(posterior))
    assert worst["r_hat_var"] == "stuck" == summary["r_hat"].idxmax()
    assert worst["ess_bulk_var"] == summary["ess_bulk"].idxmin()
    assert worst["ess_bulk_var"] in ("stuck", "sticky")
    assert worst["r_hat_max"] == summary.loc["stuck", "r_hat"]


def test_convergence_of_one_chain_names_no_worst_variable():
    """r-hat needs two chains: undefined diagnostics name no variable, and nothing raises."""
    rng = np.random.default_rng(1)
    idata = az.from_dict(posterior={"a": rng.normal(size=(1, 50))},
                         sample_stats={"diverging": np.zeros((1, 50), dtype=bool)})  # fmt: skip
    _, worst = convergence(idata, ["a"])
    assert np.isnan(worst["r_hat_max"]) and worst["r_hat_var"] == ""


def test_own_landmark_prediction_samples_the_own_landmark_predictive():
    """``prediction="own_landmark"``: the posterior predictive holds ``predictive_draws`` draws
    of ``own_landmark_predictive`` on ``own_landmark_draws`` evenly thinned posterior draws, and
    the fit keeps its Pareto shapes; another name is refused before sampling."""
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 1, (30, 2))
    D = sle.DistanceMatrix(np.linalg.norm(points[:, None] - points[None], axis=-1))
    train, new = np.arange(24), np.arange(24, 30)[:, None]
    y = np.cos(4 * points[:24, 0]) + 0.1 * rng.standard_normal(24)
    with pm.Model() as model:
        radius = pm.LogNormal("radius", np.log(0.5), 0.2)
        cov = sle.SLE(D, landmarks=train, radius=radius, ls=1.0)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("obs", X=train[:, None], y=y, sigma=0.2)
    settings = NutsSettings(draws=40, tune=40, chains=2, cores=1, seed=4, predictive_draws=30,
                            own_landmark_draws=10)  # fmt: skip
    with pytest.raises(ValueError, match=r"`prediction` must be one of .* but got 'own'"):
        fit_and_score(model, gp, new, np.zeros(6), settings, prediction="own")
    fit = fit_and_score(model, gp, new, np.zeros(6), settings, prediction="own_landmark")
    assert fit.idata.posterior_predictive["y_test"].shape == (1, 30, 6)
    assert fit.idata.posterior.attrs["target_accept"] == 0.9  # no priors: pm.sample at 0.9
    thinned = fit.idata.sel(draw=slice(None, None, 8))  # 80 draws // 10
    expected = own_landmark_predictive(thinned, gp, new, model=model)
    np.testing.assert_array_equal(fit.pareto_k, expected.pareto_k)
    np.testing.assert_allclose(fit.idata.posterior_predictive["y_test"].values[0],
                               expected.sample(30, seed=[4, 0]))  # fmt: skip

    # The same prediction from the posterior alone; and the conditional's, which adds y_test.
    with pytest.raises(ValueError, match=r"`prediction` must be one of .* but got 'own'"):
        holdout_predictive(fit.idata, gp, new, settings, model=model, prediction="own")
    again, pareto_k = holdout_predictive(fit.idata, gp, new, settings, model=model,
                                         prediction="own_landmark")  # fmt: skip
    np.testing.assert_array_equal(pareto_k, fit.pareto_k)
    np.testing.assert_array_equal(again.posterior_predictive["y_test"],
                                  fit.idata.posterior_predictive["y_test"])  # fmt: skip
    conditional, none = holdout_predictive(fit.idata, gp, new, settings, model=model)
    assert none is None and "y_test" in model.named_vars
    draws = conditional.posterior_predictive["y_test"]
    assert draws.sizes["chain"] * draws.sizes["draw"] == 2 * 20  # every (80 // 30)-th of 2 x 40
