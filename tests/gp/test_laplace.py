"""The Laplace latent GP: the likelihoods' derivatives, the approximation against exact
references (the Gaussian identity, a brute-force mode and Hessian), gradients against finite
differences, dense against sparse, Newton's failure path, and the GP class in a model."""

import gc
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import optimize, stats

import pymc_sle as sle
from pymc_sle.gp._laplace import _warm
from pymc_sle.gp._laplace._approximation import (
    PATIENCE,
    DenseStructure,
    NewtonError,
    dense_approximation,
    find_mode,
)
from pymc_sle.gp._laplace._ep import find_sites
from pymc_sle.gp._laplace._op import APPROXIMATIONS, LaplaceLogDensity
from pymc_sle.gp._laplace._sparse import sparse_approximation
from pymc_sle.gp._laplace._warm import WarmStart
from pymc_sle.gp._sparse._problem import SparseSLEProblem
from pymc_sle.kernels import DenseFromSparseWarning

N = 90
CUTOFF = 0.3
LIKELIHOODS = {
    "logit": sle.gp.Bernoulli(),
    "probit": sle.gp.Bernoulli(link="probit"),
    "binomial": sle.gp.Binomial(n=4),
    "poisson": sle.gp.Poisson(),
    "gaussian": sle.gp.Gaussian(0.4),
}


def _latent(n=N, seed=0):
    x = np.random.default_rng(seed).uniform(0, 1, (n, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1), 1.5 * np.sin(5 * x[:, 0])


def _observations(name, f, seed=1):
    rng = np.random.default_rng(seed)
    if name in ("logit", "probit"):
        return (rng.uniform(size=f.size) < 1 / (1 + np.exp(-f))).astype(float)
    if name == "binomial":
        return rng.binomial(4, 1 / (1 + np.exp(-f))).astype(float)
    if name == "poisson":
        return rng.poisson(np.exp(f)).astype(float)
    return f + 0.4 * rng.standard_normal(f.size)


def _parameters(name):
    return (0.4,) if name == "gaussian" else ()


def _dense_cov(n=12, seed=0):
    x = np.sort(np.random.default_rng(seed).uniform(0, 3, n))
    return 1.3 * np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / 0.5**2) + 1e-8 * np.eye(n)


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_likelihood_derivatives_match_finite_differences(name):
    likelihood = LIKELIHOODS[name]
    f = np.linspace(-3, 3, 13)
    y = _observations(name, f)
    params = _parameters(name)
    h = 1e-5

    def elementwise(g):
        return np.array(
            [likelihood.derivatives(y[i : i + 1], g[i : i + 1], *params)[0] for i in range(f.size)]
        )

    _, b, w, third = likelihood.derivatives(y, f, *params)
    _, b_up, w_up, _ = likelihood.derivatives(y, f + h, *params)
    _, b_down, w_down, _ = likelihood.derivatives(y, f - h, *params)
    np.testing.assert_allclose(
        b, (elementwise(f + h) - elementwise(f - h)) / (2 * h), rtol=1e-6, atol=1e-8
    )
    np.testing.assert_allclose(w, -(b_up - b_down) / (2 * h), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(third, -(w_up - w_down) / (2 * h), rtol=1e-5, atol=1e-8)
    assert np.all(w >= 0)  # log-concave


def test_likelihood_log_densities_equal_scipys():
    f = np.linspace(-2, 2, 9)
    p = 1 / (1 + np.exp(-f))
    y01 = (np.arange(9) % 2).astype(float)
    counts = np.arange(9.0)
    cases = [
        (sle.gp.Bernoulli(), y01, stats.bernoulli.logpmf(y01, p).sum()),
        (sle.gp.Bernoulli("probit"), y01, stats.bernoulli.logpmf(y01, stats.norm.cdf(f)).sum()),
        (sle.gp.Binomial(9), counts, stats.binom.logpmf(counts, 9, p).sum()),
        (sle.gp.Poisson(), counts, stats.poisson.logpmf(counts, np.exp(f)).sum()),
    ]
    for likelihood, y, expected in cases:
        np.testing.assert_allclose(likelihood.derivatives(y, f)[0], expected, rtol=1e-12)
    gaussian = sle.gp.Gaussian(0.7).derivatives(counts, f, 0.7)[0]
    np.testing.assert_allclose(gaussian, stats.norm.logpdf(counts, f, 0.7).sum(), rtol=1e-12)


@pytest.mark.parametrize(
    ("likelihood", "y", "message"),
    [
        (sle.gp.Bernoulli(), [0.0, 2.0], "must hold 0 or 1"),
        (sle.gp.Poisson(), [1.0, -1.0], "non-negative integer counts"),
        (sle.gp.Poisson(), [1.0, 0.5], "non-negative integer counts"),
        (sle.gp.Binomial(3), [1.0, 4.0], r"at most the number of trials `n`, but y\[1\] = 4"),
        (sle.gp.Binomial([3, 3, 3]), [1.0, 2.0], "must broadcast to the shape"),
    ],
)
def test_likelihoods_reject_observations_they_cannot_hold(likelihood, y, message):
    with pytest.raises(ValueError, match=message):
        likelihood.check(np.asarray(y))


def test_likelihood_arguments_are_checked():
    with pytest.raises(ValueError, match="`link` must be 'logit' or 'probit', but got 'log'"):
        sle.gp.Bernoulli(link="log")
    with pytest.raises(ValueError, match="`n` must hold non-negative integer trial counts"):
        sle.gp.Binomial(2.5)
    assert sle.gp.Binomial(3) == sle.gp.Binomial(3) != sle.gp.Binomial(4)
    assert sle.gp.Bernoulli() != sle.gp.Bernoulli("probit")


@pytest.mark.parametrize("approximation", list(APPROXIMATIONS))
def test_the_gaussian_case_is_the_exact_marginal_likelihood(approximation):
    K = _dense_cov()
    rng = np.random.default_rng(2)
    y, mean, sigma = rng.standard_normal(K.shape[0]), np.full(K.shape[0], 0.3), 0.4
    value, (d_cov, d_mean, d_sigma) = dense_approximation(
        K, y, mean, sle.gp.Gaussian(sigma), (sigma,), terms=APPROXIMATIONS[approximation]
    )
    C = K + sigma**2 * np.eye(K.shape[0])
    np.testing.assert_allclose(value, stats.multivariate_normal(mean, C).logpdf(y), rtol=1e-12)
    alpha = np.linalg.solve(C, y - mean)
    np.testing.assert_allclose(
        d_cov, 0.5 * (np.outer(alpha, alpha) - np.linalg.inv(C)), rtol=1e-8, atol=1e-10
    )
    np.testing.assert_allclose(d_mean, alpha, rtol=1e-8)
    # d/d sigma = tr(d log N / d C * 2 sigma I)
    np.testing.assert_allclose(d_sigma, np.trace(d_cov) * 2 * sigma, rtol=1e-8)


@pytest.mark.parametrize("name", ["logit", "probit", "binomial", "poisson"])
def test_the_value_equals_a_brute_force_laplace_approximation(name):
    """The mode by a generic optimiser, the Hessian by finite differences of the log joint."""
    K = _dense_cov(n=6)
    n = K.shape[0]
    likelihood = LIKELIHOODS[name]
    y = _observations(name, np.linspace(-1, 1, n))
    mean = np.full(n, 0.2)
    prior = stats.multivariate_normal(mean, K)

    def log_joint(f):
        return likelihood.derivatives(y, f)[0] + prior.logpdf(f)

    found = optimize.minimize(lambda f: -log_joint(f), mean, method="BFGS", options={"gtol": 1e-10})
    h = 1e-4
    eye = np.eye(n) * h
    x = found.x

    def second(i, j):
        up = log_joint(x + eye[i] + eye[j]) + log_joint(x - eye[i] - eye[j])
        down = log_joint(x + eye[i] - eye[j]) + log_joint(x - eye[i] + eye[j])
        return (up - down) / (4 * h * h)

    hessian = np.array([[second(i, j) for j in range(n)] for i in range(n)])
    log_det = np.linalg.slogdet(-hessian)[1]
    expected = log_joint(x) + 0.5 * n * np.log(2 * np.pi) - 0.5 * log_det
    np.testing.assert_allclose(dense_approximation(K, y, mean, likelihood)[0], expected, rtol=1e-6)


def test_the_approximation_is_close_to_the_exact_integral_in_one_dimension():
    """One Poisson count: the exact marginal by quadrature; Laplace is near, not equal."""
    from scipy import integrate

    variance, y = 0.8, np.array([3.0])

    def joint(f):
        return stats.poisson.pmf(3, np.exp(f)) * stats.norm.pdf(f, 0.0, np.sqrt(variance))

    exact = integrate.quad(joint, -10, 10)[0]
    value = dense_approximation(np.array([[variance]]), y, np.zeros(1), sle.gp.Poisson())[0]
    assert abs(value - np.log(exact)) < 0.02
    assert value != pytest.approx(np.log(exact), abs=1e-6)


def _finite_difference(function, h=1e-4):
    """Central differences at ``h`` and ``h / 2``, Richardson-extrapolated (error O(h^4))."""
    wide = (function(h) - function(-h)) / (2 * h)
    narrow = (function(h / 2) - function(-h / 2)) / h
    return (4 * narrow - wide) / 3


@pytest.mark.parametrize("approximation", list(APPROXIMATIONS))
@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_dense_gradients_match_finite_differences(name, approximation):
    K = _dense_cov()
    n = K.shape[0]
    rng = np.random.default_rng(4)
    likelihood, terms = LIKELIHOODS[name], APPROXIMATIONS[approximation]
    y = _observations(name, np.linspace(-1.5, 1.5, n))
    mean, params = np.full(n, 0.1), _parameters(name)
    _, (d_cov, d_mean, *d_params) = dense_approximation(K, y, mean, likelihood, params, terms=terms)
    E = rng.standard_normal((n, n))
    E = 0.05 * (E + E.T)
    e = rng.standard_normal(n)

    def value(cov=K, m=mean, p=params):
        return dense_approximation(cov, y, m, likelihood, p, terms=terms, with_gradients=False)[0]

    numeric = _finite_difference(lambda h: value(cov=K + h * E))
    np.testing.assert_allclose(np.sum(d_cov * E), numeric, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(
        d_mean @ e, _finite_difference(lambda h: value(m=mean + h * e)), rtol=1e-5, atol=1e-8
    )
    if params:
        numeric = _finite_difference(lambda h: value(p=(params[0] + h,)))
        np.testing.assert_allclose(d_params[0], numeric, rtol=1e-5)


def _problem(D, inner="rbf"):
    from pymc_sle.gp._sparse import inner_mixture

    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    kernel = sle.SLE(sparse, radius=0.25, ls=0.7, inner=inner)
    block = kernel.sparse_to_landmarks(np.arange(D.shape[0])[:, None], "X")
    return SparseSLEProblem(
        block.indptr,
        block.indices,
        block.values,
        kernel.n_landmarks,
        CUTOFF,
        inner_mixture(kernel.inner),
    )


SLE_VALUES = {"radius": 0.25, "amplitude": 1.1, "shape": 0.9, "ls": 0.7, "scale": 1.7}
JITTER = 1e-6


@pytest.mark.parametrize("approximation", list(APPROXIMATIONS))
@pytest.mark.parametrize("inner", ["rbf", "matern32"])
@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_sparse_equals_dense_and_its_gradients_match_finite_differences(name, inner, approximation):
    D, f = _latent()
    likelihood, params = LIKELIHOODS[name], _parameters(name)
    terms = APPROXIMATIONS[approximation]
    y = _observations(name, f)
    mean = np.full(N, 0.2)
    v = SLE_VALUES
    kernel = sle.SLE(
        D, radius=v["radius"], ls=v["ls"], amplitude=v["amplitude"], shape=v["shape"], inner=inner
    )
    K = v["scale"] * kernel.full(np.arange(N)[:, None]).eval() + JITTER * np.eye(N)
    dense_value, (_, dense_mean, *dense_params) = dense_approximation(
        K, y, mean, likelihood, params, terms=terms
    )
    problem = _problem(D, inner)
    value, (d_mean, *gradient) = sparse_approximation(
        problem, y, mean, likelihood, *v.values(), JITTER, params, terms=terms
    )
    np.testing.assert_allclose(value, dense_value, rtol=1e-8)
    np.testing.assert_allclose(d_mean, dense_mean, rtol=1e-6, atol=1e-8)
    if params:
        np.testing.assert_allclose(gradient[-1], dense_params[0], rtol=1e-6)

    def at(key, h):
        values = dict(v, **{key: v[key] + h})
        return sparse_approximation(problem, y, mean, likelihood, *values.values(), JITTER,
                                    params, terms=terms, with_gradients=False)[0]  # fmt: skip

    for k, key in enumerate(v):
        numeric = _finite_difference(lambda h, key=key: at(key, h))
        np.testing.assert_allclose(gradient[k], numeric, rtol=1e-5, atol=1e-7, err_msg=key)


def test_newton_reports_the_parameters_when_it_does_not_converge():
    K = _dense_cov()
    y = _observations("poisson", np.full(K.shape[0], 3.0))
    structure = DenseStructure(K * 50)
    with pytest.raises(NewtonError, match=r"did not converge in 1 iterations .* at eta=7"):
        find_mode(
            structure,
            sle.gp.Poisson(),
            y,
            np.zeros(K.shape[0]),
            max_iterations=1,
            describe=lambda: "eta=7",
        )


@pytest.mark.parametrize("approximation", list(APPROXIMATIONS))
def test_the_mode_does_not_depend_on_the_warm_start(approximation):
    K = _dense_cov()
    n = K.shape[0]
    y = _observations("logit", np.linspace(-2, 2, n))
    options = {"terms": APPROXIMATIONS[approximation]}
    cold = dense_approximation(K, y, np.zeros(n), sle.gp.Bernoulli(), warm=None, **options)
    # a different mode (sites) first
    key = ("warm-start test", approximation)
    dense_approximation(2.0 * K, y, np.zeros(n), sle.gp.Bernoulli(), warm=WarmStart(key),
                        **options)  # fmt: skip
    warm = dense_approximation(K, y, np.zeros(n), sle.gp.Bernoulli(), warm=WarmStart(key),
                               **options)  # fmt: skip
    # the tolerances (Newton's 1e-10 on the mode, EP's 1e-8 on the matched moments) bound it,
    # the gradient's error on the scale of its largest entry
    np.testing.assert_allclose(warm[0], cold[0], rtol=1e-9)
    scale = np.abs(cold[1][0]).max()
    np.testing.assert_allclose(warm[1][0], cold[1][0], rtol=1e-7, atol=1e-7 * scale)


@pytest.mark.parametrize("approximation", list(APPROXIMATIONS))
def test_interleaved_chains_each_start_from_their_own_state(approximation):
    """Two chains far apart evaluated alternately under one key (as nutpie runs four chains on
    two threads): each evaluation starts from the state found at the nearest inputs, its own
    chain's, so a point evaluated again after the other chain's takes one Newton step (one EP
    sweep), where a start from the other chain's state takes several."""
    K = _dense_cov()
    n = K.shape[0]
    y = _observations("logit", np.linspace(-2, 2, n))
    find = {"laplace": find_mode, "ep": find_sites}[approximation]

    def steps(scale, key):
        found = find(DenseStructure(scale * K), sle.gp.Bernoulli(), y, np.zeros(n),
                     warm=WarmStart(key, [scale * K]))  # fmt: skip
        return found.sweeps if approximation == "ep" else found.iterations

    key = ("interleaved chains", approximation)
    first = [steps(scale, key) for scale in (1.0, 8.0)]
    assert [steps(scale, key) for scale in (1.0, 8.0)] == [1, 1]
    # the other chain's state alone (a key of its own) is a worse start
    steps(8.0, (key, "other"))
    assert steps(1.0, (key, "other")) > 1 and min(first) > 1


def test_an_ops_warm_starts_go_with_it():
    """The states an Op keeps for its warm starts are dropped when the Op is collected, so a
    session that builds many models does not keep every model's modes."""
    K = _dense_cov()
    n = K.shape[0]
    y = _observations("logit", np.linspace(-2, 2, n))
    op = LaplaceLogDensity(sle.gp.Bernoulli())
    op(y, K, np.zeros(n))[0].eval()
    key = id(op)
    assert len(_warm._STORES[key]) == 1
    del op
    gc.collect()
    assert key not in _warm._STORES


def test_a_covariance_that_is_not_positive_definite_gives_minus_infinity():
    K = -10.0 * np.eye(4)  # K + W^{-1} is not positive definite (W <= 1/4)
    value, gradient = dense_approximation(K, np.ones(4), np.zeros(4), sle.gp.Bernoulli())
    assert value == -np.inf and not np.any(gradient[0])


def _model(D, name, *, mode="index", mean_value=0.1, gp_class=sle.gp.Laplace):
    f = _latent()[1]
    y = _observations(name, f)
    landmarks = np.arange(0, N, 2)
    with pm.Model() as model:
        radius = pm.Uniform("radius", 0.1, CUTOFF)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        eta = pm.HalfNormal("eta", 1.5)
        sigma = pm.HalfNormal("sigma", 1.0) if name == "gaussian" else None
        kwargs = {"radius": radius, "ls": ls}
        if mode == "index":
            kernel, X = sle.SLE(D, landmarks, **kwargs), np.arange(N)[:, None]
        else:
            kernel = sle.SLE(input_dim=landmarks.size, **kwargs)
            sparse = isinstance(D, sle.SparseDistanceMatrix)
            X = D.take(cols=landmarks) if sparse else D[:, landmarks]
        gp = gp_class(mean_func=pm.gp.mean.Constant(mean_value), cov_func=eta**2 * kernel)
        likelihood = sle.gp.Gaussian(sigma) if name == "gaussian" else LIKELIHOODS[name]
        gp.marginal_likelihood("y", X=X, y=y, likelihood=likelihood)
    return model, gp, X


def _value_and_gradient(model, seed=3):
    rng = np.random.default_rng(seed)
    start = model.initial_point()
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
    return point, model.compile_logp()(point), model.compile_dlogp()(point)


def _ops(model) -> set[str]:
    return {type(node.op).__name__ for node in model.compile_dlogp().f.maker.fgraph.apply_nodes}


@pytest.mark.parametrize(
    ("name", "mode", "gp_class"),
    [*((name, mode, sle.gp.Laplace) for name in ("logit", "poisson", "gaussian")
       for mode in ("index", "feature")),
     ("logit", "index", sle.gp.EP), ("poisson", "feature", sle.gp.EP)],
)  # fmt: skip
def test_the_gp_class_is_sparse_on_sparse_distances_and_equals_dense(name, mode, gp_class):
    D = _latent()[0]
    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFromSparseWarning)  # nothing dense is formed
        model, gp, X = _model(sparse, name, mode=mode, gp_class=gp_class)
        ops = _ops(model)
        point, value, gradient = _value_and_gradient(model)
    assert "LaplaceLogDensity" in ops and not {"DenseDistances", "Cholesky"} & ops
    dense_model, dense_gp, dense_X = _model(D, name, mode=mode, gp_class=gp_class)
    _, expected, expected_gradient = _value_and_gradient(dense_model)
    np.testing.assert_allclose(value, expected, rtol=1e-8)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-6, atol=1e-8)
    logp = model.compile_logp()
    for k, key in enumerate(point):

        def shifted(h, key=key):
            return logp({**point, key: point[key] + h})

        np.testing.assert_allclose(gradient[k], _finite_difference(shifted), rtol=1e-5, atol=1e-6)
    Xnew = X.take(rows=np.arange(10)) if mode == "feature" else np.arange(10)[:, None]
    dense_new = dense_X[:10] if mode == "feature" else np.arange(10)[:, None]
    values = {"radius": 0.2, "ls": 1.1, "eta": 1.3, "sigma": 0.5}
    with model:
        mean, variance = gp.predict(Xnew, point=values)
    with dense_model:
        dense_mean, dense_variance = dense_gp.predict(dense_new, point=values)
    np.testing.assert_allclose(mean, dense_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(variance, dense_variance, rtol=1e-6, atol=1e-9)


def test_the_gaussian_laplace_model_equals_pymcs_marginal():
    D, f = _latent()
    y = _observations("gaussian", f)
    with pm.Model() as laplace:
        ls, sigma = pm.LogNormal("ls", 0.0, 0.5), pm.HalfNormal("sigma", 1.0)
        gp = sle.gp.Laplace(cov_func=sle.SLE(D, radius=0.2, ls=ls))
        gp.marginal_likelihood("y", X=np.arange(N)[:, None], y=y, likelihood=sle.gp.Gaussian(sigma))
    with pm.Model() as marginal:
        ls, sigma = pm.LogNormal("ls", 0.0, 0.5), pm.HalfNormal("sigma", 1.0)
        gp = pm.gp.Marginal(cov_func=sle.SLE(D, radius=0.2, ls=ls))
        gp.marginal_likelihood("y", X=np.arange(N)[:, None], y=y, sigma=sigma)
    point = laplace.initial_point()
    for compiled in ("compile_logp", "compile_dlogp"):
        value = getattr(laplace, compiled)()(point)
        np.testing.assert_allclose(value, getattr(marginal, compiled)()(point), rtol=1e-8)


def test_the_latent_prediction_of_the_gaussian_case_is_pymcs_conditional():
    D, f = _latent()
    y = _observations("gaussian", f)
    values = {"ls": 0.8, "sigma": 0.4}
    new = np.arange(N - 10, N)[:, None]
    train = np.arange(N - 10)[:, None]
    kernel = sle.SLE(D, np.arange(N - 10), radius=0.2, ls=pm.math.constant(0.8))
    with pm.Model():
        sigma = pm.HalfNormal("sigma", 1.0)
        gp = sle.gp.Laplace(cov_func=kernel)
        gp.marginal_likelihood("y", X=train, y=y[: N - 10], likelihood=sle.gp.Gaussian(sigma))
        mean, variance = gp.predict(new, point=values)
    with pm.Model():
        reference = pm.gp.Marginal(cov_func=kernel)
        reference.marginal_likelihood("y", X=train, y=y[: N - 10], sigma=0.4)
        expected_mean, expected_variance = reference.predict(new, point={}, diag=True)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(variance, expected_variance, rtol=1e-6, atol=1e-9)


def test_fit_sample_and_predict_a_classifier():
    D = _latent()[0]
    model, gp, _ = _model(sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF), "logit")
    with model:
        fitted = pm.find_MAP(progressbar=False)
        prior = pm.sample_prior_predictive(draws=5, random_seed=1)
        idata = pm.sample(
            draws=40,
            tune=40,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        prediction = gp.predictive(np.arange(N)[:, None], idata, n_draws=5)
        at_map = gp.predict(np.arange(N)[:, None], point=fitted)
    assert set(np.unique(prior.prior_predictive["y"].values)) <= {0.0, 1.0}
    assert prior.prior_predictive["y"].shape == (1, 5, N)
    assert prediction.draws == 5 and prediction.mean.shape == (N,)
    assert np.all((prediction.mean > 0) & (prediction.mean < 1))
    observed = _observations("logit", _latent()[1])
    assert np.mean((prediction.mean > 0.5) == observed) > 0.7  # it learnt the training labels
    assert at_map[0].shape == (N,) and np.all(at_map[1] > 0)


def test_the_gp_class_checks_its_arguments():
    D = _latent()[0]
    with pm.Model():
        gp = sle.gp.Laplace(cov_func=sle.SLE(D, radius=0.2, ls=1.0))
        X = np.arange(N)[:, None]
        with pytest.raises(TypeError, match=r"`likelihood` must be a pymc_sle\.gp likelihood"):
            gp.marginal_likelihood("y", X=X, y=np.zeros(N), likelihood="bernoulli")
        with pytest.raises(ValueError, match=r"one entry per row of `X` \(90\), but has 89"):
            gp.marginal_likelihood("y", X=X, y=np.zeros(N - 1), likelihood=sle.gp.Bernoulli())
        with pytest.raises(ValueError, match="must be a vector"):
            gp.marginal_likelihood("y", X=X, y=np.zeros((2, N)), likelihood=sle.gp.Bernoulli())
        with pytest.raises(ValueError, match="must be finite, but has 1 non-finite"):
            gp.marginal_likelihood(
                "y", X=X, y=np.r_[np.nan, np.zeros(N - 1)], likelihood=sle.gp.Poisson()
            )
        with pytest.raises(ValueError, match="call `marginal_likelihood` before predicting"):
            gp.predict(X, point={})
    with pytest.raises(TypeError, match="`cov_func` is required"):
        sle.gp.Laplace()


def test_an_ill_conditioned_covariance_converges_to_rounding():
    """A sampler's wild step (a signal variance of 1e11): the mode is found to rounding, and the
    value is finite and far below the sensible one's, so the step is rejected, not fatal."""
    D, f = _latent()
    y = _observations("logit", f)
    problem = _problem(D)
    v = dict(SLE_VALUES, ls=0.07)
    sensible = sparse_approximation(
        problem, y, np.zeros(N), sle.gp.Bernoulli(), *v.values(), JITTER
    )
    wild = sparse_approximation(
        problem, y, np.zeros(N), sle.gp.Bernoulli(), *dict(v, scale=1e11).values(), JITTER
    )
    assert np.isfinite(wild[0]) and wild[0] < sensible[0] - 10


@pytest.mark.parametrize("scale", [5e5, 1e7])
def test_a_large_signal_variance_stops_at_the_rounding_floor(scale):
    """Where rounding in the solve makes every full step lower the objective at the mode (a
    sampler's step to a signal variance of 5e5, seen in NUTS), the halved steps that gain only
    rounding end the iteration after PATIENCE steps, at a stationary mode (a = b there)."""
    D, f = _latent()
    y = _observations("logit", f)
    K = scale * np.exp(-0.5 * D**2 / 50.0**2)
    mode = find_mode(DenseStructure(K), sle.gp.Bernoulli(), y, np.zeros(N))
    assert mode.iterations <= PATIENCE + 2
    np.testing.assert_allclose(mode.a, mode.b, atol=1e-7)


def test_a_log_density_without_its_gradient_skips_the_gradient():
    D = _latent()[0]
    model, _, _ = _model(sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF), "logit")
    nodes = model.compile_logp().f.maker.fgraph.apply_nodes
    ops = [node.op for node in nodes if isinstance(node.op, sle.gp.LaplaceLogDensity)]
    assert len(ops) == 1 and not ops[0].with_gradients
