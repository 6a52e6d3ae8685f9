"""The SLE covariance inside pm.gp.Marginal and pm.gp.Latent, and under NUTS."""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from threadpoolctl import threadpool_limits

import pymc_sle
from pymc_sle import SLE, sle_priors
from pymc_sle.datasets import one_dimensional
from tests.sle_reference import reference_sle
from tests.support import MODES, compile_fn

TRAIN = np.array([0, 3, 5, 8, 12, 15, 19, 22, 27, 30, 33, 37])
TEST = np.array([1, 2, 10, 25, 39])
PARAMS = {"radius": 0.8, "ls": 0.6, "amplitude": 1.0, "shape": 1.0, "inner": "matern52"}
ETA, NOISE = 1.4, 0.2


def _mvnormal_moments(rv):
    """Mean and covariance tensors of a MvNormal random variable."""
    *_, mu, cov = rv.owner.inputs
    return mu.eval(), cov.eval()


def _reference(D, rows, cols):
    return ETA**2 * reference_sle(D, rows, cols, TRAIN, **PARAMS)


@pytest.fixture
def y(graph_distances):
    return np.sin(3 * graph_distances[TRAIN, 0])


def test_marginal_conditional_equals_gaussian_conditioning(graph_distances, y):
    with pm.Model():
        gp = pm.gp.Marginal(cov_func=ETA**2 * SLE(graph_distances, TRAIN, **PARAMS))
        gp.marginal_likelihood("y", X=TRAIN[:, None], y=y, sigma=NOISE)
        f_test = gp.conditional("f_test", Xnew=TEST[:, None], jitter=0.0)
        mu, cov = gp.predict(TEST[:, None], point={}, diag=False, jitter=0.0)
    K = _reference(graph_distances, TRAIN, TRAIN) + NOISE**2 * np.eye(TRAIN.size)
    Ks = _reference(graph_distances, TRAIN, TEST)
    Kss = _reference(graph_distances, TEST, TEST)
    expected_mu = Ks.T @ np.linalg.solve(K, y)
    expected_cov = Kss - Ks.T @ np.linalg.solve(K, Ks)
    np.testing.assert_allclose(mu, expected_mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov, expected_cov, rtol=1e-8, atol=1e-10)
    rv_mu, rv_cov = _mvnormal_moments(f_test)
    np.testing.assert_allclose(rv_mu, expected_mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(rv_cov, expected_cov, rtol=1e-8, atol=1e-10)


def test_marginal_predict_with_noise_adds_noise_variance(graph_distances, y):
    with pm.Model():
        gp = pm.gp.Marginal(cov_func=ETA**2 * SLE(graph_distances, TRAIN, **PARAMS))
        gp.marginal_likelihood("y", X=TRAIN[:, None], y=y, sigma=NOISE)
        _, var_f = gp.predict(TEST[:, None], point={}, diag=True, jitter=0.0)
        _, var_y = gp.predict(TEST[:, None], point={}, diag=True, pred_noise=True, jitter=0.0)
    np.testing.assert_allclose(var_y - var_f, NOISE**2, rtol=1e-8)


def test_latent_prior_and_conditional(graph_distances):
    f_given = np.cos(2 * graph_distances[TRAIN, 3])
    with pm.Model() as model:
        gp = pm.gp.Latent(cov_func=ETA**2 * SLE(graph_distances, TRAIN, **PARAMS))
        f = gp.prior("f", X=TRAIN[:, None], jitter=0.0)
        fs = gp.conditional(
            "fs", Xnew=TEST[:, None], given={"X": TRAIN[:, None], "f": f_given}, jitter=0.0
        )
    assert model["f"].eval().shape == (TRAIN.size,)  # whitened draw, then rotated
    assert pm.draw(f, random_seed=1).shape == (TRAIN.size,)
    K = _reference(graph_distances, TRAIN, TRAIN)
    Ks = _reference(graph_distances, TRAIN, TEST)
    mu, cov = _mvnormal_moments(fs)
    np.testing.assert_allclose(mu, Ks.T @ np.linalg.solve(K, f_given), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        cov,
        _reference(graph_distances, TEST, TEST) - Ks.T @ np.linalg.solve(K, Ks),
        rtol=1e-7,
        atol=1e-9,
    )


def test_prediction_far_from_every_landmark_reverts_to_the_prior(graph_distances, y):
    # A point beyond every bump embeds as 0: it is uncorrelated with nothing in particular, and
    # its predictive variance must stay finite and at most the prior variance.
    far = np.array([[39]])
    cov = SLE(graph_distances, TRAIN, radius=0.05, ls=0.6)
    with pm.Model():
        gp = pm.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=TRAIN[:, None], y=y, sigma=NOISE)
        _, var = gp.predict(far, point={}, diag=True, jitter=0.0)
    assert 0 < var[0] <= 1.0 + 1e-12


def _small_sle_model(data):
    with pm.Model() as model:
        priors = sle_priors(data.distances, data.train, data.y_train, landmarks=data.train)
        cov = priors["eta"] ** 2 * SLE(
            data.distances, data.train, radius=priors["radius"], ls=priors["ls"]
        )
        gp = pm.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=data.train[:, None], y=data.y_train, sigma=priors["sigma"])
    return model


@pytest.fixture(scope="module")
def small_data():
    return one_dimensional(n_train=20, n_test=10, seed=3)


@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_every_sampler_converges_on_the_line_users_write(small_data, sampler):
    """``pm.gp.Marginal`` of an SLE with ``sle_priors``, on PyMC's NUTS, nutpie (NUMBA) and
    numpyro (JAX): no object-mode fallback, the chains agree, the noise is recovered."""
    for package in {"pymc": [], "nutpie": ["nutpie"], "numpyro": ["numpyro", "jax"]}[sampler]:
        pytest.importorskip(package)
    model = _small_sle_model(small_data)
    # cores=1: both chains run in this process, so the BLAS thread count that the seed's
    # trajectory depends on is the one pinned here, not a child process's default.
    with model, threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        idata = pm.sample(300, tune=300, chains=2, cores=1, nuts_sampler=sampler,
                          random_seed=7, progressbar=False)  # fmt: skip
    names = ["radius", "ls", "eta", "sigma"]
    assert idata.posterior["sigma"].shape == (2, 300)
    summary = az.summary(idata, var_names=names, round_to="none")
    assert np.isfinite(summary["mean"]).all() and summary["r_hat"].max() < 1.05
    assert int(idata.sample_stats["diverging"].sum()) <= 2  # 600 draws: a stray one is tolerable
    assert summary.loc["sigma", "mean"] == pytest.approx(small_data.noise_sd, rel=0.6)


def _models(D, y, radius_prior):
    X = np.arange(len(y))[:, None]
    models = []
    for gp_class in (pm.gp.Marginal, pymc_sle.gp.Marginal):
        with pm.Model() as model:
            radius = radius_prior()
            ls = pm.LogNormal("ls", 0.0, 1.0)
            eta = pm.HalfNormal("eta", 1.0)
            sigma = pm.HalfNormal("sigma", 0.5)
            gp = gp_class(cov_func=eta**2 * SLE(D, radius=radius, ls=ls))
            gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
        models.append((model, gp))
    return models


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bounded", [False, True])
def test_marginal_equals_pymc_marginal_to_1e8(planar, mode, bounded):
    y = np.sin(4 * planar[:, 0])

    def radius_prior():
        return pm.Uniform("radius", 0.2, 0.5) if bounded else pm.LogNormal("radius", -1.0, 0.3)

    (plain, _), (fast, _) = _models(planar, y, radius_prior)
    point = plain.initial_point()
    results = []
    for model in (plain, fast):
        logp = model.logp()
        grads = pt.grad(logp, model.value_vars)
        f = compile_fn(model.value_vars, [logp, *grads], mode)
        results.append(np.array(f(*[point[v.name] for v in model.value_vars])))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-8, atol=1e-8)


def test_marginal_keeps_pymc_prediction_and_forward_sampling(planar):
    y = np.sin(4 * planar[:30, 0])
    D = planar[:30, :30]
    (plain, plain_gp), (fast, fast_gp) = _models(D, y, lambda: pm.LogNormal("radius", -1.0, 0.3))
    point = {"radius": 0.4, "ls": 1.2, "eta": 0.9, "sigma": 0.3}
    Xnew = np.arange(30)[:, None]
    for a, b in zip(
        plain_gp.predict(Xnew, point=point, model=plain, diag=True),
        fast_gp.predict(Xnew, point=point, model=fast, diag=True),
        strict=True,
    ):
        np.testing.assert_allclose(b, a, rtol=1e-10)
    with fast:
        prior = pm.sample_prior_predictive(draws=5, random_seed=1)
    assert prior.prior_predictive["y"].shape == (1, 5, 30)
