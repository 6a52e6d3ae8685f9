"""The analytic-gradient Gaussian log density: values and gradients against scipy, PyMC's
MvNormal and finite differences, on the C and NUMBA backends (and JAX when installed), one
factorisation for both."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.stats import multivariate_normal

from pymc_sle.gp import GaussianLogDensity, gaussian_logp
from tests.support import MODES, compile_fn


def random_spd(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    return A @ A.T / n + 0.5 * np.eye(n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_gaussian_log_density_matches_scipy(mode, n):
    cov, residual = random_spd(n, n), np.random.default_rng(n).normal(size=n)
    K, r = pt.dmatrix("K"), pt.dvector("r")
    logp, grad_K, grad_r = GaussianLogDensity()(K, r)
    value, gK, gr = compile_fn([K, r], [logp, grad_K, grad_r], mode)(cov, residual)
    assert value == pytest.approx(multivariate_normal(np.zeros(n), cov).logpdf(residual), rel=1e-12)
    inverse = np.linalg.inv(cov)
    alpha = inverse @ residual
    np.testing.assert_allclose(gK, 0.5 * (np.outer(alpha, alpha) - inverse), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gr, -alpha, rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_gaussian_logp_equals_pymc_mvnormal_with_gradients(mode):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=30), rng.normal(size=30)
    ls, mu = pt.dscalar("ls"), pt.dscalar("mu")
    K = pt.exp(-0.5 * pt.sqr(x[:, None] - x[None]) / ls**2) + 0.1 * pt.eye(30)
    ours = gaussian_logp(y, mu * pt.ones(30), K)
    ref = pm.logp(pm.MvNormal.dist(mu * pt.ones(30), K), y)
    f = compile_fn([ls, mu], [ours, ref, *pt.grad(ours, [ls, mu]), *pt.grad(ref, [ls, mu])], mode)
    out = f(0.3, 0.2)
    assert out[0] == pytest.approx(out[1], abs=1e-8)
    np.testing.assert_allclose(out[2:4], out[4:6], rtol=1e-8)


def test_gaussian_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=12), rng.normal(size=12)

    def logp(ls, mu):
        K = pt.exp(-0.5 * pt.sqr(x[:, None] - x[None]) / ls**2) + 0.2 * pt.eye(12)
        return gaussian_logp(y, mu * pt.ones(12), K)

    pytensor.gradient.verify_grad(logp, [np.array(0.4), np.array(-0.3)], rng=rng)


@pytest.mark.parametrize("mode", MODES)
def test_not_positive_definite_gives_minus_inf_and_finite_gradients(mode):
    K, r = pt.dmatrix("K"), pt.dvector("r")
    logp, grad_K, grad_r = GaussianLogDensity()(K, r)
    value, gK, gr = compile_fn([K, r], [logp, grad_K, grad_r], mode)(-np.eye(3), np.ones(3))
    assert value == -np.inf
    assert np.isfinite(gK).all() and np.isfinite(gr).all()


@pytest.mark.parametrize("mode", MODES)
def test_value_only_graph_skips_the_inverse(mode):
    K, r = pt.dmatrix("K"), pt.dvector("r")
    f = compile_fn([K, r], gaussian_logp(r, 0.0, K), mode)
    ops = [node.op for node in f.maker.fgraph.apply_nodes]
    assert GaussianLogDensity(False) in ops and GaussianLogDensity(True) not in ops
    assert float(f(random_spd(4, 0), np.ones(4))) == pytest.approx(
        multivariate_normal(np.zeros(4), random_spd(4, 0)).logpdf(np.ones(4))
    )


def test_value_and_gradient_share_one_node():
    K, r = pt.dmatrix("K"), pt.dvector("r")
    logp = gaussian_logp(r, 0.0, K)
    f = pytensor.function([K, r], [logp, *pt.grad(logp, [K, r])])
    nodes = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, GaussianLogDensity)]
    assert len(nodes) == 1 and nodes[0].op.with_gradients


def test_gaussian_log_density_validates_shapes_and_types():
    with pytest.raises(ValueError, match="2-D `cov` and a 1-D or 2-D `residual`"):
        GaussianLogDensity()(pt.dvector(), pt.dvector())
    with pytest.raises(ValueError, match=r"ndim 2 and 3"):
        GaussianLogDensity()(pt.dmatrix(), pt.dtensor3())
    with pytest.raises(TypeError, match="`cov` must be real"):
        GaussianLogDensity()(pt.matrix(dtype="complex128"), pt.dvector())
    K, r = pt.dmatrix("K"), pt.dvector("r")
    f = pytensor.function([K, r], GaussianLogDensity(False)(K, r), mode="FAST_RUN")
    with pytest.raises(ValueError, match=r"`cov` must have shape \(3, 3\)"):
        f(np.eye(2), np.ones(3))


def test_gradients_of_the_gradient_outputs_are_refused():
    K, r = pt.dmatrix("K"), pt.dvector("r")
    _, grad_K, _ = GaussianLogDensity()(K, r)
    with pytest.raises(NotImplementedError, match="through its log density only"):
        pt.grad(grad_K.sum(), K)
