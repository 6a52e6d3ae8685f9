"""PyMC's NUTS started from the curvature at the start: the covariance, the starts, the cost."""

import numpy as np
import pymc as pm
import pytest

from pymc_sle.inference._mass_matrix import CURVATURE_RANGE, laplace_covariance, pymc_nuts

SD = np.array([0.01, 0.02])
CORR = 0.99
COV = np.outer(SD, SD) * np.array([[1.0, CORR], [CORR, 1.0]])


def gaussian(start=(0.3, -0.2)):
    """A narrow, correlated Gaussian (sds 0.01 and 0.02, correlation 0.99) far from PyMC's
    identity, started 30 sds from its mode."""
    with pm.Model() as model:
        pm.MvNormal("x", mu=np.zeros(2), cov=COV, initval=np.array(start))
    return model


def gradient_of(model):
    dlogp = model.compile_dlogp(jacobian=True)
    name = model.continuous_value_vars[0].name
    return lambda x: dlogp({name: x})


def test_the_covariance_of_a_gaussian_is_its_own_anywhere():
    """A Gaussian's log density is quadratic: the curvature is its precision at every point."""
    model = gaussian()
    gradient = gradient_of(model)
    for x0 in (np.zeros(2), np.array([0.3, -0.2])):  # at the mode and 30 sds away
        np.testing.assert_allclose(laplace_covariance(gradient, x0), COV, rtol=1e-6)


def test_the_covariance_is_on_the_sampled_coordinates():
    """sigma ~ HalfNormal(1), sampled as z = log(sigma): log p(z) = -exp(2z)/2 + z, whose
    curvature -2 exp(2z) is 2 at z = 0; the Jacobian is part of the sampled density."""
    with pm.Model() as model:
        pm.HalfNormal("sigma", 1.0, initval=1.0)
    dlogp = model.compile_dlogp(jacobian=True)
    cov = laplace_covariance(lambda x: dlogp({"sigma_log__": x[0]}), np.zeros(1))
    np.testing.assert_allclose(cov, [[0.5]], rtol=1e-6)


def test_negative_curvature_gives_its_scale_and_flat_or_sharp_directions_are_clipped():
    """Off a mode the curvature's absolute value gives the scale; a flat direction gets the
    largest standard deviation allowed, an infinitely sharp one the smallest."""
    low, high = CURVATURE_RANGE
    curvature = np.diag([-4.0, 0.0, 1e20])  # of log p: +4 is a minimum along the first axis
    cov = laplace_covariance(lambda x: -curvature @ x, np.ones(3))
    np.testing.assert_allclose(cov, np.diag([1 / 4, 1 / low, 1 / high]), rtol=1e-6)


def test_a_start_without_a_finite_gradient_is_an_error_and_a_neighbours_gives_the_identity():
    with pytest.raises(ValueError, match="gradient is not finite at the start"):
        laplace_covariance(lambda x: x / 0.0, np.zeros(2))

    def edge(x):  # finite at the start, not a step away
        return np.where(np.abs(x) > 0.0, np.inf, -x)

    np.testing.assert_array_equal(laplace_covariance(edge, np.zeros(2)), np.eye(2))


def test_chains_start_apart_around_the_mode_within_pymcs_jitter_in_the_variables_own_values():
    """The sampled density's mode is x = 0 and log sigma = 0 (the Jacobian's term included)."""
    with pm.Model() as model:
        pm.HalfNormal("sigma", 1.0, initval=1.0)
        pm.Normal("x", 0.0, 1.0, shape=2, initval=np.array([0.5, -0.5]))
    nuts = pymc_nuts(model, chains=4, target_accept=0.9, random_seed=1)
    assert nuts["step"].target_accept == 0.9
    starts = nuts["initvals"]
    assert len(starts) == 4 and all(set(s) == {"sigma", "x"} for s in starts)
    sigma = np.array([s["sigma"] for s in starts])
    x = np.array([s["x"] for s in starts])
    assert np.all(sigma > 0) and np.all(np.abs(np.log(sigma)) <= 1.0)  # the jitter is on log
    assert np.all(np.abs(x) <= 1.0)
    assert np.unique(x[:, 0]).size == 4
    again = pymc_nuts(model, chains=4, target_accept=0.9, random_seed=1)["initvals"]
    np.testing.assert_array_equal([s["x"] for s in again], x)  # seeded


def test_the_curvature_start_saves_pymcs_early_tuning_steps_and_samples_the_target():
    """On the narrow correlated Gaussian PyMC's identity start needs deep trees until its
    covariance windows catch up; started at the mode from its curvature the first tuning
    draws are cheap."""
    model = gaussian()
    starts = np.array([s["x"] for s in pymc_nuts(model, chains=4, target_accept=0.9)["initvals"]])
    assert np.all(np.abs(starts) < 4 * SD)  # climbed to the mode, spread like the posterior
    sample = dict(draws=300, tune=300, chains=2, cores=1, random_seed=2, model=model,
                  progressbar=False, compute_convergence_checks=False,
                  discard_tuned_samples=False)  # fmt: skip
    own = pm.sample(**sample, **pymc_nuts(model, chains=2, target_accept=0.9, random_seed=2))
    with pytest.warns(UserWarning, match="experimental"):
        pymc = pm.sample(**sample, init="jitter+adapt_full", target_accept=0.9)

    def early_steps(idata):
        return float(idata.warmup_sample_stats["n_steps"][:, :100].mean())

    assert early_steps(own) < 0.6 * early_steps(pymc)
    x = own.posterior["x"].values.reshape(-1, 2)
    np.testing.assert_allclose(x.std(axis=0), SD, rtol=0.2)
    assert np.corrcoef(x.T)[0, 1] == pytest.approx(CORR, abs=0.01)
