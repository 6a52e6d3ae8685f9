"""Feature mode: the active columns of ``X`` are the distances to the landmarks.

It must equal index mode (which gathers rows and continues as feature mode) and the paper's
equations, accept new points through ``pm.Data`` after the fit, and check those points.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_sle
from pymc_sle import SLE, bump
from pymc_sle.kernels import RawLandmarkEmbedding
from tests.sle_reference import reference_sle
from tests.support import MODES, raised_by

LANDMARKS = np.arange(0, 40, 2)
ROWS = np.array([1, 4, 4, 7, 10, 13, 22, 31, 39])  # a duplicated row too
NEW_ROWS = np.array([3, 4, 9, 21, 30, 38])
INNERS = ["rbf", "matern12", "matern32", "matern52"]


def _parameters(stationary: bool) -> dict:
    if stationary:
        return {"radius": 0.6, "amplitude": 1.3, "shape": 0.8}
    rng = np.random.default_rng(7)
    m = LANDMARKS.size
    return {
        "radius": rng.uniform(0.4, 0.9, m),
        "amplitude": rng.uniform(0.5, 2.0, m),
        "shape": rng.uniform(0.5, 2.0, m),
    }


def _pair(D, inner="matern32", stationary=True, embedding="auto", **extra):
    """The same kernel in index mode and in feature mode, and the inputs of each."""
    params = {**_parameters(stationary), **extra}
    by_index = SLE(D, LANDMARKS, ls=0.7, inner=inner, embedding=embedding, **params)
    by_feature = SLE(ls=0.7, inner=inner, embedding=embedding, input_dim=LANDMARKS.size, **params)
    return by_index, by_feature


@pytest.mark.parametrize("embedding", ["auto", "dense"])
@pytest.mark.parametrize("stationary", [True, False], ids=["stationary", "per-landmark"])
@pytest.mark.parametrize("inner", INNERS)
def test_feature_mode_equals_index_mode_and_the_paper(
    graph_distances, inner, stationary, embedding
):
    D = graph_distances
    by_index, by_feature = _pair(D, inner, stationary, embedding)
    X, F = ROWS[:, None], D[ROWS][:, LANDMARKS]
    Xs, Fs = NEW_ROWS[:, None], D[NEW_ROWS][:, LANDMARKS]
    K = by_feature(F).eval()
    np.testing.assert_allclose(K, by_index(X).eval(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(by_feature(F, Fs).eval(), by_index(X, Xs).eval(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(by_feature(F, diag=True).eval(), by_index(X, diag=True).eval())
    reference = reference_sle(
        D, ROWS, NEW_ROWS, LANDMARKS, ls=0.7, inner=inner, **_parameters(stationary)
    )
    np.testing.assert_allclose(by_feature(F, Fs).eval(), reference, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(np.diag(K), by_feature(F, diag=True).eval())


def test_identical_distance_rows_are_exactly_zero_apart(graph_distances):
    """Two inputs with the same distances to every landmark are the same point to the kernel:
    embedding distance exactly 0 on the training and on the cross path, whatever the rows."""
    F = graph_distances[ROWS][:, LANDMARKS]
    F = np.vstack([F, F[3], F[3]])  # two more copies of one point
    _, kernel = _pair(graph_distances, stationary=False)
    squared = kernel.square_embedding_distance(F).eval()
    assert squared[3, -1] == squared[-2, -1] == squared[1, 2] == 0.0
    assert (np.diag(squared) == 0.0).all()
    cross = kernel.square_embedding_distance(F, F[[3, 0]]).eval()
    assert cross[3, 0] == cross[-1, 0] == cross[0, 1] == 0.0
    assert (squared >= 0).all() and (cross >= 0).all()


def test_embedding_is_the_bump_of_the_features(graph_distances):
    F = graph_distances[ROWS][:, LANDMARKS]
    _, kernel = _pair(graph_distances, stationary=False)
    p = _parameters(False)
    expected = bump(F, p["radius"], p["amplitude"], p["shape"])
    np.testing.assert_allclose(kernel.embed(F).eval(), expected, rtol=1e-14)


def test_active_dims_pick_the_distance_columns(graph_distances):
    """Distances may sit next to other columns (an id, a covariate) that other kernels read."""
    F = graph_distances[ROWS][:, LANDMARKS]
    X = np.column_stack([np.arange(ROWS.size), F, np.ones(ROWS.size)])
    m = LANDMARKS.size
    columns = SLE(radius=0.6, ls=0.7, input_dim=m + 2, active_dims=list(range(1, m + 1)))
    plain = SLE(radius=0.6, ls=0.7, input_dim=m)
    np.testing.assert_array_equal(columns(X).eval(), plain(F).eval())
    scattered = SLE(radius=0.6, ls=0.7, input_dim=m + 2, active_dims=[m + 1, *range(1, m + 1)])
    ones_first = np.column_stack([np.ones(ROWS.size), F])  # the constant column as a landmark
    np.testing.assert_allclose(
        scattered(X).eval(), SLE(radius=0.6, ls=0.7, input_dim=m + 1)(ones_first).eval()
    )


def test_raw_embedding_baseline_has_feature_mode_too(graph_distances):
    F = graph_distances[ROWS][:, LANDMARKS]
    by_index = RawLandmarkEmbedding(graph_distances, LANDMARKS, ls=2.0)
    by_feature = RawLandmarkEmbedding(ls=2.0, input_dim=LANDMARKS.size)
    np.testing.assert_allclose(by_feature(F).eval(), by_index(ROWS[:, None]).eval(), atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_fast_likelihood_and_gradient_equal_index_mode(graph_distances, mode):
    """Composition with a signal variance, random radius and ls, ``sle.gp.Marginal``: the
    log-density and its gradient do not depend on the form of the inputs."""
    D = graph_distances
    y = np.sin(3 * D[ROWS, 0])

    def model(feature: bool):
        with pm.Model() as model:
            radius = pm.LogNormal("radius", np.log(0.6), 0.3)
            ls = pm.LogNormal("ls", 0.0, 0.5)
            eta = pm.HalfNormal("eta", 1.0)
            if feature:
                kernel = SLE(radius=radius, ls=ls, input_dim=LANDMARKS.size)
                X = D[ROWS][:, LANDMARKS]
            else:
                kernel = SLE(D, LANDMARKS, radius=radius, ls=ls)
                X = ROWS[:, None]
            gp = pymc_sle.gp.Marginal(cov_func=eta**2 * kernel)
            gp.marginal_likelihood("y", X=X, y=y, sigma=0.3)
        return model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the radius prior's ridge warning
        by_feature, by_index = model(True), model(False)
    point = by_index.initial_point()
    point["radius_log__"] = np.log(0.55)
    for compile_ in ("compile_logp", "compile_dlogp"):
        ours = getattr(by_feature, compile_)(mode=mode)(point)
        np.testing.assert_allclose(ours, getattr(by_index, compile_)(mode=mode)(point), rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_seventeen_new_points_through_pm_data_after_the_fit(graph_distances, mode):
    D = graph_distances
    train = np.arange(20)
    y = np.sin(3 * D[train, 0])
    with pm.Model() as model:
        ls = pm.LogNormal("ls", 0.0, 0.5)
        gp = pymc_sle.gp.Marginal(cov_func=SLE(radius=1.0, ls=ls, input_dim=LANDMARKS.size))
        gp.marginal_likelihood("y", X=D[train][:, LANDMARKS], y=y, sigma=0.3)
        Xnew = pm.Data("Xnew", D[:1][:, LANDMARKS])
        gp.conditional("f_new", Xnew=Xnew, jitter=1e-6)
        trace = pm.sample_prior_predictive(draws=3, random_seed=1, var_names=["ls"])
    new_points = D[20:37][:, LANDMARKS]
    pm.set_data({"Xnew": new_points}, model=model)
    with model:
        predictive = pm.sample_posterior_predictive(
            trace.prior, var_names=["f_new"], random_seed=2, progressbar=False,
            compile_kwargs={"mode": mode},
        )  # fmt: skip
    draws = predictive.posterior_predictive["f_new"].values
    assert draws.shape == (1, 3, 17) and np.isfinite(draws).all()
    bad = new_points.copy()
    bad[4, 2] = -1.0  # (pm.set_data turns NaN into a masked array, which NUMBA cannot take)
    pm.set_data({"Xnew": bad}, model=model)
    with model, pytest.raises(raised_by(mode), match="Xnew"):
        pm.sample_posterior_predictive(
            trace.prior, var_names=["f_new"], progressbar=False, compile_kwargs={"mode": mode}
        )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("bad", "fragment"), [(np.nan, "NaN"), (-0.5, "negative"), (np.inf, "inf")]
)
def test_pm_data_distances_are_checked_whenever_the_graph_runs(
    graph_distances, mode, bad, fragment
):
    F = graph_distances[ROWS][:, LANDMARKS]
    X = pytensor.shared(F, name="Xnew")
    kernel = SLE(radius=0.6, ls=0.7, input_dim=LANDMARKS.size)
    fn = pytensor.function([], kernel(X), mode=mode)
    assert np.isfinite(fn()).all()
    broken = F.copy()
    broken[2, 5] = bad
    X.set_value(broken)
    with pytest.raises(raised_by(mode), match="Xnew") as error:
        fn()
    if mode != "NUMBA":  # the compiled loop states the rule instead of the value
        assert fragment in str(error.value)


def test_gradient_flows_through_the_run_time_check(graph_distances):
    """Distances that are themselves functions of parameters keep their gradient."""
    F = graph_distances[ROWS][:, LANDMARKS]
    scale = pt.dscalar("scale")
    X = pytensor.shared(F, name="X") * scale
    K = SLE(radius=0.6, ls=0.7, input_dim=LANDMARKS.size)(X).sum()
    grad = pytensor.function([scale], pytensor.grad(K, scale))
    value = pytensor.function([scale], K)
    step = 1e-6
    numeric = (value(1.0 + step) - value(1.0 - step)) / (2 * step)
    np.testing.assert_allclose(grad(1.0), numeric, rtol=1e-5)


@pytest.mark.parametrize(
    ("X", "error", "fragment"),
    [
        (np.array([[0.1, np.nan, 0.2]]), ValueError, "NaN"),
        (np.array([[0.1, -0.3, 0.2]]), ValueError, "negative"),
        (np.array([[0.1, np.inf, 0.2]]), ValueError, "infinite"),
        (np.array([0.1, 0.3, 0.2]), ValueError, "2-D"),
        (np.array([[0.1, 0.3]]), ValueError, r"columns \[0, 1, 2\]"),
        (np.array([["a", "b", "c"]]), TypeError, "dtype"),
    ],
    ids=["nan", "negative", "inf", "1-D", "too few columns", "strings"],
)
def test_bad_distances_are_rejected_when_the_graph_is_built(X, error, fragment):
    kernel = SLE(radius=0.6, ls=0.7, input_dim=3)
    with pytest.raises(error, match=fragment) as caught:
        kernel(X)
    assert "`X`" in str(caught.value)
    with pytest.raises(error, match="`Xs`"):
        kernel(np.ones((2, 3)), X)


def test_landmarks_need_a_distance_matrix():
    with pytest.raises(ValueError, match="`landmarks` must be None, but got"):
        SLE(landmarks=[0, 1], radius=0.6, ls=0.7, input_dim=2)


def test_extra_columns_give_pymcs_warning_in_feature_mode():
    with pytest.warns(UserWarning, match=r"Only 3 column\(s\) out of 5 of `X`"):
        SLE(radius=0.6, ls=0.7, input_dim=3)(np.ones((4, 5)))


def test_repr_names_the_mode(graph_distances):
    by_index, by_feature = _pair(graph_distances)
    assert repr(by_feature) == "SLE(features, n_landmarks=20, inner=Matern32)"
    assert repr(by_index) == "SLE(n_points=40, n_landmarks=20, inner=Matern32)"
    assert by_feature.feature_mode and not by_index.feature_mode
