"""The analytic-gradient marginal likelihood and the dense/sparse embedding distances.

Every fast path is checked against a plain PyTensor or numpy reference (values and gradients),
on the C and NUMBA backends (and JAX when installed), and NUMBA must never fall back to object
mode.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from backends import MODES
from pytensor.graph import ancestors
from scipy.stats import multivariate_normal

import pymc_sle
from pymc_sle import SLE
from pymc_sle.datasets import one_dimensional
from pymc_sle.gp import GaussianLogDensity, gaussian_logp
from pymc_sle.kernels._bump import bump
from pymc_sle.kernels._bump_ops import _BumpSquaredDistances, bump_squared_distances
from pymc_sle.kernels._embedding_loops import sparse_backward, sparse_forward
from pymc_sle.kernels._embedding_ops import dense_squared_distances


def compile_fn(inputs, outputs, mode):
    """A compiled function whose outputs are numpy arrays on every backend (JAX returns its own)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        fn = pytensor.function(inputs, outputs, mode=mode)

    def call(*args):
        out = fn(*args)
        return [np.asarray(o) for o in out] if isinstance(out, list) else np.asarray(out)

    call.maker = fn.maker
    return call


def random_spd(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    return A @ A.T / n + 0.5 * np.eye(n)


# -- GaussianLogDensity ------------------------------------------------------------------------


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


# -- embedding distances -----------------------------------------------------------------------


def sparse_embedding(n, m, fill, seed):
    rng = np.random.default_rng(seed)
    mask = rng.uniform(size=(n, m)) < fill
    return mask, np.where(mask, rng.uniform(0.1, 1.0, size=(n, m)), 0.0)


def reference_squared(phi):
    return ((phi[:, None, :] - phi[None, :, :]) ** 2).sum(-1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("n", "m", "fill"), [(1, 3, 1.0), (9, 4, 0.5), (25, 40, 0.2), (30, 7, 0.0)]
)
def test_dense_and_sparse_distances_equal_the_reference(mode, n, m, fill):
    """The dense Op, and the sparse loops on the embedding stored by landmark (the layout the
    bump's sparse branch builds), forward and gradient."""
    mask, phi = sparse_embedding(n, m, fill, seed=n + m)
    weights = np.random.default_rng(0).normal(size=(n, n))
    phi_var = pt.dmatrix("phi")
    generic = pt.sum(pt.sqr(phi_var[:, None, :] - phi_var[None, :, :]), axis=-1)
    dense = dense_squared_distances(phi_var)
    outputs = [generic, dense] + [pt.grad((o * weights).sum(), phi_var) for o in (generic, dense)]
    ref, d, g_ref, g_dense = compile_fn([phi_var], outputs, mode)(phi)
    cols, rows = np.nonzero(mask.T)  # column by column
    col_ptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=m))]).astype(np.int64)
    values, rows = phi[rows, cols], rows.astype(np.int64)
    s = sparse_forward(values, col_ptr, rows, n)
    g_sparse = sparse_backward(values, col_ptr, rows, weights)
    np.testing.assert_allclose(ref, reference_squared(phi), atol=1e-12)
    np.testing.assert_allclose(d, ref, atol=1e-12)
    np.testing.assert_allclose(s, ref, atol=1e-12)
    assert (np.diag(s) == 0).all()
    np.testing.assert_allclose(g_dense, g_ref, atol=1e-10)
    np.testing.assert_allclose(g_sparse, g_ref[rows, cols], atol=1e-10)


def planar_distances(n, m, seed):
    """Distances from ``n`` random points of the unit square to ``m`` others (the first
    ``min(n, m)`` shared: zeros)."""
    x = np.random.default_rng(seed).uniform(size=(max(n, m), 2))
    return np.linalg.norm(x[:n, None] - x[None, :m], axis=-1)


BUMP_CASES = [  # (n, m, radius): ~5 % of the block inside the bump, ~70 %, none, all
    (25, 40, 0.12),
    (12, 5, 0.6),
    (9, 4, 1e-3),
    (6, 6, 3.0),
]


def bump_reference_and_support(mode, block_input, support_block, max_fill, **kwargs):
    """``f(D, weights, radius, amplitude, shape)``: the dense reference and the run-time-support
    Op, each with its gradients with respect to the three per-landmark parameters (and to the
    block, when it is the symbolic input)."""
    weights = pt.dmatrix("weights")
    params = [pt.dvector(name) for name in ("radius", "amplitude", "shape")]
    reference = dense_squared_distances(bump(block_input, *params))
    support = bump_squared_distances(support_block, *params, max_fill, **kwargs)
    wrt = [*params, block_input] if support_block is block_input else params
    outputs = []
    for value in (reference, support):
        outputs += [value, *pt.grad((value * weights).sum(), wrt)]
    return compile_fn([block_input, weights, *params], outputs, mode)


def check_bump_support(f, D, radius, seed):
    """Values and gradients of the Op equal the reference, for a symmetric upstream gradient (a
    kernel matrix's, for which the Op skips building ``G + G.T``) and an asymmetric one."""
    n, m = D.shape
    rng = np.random.default_rng(seed)
    params = [radius * rng.uniform(0.8, 1.2, m), rng.uniform(0.5, 2, m), rng.uniform(0.3, 3, m)]
    asymmetric = rng.normal(size=(n, n))
    for weights in (asymmetric + asymmetric.T, asymmetric):
        out = f(D, weights, *params)
        half = len(out) // 2
        scale = max(1.0, *(np.abs(o).max() for o in out[:half]))
        for ref, got in zip(out[:half], out[half:], strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12 * scale)
        assert (np.diag(out[half]) == 0).all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_fill", [0.0, 1.0])  # forces the dense / the sparse branch
def test_bump_distances_of_a_symbolic_block_equal_the_dense_reference(mode, max_fill):
    """The support found by a scan; gradients with respect to the block too."""
    block = pt.dmatrix("block")
    f = bump_reference_and_support(mode, block, block, max_fill)
    for n, m, radius in BUMP_CASES:
        check_bump_support(f, planar_distances(n, m, seed=n + m), radius, seed=n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("n", "m", "radius"), BUMP_CASES[:2])
@pytest.mark.parametrize(("max_fill", "bounded"), [(1.0, False), (1.0, True), (0.0, False)])
def test_bump_distances_of_a_constant_block_equal_the_dense_reference(
    mode, n, m, radius, max_fill, bounded
):
    """The support found from sorted columns, whole or cut at ``radius_max``."""
    D = planar_distances(n, m, seed=n + m)
    radius_max = 1.3 * radius if bounded else None
    f = bump_reference_and_support(mode, pt.dmatrix("block"), D, max_fill, radius_max=radius_max)
    check_bump_support(f, D, radius, seed=n)


@pytest.mark.parametrize("mode", MODES)
def test_bump_distances_gradient_equals_finite_differences(mode):
    D = planar_distances(20, 20, seed=3)
    weights = np.random.default_rng(4).normal(size=(20, 20))
    radius = pt.dvector("radius")
    loss = (bump_squared_distances(D, radius, 1.5, 0.8, max_fill=1.0) * weights).sum()
    f = compile_fn([radius], [loss, pt.grad(loss, radius)], mode)
    r0 = np.random.default_rng(5).uniform(0.15, 0.3, 20)
    direction = np.random.default_rng(6).normal(size=20)
    step = 1e-6
    numeric = (f(r0 + step * direction)[0] - f(r0 - step * direction)[0]) / (2 * step)
    np.testing.assert_allclose(f(r0)[1] @ direction, numeric, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_bump_gradients_share_one_embedding_gradient(mode):
    """With respect to the parameters and a symbolic block at once, the products with the
    upstream gradient (the expensive part of the backward) run once; a constant block has no
    block gradient at all."""
    block, radius = pt.dmatrix("block"), pt.dvector("radius")

    def op_counts(block_input, wrt):
        loss = pt.exp(-bump_squared_distances(block_input, radius, 1.0, 1.0, 0.1)).sum()
        f = pytensor.function([radius, *wrt], pt.grad(loss, [radius, *wrt]), mode=mode)
        names = [type(node.op).__name__ for node in f.maker.fgraph.toposort()]
        return {name: names.count(name) for name in set(names) if name.startswith("_Bump")}

    assert op_counts(block, [block]) == {
        "_BumpSquaredDistances": 1, "_BumpEmbeddingGrad": 1,
        "_BumpSquaredDistancesGrad": 1, "_BumpSquaredDistancesBlockGrad": 1,
    }  # fmt: skip
    assert op_counts(planar_distances(6, 5, seed=0), []) == {
        "_BumpSquaredDistances": 1, "_BumpEmbeddingGrad": 1, "_BumpSquaredDistancesGrad": 1,
    }  # fmt: skip


def test_bump_distances_keep_only_the_candidates_below_radius_max():
    D = planar_distances(30, 30, seed=1)
    out = bump_squared_distances(D, pt.dscalar("r"), 1.0, 1.0, max_fill=0.1, radius_max=0.2)
    order, ordered = (v.data for v in out.owner.inputs[1:3])
    assert order.shape == ordered.shape == (30, (D < 0.2).sum(axis=0).max())
    np.testing.assert_array_equal(ordered, np.take_along_axis(D.T, order, axis=1))
    assert (np.diff(ordered, axis=1) >= 0).all()


@pytest.mark.parametrize("mode", ["FAST_RUN", "NUMBA"])
def test_bump_distances_refuse_parameters_of_another_width_than_the_block(mode):
    """A graph whose block is replaced by a wider one keeps parameters broadcast to the old
    width: an error at run time, not a read past their end."""
    block, radius = pt.dmatrix("block"), pt.dvector("radius")
    out, *_ = _BumpSquaredDistances(1.0)(block, np.empty((0, 0), np.int32), np.empty((0, 0)),
                                         radius, radius, radius)  # fmt: skip
    f = compile_fn([block, radius], [out], mode)
    D = planar_distances(6, 5, seed=2)
    reference = dense_squared_distances(bump(D, 0.5, 0.5, 0.5)).eval()
    np.testing.assert_allclose(f(D, np.full(5, 0.5))[0], reference, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="one value per column of the distance block"):
        f(D, np.full(4, 0.5))


def test_bump_distances_validate_max_fill():
    with pytest.raises(ValueError, match=r"`max_fill` must be in \[0, 1\], but got 1.5"):
        bump_squared_distances(pt.dmatrix("block"), 1.0, 1.0, 1.0, 1.5)


# -- SLE: sparse vs dense, radius_max ----------------------------------------------------------


@pytest.fixture(scope="module")
def planar():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(40, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("inner", ["matern32", "rbf"])
@pytest.mark.parametrize("per_landmark", [False, True])
def test_sle_sparse_branch_equals_dense(planar, mode, inner, per_landmark):
    """``auto`` at 7.5 % fill (its sparse products) against ``dense``."""
    X = np.arange(40)[:, None]
    radius, ls = pt.dscalar("radius"), pt.dscalar("ls")
    amplitude = pt.dvector("amplitude") if per_landmark else 1.0
    weights = np.random.default_rng(1).normal(size=(40, 40))
    outputs = []
    for embedding in ("dense", "auto"):
        cov = SLE(
            planar, radius=radius, ls=ls, amplitude=amplitude, radius_max=0.45,
            inner=inner, embedding=embedding,
        )  # fmt: skip
        K = cov(X)
        wrt = [radius, ls] + ([amplitude] if per_landmark else [])
        outputs += [K, *pt.grad((K * weights).sum(), wrt)]
    inputs = [radius, ls] + ([amplitude] if per_landmark else [])
    values = [0.15, 0.8] + ([np.linspace(0.5, 1.5, 40)] if per_landmark else [])
    out = compile_fn(inputs, outputs, mode)(*values)
    half = len(out) // 2
    for dense, sparse in zip(out[:half], out[half:], strict=True):
        np.testing.assert_allclose(sparse, dense, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(  # fill ~3 % (sparse branch), ~95 % (dense branch)
    ("per_landmark", "radius_value"), [(True, 0.12), (False, 0.12), (False, 0.9)]
)
def test_sle_with_an_unbounded_radius_follows_its_support_at_run_time(
    planar, mode, per_landmark, radius_value
):
    """LogNormal radius: no pattern is known in advance, ``auto`` finds it at every evaluation.
    Values and gradients equal the dense path, and the gradient equals finite differences."""
    X = np.arange(40)[:, None]
    with pm.Model():
        radius_rv = pm.LogNormal("radius", 0.0, 1.0)
        auto = SLE(planar, radius=radius_rv, ls=0.7)
    assert auto.radius_max is None
    assert "_BumpSquaredDistances" in {
        type(v.owner.op).__name__ for v in ancestors([auto(X)]) if v.owner is not None
    }
    radius = pt.dvector("radius") if per_landmark else pt.dscalar("radius")
    ls = pt.dscalar("ls")
    weights = np.random.default_rng(1).normal(size=(40, 40))
    outputs = []
    for embedding in ("dense", "auto"):
        K = SLE(planar, radius=radius, ls=ls, embedding=embedding, inner="matern52")(X)
        loss = (K * weights).sum()
        outputs += [K, loss, *pt.grad(loss, [radius, ls])]
    rng = np.random.default_rng(2)
    r0 = radius_value * (rng.uniform(0.8, 1.2, 40) if per_landmark else 1.0)
    f = compile_fn([radius, ls], outputs, mode)
    out = f(r0, 0.7)
    for dense, auto_value in zip(out[:4], out[4:], strict=True):
        np.testing.assert_allclose(auto_value, dense, rtol=1e-10, atol=1e-12)
    step = 1e-6
    direction = rng.normal(size=np.shape(r0))
    numeric = (f(r0 + step * direction, 0.7)[5] - f(r0 - step * direction, 0.7)[5]) / (2 * step)
    np.testing.assert_allclose(np.sum(out[6] * direction), numeric, rtol=1e-5)


def test_each_embedding_takes_its_own_ops(planar):
    """``auto`` finds the support at run time whatever the radius (its branch is chosen at run
    time); ``dense`` does not look for one."""
    X = np.arange(40)[:, None]

    def op_names(cov):
        return {type(v.owner.op).__name__ for v in ancestors([cov(X)]) if v.owner is not None}

    for radius in (0.1, 2.0):
        assert "_BumpSquaredDistances" in op_names(SLE(planar, radius=radius, ls=1.0))
    dense = SLE(planar, radius=2.0, ls=1.0, embedding="dense")
    assert "_BumpSquaredDistances" not in op_names(dense)
    assert "_DenseSquaredDistances" in op_names(dense)


def test_radius_max_is_inferred_from_a_fixed_radius_or_a_bounded_prior(planar):
    assert SLE(planar, radius=np.full(40, 0.2), ls=1.0).radius_max == 0.2
    with pm.Model():
        uniform = pm.Uniform("r", 0.1, 0.6)
        unbounded = pm.LogNormal("r2", 0.0, 1.0)
        assert SLE(planar, radius=uniform, ls=1.0).radius_max == 0.6
        assert SLE(planar, radius=unbounded, ls=1.0).radius_max is None
        assert SLE(planar, radius=unbounded, ls=1.0, radius_max=0.7).radius_max == 0.7


def test_a_random_radius_is_capped_at_radius_max(planar):
    X = np.arange(40)[:, None]
    radius = pt.dscalar("radius")
    capped = pytensor.function([radius], SLE(planar, radius=radius, ls=1.0, radius_max=0.3)(X))
    np.testing.assert_allclose(capped(0.9), SLE(planar, radius=0.3, ls=1.0)(X).eval(), atol=1e-12)


def test_embedding_validators(planar):
    X = np.arange(40)[:, None]
    with pytest.raises(ValueError, match=r"`embedding` must be one of .*'dense'.*, but got 'csr'"):
        SLE(planar, radius=0.3, ls=1.0, embedding="csr")
    with pytest.raises(ValueError, match=r"`radius_max` must be >= `radius`.*0\.2.*0\.3"):
        SLE(planar, radius=0.3, ls=1.0, radius_max=0.2)
    with pytest.raises(ValueError, match="`radius_max` must be"):
        SLE(planar, radius=0.3, ls=1.0, radius_max=-1.0)
    auto = SLE(planar, radius=0.05, ls=1.0)
    with pm.Model():  # inputs that pm.set_data could change: the support is found at run time
        data = pm.Data("X", X.astype(float))
        np.testing.assert_allclose(auto(data).eval(), auto(X).eval(), atol=1e-12)


# -- pymc_sle.gp.Marginal ----------------------------------------------------------------------


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


@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_marginal_samples_on_every_backend(sampler):
    if sampler != "pymc":
        pytest.importorskip(sampler)
    if sampler == "numpyro":
        pytest.importorskip("jax")
    data = one_dimensional(n_train=20, n_test=5, seed=2)
    X = data.train[:, None]
    with pm.Model(), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        radius = pm.Uniform("radius", 0.05, 0.6)
        ls = pm.LogNormal("ls", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        gp = pymc_sle.gp.Marginal(cov_func=SLE(data.distances, data.train, radius=radius, ls=ls))
        gp.marginal_likelihood("y", X=X, y=data.y_train, sigma=sigma)
        idata = pm.sample(
            150, tune=150, chains=1, nuts_sampler=sampler, random_seed=3, progressbar=False
        )
    draws = idata.posterior["sigma"].values
    assert draws.shape == (1, 150) and np.isfinite(draws).all() and draws.std() > 0


@pytest.mark.parametrize("constant", [True, False])
def test_bump_distances_exclude_a_distance_equal_to_the_radius(constant):
    """The support is ``d < r``, exactly as ``bump`` tests it: at ``d = r`` the embedding is 0."""
    D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    block = pt.dmatrix("block")
    support = bump_squared_distances(D if constant else block, 1.0, 1.0, 1.0, max_fill=1.0)
    value = pytensor.function([block], support, on_unused_input="ignore")(D)
    np.testing.assert_array_equal(value, 2.0 * (1.0 - np.eye(3)))  # one-hot embeddings
