"""``pm.gp.Marginal(cov_func=SLE(...))`` and a hand-written ``pm.MvNormal`` of an SLE covariance
take the library's likelihood (the logprob rewrite), with PyMC's density: for every inner
kernel, index and feature mode, dense and sparse distances and several outputs; every other
covariance keeps PyMC's graph."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import ancestors

import pymc_sle as sle
from pymc_sle.kernels import DenseFromSparseWarning

INNERS = ["rbf", "matern12", "matern32", "matern52"]
N, CUTOFF = 40, 0.35


def _points(n=N, seed=0):
    x = np.random.default_rng(seed).uniform(0, 1, (n, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)


def _names(graph) -> set[str]:
    """The Ops of a graph, by class name (a Blockwise by its core Op's)."""
    ops = [v.owner.op for v in ancestors([graph]) if v.owner]
    return {type(getattr(op, "core_op", op)).__name__ for op in ops}


def _ops(model) -> set[str]:
    """The Ops of the model's log density graph."""
    return _names(model.logp())


def _model(distances, y, *, inner="rbf", mode="index", reference=False, sigma=None,
           outputs=None):  # fmt: skip
    """The README's model with PyMC's Marginal. ``reference``: the same covariance plus a zero
    constant kernel, a form the rewrite leaves alone, so the model keeps PyMC's density."""
    landmarks = np.arange(0, N, 2)
    with pm.Model() as model:
        radius = pm.Uniform("radius", 0.1, 0.3)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        eta = pm.HalfNormal("eta", 1.0)
        noise = pm.HalfNormal("sigma", 1.0) if sigma is None else sigma
        kwargs = {"radius": radius, "ls": ls, "inner": inner}
        if mode == "index":
            kernel, X = sle.SLE(distances, landmarks, **kwargs), np.arange(N)[:, None]
        else:
            kernel = sle.SLE(input_dim=landmarks.size, **kwargs)
            if isinstance(distances, sle.SparseDistanceMatrix):
                X = distances.take(cols=landmarks)
            else:
                X = distances[:, landmarks]
        cov = 2.0 * eta**2 * kernel
        if reference:
            cov = cov + pm.gp.cov.Constant(0.0)
        gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(0.2), cov_func=cov)
        gp.marginal_likelihood("y", X=X, y=y if outputs is None else outputs, sigma=noise)
    return model


def _value_and_gradient(model, seed=3):
    rng = np.random.default_rng(seed)
    start = model.initial_point()
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
    return model.compile_logp()(point), model.compile_dlogp()(point)


def _y(seed=1):
    D = _points()
    return np.sin(4 * D[:, 0]) + 0.1 * np.random.default_rng(seed).standard_normal(N)


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("mode", ["index", "feature"])
def test_dense_sle_marginal_takes_the_one_factorisation_density(inner, mode):
    D, y = _points(), _y()
    model, reference = (
        _model(D, y, inner=inner, mode=mode),
        _model(D, y, inner=inner, mode=mode, reference=True),
    )
    assert "GaussianLogDensity" in _ops(model) and "GaussianLogDensity" not in _ops(reference)
    (value, gradient), (expected, expected_gradient) = map(_value_and_gradient, (model, reference))
    np.testing.assert_allclose(value, expected, rtol=1e-10)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("mode", ["index", "feature"])
def test_sparse_sle_marginal_takes_the_sparse_density_and_forms_nothing_dense(inner, mode):
    D, y = _points(), _y()
    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFromSparseWarning)  # nothing dense is formed
        model = _model(sparse, y, inner=inner, mode=mode)
        ops = _ops(model)
        value, gradient = _value_and_gradient(model)
    assert "SparseSLELogDensity" in ops
    assert not {"DenseDistances", "GaussianLogDensity", "Cholesky"} & ops
    expected, expected_gradient = _value_and_gradient(_model(D, y, inner=inner, mode=mode))
    tolerance = 1e-6 if inner == "matern12" else 1e-9  # the Matérn quadrature's error
    np.testing.assert_allclose(value, expected, rtol=tolerance)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-6, atol=1e-8)


def test_several_outputs_take_the_dense_density_and_equal_pymcs():
    D = _points()
    outputs = np.stack([_y(1), _y(2), _y(3)])
    model = _model(D, None, outputs=outputs)
    reference = _model(D, None, outputs=outputs, reference=True)
    assert "GaussianLogDensity" in _ops(model)
    np.testing.assert_allclose(_value_and_gradient(model)[0], _value_and_gradient(reference)[0],
                               rtol=1e-10)  # fmt: skip


def test_several_outputs_on_sparse_distances_say_why_they_run_dense():
    D = _points()
    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    model = _model(sparse, None, outputs=np.stack([_y(1), _y(2)]))
    with pytest.warns(UserWarning, match="does not cover several outputs in y"):
        ops = _ops(model)
    assert "GaussianLogDensity" in ops
    with pytest.warns(DenseFromSparseWarning, match=r"dense \(n_points, n_landmarks\)"):
        value = _value_and_gradient(model)[0]
    expected = _value_and_gradient(_model(D, None, outputs=np.stack([_y(1), _y(2)])))[0]
    np.testing.assert_allclose(value, expected, rtol=1e-9)


@pytest.mark.parametrize("distances", ["dense", "sparse"])
def test_a_hand_written_mvnormal_of_an_sle_covariance_is_recognised(distances):
    D, y = _points(), _y()
    given = D if distances == "dense" else sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    models = []
    for reference in (False, True):
        with pm.Model() as model:
            radius = pm.Uniform("radius", 0.1, 0.3)
            eta, sigma = pm.HalfNormal("eta", 1.0), pm.HalfNormal("sigma", 1.0)
            K = eta**2 * sle.SLE(given if not reference else D, radius=radius, ls=0.7,
                                 inner="rbf")(np.arange(N)[:, None])  # fmt: skip
            noise = sigma**2 * pt.eye(N)
            if reference:  # the same covariance, in a form the rewrite leaves alone
                noise = noise + pt.zeros((N, N))
            pm.MvNormal("y", mu=0.1, cov=K + noise, observed=y)
        models.append(model)
    wanted = "GaussianLogDensity" if distances == "dense" else "SparseSLELogDensity"
    assert wanted in _ops(models[0]) and wanted not in _ops(models[1])
    (value, gradient), (expected, expected_gradient) = map(_value_and_gradient, models)
    np.testing.assert_allclose(value, expected, rtol=1e-9)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-7, atol=1e-9)


def test_other_covariances_keep_pymcs_density():
    """A kernel that is not an SLE, a sum of kernels, heteroscedastic noise: PyMC's graph."""
    D, y = _points(), _y()
    X = np.random.default_rng(0).uniform(size=(N, 1))
    with pm.Model() as euclidean:
        ls = pm.LogNormal("ls", 0.0, 1.0)
        pm.gp.Marginal(cov_func=pm.gp.cov.Matern32(1, ls=ls)).marginal_likelihood(
            "y", X=X, y=y, sigma=0.2
        )
    with pm.Model() as two_kernels:
        cov = sle.SLE(D, radius=0.2, ls=1.0) + sle.SLE(D, radius=0.3, ls=1.0)
        pm.gp.Marginal(cov_func=cov).marginal_likelihood(
            "y", X=np.arange(N)[:, None], y=y, sigma=0.2
        )
    with pm.Model() as heteroscedastic:
        pm.gp.Marginal(cov_func=sle.SLE(D, radius=0.2, ls=1.0)).marginal_likelihood(
            "y", X=np.arange(N)[:, None], y=y, sigma=np.linspace(0.1, 0.3, N)
        )
    for model in (euclidean, two_kernels, heteroscedastic):
        ops = _ops(model)
        assert "GaussianLogDensity" not in ops and "Cholesky" in ops


def test_pm_logp_of_the_variable_itself_keeps_pymcs_graph():
    """``pm.logp(rv, value)`` dispatches on MvNormal without the logprob rewrites."""
    model = _model(_points(), _y())
    assert "Cholesky" in _names(pm.logp(model["y"], _y()))


def test_the_dense_block_of_sparse_distances_warns_at_its_size_and_is_refused_past_the_limit():
    D = _points()
    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    size = 8 * N * N  # bytes of the (N, N) block: every column a landmark
    allowed = sle.SLE(sparse, radius=0.2, ls=1.0, dense_limit=size)(np.arange(N)[:, None])
    with pytest.warns(DenseFromSparseWarning, match=r"\(40, 40\) block .* \(0\.0 MiB\)"):
        K = allowed.eval()
    np.testing.assert_allclose(K, sle.SLE(D, radius=0.2, ls=1.0)(np.arange(N)[:, None]).eval())
    refused = sle.SLE(sparse, radius=0.2, ls=1.0, dense_limit=size - 1)(np.arange(N)[:, None])
    with pytest.raises(ValueError, match=r"dense \(n_points, n_landmarks\) = \(40, 40\) block"):
        refused.eval()


@pytest.mark.parametrize("limit", [0.0, -1.0, np.nan, "1 GB"])
def test_dense_limit_must_be_a_positive_number(limit):
    sparse = sle.SparseDistanceMatrix.from_dense(_points(), cutoff=CUTOFF)
    with pytest.raises((ValueError, TypeError), match="`dense_limit`"):
        sle.SLE(sparse, radius=0.2, ls=1.0, dense_limit=limit)


def test_the_sparse_measurable_normal_draws_from_the_covariance_without_forming_it():
    """Its draws come from the sparse factor: their covariance is ``s K + v I``."""
    from pymc_sle.gp._marginal_form import marginal_form, sparse_likelihood
    from pymc_sle.gp._rewrite import SparseSLEMarginalNormal

    D = _points()
    sparse = sle.SparseDistanceMatrix.from_dense(D, cutoff=CUTOFF)
    X = np.arange(N)[:, None]
    K = sle.SLE(sparse, radius=0.25, ls=0.8, inner="rbf")(X)
    cov = 1.5 * K + 0.04 * pt.eye(N)
    problem, parameters = sparse_likelihood(marginal_form(cov), 0)
    rv = SparseSLEMarginalNormal.rv_op(0.3, *parameters, problem=problem, size=(40_000,),
                                       rng=pytensor.shared(np.random.default_rng(5)))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFromSparseWarning)
        draws = rv.eval()
    expected = 1.5 * sle.SLE(D, radius=0.25, ls=0.8, inner="rbf")(X).eval() + 0.04 * np.eye(N)
    assert draws.shape == (40_000, N)
    np.testing.assert_allclose(draws.mean(axis=0), 0.3, atol=0.05)
    np.testing.assert_allclose(np.cov(draws.T), expected, atol=0.06)
