"""Every PyMC private call the library makes (``pymc_sle._pymc_compat``), pinned: a PyMC release
that changes one fails here, naming it, before users meet it."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pymc_sle._pymc_compat import (
    build_conditional_marginals,
    build_marginal_likelihood,
    constant_upper_bound,
    product_factors,
)


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: pm.Uniform("r", 0.5, 3.0), 3.0),
        (lambda: pm.Truncated("r", pm.Normal.dist(1.0, 1.0), lower=0.0, upper=2.5), 2.5),
        (lambda: pm.LogNormal("r", 0.0, 1.0), None),
        (lambda: pm.HalfNormal("r", 1.0), None),
    ],
)
def test_constant_upper_bound_reads_interval_transforms(make, expected):
    # Model.rvs_to_transforms and Interval.get_a_and_b are private PyMC API.
    with pm.Model():
        variable = make()
        assert constant_upper_bound(variable) == expected


def test_constant_upper_bound_outside_a_model_is_none():
    assert constant_upper_bound(pm.Uniform.dist(0.0, 1.0)) is None


def test_build_marginal_likelihood_is_k_plus_noise_plus_jitter():
    # pm.gp.Marginal._build_marginal_likelihood is private PyMC API.
    X = np.linspace(0.0, 1.0, 5)[:, None]
    cov = pm.gp.cov.ExpQuad(1, ls=0.3)
    gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(2.0), cov_func=cov)
    mu, K = build_marginal_likelihood(gp, X, pm.gp.cov.WhiteNoise(0.1), 1e-6)
    expected = cov(X).eval() + (0.01 + 1e-6) * np.eye(5)
    np.testing.assert_allclose(K.eval(), expected, rtol=1e-12)
    np.testing.assert_allclose(mu.eval(), np.full(5, 2.0))


@pytest.mark.parametrize("pred_noise", [False, True])
def test_build_conditional_marginals_is_the_diagonal_of_the_joint_conditional(pred_noise):
    # pm.gp.Marginal._build_conditional and _get_given_vals are private PyMC API.
    rng = np.random.default_rng(0)
    X, Xnew = rng.uniform(0, 1, (8, 1)), rng.uniform(0, 1, (5, 1))
    y = np.sin(6 * X[:, 0])
    with pm.Model():
        gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(0.5), cov_func=pm.gp.cov.Matern32(1, 0.3))
        gp.marginal_likelihood("y", X=X, y=y, sigma=0.2)
        mu, var = build_conditional_marginals(gp, Xnew, pred_noise, 1e-6)
        mu_joint, cov_joint = gp.predict(Xnew, point={}, diag=False, pred_noise=pred_noise)
    np.testing.assert_allclose(mu.eval(), mu_joint, rtol=1e-10)
    # The joint latent covariance is stabilised with the jitter on its diagonal; the marginals
    # are not (``fit_and_score`` adds it itself).
    jitter = 0.0 if pred_noise else 1e-6
    np.testing.assert_allclose(var.eval(), np.diag(cov_joint) - jitter, rtol=1e-8, atol=1e-12)


def test_product_factors_flattens_products_of_covariances_and_scalars():
    kernel = pm.gp.cov.ExpQuad(1, ls=1.0)
    other = pm.gp.cov.Matern32(1, ls=2.0)
    factors = product_factors(2.0 * (kernel * 3.0) * other)
    assert sum(f is kernel for f in factors) == 1 and sum(f is other for f in factors) == 1
    scalars = [f for f in factors if not isinstance(f, pm.gp.cov.Covariance)]
    assert sorted(float(pt.as_tensor(f).eval()) for f in scalars) == [2.0, 3.0]
    assert product_factors(kernel) == [kernel]
