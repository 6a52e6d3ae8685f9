"""Inputs that change after the model is built: ``pm.Data`` row indices checked whenever the
graph runs, on every backend, and columns of ``X`` that no kernel reads."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytest

import pymc_sle
from pymc_sle import SLE
from pymc_sle.kernels._inputs import CheckedRows
from tests.support import MODES, backend_cases, raised_by

N_TRAIN = 20


def _model(graph_distances, mode=None):
    y = np.sin(3 * graph_distances[:N_TRAIN, 0])
    with pm.Model() as model:
        X = pm.Data("X", np.arange(N_TRAIN, dtype=float)[:, None])
        ls = pm.LogNormal("ls", 0.0, 0.5)
        gp = pymc_sle.gp.Marginal(cov_func=SLE(graph_distances, radius=1.0, ls=ls))
        gp.marginal_likelihood("y", X=X, y=y, sigma=0.3)
    return model, gp


@pytest.mark.parametrize(  # on NUMBA the same graph, so one bad value checks its Op
    ("mode", "bad", "fragment"),
    backend_cases([(999.0, "999"), (40.0, "40"), (-1.0, "-1"), (2.7, "integral"), (np.nan, "NaN")],
                  numba=[(999.0, "999")]),
)  # fmt: skip
def test_pm_data_indices_are_checked_whenever_the_graph_runs(graph_distances, mode, bad, fragment):
    model, _ = _model(graph_distances)
    logp = model.compile_logp(mode=mode)
    dlogp = model.compile_dlogp(mode=mode)
    point = model.initial_point()
    assert np.isfinite(logp(point)) and np.isfinite(dlogp(point)).all()
    rows = np.arange(N_TRAIN, dtype=float)[:, None]
    rows[5, 0] = bad
    pm.set_data({"X": rows}, model=model)
    for fn in (logp, dlogp):
        with pytest.raises(raised_by(mode), match="`X`") as error:
            fn(point)
        # the compiled NUMBA loop cannot format the value; it states the valid range instead
        expected = "[0, 40)" if mode == "NUMBA" else fragment
        assert expected in str(error.value)


@pytest.mark.parametrize("mode", MODES)
def test_valid_pm_data_indices_give_the_same_values_as_constants(graph_distances, mode):
    model, _ = _model(graph_distances)
    rows = np.arange(10, 10 + N_TRAIN)
    pm.set_data({"X": rows[:, None].astype(float)}, model=model)
    point = model.initial_point()
    ours = model.compile_logp(mode=mode)(point)
    y = np.sin(3 * graph_distances[:N_TRAIN, 0])
    with pm.Model() as reference:
        ls = pm.LogNormal("ls", 0.0, 0.5)
        gp = pymc_sle.gp.Marginal(cov_func=SLE(graph_distances, radius=1.0, ls=ls))
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=0.3)
    np.testing.assert_allclose(ours, reference.compile_logp(mode=mode)(point), rtol=1e-12)


def test_constant_inputs_are_checked_once_and_carry_no_run_time_check(graph_distances):
    kernel = SLE(graph_distances, radius=1.0, ls=0.5)
    graph = kernel(np.arange(5)[:, None])
    nodes = pytensor.graph.ancestors([graph])
    assert not any(v.owner and isinstance(v.owner.op, CheckedRows) for v in nodes)
    with pytest.raises(ValueError, match="`X` must index the 40 rows"):
        kernel(np.array([[40]]))


def test_pm_data_is_validated_when_the_graph_is_built(graph_distances):
    with pm.Model():
        X = pm.Data("Xnew", np.array([[3.0], [-1.0]]))
        with pytest.raises(ValueError, match=r"`X` must index the 40 rows.*-1"):
            SLE(graph_distances, radius=1.0, ls=0.5)(X)


def test_checked_rows_names_the_data_container_and_validates_its_input(graph_distances):
    with pm.Model():
        X = pm.Data("Xnew", np.array([[3.0]]))
        out = SLE(graph_distances, radius=1.0, ls=0.5).full(X)
    checks = [
        v.owner.op
        for v in pytensor.graph.ancestors([out])
        if v.owner and isinstance(v.owner.op, CheckedRows)
    ]
    assert checks and checks[0].name == "X (Xnew)"
    with pytest.raises(TypeError, match="integer indices"):
        CheckedRows(5, "X", "rows")(pytensor.tensor.vector(dtype="complex128"))
    with pytest.raises(ValueError, match="1-D"):
        CheckedRows(5, "X", "rows")(pytensor.tensor.matrix())


@pytest.mark.parametrize("mode", MODES)
def test_prediction_at_new_rows_set_after_the_fit(graph_distances, mode):
    model, gp = _model(graph_distances)
    with model:
        Xnew = pm.Data("Xnew", np.zeros((1, 1)))
        gp.conditional("f_new", Xnew=Xnew, jitter=1e-6)
    new_rows = np.arange(N_TRAIN, N_TRAIN + 17, dtype=float)[:, None]
    pm.set_data({"Xnew": new_rows}, model=model)
    with model:
        trace = pm.sample_prior_predictive(draws=3, random_seed=1, var_names=["ls"])
        predictive = pm.sample_posterior_predictive(
            trace.prior,
            var_names=["f_new"],
            random_seed=2,
            progressbar=False,
            compile_kwargs={"mode": mode},
        )
    draws = predictive.posterior_predictive["f_new"].values
    assert draws.shape == (1, 3, 17) and np.isfinite(draws).all()
    pm.set_data({"Xnew": np.array([[99.0]])}, model=model)
    with model, pytest.raises(raised_by(mode), match="Xnew"):
        pm.sample_posterior_predictive(
            trace.prior, var_names=["f_new"], progressbar=False, compile_kwargs={"mode": mode}
        )


@pytest.mark.parametrize(
    ("columns", "input_dim", "warns"), [(1, 1, False), (3, 1, True), (3, 3, False)]
)
def test_columns_the_kernel_ignores_give_pymcs_warning(graph_distances, columns, input_dim, warns):
    X = np.zeros((4, columns))
    X[:, 0] = np.arange(4)
    kernel = SLE(graph_distances, radius=1.0, ls=0.5, input_dim=input_dim, active_dims=[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(X)
    messages = [str(w.message) for w in caught if "column(s)" in str(w.message)]
    assert bool(messages) == warns
    if warns:
        assert "Only 1 column(s) out of 3 of `X`" in messages[0]
