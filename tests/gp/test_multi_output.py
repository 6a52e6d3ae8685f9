"""``pymc_sle.gp.Marginal`` accepts what ``pm.gp.Marginal`` accepts: multi-output ``y``, the
deprecated ``is_observed``, and clear errors for ``y`` of the wrong shape. PyMC's
``pm.gp.Marginal`` (``pm.MvNormal``) is the reference throughout."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.stats import multivariate_normal

import pymc_sle
from pymc_sle import SLE
from pymc_sle.gp import GaussianLogDensity, gaussian_logp
from tests.support import MODES


def random_spd(n, seed):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T / n + 0.5 * np.eye(n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 3])
def test_batched_log_density_equals_scipy_row_by_row(mode, k):
    K, R = random_spd(9, 0), np.random.default_rng(1).normal(size=(k, 9))
    cov, res = pt.dmatrix(), pt.dmatrix()
    logp = pytensor.function([cov, res], GaussianLogDensity()(cov, res)[0], mode=mode)(K, R)
    np.testing.assert_allclose(
        np.asarray(logp), [multivariate_normal(cov=K).logpdf(r) for r in R], rtol=1e-12
    )


@pytest.mark.parametrize("mode", MODES)
def test_batched_gradient_of_a_weighted_sum_matches_finite_differences(mode):
    K0, R0 = random_spd(6, 2), np.random.default_rng(3).normal(size=(4, 6))
    weights = np.array([1.0, -0.5, 2.0, 0.25])  # a factor of two anywhere would show
    cov, res = pt.dmatrix(), pt.dmatrix()
    total = pt.dot(weights, gaussian_logp(res, 0.0, cov))
    f = pytensor.function([cov, res], [total, *pt.grad(total, [cov, res])], mode=mode)
    value, g_cov, g_res = (np.asarray(o) for o in f(K0, R0))
    assert np.isfinite(value)
    h = 1e-6
    for i, j in [(0, 0), (2, 4), (5, 1)]:
        E = np.zeros_like(K0)
        E[i, j] = E[j, i] = h  # a symmetric perturbation: the gradient is symmetric
        numeric = (np.asarray(f(K0 + E, R0)[0]) - np.asarray(f(K0 - E, R0)[0])) / (2 * h)
        analytic = g_cov[i, j] + (g_cov[j, i] if i != j else 0.0)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
    E = np.zeros_like(R0)
    E[2, 3] = h
    numeric = (np.asarray(f(K0, R0 + E)[0]) - np.asarray(f(K0, R0 - E)[0])) / (2 * h)
    np.testing.assert_allclose(g_res[2, 3], numeric, rtol=1e-6)


def test_batched_not_positive_definite_gives_minus_inf_and_zero_gradients():
    cov, res = pt.dmatrix(), pt.dmatrix()
    total = pt.sum(gaussian_logp(res, 0.0, cov))
    f = pytensor.function([cov, res], [gaussian_logp(res, 0.0, cov), pt.grad(total, cov)])
    logp, grad = f(-np.eye(3), np.ones((2, 3)))
    assert np.all(logp == -np.inf) and np.all(grad == 0)


def _models(D, X, y, sigma=0.3):
    models = []
    for gp_class in (pm.gp.Marginal, pymc_sle.gp.Marginal):
        with pm.Model() as model:
            radius = pm.LogNormal("radius", 0.0, 0.3)
            ls = pm.LogNormal("ls", 0.0, 0.5)
            gp = gp_class(cov_func=SLE(D, radius=radius, ls=ls, inner="matern52"))
            gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
        models.append((model, gp))
    return models


# Two batch axes on one backend only: gaussian_logp flattens them with a reshape in the graph, so
# every backend's Op sees rows either way, and PyMC's reference (a batched Cholesky and its
# gradient) takes nearly two minutes to compile per backend.
@pytest.mark.parametrize("shape, mode", [((3,), mode) for mode in MODES] + [((2, 2), "FAST_RUN")])
def test_multi_output_y_gives_pymcs_log_density_and_gradient(graph_distances, mode, shape):
    X = np.arange(25)[:, None]
    y = np.random.default_rng(4).normal(size=(*shape, 25))
    (plain, _), (fast, _) = _models(graph_distances, X, y)
    point = {k: v + 0.2 for k, v in plain.initial_point().items()}
    results = []
    for model in (plain, fast):
        elementwise = model.logp(sum=False)[-1]
        logp = model.logp()
        f = model.compile_fn([logp, elementwise, *pt.grad(logp, model.value_vars)], mode=mode)
        results.append([np.asarray(o) for o in f(point)])
    assert results[1][1].shape == shape  # one log density per output, as pm.MvNormal gives
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-8)
    nodes = fast.compile_dlogp(mode=mode).f.maker.fgraph.apply_nodes
    assert any(isinstance(node.op, GaussianLogDensity) for node in nodes)


def test_multi_output_prediction_and_forward_sampling_equal_pymc(graph_distances):
    X, Xnew = np.arange(25)[:, None], np.arange(25, 32)[:, None]
    y = np.random.default_rng(5).normal(size=(2, 25))
    (plain, plain_gp), (fast, fast_gp) = _models(graph_distances, X, y)
    point = {"radius": 1.1, "ls": 0.8}
    for a, b in zip(
        plain_gp.predict(Xnew, point=point, model=plain),
        fast_gp.predict(Xnew, point=point, model=fast),
        strict=True,
    ):
        np.testing.assert_allclose(b, a, rtol=1e-10)
    with fast:
        prior = pm.sample_prior_predictive(draws=4, random_seed=1)
    assert prior.prior_predictive["y"].shape == (1, 4, 2, 25)


def test_marginal_with_tiny_noise_equals_latent_conditional(graph_distances):
    X, Xnew = np.arange(20)[:, None], np.arange(20, 26)[:, None]
    y = np.sin(graph_distances[:20, 0])
    p_new = np.random.default_rng(6).normal(size=6)
    kernel = SLE(graph_distances, radius=1.2, ls=0.7)
    with pm.Model() as marginal:
        gp = pymc_sle.gp.Marginal(cov_func=kernel)
        gp.marginal_likelihood("f", X=X, y=y, sigma=0.0)
        gp.conditional("p", Xnew)
    with pm.Model() as latent:
        gp = pm.gp.Latent(cov_func=kernel)
        gp.prior("f", X, reparameterize=False)
        gp.conditional("p", Xnew)
    np.testing.assert_allclose(
        marginal.compile_logp()({"p": p_new}),
        latent.compile_logp()({"f": y, "p": p_new}),
        rtol=1e-5,  # the two conditionals add the 1e-6 jitter in different places
    )


def test_given_uses_other_data_like_pymc(graph_distances):
    X, Xnew = np.arange(20)[:, None], np.arange(20, 26)[:, None]
    y = np.cos(graph_distances[:20, 1])
    results = []
    for gp_class in (pm.gp.Marginal, pymc_sle.gp.Marginal):
        with pm.Model():
            gp = gp_class(cov_func=SLE(graph_distances, radius=1.2, ls=0.7))
            gp.marginal_likelihood("y", X=X[:10], y=y[:10], sigma=0.2)
            given = {"X": X, "y": y, "sigma": 0.2}
            results.append(gp.predict(Xnew, given=given, diag=True))
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (np.zeros(19), r"`y` must have 20 entries along its last axis .* has shape \(19,\)"),
        (np.zeros((2, 21)), r"`y` must have 20 entries .* has shape \(2, 21\)"),
        (1.5, "`y` must have shape .* but is a scalar"),
    ],
)
def test_y_of_the_wrong_shape_is_named(graph_distances, y, message):
    with pm.Model():
        gp = pymc_sle.gp.Marginal(cov_func=SLE(graph_distances, radius=1.0, ls=0.5))
        with pytest.raises(ValueError, match=message):
            gp.marginal_likelihood("y", X=np.arange(20)[:, None], y=y, sigma=0.1)


def test_pm_data_y_is_checked_with_its_current_value(graph_distances):
    with pm.Model():
        y = pm.Data("y_data", np.zeros(7))
        gp = pymc_sle.gp.Marginal(cov_func=SLE(graph_distances, radius=1.0, ls=0.5))
        with pytest.raises(ValueError, match=r"`y` must have 20 entries"):
            gp.marginal_likelihood("y", X=np.arange(20)[:, None], y=y, sigma=0.1)


def test_is_observed_false_is_deprecated_and_gives_pymcs_free_variable(graph_distances):
    X = np.arange(10)[:, None]
    free = []
    for gp_class in (pm.gp.Marginal, pymc_sle.gp.Marginal):
        with pm.Model() as model:
            gp = gp_class(cov_func=SLE(graph_distances, radius=1.0, ls=0.5))
            with pytest.warns(FutureWarning, match="is_observed"):
                gp.marginal_likelihood("f", X=X, y=None, sigma=0.1, is_observed=False)
        free.append(model.compile_logp()({"f": np.linspace(-1, 1, 10)}))
    np.testing.assert_allclose(free[1], free[0], rtol=1e-12)
