"""Multi-start MAP."""

import numpy as np
import pymc as pm
import pytest

from pymc_sle import find_map


def test_flat_prior_map_is_the_maximum_likelihood():
    y = np.array([0.3, 1.1, 2.0, 0.7])
    with pm.Model() as model:
        mu = pm.Uniform("mu", -10, 10)
        sigma = pm.Uniform("sigma", 0.01, 10)
        pm.Normal("y", mu, sigma, observed=y)
    result = find_map(model, seed=1)
    np.testing.assert_allclose(result.point["mu"], y.mean(), atol=1e-5)
    np.testing.assert_allclose(result.point["sigma"], y.std(), rtol=1e-4)
    assert set(result.point) >= {"mu", "sigma", "mu_interval__", "sigma_interval__"}
    assert result.n_evaluations > 0 and result.start_logps.shape == (16,)


def bimodal_model():
    """A local optimum next to the initial point (x = 0) and the global one far from it."""
    with pm.Model() as model:
        x = pm.Uniform("x", -6, 6)
        pm.Potential(
            "bimodal",
            pm.math.logsumexp(
                pm.math.stack([-0.5 * ((x - 0.5) / 0.3) ** 2 - 3.0, -0.5 * ((x + 4.0) / 0.3) ** 2])
            ),
        )
    return model


def test_multiple_starts_find_the_global_optimum():
    model = bimodal_model()
    local = find_map(model, n_starts=1, n_optimize=1, seed=0)
    best = find_map(model, n_starts=8, n_optimize=8, seed=0)
    np.testing.assert_allclose(local.point["x"], 0.5, atol=1e-3)
    np.testing.assert_allclose(best.point["x"], -4.0, atol=1e-3)
    assert best.logp > local.logp + 2.9
    again = find_map(model, n_starts=8, n_optimize=8, seed=0)
    np.testing.assert_array_equal(again.start_logps, best.start_logps)


def test_no_finite_start_is_a_clear_error():
    with pm.Model() as model:
        x = pm.Uniform("x", 0, 1)
        pm.Potential("impossible", pm.math.switch(x > 2, 0.0, -np.inf))
    with pytest.raises(ValueError, match="no finite log density at any of 4 starts"):
        find_map(model, n_starts=4, n_optimize=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_starts": 0}, "`n_starts` must be an integer >= 1"),
        ({"n_optimize": 0}, "`n_optimize` must be an integer >= 1"),
        ({"maxiter": 1.5}, "`maxiter` must be an integer >= 1"),
        ({"n_starts": 2, "n_optimize": 3}, "`n_optimize` must be <= n_starts=2"),
    ],
)
def test_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        find_map(bimodal_model(), **kwargs)


def test_discrete_variables_are_refused():
    with pm.Model() as model:
        pm.Poisson("k", 3.0)
    with pytest.raises(ValueError, match="continuous free variables only"):
        find_map(model)
