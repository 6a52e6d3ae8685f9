"""Expectation propagation: the tilted moments against numerical integration, the marginal
likelihood against a brute-force integral, the failure path and the GP class. The identities
it shares with the Laplace path (the Gaussian case, gradients against finite differences,
dense against sparse, the warm start) are parametrized over both in ``test_laplace``."""

import collections
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special

import pymc_sle as sle
from pymc_sle.gp._laplace import _ep
from pymc_sle.gp._laplace._approximation import DenseStructure, dense_approximation
from pymc_sle.gp._laplace._ep import _accelerated, ep_terms, find_sites

TILTED = {
    "logit": (sle.gp.Bernoulli(), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
    "probit": (sle.gp.Bernoulli(link="probit"), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
    "binomial": (sle.gp.Binomial(n=5), [0.0, 5.0, 2.0, 0.0, 1.0, 4.0]),
    "poisson": (sle.gp.Poisson(), [0.0, 40.0, 3.0, 0.0, 200.0, 0.0]),
    "gaussian": (sle.gp.Gaussian(0.3), [0.5, -2.0, 4.2, 0.0, 1.0, 3.0]),
}
#: Cavities from a millionth of the likelihood's width to ten thousand times wider (a latent
#: scale of 100).
CAVITY_MEANS = np.array([0.3, -2.0, 4.0, 3.0, -1.0, 2.0])
CAVITY_VARIANCES = np.array([0.5, 20.0, 1e-3, 100.0, 1e4, 1e-6])


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", list(TILTED))
def test_the_tilted_moments_equal_numerical_integrals(name):
    likelihood, y = TILTED[name]
    y = np.array(y)
    params = (0.3,) if name == "gaussian" else ()
    log_z, mean, variance = likelihood.tilted(y, CAVITY_MEANS, CAVITY_VARIANCES, *params)
    for i, (mu, v) in enumerate(zip(CAVITY_MEANS, CAVITY_VARIANCES, strict=True)):
        sd = np.sqrt(variance[i])
        peak = likelihood.pointwise(y[i : i + 1], mean[i : i + 1], *params)[0][0]

        def moment(k, i=i, mu=mu, v=v, peak=peak, sd=sd):
            def integrand(f):
                log_p = likelihood.pointwise(y[i : i + 1], np.array([f]), *params)[0][0]
                return np.exp(log_p - peak - 0.5 * (f - mu) ** 2 / v) * (f - mean[i]) ** k

            ends = mean[i] - 60 * sd, mean[i] + 60 * sd
            return integrate.quad(integrand, *ends, points=[mean[i]], limit=2000, epsabs=0,
                                  epsrel=1e-13)[0]  # fmt: skip

        z = moment(0)
        np.testing.assert_allclose(log_z[i], np.log(z) + peak - 0.5 * np.log(2 * np.pi * v),
                                   rtol=1e-8, atol=1e-8)  # fmt: skip
        assert abs(moment(1) / z) < 1e-7 * sd
        np.testing.assert_allclose(variance[i], moment(2) / z, rtol=1e-7)


def _exact_two_point(K, y, likelihood, mean):
    """``log p(y)`` for two latent values by a 200 x 200 Gauss-Hermite product rule."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(200)
    weights = weights / weights.sum()
    grid = np.stack(np.meshgrid(nodes, nodes, indexing="ij"))
    f = mean[:, None, None] + np.einsum("ij,jab->iab", np.linalg.cholesky(K), grid)
    log_p = likelihood.pointwise(y[:, None, None], f)[0].sum(0)
    return np.log(np.sum(np.outer(weights, weights) * np.exp(log_p)))


@pytest.mark.parametrize("scale", [1.0, 4.0])
@pytest.mark.parametrize(
    ("name", "y"),
    [("logit", [1.0, 0.0]), ("probit", [1.0, 1.0]), ("poisson", [0.0, 6.0]),
     ("binomial", [0.0, 3.0])],
)  # fmt: skip
def test_ep_is_much_closer_to_the_exact_integral_than_laplace(name, y, scale):
    likelihood, y = TILTED[name][0], np.array(y)
    K = scale * np.array([[1.0, 0.7], [0.7, 1.0]])
    mean = np.array([0.2, -0.1])
    exact = _exact_two_point(K, y, likelihood, mean)
    ep = dense_approximation(K, y, mean, likelihood, terms=ep_terms)[0]
    laplace = dense_approximation(K, y, mean, likelihood)[0]
    assert abs(ep - exact) < 3e-3
    assert abs(ep - exact) < 0.2 * abs(laplace - exact)


def _line_covariance(n, *, scale=1.0, ls=1.0, jitter=1e-6):
    """``n`` points evenly on [0, 3] and their squared-exponential covariance plus jitter."""
    x = np.linspace(0, 3, n)
    return x, scale * np.exp(-0.5 * (x[:, None] - x[None]) ** 2 / ls**2) + jitter * np.eye(n)


def test_ep_keeps_the_limit_of_a_growing_signal_variance():
    """With the signal variance s growing, the probit labels' exact marginal likelihood tends
    to an orthant probability (:math:`\\tfrac14 + \\arcsin\\rho / 2\\pi` for two points of
    correlation :math:`\\rho`); EP's stays near it, Laplace's falls without bound."""
    rho, y = 0.7, np.array([1.0, 1.0])
    limit = np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
    likelihood = sle.gp.Bernoulli(link="probit")
    values = {}
    for scale in (1e4, 1e8):
        K = scale * np.array([[1.0, rho], [rho, 1.0]])
        ep = dense_approximation(K, y, np.zeros(2), likelihood, terms=ep_terms)[0]
        values[scale] = ep, dense_approximation(K, y, np.zeros(2), likelihood)[0]
        assert abs(ep - limit) < 0.02
    assert values[1e4][1] < limit - 1.0 and values[1e8][1] < values[1e4][1] - 0.5


def test_ep_reports_the_parameters_when_it_does_not_converge():
    x, K = _line_covariance(12, scale=4.0)
    y = (np.sin(3 * x) > 0).astype(float)
    with pytest.raises(sle.gp.EPError, match=r"did not converge in 1 sweeps .* at eta=7"):
        find_sites(DenseStructure(K), sle.gp.Bernoulli(), y, np.zeros(12), max_sweeps=1,
                   describe=lambda: "eta=7")  # fmt: skip
    sites = find_sites(DenseStructure(K), sle.gp.Bernoulli(), y, np.zeros(12))
    assert 1 < sites.sweeps < 50


#: A sampler's wild steps on Poisson counts (prior scale, constant mean): a log rate of -30
#: that leaves every site's precision at the floor (its variance cancels to zero), and
#: signal variances whose Newton trial steps overflow ``exp``.
WILD_POISSON_STEPS = [(1e-5, -30.0), (1e3, -30.0), (1e7, -30.0)]


@pytest.mark.parametrize("approximation", ["laplace", "ep"])
@pytest.mark.parametrize(("scale", "offset"), WILD_POISSON_STEPS)
def test_a_wild_step_gives_a_value_or_minus_infinity_silently(approximation, scale, offset):
    x, K = _line_covariance(30, scale=scale, ls=0.3, jitter=1e-6 * scale)
    y = np.random.default_rng(3).poisson(np.exp(1 + np.sin(3 * x))).astype(float)
    terms = {"laplace": {}, "ep": {"terms": ep_terms}}[approximation]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # overflow, division by zero
        value, gradient = dense_approximation(K, y, np.full(30, offset), sle.gp.Poisson(), **terms)
    # EP rejects the first step (rounding); every other value is finite, far below a sensible one
    rejected = approximation == "ep" and scale == 1e-5
    assert value == -np.inf if rejected else np.isfinite(value) and value < -100
    assert np.all(np.isfinite(gradient[0]))


def test_a_count_far_below_a_wide_cavity_has_the_likelihoods_own_moments():
    """A log-rate cavity at 278 with variance 4e6 (a sampler's step to an eta of e^8): the
    bracket of the tilted mode is 1e126 wide and bisection closes it. The cavity is flat
    beside the likelihood, so the tilted law is the likelihood's own: a Poisson count of 5
    makes the log rate log-Gamma(5) (mean digamma(5), variance trigamma(5)); the cavity's
    slope, 7e-5, moves the mean by 1.5e-5."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _, mean, variance = sle.gp.Poisson().tilted(np.array([5.0]), np.array([278.0]),
                                                    np.array([4.25e6]))  # fmt: skip
    np.testing.assert_allclose(mean, special.digamma(5.0), atol=5e-5)
    np.testing.assert_allclose(variance, special.polygamma(1, 5.0), rtol=1e-3)


def test_tilted_moments_that_are_not_finite_make_ep_reject_the_point():
    """A log rate above 709 overflows the likelihood's slope: no bracket, NaN moments."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        moments = sle.gp.Poisson().tilted(np.array([5.0]), np.array([800.0]), np.array([1e6]))
    assert all(np.isnan(m[0]) for m in moments)

    class Overflowing(sle.gp.Poisson):  # one observation's cavity as above
        def tilted(self, y, cavity_mean, cavity_variance):
            return super().tilted(y, np.where(np.arange(y.size) == 2, 800.0, cavity_mean),
                                  cavity_variance)  # fmt: skip

    K = _line_covariance(8)[1]
    y = np.arange(8.0)
    assert find_sites(DenseStructure(K), Overflowing(), y, np.zeros(8)) is None
    assert find_sites(DenseStructure(K), sle.gp.Poisson(), y, np.zeros(8)) is not None


#: A linear contraction x -> A x + b of one site's natural parameters, fixed point (20, 20).
LINEAR_MAP = (np.array([[0.9, 0.05], [0.1, 0.8]]), np.array([1.0, 2.0]))


def _anderson_iterates(A, b, updates):
    sites, found = np.array([3.0, 0.5]), []
    history = collections.deque(maxlen=_ep.ANDERSON_DEPTH)
    for _ in range(updates):
        history.append((sites, A @ sites + b))
        sites = _accelerated(history, 1)
        found.append((history[-1][1], sites))
    return found


def test_anderson_finds_a_linear_maps_fixed_point_in_dimension_plus_one_updates():
    A, b = LINEAR_MAP
    damped, sites = _anderson_iterates(A, b, 3)[-1]
    np.testing.assert_allclose(sites, np.linalg.solve(np.eye(2) - A, b), rtol=1e-12)
    assert abs(damped - 20.0).max() > 1.0  # the update alone is far from it


def test_a_combined_precision_below_the_floor_falls_back_to_the_damped_update():
    A, b = LINEAR_MAP[0], np.array([-5.0, 2.0])
    assert np.linalg.solve(np.eye(2) - A, b)[0] < 0  # the combination is a negative precision
    damped, sites = _anderson_iterates(A, b, 3)[-1]
    np.testing.assert_array_equal(sites, damped)


def test_a_residual_that_is_not_finite_falls_back_to_the_damped_update():
    history = collections.deque([(np.array([1.0, 2.0]), np.array([np.inf, 1.0])),
                                 (np.array([2.0, 1.0]), np.array([1.5, 1.5]))])  # fmt: skip
    np.testing.assert_array_equal(_accelerated(history, 1), [1.5, 1.5])


@pytest.mark.parametrize("scale", [25.0, 100.0])
def test_accelerated_sweeps_reach_the_damped_sweeps_sites_in_fewer_sweeps(scale):
    """Separable labels under a wide prior (sharp sites, slow linear convergence)."""
    x, K = _line_covariance(40, scale=scale, ls=0.3)
    y = (np.sin(3 * x) > 0).astype(float)
    accelerated = find_sites(DenseStructure(K), sle.gp.Bernoulli(), y, np.zeros(40))
    damped = find_sites(DenseStructure(K), sle.gp.Bernoulli(), y, np.zeros(40), anderson_depth=1)
    assert accelerated.sweeps < damped.sweeps / 2
    assert abs(_ep.log_marginal(accelerated) - _ep.log_marginal(damped)) < 1e-10
    np.testing.assert_allclose(accelerated.a, damped.a, atol=1e-8 * np.abs(damped.a).max())


def test_the_ep_class_fits_and_predicts_between_laplace_and_the_labels():
    """EP's predictive probabilities are further from 1/2 than Laplace's (Laplace's known
    under-confidence) on the training labels, at the same hyperparameters."""
    x = np.linspace(0, 1, 40)
    y = (np.sin(8 * x) > 0).astype(float)
    predictions = {}
    for gp_class in (sle.gp.Laplace, sle.gp.EP):
        with pm.Model():
            gp = gp_class(cov_func=9.0 * pm.gp.cov.ExpQuad(1, ls=0.1))
            gp.marginal_likelihood("y", X=x[:, None], y=y, likelihood=sle.gp.Bernoulli())
            mean, variance = gp.predict(x[:, None], point={})
        predictions[gp_class.__name__] = sle.gp.Bernoulli().mean(mean, variance)
    ep, laplace = predictions["EP"], predictions["Laplace"]
    assert np.mean(np.abs(ep - 0.5)) > np.mean(np.abs(laplace - 0.5)) + 0.01
    assert np.mean((ep > 0.5) == y) > 0.9


def test_the_approximation_is_checked():
    with pytest.raises(ValueError, match=r"`approximation` must be one of \['ep', 'laplace'\]"):
        sle.gp.LaplaceLogDensity(sle.gp.Bernoulli(), approximation="vb")
