"""sle_priors and SLEPriors: the model's variables, their priors and starts, the covariance
they were searched for, and the validation of their arguments."""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_sle
from pymc_sle import (
    SLEPriors,
    scale_priors,
    sle_priors,
    suggest_bounds,
)
from pymc_sle.inference._basins import BasinJump, InBasin
from pymc_sle.inference._search import (
    search,
)
from pymc_sle.inference._transforms import CenteredLog
from tests.support import (
    NOISE_NEVER_AT_ZERO,
    search_problem,
    searched_priors,
    sine_on_a_line,
    two_basins,
)


def test_scale_priors_reject_constant_y():
    with pm.Model(), pytest.raises(ValueError, match="`y` must be finite and not constant"):
        scale_priors(np.ones(5))


def test_sle_priors_create_named_variables(line_distances):
    with pm.Model() as model:
        priors = sle_priors(
            line_distances,
            np.arange(12),
            np.sin(np.arange(12.0)),
            names={"radius": "r", "ls": "ell"},
        )
    assert set(priors) == {"radius", "ls", "eta", "sigma"}
    # ls, eta and sigma are sampled relative to ridges of the posterior, by their transforms
    # (tests/test_transforms.py): the model's variables are the four alone
    assert [rv.name for rv in model.free_RVs] == ["r", "ell", "eta", "sigma"]
    assert model.deterministics == []
    draws = pm.draw(priors["radius"], draws=4000, random_seed=1)
    low, high = suggest_bounds(line_distances, np.arange(12), np.sin(np.arange(12.0))).radius
    inside = np.mean((draws > low) & (draws < high))
    assert inside == pytest.approx(0.95, abs=0.015)  # 4000 draws: binomial sd 0.0034


def test_sle_priors_options_name_the_ratios_and_check_their_arguments(line_distances):
    y = np.sin(np.arange(12.0))
    with pm.Model() as model:
        priors = sle_priors(line_distances, np.arange(12), y, names={"sigma": "noise"})
    assert [rv.name for rv in model.free_RVs] == ["radius", "ls", "eta", "noise"]
    # what the search decided, keyed like the result (the noise reaches zero on these data)
    assert priors.scales == {"radius": "capped quantile", "ls": "ridge", "eta": "floored ridge",
                             "sigma": "floored ridge, quantile"}  # fmt: skip
    with pm.Model() as model:
        priors = sle_priors(line_distances, np.arange(12), y, scale_ridges=False)
    assert [rv.name for rv in model.free_RVs] == ["radius", "ls", "eta", "sigma"]
    assert (priors.scales["eta"], priors.scales["sigma"]) == ("centred log", "quantile")
    for name in ("scale_ridges", "cap_radius"):
        with pm.Model(), pytest.raises(TypeError, match=rf"`{name}` must be a bool, but got 1"):
            sle_priors(line_distances, np.arange(12), y, **{name: 1})
    # start="prior" is the first release's model: neither option applies.
    with pm.Model() as model:
        priors = sle_priors(line_distances, np.arange(12), y, start="prior")
    assert {rv.name for rv in model.free_RVs} == {"radius", "ls", "eta", "sigma"}
    assert (priors.radius_cap, priors.truncated_mass) == (None, 0.0)
    assert priors.scales == dict.fromkeys(["radius", "ls", "eta", "sigma"], "log")


def test_sle_priors_start_at_the_grid_mode_and_keep_the_radius_prior():
    D, y = sine_on_a_line()
    rows = np.arange(y.size)
    with pm.Model() as model:
        priors = sle_priors(D, rows, y, inner="rbf")
    mode = search(search_problem(D, y, "rbf")).grid.mode()
    start = model.initial_point()
    on_ridges = ["ls", "eta", "sigma"]
    at_start = model.compile_fn(model.replace_rvs_by_values([priors[n] for n in on_ridges]),
                                inputs=model.value_vars, on_unused_input="ignore")  # fmt: skip
    # The radius reaches its sampled scale through the transform's inverse, exact to ~1e-5.
    for name, value in zip(on_ridges, at_start(start), strict=True):
        assert float(value) == pytest.approx(mode[name], rel=1e-4)
    assert model.rvs_to_initial_values[priors["radius"]] == pytest.approx(mode["radius"])
    # The prior is unchanged: the same log density as sle_priors(start="prior") at any radius.
    with pm.Model() as plain:
        sle_priors(D, rows, y, start="prior")
    radius = 0.3
    ours = pm.logp(priors["radius"], radius).eval()
    theirs = pm.logp(plain["radius"], radius).eval()
    assert ours == pytest.approx(theirs, rel=1e-12)


def test_sle_priors_prior_start_keeps_pymc_defaults():
    D, y = sine_on_a_line()
    with pm.Model() as model:
        sle_priors(D, np.arange(y.size), y, start="prior")
    assert set(model.initial_point()) == {"radius_log__", "ls_log__", "eta_log__", "sigma_log__"}


@pytest.mark.parametrize("start", ["prior", "mode"])
@pytest.mark.parametrize("inner", ["matern52", "rbf"])
def test_covariance_is_the_sle_the_priors_were_searched_for(start, inner):
    """Index and feature mode equal SLE(...) written out by hand with the same inner kernel."""
    D, y = sine_on_a_line()
    train = np.arange(0, y.size, 2)
    landmarks = train[::-1]  # columns, in an order of their own
    with pm.Model():
        priors = sle_priors(D, train, y[train], landmarks=landmarks, inner=inner, start=start)
        by_hand = priors["eta"] ** 2 * pymc_sle.SLE(
            D, landmarks=landmarks, radius=priors["radius"], ls=priors["ls"], inner=inner
        )
        features = D[np.ix_(train, landmarks)]
        built = [
            priors.covariance()(train[:, None]),
            by_hand(train[:, None]),
            priors.covariance(feature_mode=True)(features),
        ]
        other = pymc_sle.SLE(
            D, landmarks=landmarks, radius=priors["radius"], ls=priors["ls"], inner=inner
        )
        values = pm.draw([*built, other(train[:, None])], random_seed=3)
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)
    np.testing.assert_allclose(values[2], values[1], rtol=1e-12)
    assert not np.allclose(values[0], values[3])  # without eta it differs
    assert priors.kernel["inner"] == inner
    np.testing.assert_array_equal(priors.kernel["landmarks"], landmarks)


@pytest.mark.parametrize("start", ["prior", "mode"])
def test_an_sle_with_another_inner_kernel_than_the_search_is_refused(start):
    """The grid searched one kernel's posterior: a radius from it in an SLE with another inner
    kernel is an error naming both, not a model sampled from another model's scales."""
    D, y = sine_on_a_line()
    rows = np.arange(y.size)
    with pm.Model():
        priors = sle_priors(D, rows, y, inner="matern52", start=start)
        pymc_sle.SLE(D, radius=priors["radius"], ls=priors["ls"], inner="matern52")  # the same
        message = (
            r"`inner` must be the kernel sle_priors searched for this radius \(Matern52\), "
            r"but got Matern32: pass the same `inner` to sle_priors"
        )
        with pytest.raises(ValueError, match=message):
            pymc_sle.SLE(D, radius=priors["radius"], ls=priors["ls"])  # the default inner
        with pytest.raises(ValueError, match="but got ExpQuad"):
            pymc_sle.SLE(D, radius=priors["radius"], ls=priors["ls"], inner=pm.gp.cov.ExpQuad)
        pymc_sle.SLE(D, radius=2 * priors["radius"], ls=priors["ls"])  # your own radius: free


def test_covariance_passes_sle_options_and_refuses_what_the_priors_fix():
    D, y = sine_on_a_line()
    with pm.Model():
        priors = sle_priors(D, np.arange(y.size), y, start="prior")
        by_hand = priors["eta"] ** 2 * pymc_sle.SLE(
            D, radius=priors["radius"], ls=priors["ls"], amplitude=0.5
        )
        X = np.arange(4)[:, None]
        halved, same = pm.draw([priors.covariance(amplitude=0.5)(X), by_hand(X)], random_seed=1)
        np.testing.assert_allclose(halved, same, rtol=1e-12)
        message = r"`covariance\(\)` takes \['inner', 'ls'\] from the priors"
        with pytest.raises(TypeError, match=message):
            priors.covariance(inner="rbf", ls=1.0)
    with pytest.raises(ValueError, match="needs priors made by sle_priors"):
        SLEPriors({"radius": 1.0}).covariance()


def test_sle_priors_rejects_unknown_start():
    D, y = sine_on_a_line()
    with (
        pm.Model(),
        pytest.raises(ValueError, match="`start` must be 'mode' or 'prior', but got 'map'"),
    ):
        sle_priors(D, np.arange(y.size), y, start="map")


def test_sle_priors_jumps_between_basins_where_the_start_basin_misses_mass():
    D, y = sine_on_a_line()
    # the reshaped grids are flat in log sigma, which reaches zero: the noise's own map is tested
    # apart
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: pm.sample reaches every basin
        priors, _ = searched_priors(D, np.arange(y.size), y, reshape=two_basins,
                                    policy=NOISE_NEVER_AT_ZERO)  # fmt: skip
    # across deep dips, no quantile scale: centred log scales, ls on its ridge
    # (docs/hyperposterior.md); the radius in the frame of the basin its label names
    jump = model.rvs_to_transforms[priors["radius"]]
    assert isinstance(jump, BasinJump) and isinstance(jump.base, CenteredLog)
    assert jump.label.name == "radius_basin" and jump.means.size == 2
    assert set(model.initial_point()) == {
        "radius_basin_index__",
        "radius_basinjump__",
        "ls_ridge__",
        "eta_basin__",
        "sigma_basin__",
    }
    # eta and sigma on their centred log scales, in the frame of each basin; ls's ridge too
    for name in ("eta", "sigma"):
        transform = model.rvs_to_transforms[priors[name]]
        assert isinstance(transform, InBasin) and isinstance(transform.inner, CenteredLog)
    assert isinstance(model.rvs_to_transforms[priors["ls"]].inner, InBasin)
    assert priors.scales == {"radius": "centred log, basin jumps", "ls": "ridge",
                             "eta": "centred log", "sigma": "centred log"}  # fmt: skip
    assert [round(b.mass, 2) for b in priors.basins] == [0.6, 0.4]
    for basin in priors.basins:
        assert basin.low <= basin.start["radius"] <= basin.high
        assert basin.start["radius"] == pytest.approx(basin.radius)


def test_the_compiled_density_does_not_depend_on_the_data_numbers():
    # y and 2 y give the same plan, with other centres, scales and ridges: the numbers enter
    # the compiled code as inputs (pymc_sle._data_numbers), so every fused elementwise Op, whose
    # C source PyTensor caches, is the same; a number inlined as a literal would differ.
    import dataclasses

    from pytensor.scalar import Composite

    from pymc_sle.datasets import one_dimensional
    from pymc_sle.demo import sle_model

    data = one_dimensional(n_train=15, n_test=5, seed=1)

    def fused_ops(factor):
        model, _, _ = sle_model(dataclasses.replace(data, y_train=factor * data.y_train))
        compiled = model.logp_dlogp_function(ravel_inputs=True)._pytensor_function
        ops = {node.op for node in compiled.maker.fgraph.apply_nodes}
        return {op for op in ops if isinstance(getattr(op, "scalar_op", None), Composite)}

    once, twice = fused_ops(1.0), fused_ops(2.0)
    assert once and once == twice
