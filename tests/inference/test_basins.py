"""The basin label that lets plain ``pm.sample`` jump between radius basins."""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_sle as sle
from pymc_sle import (
    sample_basins,
    sle_priors,
)
from pymc_sle.inference import DEFAULT_POLICY, Basin, grid_posterior
from pymc_sle.inference._basins import (
    BasinJump,
    InBasin,
    add_label,
    at_start,
    coordinates,
    radius_frames,
)
from pymc_sle.inference._search import _on_quantiles
from pymc_sle.inference._transforms import CenteredLog, OnRidge, below_cutoff
from tests.support import synthetic_grid

SAMPLE = dict(chains=2, cores=1, progressbar=False, compute_convergence_checks=False)

#: Three basins of log r around 0, 3 and 5 (CenteredLog(1, 0.1): coordinate = 10 log r), the
#: start's (label 0) the middle one, which is cut on both sides.
THREE = dict(means=[30.0, 0.0, 50.0], sds=[3.0, 1.0, 2.0], lows=[15.0, -np.inf, 42.0],
             highs=[42.0, 15.0, np.inf])  # fmt: skip


def _functions(jump: BasinJump):
    """``f(v, label)``: the base coordinate, the log Jacobian and the radius."""
    v = pt.dscalar("v")
    jump.bind(None, pt.lscalar("k"))
    radius = jump.backward(v)
    outputs = [jump.base.forward(radius), jump.log_jac_det(v), radius]
    return pytensor.function([v, jump._label_value], outputs)


@pytest.mark.parametrize("label", [0, 1, 2])
def test_each_label_maps_the_line_onto_its_basin_with_the_right_jacobian(label):
    jump = BasinJump(CenteredLog(1.0, 0.1), **THREE)
    f = _functions(jump)
    v = np.linspace(-30, 30, 241)
    coordinate = np.array([f(x, label)[0] for x in v])
    low, high = THREE["lows"][label], THREE["highs"][label]
    assert np.all(np.diff(coordinate) > 0)
    assert np.all((coordinate > low) & (coordinate < high))
    # the line covers the interval: its ends are reached far out
    far = [f(x, label)[0] for x in (-300.0, 300.0)]
    assert far[0] < -1e3 if np.isinf(low) else far[0] == pytest.approx(low, abs=1e-3)
    assert far[1] > 1e3 if np.isinf(high) else far[1] == pytest.approx(high, abs=1e-3)
    # v = 0 is the basin's mean, with unit slope there (in units of its sd)
    h = 1e-5
    mean, sd = THREE["means"][label], THREE["sds"][label]
    assert f(0.0, label)[0] == pytest.approx(mean)
    assert (f(h, label)[0] - f(-h, label)[0]) / (2 * h) == pytest.approx(sd, rel=1e-6)
    # log |dr/dv| against finite differences of the radius
    for x in (-4.0, -0.5, 0.0, 1.3, 6.0):
        r = [f(x + s, label)[2] for s in (-h, h)]
        assert f(x, label)[1] == pytest.approx(np.log(abs(r[1] - r[0]) / (2 * h)), abs=1e-5)


#: The radius's transforms without basins: dense distances' centred log scale, and sparse
#: distances' one below their cutoff.
BASES = {"centred log": (CenteredLog(10.0, 0.5), np.inf),
         "below a cutoff": (below_cutoff(CenteredLog(10.0, 0.5), 400.0), 400.0)}  # fmt: skip


@pytest.mark.parametrize("base", BASES)
def test_radius_frames_cut_the_radius_between_the_basins(base):
    """Two basins of log r (at 3, 70% and at 60, 30%) on a grid: each label's radius covers
    its side of the cut between them, centred on its basin, with the right Jacobian."""
    transform, top = BASES[base]
    radius = np.geomspace(1.0, 300.0, 80)
    log_r = np.log(radius)
    heavy = np.log(0.7) - 0.5 * ((log_r - np.log(3.0)) / 0.1) ** 2
    log_marginal = np.logaddexp(heavy, np.log(0.3) - 0.5 * ((log_r - np.log(60.0)) / 0.2) ** 2)
    grid = synthetic_grid(log_marginal, radius)
    basins = [Basin(3.0, 0.7, 1.5, 6.0), Basin(60.0, 0.3, 30.0, 120.0)]
    jump = BasinJump(transform, *radius_frames(transform, grid, basins))
    f = _functions(jump)
    cut = np.sqrt(6.0 * 30.0)
    for label, (low, high), peak in ((0, (0.0, cut), 3.0), (1, (cut, top), 60.0)):
        radii = np.array([f(x, label)[2] for x in np.linspace(-6.0, 6.0, 121)])
        assert np.all((radii > low) & (radii < high))
        assert len(np.unique(np.sign(np.diff(radii)))) == 1  # monotone
        assert np.log(f(0.0, label)[2]) == pytest.approx(np.log(peak), abs=0.05)
        h = 1e-6
        for x in (-2.0, 0.0, 1.5):
            r = [f(x + step, label)[2] for step in (-h, h)]
            assert f(x, label)[1] == pytest.approx(np.log(abs(r[1] - r[0]) / (2 * h)), abs=1e-4)


@pytest.mark.parametrize("label", [0, 1, 2])
def test_in_basin_is_an_affine_change_of_the_inner_coordinate_per_label(label):
    inner = CenteredLog(2.0, 0.5)
    framed = InBasin(inner, means=[0.5, -3.0, 4.0], sds=[1.0, 2.0, 0.5])
    v = pt.dscalar("v")
    framed.bind(None, pt.lscalar("k"))
    f = pytensor.function([v, framed._label_value], [framed.backward(v), framed.log_jac_det(v)])
    ratio = framed.sds[label] / framed.sds[0]
    for x in (-2.0, 0.5, 3.0):
        coordinate = framed.means[label] + ratio * (x - framed.means[0])
        value, log_jacobian = f(x, label)
        assert value == pytest.approx(2.0 * np.exp(0.5 * coordinate))  # inner's backward
        h = 1e-6
        slope = (f(x + h, label)[0] - f(x - h, label)[0]) / (2 * h)
        assert log_jacobian == pytest.approx(np.log(slope), abs=1e-6)
    # the start's frame is the inner transform itself
    assert f(0.7, 0)[0] == pytest.approx(float(inner.backward(pt.as_tensor(0.7)).eval()))
    with pytest.raises(ValueError, match="sds be positive"):
        InBasin(inner, means=[0.0, 1.0], sds=[1.0, 0.0])


def test_at_start_unwraps_every_framed_transform():
    jump = BasinJump(CenteredLog(1.0, 0.1), **THREE)
    inner = CenteredLog(2.0, 0.5)
    framed = InBasin(inner, means=[0.0, 1.0, 2.0], sds=[1.0, 1.0, 1.0])
    assert at_start(jump) is jump.base and at_start(framed) is inner and at_start(inner) is inner
    ridge = OnRidge(object(), framed)
    unwrapped = at_start(ridge)
    assert isinstance(unwrapped, OnRidge) and unwrapped.inner is inner
    assert unwrapped.ridge is ridge.ridge


def test_forward_inverts_backward_in_the_start_basin():
    jump = BasinJump(CenteredLog(1.0, 0.1), **THREE)
    f = _functions(jump)
    for x in (-3.0, 0.0, 2.5):
        radius = np.exp(f(x, 0)[0] / 10)
        assert float(jump.forward(pt.as_tensor(radius)).eval()) == pytest.approx(x, abs=1e-9)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"means": [30.0]}, "two basins or more"),
        ({"sds": [3.0, 0.0, 2.0]}, "every sd positive"),
        ({"means": [30.0, 16.0, 50.0]}, "each mean inside its interval"),
    ],
)
def test_basin_jump_validates(change, match):
    arguments = THREE | change
    if len(arguments["means"]) == 1:
        arguments = {key: value[:1] for key, value in arguments.items()}
    with pytest.raises(ValueError, match=match):
        BasinJump(CenteredLog(1.0, 0.1), **arguments)


def test_plain_pm_sample_weighs_basins_hundreds_of_nats_apart():
    """log r ~ 0.7 N(0, 0.1) + 0.3 N(3, 0.3): NUTS alone never crosses; with the label the
    chains put the right mass and shape in each basin."""
    jump = BasinJump(CenteredLog(1.0, 0.1), means=[0.0, 30.0], sds=[1.0, 3.0],
                     lows=[-np.inf, 15.0], highs=[15.0, np.inf])  # fmt: skip

    def logp(value, _):
        log_r = pt.log(value)
        heavy = np.log(0.7) + pm.logp(pm.Normal.dist(0.0, 0.1), log_r)
        light = np.log(0.3) + pm.logp(pm.Normal.dist(3.0, 0.3), log_r)
        return pt.logaddexp(heavy, light) - log_r

    with pm.Model() as model:
        pm.CustomDist("r", 0.0, logp=logp, default_transform=jump, initval=1.0)
        add_label("r_basin", [jump])
    idata = pm.sample(1000, tune=500, random_seed=3, model=model, **SAMPLE)
    log_r = np.log(idata.posterior["r"].values)
    light = log_r > 1.5
    np.testing.assert_array_equal(idata.posterior["r_basin"], light)  # the basin each draw is in
    for chain in light:
        assert chain.mean() == pytest.approx(0.3, abs=0.06)
    assert log_r[light].std() == pytest.approx(0.3, rel=0.1)
    assert log_r[~light].std() == pytest.approx(0.1, rel=0.1)


def _toy(**options):
    """30 points of sin(6 x): two radius basins; the grid of ``sle_priors`` gives the lighter
    15 %, because its length-scale axis ends inside that basin's posterior."""
    x = np.sort(np.random.default_rng(2).uniform(size=30))
    D, y = np.abs(x[:, None] - x[None, :]), np.sin(6 * x)
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the chains reach both basins
        priors = sle_priors(D, np.arange(30), y, **options)
        cov = priors["eta"] ** 2 * sle.SLE(D, radius=priors["radius"], ls=priors["ls"])
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=np.arange(30)[:, None], y=y, sigma=priors["sigma"])
        pm.Deterministic("radius_copy", priors["radius"] + 0.0)
    return model, priors, (D, y)


def test_sle_priors_label_comes_last_and_forward_sampling_keeps_the_draws():
    model, priors, _ = _toy()
    assert priors.scales["radius"] == "centred log, basin jumps"
    assert priors.var_names(model) == ["radius", "ls", "eta", "sigma", "radius_basin"]
    prior = pm.sample_prior_predictive(50, model=model, random_seed=1)
    assert set(np.unique(prior.prior["radius_basin"])) == {0, 1}
    idata = pm.sample(20, tune=20, random_seed=1, model=model, **SAMPLE)
    assert list(idata.posterior.data_vars)[:5] == priors.var_names(model)
    # sample_basins fixes the label: one basin at a time, the grid's weights; its pooled draws
    # have no label, and forward sampling keeps their hyperparameters all the same
    pooled = sample_basins(priors, draws=20, tune=20, random_seed=1, model=model, **SAMPLE)
    assert "radius_basin" not in pooled.posterior
    for draws in (idata, pooled):
        with model:
            copied = pm.sample_posterior_predictive(draws, var_names=["radius_copy"],
                                                    progressbar=False)  # fmt: skip
        copy = copied.posterior_predictive["radius_copy"]
        np.testing.assert_allclose(copy, draws.posterior["radius"])


@pytest.fixture(scope="module")
def toy_reference():
    """The toy's cut between its basins, and the lighter basin's mass by a brute-force grid over
    the priors' whole range (0.243)."""
    _, priors, (D, y) = _toy()
    cut = np.sqrt(min(b.high for b in priors.basins) * max(b.low for b in priors.basins))
    grid = grid_posterior(D, np.arange(30), y, radius=np.geomspace(0.2, 5, 64),
                          ls=np.geomspace(0.01, 3000, 96), sigma=np.geomspace(1e-5, 0.5, 64),
                          n_scale=40)  # fmt: skip
    return cut, float(grid.marginal("radius")[grid.radius < cut].sum())


def test_plain_pm_sample_matches_brute_force_basin_masses_on_an_sle_model(toy_reference):
    cut, truth = toy_reference
    model, priors, _ = _toy()
    idata = pm.sample(1000, tune=1000, random_seed=1, model=model, **SAMPLE)
    below = (idata.posterior["radius"].values < cut).mean(axis=1)
    assert below == pytest.approx([truth, truth], abs=0.05)
    # the grid of sle_priors holds the posterior: its weights are the brute-force grid's
    assert min(b.mass for b in priors.basins) == pytest.approx(truth, abs=0.01)
    # the label is each draw's basin: 0 the start's (the grid's mode: here the lighter basin)
    below = idata.posterior["radius"].values < cut
    start_below = model.rvs_to_initial_values[priors["radius"]] < cut
    np.testing.assert_array_equal(idata.posterior["radius_basin"], below != start_below)


def test_pm_sample_smc_on_the_prior_start_model_matches_brute_force(toy_reference):
    """PyMC's SMC copies initial values into every particle: on the start="prior" model (none
    set) its particles are prior draws, and it weighs the basins as the brute-force grid does."""
    cut, truth = toy_reference
    model, _, _ = _toy(start="prior")
    assert all(v is None for v in model.rvs_to_initial_values.values())
    idata = pm.sample_smc(draws=1000, chains=2, cores=1, random_seed=1, progressbar=False,
                          model=model)  # fmt: skip
    below = (idata.posterior["radius"].values < cut).mean(axis=1)
    assert below == pytest.approx([truth, truth], abs=0.05)


@pytest.mark.parametrize(
    "weights, separation, masses, maps",
    [
        ((0.7, 0.3), 1.5, [1.0], True),  # a 1.5-3-nat dip: NUTS crosses it, one basin
        ((0.97, 0.03), 1.7, [0.97, 0.03], True),  # ... unless behind it lies a shoulder (< 5 %)
        ((0.7, 0.3), 2.0, [0.7, 0.3], False),  # a dip deeper than 3 nats: a trench, no maps
    ],
)
def test_radius_basins_split_off_shoulders_and_trenches_drop_the_maps(
    weights, separation, masses, maps
):
    radius = np.geomspace(1.0, 100.0, 81)
    t = np.log(radius)
    density = weights[0] * np.exp(-0.5 * ((t - 1.0) / 0.3) ** 2) + weights[1] * np.exp(
        -0.5 * ((t - 1.0 - separation) / 0.3) ** 2
    )
    grid = synthetic_grid(np.log(density), radius)
    # the dip below the lower peak: 1.5-3 nats, or deeper than 3 nats when the maps go
    n_apart = [len(grid.radius_modes(min_mass=0.0, barrier=b)) for b in (1.5, 3.0)]
    assert n_apart == ([2, 1] if maps else [2, 2])
    basins = sorted(DEFAULT_POLICY.basins(grid), key=lambda b: -b.mass)
    assert [b.mass for b in basins] == pytest.approx(masses, abs=0.02)
    assert all(b.low <= b.radius <= b.high for b in basins)
    assert _on_quantiles(grid, DEFAULT_POLICY) is maps


@pytest.mark.parametrize("transform", [CenteredLog(2.0, 0.5), None], ids=["centred log", "none"])
def test_coordinates_of_several_values_are_each_ones_own_in_its_shape(transform):
    """One evaluation for a scalar, a list and a matrix: each comes back in its shape, equal to
    its own evaluation (``None``: the values themselves)."""
    values = (1.7, [0.5, 3.0], np.array([[1.0, 2.0, 4.0], [8.0, 0.25, 0.1]]))
    results = coordinates(transform, *values)
    assert [r.shape for r in results] == [(), (2,), (2, 3)]
    for value, result in zip(values, results, strict=True):
        expected = value if transform is None else (np.log(value) - np.log(2.0)) / 0.5
        np.testing.assert_allclose(result, expected, rtol=1e-15)
