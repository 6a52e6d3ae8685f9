"""sle_priors with a likelihood: the latent GP's variables, their priors' parameters from the
observations, the Laplace model they build, and the validation of the likelihood."""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_sle as sle
from pymc_sle import sle_priors
from pymc_sle.inference._latent_priors import latent_location_and_scale


def _labels(n=30, seed=0):
    x = np.linspace(0.0, 1.0, n)
    D = np.abs(x[:, None] - x[None, :])
    p = special.expit(3.0 * np.sin(6.0 * x))
    return D, (np.random.default_rng(seed).uniform(size=n) < p).astype(float)


def _normal_parameters(variable):
    """``(mu, sigma)`` of a Normal or HalfNormal variable, read from its log density."""
    mu, sigma = variable.owner.inputs[-2:]
    return float(mu.eval()), float(sigma.eval())


@pytest.mark.parametrize(
    "likelihood, scale",
    [
        (sle.gp.Bernoulli(), special.logit(0.99) / stats.norm.ppf(0.975)),
        (sle.gp.Bernoulli(link="probit"), stats.norm.ppf(0.99) / stats.norm.ppf(0.975)),
        (sle.gp.Binomial(4), special.logit(0.99) / stats.norm.ppf(0.975)),
    ],
)
def test_binary_latent_scale_reaches_the_99_percent_probability_at_the_95_percent_quantile(
    likelihood, scale
):
    trials = getattr(likelihood, "n", 1.0)
    y = np.array([0.0, 1.0, 1.0, 0.0] * 5) * trials
    location, found = latent_location_and_scale(likelihood, y)
    assert found == pytest.approx(scale, rel=1e-12)
    # half the trials succeed: the pooled probability is 1/2, whose link is 0 for both links
    assert location == pytest.approx(0.0, abs=1e-12)
    assert stats.halfnorm(scale=found).ppf(0.95) == pytest.approx(
        special.logit(0.99) if getattr(likelihood, "link", "logit") == "logit"
        else stats.norm.ppf(0.99), rel=1e-12)  # fmt: skip


def test_pooled_observations_give_the_offset_location():
    y = np.array([0.0, 1.0, 3.0, 2.0])
    location, _ = latent_location_and_scale(sle.gp.Binomial([1, 2, 4, 3]), y)
    assert location == pytest.approx(special.logit(6.5 / 11.0), rel=1e-12)
    location, scale = latent_location_and_scale(sle.gp.Poisson(), y)
    assert location == pytest.approx(np.log(6.5 / 4.0), rel=1e-12)
    assert scale == pytest.approx(np.std(np.log(y + 0.5)), rel=1e-12)


@pytest.mark.parametrize(
    "likelihood, y_of",
    [
        (sle.gp.Bernoulli(), lambda labels: labels),
        (sle.gp.Poisson(), lambda labels: 2.0 * labels + np.arange(labels.size) % 3),
    ],
)
def test_latent_priors_build_a_laplace_model(likelihood, y_of):
    D, labels = _labels()
    y, rows = y_of(labels), np.arange(labels.size)
    with pm.Model() as model:
        priors = sle_priors(D, rows, y, likelihood=likelihood, names={"offset": "c"})
        gp = sle.gp.Laplace(mean_func=priors.mean_func(), cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=rows[:, None], y=y, likelihood=likelihood)
    assert [rv.name for rv in model.free_RVs] == ["radius", "ls", "eta", "c"]
    assert priors.scales == {"radius": "log", "ls": "log", "eta": "log", "offset": "identity"}
    assert priors.basins == ()
    location, scale = latent_location_and_scale(likelihood, y)
    assert _normal_parameters(priors["offset"]) == pytest.approx((location, scale), rel=1e-12)
    assert _normal_parameters(priors["eta"])[1] == pytest.approx(scale, rel=1e-12)
    # radius and ls: the Gaussian model's priors (start="prior"), which the distances decide
    with pm.Model() as gaussian:
        sle_priors(D, rows, y, start="prior")
    for name in ("radius", "ls"):
        for value in (0.05, 0.3, 2.0):
            ours = pm.logp(priors[name], value).eval()
            assert ours == pytest.approx(pm.logp(gaussian[name], value).eval(), rel=1e-12)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


def test_latent_priors_on_sparse_distances_truncate_the_radius_at_the_cutoff():
    x = np.linspace(0.0, 1.0, 40)
    D = sle.SparseDistanceMatrix.from_dense(np.abs(x[:, None] - x[None, :]), cutoff=0.3)
    _, labels = _labels(40)
    with pm.Model():
        priors = sle_priors(D, np.arange(40), labels, likelihood=sle.gp.Bernoulli())
    draws = pm.draw(priors["radius"], draws=500, random_seed=1)
    assert draws.max() <= 0.3


def test_gaussian_priors_have_a_zero_mean():
    D, labels = _labels()
    with pm.Model():
        priors = sle_priors(
            D, np.arange(labels.size), np.sin(np.arange(labels.size)), start="prior"
        )
    assert isinstance(priors.mean_func(), pm.gp.mean.Zero)


def test_latent_priors_check_the_likelihood_the_start_and_the_observations():
    D, labels = _labels()
    rows = np.arange(labels.size)
    with pm.Model(), pytest.raises(TypeError, match="`likelihood` must be a likelihood of"):
        sle_priors(D, rows, labels, likelihood="bernoulli")
    with pm.Model(), pytest.raises(ValueError, match="`likelihood` must not be Gaussian"):
        sle_priors(D, rows, labels, likelihood=sle.gp.Gaussian(0.1))
    with pm.Model(), pytest.raises(ValueError, match="`start` must be 'prior' with a"):
        sle_priors(D, rows, labels, likelihood=sle.gp.Bernoulli(), start="mode")
    with pm.Model(), pytest.raises(ValueError, match="0 or 1"):
        sle_priors(D, rows, 2.0 * labels, likelihood=sle.gp.Bernoulli())
    with pm.Model(), pytest.raises(ValueError, match="not constant"):
        sle_priors(D, rows, np.ones(labels.size), likelihood=sle.gp.Bernoulli())
    with pm.Model() as model:
        sle_priors(D, rows, labels, likelihood=sle.gp.Bernoulli(), start="prior")
    assert "offset" in model.named_vars
