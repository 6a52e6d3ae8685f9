"""The sparse exact likelihood: the supernodal factorisation, selected inversion, and the SLE-RBF
log density and gradient against the dense path."""

import numba
import numpy as np
import pymc as pm
import pytest

import pymc_sle as sle
from pymc_sle._linalg import _supernodal
from pymc_sle.gp._sparse import _likelihood, _prediction, _problem
from pymc_sle.gp._sparse._likelihood import draw, log_density
from pymc_sle.gp._sparse._problem import SparseSLEProblem
from pymc_sle.kernels import RawLandmarkEmbedding


@pytest.mark.parametrize("module", [_supernodal, _likelihood, _prediction, _problem])
def test_the_sparse_kernels_release_the_gil(module):
    """nutpie's chains are threads of one process: they run the sparse likelihood in parallel
    only if its compiled kernels release the GIL."""
    kernels = {
        name: function
        for name, function in vars(module).items()
        if isinstance(function, numba.core.registry.CPUDispatcher)
        and function.__module__ == module.__name__
    }
    assert kernels
    assert [name for name, kernel in kernels.items() if not kernel.targetoptions.get("nogil")] == []


def _points(n, seed=0):
    x = np.random.default_rng(seed).uniform(0, 1, (n, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)


def _model(distances, y, train, *, landmarks=None, inner="rbf", random_shape=False, radius_max=0.3):
    with pm.Model() as model:
        radius = pm.Uniform("radius", radius_max / 6, radius_max)
        ls = pm.LogNormal("ls", 0.0, 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        shape = pm.LogNormal("shape", 0.0, 0.3) if random_shape else 1.0
        amplitude = pm.LogNormal("amplitude", 0.0, 0.3) if random_shape else 1.0
        cov = (
            2.0
            * eta**2
            * sle.SLE(
                distances,
                landmarks,
                radius=radius,
                ls=ls,
                shape=shape,
                amplitude=amplitude,
                inner=inner,
            )
        )
        gp = sle.gp.Marginal(mean_func=pm.gp.mean.Constant(0.3), cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=sigma)
    return model


def _uses_sparse(model) -> bool:
    nodes = model.compile_dlogp().f.maker.fgraph.apply_nodes
    return any(type(node.op).__name__ == "SparseSLELogDensity" for node in nodes)


@pytest.mark.filterwarnings("ignore:Both `amplitude` and `ls` are random")
@pytest.mark.parametrize("random_shape", [False, True])
@pytest.mark.parametrize("layout", ["square", "rectangular"])
def test_sparse_likelihood_equals_the_dense_one(random_shape, layout):
    n_points = 140
    D = _points(n_points)
    train = np.arange(0, n_points, 2) if layout == "rectangular" else np.arange(n_points)
    landmarks = train if layout == "rectangular" else None
    if layout == "rectangular":  # rows: every point; columns: the training points only
        D, landmarks = D[:, train], None
    y = np.sin(5 * D[train, 0]) + 0.1 * np.random.default_rng(1).standard_normal(train.size)
    dense = _model(D, y, train, landmarks=landmarks, random_shape=random_shape)
    sparse = _model(
        sle.SparseDistanceMatrix.from_dense(D, cutoff=0.3),
        y,
        train,
        landmarks=landmarks,
        random_shape=random_shape,
    )
    assert _uses_sparse(sparse) and not _uses_sparse(dense)
    logp = [m.compile_logp() for m in (dense, sparse)]
    dlogp = [m.compile_dlogp() for m in (dense, sparse)]
    rng = np.random.default_rng(2)
    # radii across the prior: each adds or removes pattern entries (explicit zeros at small r)
    for radius_raw in (-3.0, -1.0, 0.0, 1.5, 4.0):
        point = dense.initial_point()
        for name in point:
            point[name] = rng.normal(0.0, 0.5, np.shape(point[name]))
        point["radius_interval__"] = radius_raw
        values = [f(point) for f in logp]
        gradients = [f(point) for f in dlogp]
        np.testing.assert_allclose(values[1], values[0], rtol=1e-8)
        np.testing.assert_allclose(gradients[1], gradients[0], rtol=1e-8, atol=1e-8)


def test_the_gradient_matches_finite_differences():
    D = _points(60, seed=3)
    problem = _problem(D, cutoff=0.35)
    y = np.random.default_rng(4).standard_normal(60)
    params = np.array([0.3, 1.2, 0.7, 1.5, 1.3, 0.2])
    _, gradient = log_density(problem, y, *params)
    for k in range(params.size):
        step = np.zeros_like(params)
        step[k] = 1e-6 * params[k]
        up = log_density(problem, y, *(params + step), with_gradients=False)[0]
        down = log_density(problem, y, *(params - step), with_gradients=False)[0]
        np.testing.assert_allclose(gradient[1 + k], (up - down) / (2 * step[k]), rtol=1e-5)


@pytest.mark.parametrize(
    "params",
    [
        (0.0, 1.0, 1.0, 1.5, 1.3, 0.2),  # an underflowed radius
        (0.3, 1.0, 1.0, np.inf, 1.3, 0.2),  # an overflowed length scale (a sampler's wild step)
        (0.3, 0.0, 1.0, 1.5, 1.3, 0.2),
        (0.3, 1.0, 1.0, 1.5, 0.0, 0.2),
        (0.3, 1.0, 1.0, 1.5, 1.3, np.nan),
    ],
)
def test_parameters_outside_the_covariance_give_minus_infinity(params):
    D = _points(30, seed=3)
    value, gradient = log_density(_problem(D, cutoff=0.35), np.ones(30), *params)
    assert value == -np.inf and not any(np.any(part) for part in gradient)


def _problem(D, cutoff):
    sparse_d = sle.SparseDistanceMatrix.from_dense(D, cutoff=cutoff)
    return SparseSLEProblem(sparse_d.indptr, sparse_d.indices, sparse_d.values, D.shape[1], cutoff)


def test_draws_have_the_model_mean_and_covariance():
    D = _points(12, seed=5)
    problem = _problem(D, cutoff=0.5)
    radius, amplitude, shape, ls, scale, noise = 0.45, 1.0, 1.0, 0.8, 1.5, 0.1
    mean = np.linspace(-3.0, 3.0, 12)
    parameters = (radius, np.array(amplitude), shape, ls, scale, noise)  # 0-d arrays too
    draws = draw(problem, *parameters, rng=np.random.default_rng(6), size=(40_000,), mean=mean)
    phi = np.where(
        D < radius, np.exp(shape * (1 - 1 / (1 - np.minimum(D / radius, 0.999) ** 2))), 0
    )
    E = ((phi[:, None] - phi[None]) ** 2).sum(-1)
    cov = scale * np.exp(-E / (2 * ls**2)) + noise * np.eye(12)
    assert draws.shape == (40_000, 12)
    np.testing.assert_allclose(draws.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05)


def test_a_radius_beyond_the_cutoff_is_refused():
    D = _points(20)
    with pytest.raises(ValueError, match="at most the cutoff"):
        log_density(_problem(D, 0.2), np.zeros(20), 0.25, 1.0, 1.0, 1.0, 1.0, 0.1)
    with pytest.raises(ValueError, match=r"`radius` must be at most the cutoff 0\.2"):
        sle.SLE(sle.SparseDistanceMatrix.from_dense(D, cutoff=0.2), radius=0.3, ls=1.0)
    with pytest.raises(ValueError, match="`radius_max` must be at most the cutoff"):
        sle.SLE(
            sle.SparseDistanceMatrix.from_dense(D, cutoff=0.2), radius=0.1, ls=1.0, radius_max=0.5
        )


def test_an_unsupported_model_on_sparse_distances_warns_and_runs_dense():
    D = _points(50)
    y = np.random.default_rng(0).standard_normal(50)
    train = np.arange(50)
    sparse_d = sle.SparseDistanceMatrix.from_dense(D, cutoff=0.3)
    with pytest.warns(UserWarning, match=r"per-landmark radius, amplitude or shape"):
        with pm.Model() as model:
            cov = sle.SLE(sparse_d, radius=np.full(50, 0.2), ls=1.0, inner="rbf")
            gp = sle.gp.Marginal(cov_func=cov)
            gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=0.3)
    with pm.Model() as reference:
        cov = sle.SLE(D, radius=np.full(50, 0.2), ls=1.0, inner="rbf")
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=0.3)
    np.testing.assert_allclose(model.compile_logp()({}), reference.compile_logp()({}))


def _feature_and_index_models(inner, *, n_points=120, per_landmark=False):
    """The same model twice: index mode on dense distances, and feature mode whose ``X`` is the
    sparse training block (rows: the training points; columns: the landmarks)."""
    D = _points(n_points, seed=11)
    train, landmarks = np.arange(0, n_points, 4), np.arange(0, n_points, 3)
    y = np.sin(5 * D[train, 0]) + 0.1 * np.random.default_rng(12).standard_normal(train.size)
    features = sle.SparseDistanceMatrix.from_dense(D[:, landmarks], cutoff=0.35)
    models = []
    for mode in ("index", "feature"):
        with pm.Model() as model:
            radius = (
                np.linspace(0.15, 0.25, landmarks.size)
                if per_landmark
                else pm.Uniform("radius", 0.05, 0.3)
            )
            eta = pm.HalfNormal("eta", 1.0)
            sigma = pm.HalfNormal("sigma", 1.0)
            kwargs = {"radius": radius, "ls": 0.8, "inner": inner}
            if mode == "index":
                cov, X = sle.SLE(D, landmarks, **kwargs), train[:, None]
            else:
                cov, X = sle.SLE(input_dim=landmarks.size, **kwargs), features.take(rows=train)
            gp = sle.gp.Marginal(mean_func=pm.gp.mean.Constant(0.1), cov_func=eta**2 * cov)
            gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
        models.append((model, gp))
    return D, landmarks, features, models


@pytest.mark.parametrize("inner", ["rbf", "matern32"])
def test_feature_mode_on_sparse_distances_equals_index_mode(inner):
    D, landmarks, features, [(dense, dense_gp), (sparse, sparse_gp)] = _feature_and_index_models(
        inner
    )
    assert _uses_sparse(sparse) and not _uses_sparse(dense)
    tolerance = 1e-8 if inner == "rbf" else 1e-6  # Matérn: the quadrature's stated error
    for radius_raw in (-3.0, 0.0, 2.5):  # radii that add and remove pattern entries
        point = {**dense.initial_point(), "radius_interval__": radius_raw}
        np.testing.assert_allclose(
            sparse.compile_logp()(point), dense.compile_logp()(point), rtol=tolerance
        )
        np.testing.assert_allclose(
            sparse.compile_dlogp()(point), dense.compile_dlogp()(point), rtol=1e-5, atol=1e-6
        )
    new_rows = np.arange(1, 120, 4)
    point = {"radius": 0.2, "eta": 1.3, "sigma": 0.2}
    with dense:
        expected = dense_gp.predict(new_rows[:, None], point=point, diag=True, pred_noise=True)
    with sparse:  # new points as sparse distances or as an array of distances to the landmarks
        for Xnew in (features.take(rows=new_rows), D[new_rows][:, landmarks]):
            found = sparse_gp.predict(Xnew, point=point, diag=True, pred_noise=True)
            for got, want in zip(found, expected, strict=True):
                np.testing.assert_allclose(got, want, rtol=tolerance, atol=1e-10)


def test_feature_mode_covariance_reads_sparse_distances_as_far():
    D = _points(30, seed=13)
    features = sle.SparseDistanceMatrix.from_dense(D[:, :10], cutoff=0.3)
    cov = sle.SLE(radius=0.25, ls=0.7, input_dim=10)
    np.testing.assert_allclose(cov(features).eval(), cov(D[:, :10]).eval(), atol=1e-14)
    np.testing.assert_allclose(
        cov(features, features.take(rows=[2, 5])).eval(), cov(D[:, :10], D[[2, 5], :10]).eval()
    )
    picked = sle.SLE(radius=0.25, ls=0.7, input_dim=10, active_dims=[1, 4, 7])
    np.testing.assert_allclose(picked(features).eval(), picked(D[:, :10]).eval(), atol=1e-14)


def test_an_unsupported_feature_mode_model_on_sparse_distances_warns_and_runs_dense():
    with pytest.warns(UserWarning, match="per-landmark radius"):
        _, _, _, [(dense, _), (sparse, _)] = _feature_and_index_models("rbf", per_landmark=True)
    assert not _uses_sparse(sparse)
    point = dense.initial_point()
    np.testing.assert_allclose(sparse.compile_logp()(point), dense.compile_logp()(point))


def test_sparse_features_are_refused_where_they_cannot_be_read():
    D = _points(30, seed=14)
    features = sle.SparseDistanceMatrix.from_dense(D[:, :10], cutoff=0.3)
    y = np.zeros(30)

    def fit(cov):
        with pm.Model():
            sle.gp.Marginal(cov_func=cov).marginal_likelihood("y", X=features, y=y, sigma=0.1)

    with pm.Model():
        unbounded = sle.SLE(radius=pm.LogNormal("radius", -2.0, 0.5), ls=1.0, input_dim=10)
    with pytest.raises(ValueError, match="need a bounded radius: pass `radius_max`"):
        fit(unbounded)
    with pytest.raises(ValueError, match=r"radius_max=0\.5 must be at most the cutoff 0\.3"):
        fit(sle.SLE(radius=0.2, ls=1.0, input_dim=10, radius_max=0.5))
    with pytest.raises(ValueError, match="`X` must have the columns"):
        fit(sle.SLE(radius=0.2, ls=1.0, input_dim=11))
    with pytest.raises(TypeError, match="`X` may be a SparseDistanceMatrix only"):
        fit(pm.gp.cov.ExpQuad(10, ls=1.0))
    with pytest.raises(TypeError, match="`X` may be a SparseDistanceMatrix only"):
        fit(sle.SLE(D, radius=0.2, ls=1.0))
    with pytest.raises(TypeError, match="`distances` must hold dense distances for Raw"):
        RawLandmarkEmbedding(sle.SparseDistanceMatrix.from_dense(D, cutoff=0.3), ls=1.0)
    with pytest.raises(TypeError, match="`X` must hold dense distances for Raw"):
        RawLandmarkEmbedding(ls=1.0, input_dim=10)(features)


@pytest.mark.parametrize("inner", ["matern12", "matern32", "matern52"])
def test_each_mixture_is_within_its_stated_error(inner):
    from pymc_sle.gp._sparse._mixtures import inner_mixture
    from pymc_sle.kernels._inner import resolve_inner

    kernel = resolve_inner(inner)
    mixture = inner_mixture(kernel)
    assert (mixture.weights > 0).all() and mixture.error > 0
    x = np.concatenate([[0.0], np.logspace(-16, 6, 4000)])
    exact = kernel.full_from_distance(np.sqrt(x), squared=False).eval()
    approx = (mixture.weights * np.exp(-np.outer(x, mixture.rates))).sum(axis=1)
    assert np.abs(approx - exact).max() <= mixture.error


@pytest.mark.parametrize("inner", ["matern12", "matern32", "matern52"])
def test_matern_through_the_mixture_is_exact_algebra_and_close_to_the_dense_matern(inner):
    from pymc_sle.gp._sparse._mixtures import inner_mixture
    from pymc_sle.kernels._inner import resolve_inner

    mixture = inner_mixture(resolve_inner(inner))
    D = _points(80, seed=9)
    sparse_d = sle.SparseDistanceMatrix.from_dense(D, cutoff=0.35)
    problem = SparseSLEProblem(
        sparse_d.indptr, sparse_d.indices, sparse_d.values, 80, 0.35, mixture
    )
    y = np.random.default_rng(10).standard_normal(80)
    params = np.array([0.3, 1.2, 0.7, 1.5, 1.3, 0.2])
    value, gradient = log_density(problem, y, *params)
    # the same quadrature kernel, dense: equal to rounding (the algebra)
    radius, amplitude, shape, ls, scale, noise = params
    inside = D < radius
    phi = np.where(
        inside, amplitude * np.exp(shape * (1 - 1 / (1 - np.where(inside, D / radius, 0) ** 2))), 0
    )
    E = ((phi[:, None] - phi[None]) ** 2).sum(-1) / ls**2
    K = scale * (mixture.weights * np.exp(-E[..., None] * mixture.rates)).sum(-1)
    C = K + noise * np.eye(80)
    log_det = np.linalg.slogdet(C)[1]
    reference = -0.5 * y @ np.linalg.solve(C, y) - 0.5 * log_det - 40 * np.log(2 * np.pi)
    np.testing.assert_allclose(value, reference, rtol=1e-11)
    # every gradient against finite differences of the sparse value
    for k in range(params.size):
        step = np.zeros_like(params)
        step[k] = 1e-6 * params[k]
        up = log_density(problem, y, *(params + step), with_gradients=False)[0]
        down = log_density(problem, y, *(params - step), with_gradients=False)[0]
        np.testing.assert_allclose(gradient[1 + k], (up - down) / (2 * step[k]), rtol=1e-5)
    # and the model: the sparse Matérn likelihood against the dense (exact) Matérn one
    y_model = np.sin(5 * D[:, 0])
    train = np.arange(80)
    dense = _model(D, y_model, train, inner=inner)
    sparse = _model(sparse_d, y_model, train, inner=inner)
    assert _uses_sparse(sparse)
    point = dense.initial_point()
    tolerance = 1e-6 if inner == "matern12" else 1e-9
    np.testing.assert_allclose(
        sparse.compile_logp()(point), dense.compile_logp()(point), rtol=tolerance
    )
    np.testing.assert_allclose(
        sparse.compile_dlogp()(point), dense.compile_dlogp()(point), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("inner", ["rbf", "matern32"])
def test_sparse_prediction_equals_pymcs_dense_prediction(inner):
    D = _points(120, seed=7)
    y = np.sin(4 * D[:, 3]) + 0.1 * np.random.default_rng(8).standard_normal(120)
    train, test = np.arange(90), np.arange(90, 120)
    predictions = {}
    for kind, distances in (("dense", D), ("sparse", sle.SparseDistanceMatrix.from_dense(D, 0.3))):
        with pm.Model():
            radius = pm.Uniform("radius", 0.05, 0.3)
            eta = pm.HalfNormal("eta", 1.0)
            sigma = pm.HalfNormal("sigma", 1.0)
            cov = eta**2 * sle.SLE(distances, train, radius=radius, ls=0.7, inner=inner)
            gp = sle.gp.Marginal(mean_func=pm.gp.mean.Constant(0.2), cov_func=cov)
            gp.marginal_likelihood("y", X=train[:, None], y=y[train], sigma=sigma)
            point = {"radius": 0.2, "eta": 1.3, "sigma": 0.2}
            predictions[kind] = [
                gp.predict(test[:, None], point=point, diag=True, pred_noise=noisy)
                for noisy in (False, True)
            ]
            if kind == "sparse":
                with pytest.raises(ValueError, match="pass diag=True"):
                    gp.predict(test[:, None], point=point)
                with pytest.raises(ValueError, match="`given` is not supported"):
                    gp.predict(test[:, None], point=point, diag=True, given={"X": train})
                with pytest.raises(ValueError, match="Xnew"):
                    gp.predict(np.array([[500]]), point=point, diag=True)
    for dense, sparse in zip(predictions["dense"], predictions["sparse"], strict=True):
        np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-9, atol=1e-12)


def test_bad_inputs_on_the_sparse_path_name_their_argument():
    D = _points(30)
    sparse_d = sle.SparseDistanceMatrix.from_dense(D, cutoff=0.3)
    y = np.zeros(30)
    with pytest.raises(ValueError, match="`X`"):
        _model(sparse_d, y, np.arange(30) + 5)
    with pytest.raises(TypeError, match="must be a dense DistanceMatrix here, but got a Sparse"):
        sle.suggest_bounds(sparse_d, np.arange(30), y)


def test_dense_graphs_on_large_sparse_distances_are_refused():
    D = sle.SparseDistanceMatrix.from_dense(_points(30), cutoff=0.3)
    cov = sle.SLE(D, radius=0.2, ls=1.0, inner="rbf", dense_limit=100)
    with pytest.raises(ValueError, match=r"dense \(n_points, n_landmarks\) = \(30, 30\) block"):
        cov(np.arange(30)[:, None]).eval()


@pytest.mark.slow
@pytest.mark.parametrize("inner", ["rbf", "matern12", "matern32", "matern52"])
def test_sparse_equals_dense_at_two_thousand_points(inner):
    n, cutoff = 2000, 0.08
    x = np.random.default_rng(0).uniform(0, 1, (n, 2))
    D = np.linalg.norm(x[:, None] - x[None], axis=-1)
    y = np.sin(5 * D[:, 0]) + 0.1 * np.random.default_rng(1).standard_normal(n)
    train = np.arange(n)
    sparse_d = sle.SparseDistanceMatrix.from_dense(D, cutoff=cutoff)
    dense = _model(D, y, train, inner=inner, radius_max=cutoff)
    sparse = _model(sparse_d, y, train, inner=inner, radius_max=cutoff)
    assert _uses_sparse(sparse)
    tolerance = 1e-8 if inner == "matern12" else 1e-11
    for radius_raw in (-3.0, -1.0, 0.5):
        point = dense.initial_point()
        point["radius_interval__"] = radius_raw
        for compile_ in ("compile_logp", "compile_dlogp"):
            expected = getattr(dense, compile_)()(point)
            np.testing.assert_allclose(getattr(sparse, compile_)()(point), expected, rtol=tolerance)
