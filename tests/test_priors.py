import dataclasses
import warnings

import numpy as np
import pymc as pm
import pytest
from conftest import searched_priors, synthetic_grid, two_basins
from scipy import stats

import pymc_sle
from pymc_sle.inference._jumps import BasinJump, InBasin
from pymc_sle.inference._plan import _radius_map
from pymc_sle.inference._search import (
    DEFAULT_POLICY,
    SearchProblem,
    SearchResult,
    _cells_per_sd,
    _holding_mode,
    search,
)
from pymc_sle.inference._transforms import CenteredLog
from pymc_sle.inference.grid import Basin
from pymc_sle.inference.priors import (
    SLEPriors,
    lognormal_between,
    radius_bounds,
    scale_priors,
    sle_priors,
    suggest_bounds,
)


def test_radius_bounds_paper_and_nearest():
    x = np.array([0.0, 0.1, 0.3, 1.0])
    D = np.abs(x[:, None] - x[None, :])
    assert radius_bounds(D) == (0.1, 1.0)
    # nearest-neighbour distances are 0.1, 0.1, 0.2, 0.7: median 0.15
    assert radius_bounds(D, lower="nearest") == pytest.approx((0.15, 1.0))
    assert radius_bounds(D, rows=[2, 3], cols=[2, 3]) == pytest.approx((0.7, 0.7))


def test_radius_bounds_rejects_block_without_positive_distance():
    with pytest.raises(ValueError, match="no positive entry"):
        radius_bounds(np.zeros((3, 3)))


def test_radius_bounds_rejects_unknown_lower():
    with pytest.raises(ValueError, match="`lower` must be 'min' or 'nearest', but got 'median'"):
        radius_bounds(np.ones((2, 2)), lower="median")


@pytest.mark.parametrize("lower, upper", [(1e-4, 1.0), (0.5, 0.6), (1.0, 1e6)])
@pytest.mark.parametrize("mass", [0.9, 0.95, 0.99])
def test_lognormal_between_puts_mass_in_bounds_with_equal_tails(lower, upper, mass):
    p = lognormal_between(lower, upper, mass)
    dist = stats.lognorm(p["sigma"], scale=np.exp(p["mu"]))
    assert dist.cdf(lower) == pytest.approx((1 - mass) / 2, abs=1e-12)
    assert dist.sf(upper) == pytest.approx((1 - mass) / 2, abs=1e-12)


def test_lognormal_between_rejects_reversed_bounds():
    with pytest.raises(ValueError, match=r"0 < lower < upper, but got \(2.0, 1.0\)"):
        lognormal_between(2.0, 1.0)


def test_lognormal_between_rejects_mass_of_one():
    with pytest.raises(ValueError, match=r"`mass` must be in \(0, 1\), but got 1.0"):
        lognormal_between(1.0, 2.0, mass=1.0)


def test_suggest_bounds_orders_and_scales(rng):
    x = np.sort(rng.uniform(size=30))
    D = np.abs(x[:, None] - x[None, :])
    y = 3.0 * np.sin(6 * x)
    b = suggest_bounds(D, np.arange(30), y)
    for low, high in (b.radius, b.ls, b.signal, b.noise):
        assert 0 < low < high
    assert b.signal == pytest.approx((0.1 * np.std(y), np.sqrt(10) * np.std(y)))
    assert b.radius[1] == pytest.approx(D.max())


def test_suggest_bounds_rejects_mismatched_y(line_distances):
    with pytest.raises(
        ValueError, match=r"`y` must have shape \(12,\) to match `rows`, but has \(3,\)"
    ):
        suggest_bounds(line_distances, np.arange(12), np.ones(3))


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


def _line(n=16, seed=0):
    x = np.sort(np.random.default_rng(seed).uniform(0.0, 1.0, n))
    return np.abs(x[:, None] - x[None, :]), np.sin(6 * x)


#: The noise never reaches zero (it would need more than all the mass), or always does.
NOISE_NEVER_AT_ZERO = dataclasses.replace(DEFAULT_POLICY, noise_at_zero=2.0)
NOISE_AT_ZERO = dataclasses.replace(DEFAULT_POLICY, noise_at_zero=0.0)


def _problem(D, y, inner="matern32"):
    return SearchProblem.build(D, np.arange(y.size), y, landmarks=None, inner=inner,
                               inner_kwargs=None, mass=0.95, search_points=500)  # fmt: skip


def test_sle_priors_start_at_the_grid_mode_and_keep_the_radius_prior():
    D, y = _line()
    rows = np.arange(y.size)
    with pm.Model() as model:
        priors = sle_priors(D, rows, y, inner="rbf")
    mode = search(_problem(D, y, "rbf")).grid.mode()
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
    assert DEFAULT_POLICY.on_quantiles(grid) is maps


def test_sle_priors_prior_start_keeps_pymc_defaults():
    D, y = _line()
    with pm.Model() as model:
        sle_priors(D, np.arange(y.size), y, start="prior")
    assert set(model.initial_point()) == {"radius_log__", "ls_log__", "eta_log__", "sigma_log__"}


@pytest.mark.parametrize("start", ["prior", "mode"])
@pytest.mark.parametrize("inner", ["matern52", "rbf"])
def test_covariance_is_the_sle_the_priors_were_searched_for(start, inner):
    """Index and feature mode equal SLE(...) written out by hand with the same inner kernel."""
    D, y = _line()
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
    D, y = _line()
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
    D, y = _line()
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
    D, y = _line()
    with (
        pm.Model(),
        pytest.raises(ValueError, match="`start` must be 'mode' or 'prior', but got 'map'"),
    ):
        sle_priors(D, np.arange(y.size), y, start="map")


def test_sle_priors_jumps_between_basins_where_the_start_basin_misses_mass():
    D, y = _line()
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


@pytest.mark.parametrize(("min_basin_mass", "weighs"), [(0.3, True), (0.5, False)])
def test_several_sampled_basins_are_weighed_on_scale_cells_over_their_mass(min_basin_mass, weighs):
    """Where more than one basin holds min_basin_mass (what sample_basins samples), one more pass
    of the fine grid with weighing_scales cells of eta and sigma over the coarse grid's mass
    range; the basins' masses come from it. It has the fine pass's (radius, ls) cells, so it
    decomposes no Gram again, and its grid equals one computed from scratch."""
    D, y = _line()
    policy = dataclasses.replace(NOISE_NEVER_AT_ZERO, min_basin_mass=min_basin_mass)
    with pm.Model(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # several basins: tested above
        priors, passes = searched_priors(D, np.arange(y.size), y, reshape=two_basins,
                                         policy=policy)  # fmt: skip
    assert len(passes.calls) == (3 if weighs else 2)
    coarse_cells = policy.start_grid["n_radius"] * policy.start_grid["n_ls"]
    fine_cells = policy.fine_grid["n_radius"] * policy.fine_grid["n_ls"]
    assert passes.decomposed[0] == coarse_cells
    assert passes.decomposed[1] <= fine_cells  # the few cells the coarse grid had are reused
    if not weighs:
        assert "eta" not in passes.calls[1]
        return
    coarse, fine, weighing = passes.grids
    sampled = coarse.radius_modes(min_mass=policy.unreached_mass, barrier=policy.basin_barrier)
    for name in ("eta", "sigma"):
        expected = np.geomspace(*coarse.mass_range(name, policy.fine_tail, sampled),
                                policy.weighing_scales)  # fmt: skip
        np.testing.assert_allclose(passes.calls[2][name], expected)
        assert getattr(weighing, name).size == policy.weighing_scales
    np.testing.assert_array_equal(weighing.radius, fine.radius)
    np.testing.assert_array_equal(weighing.ls, fine.ls)
    assert [round(b.mass, 2) for b in priors.basins] == [0.6, 0.4]
    assert passes.decomposed[2] == 0  # the weighing pass decomposes no Gram again
    fresh = _problem(D, y).grid(**passes.calls[2])  # a new problem: every cell decomposed again
    np.testing.assert_array_equal(passes.problem.grid(**passes.calls[2]).log_density,
                                  fresh.log_density)  # fmt: skip


def _bumps_grid(radius, masses, centres):
    """A synthetic grid whose radius marginal has narrow bumps of ``masses`` at ``centres``
    (log radius), behind dips far deeper than the basin barrier."""
    t = np.log(radius)
    density = sum(
        m * np.exp(-0.5 * ((t - c) / 0.1) ** 2) for m, c in zip(masses, centres, strict=True)
    )
    return synthetic_grid(np.log(density + 1e-300), radius)


def _search_of(coarse, fine):
    """What the grid search would find for these grids (no zoom)."""
    deep = DEFAULT_POLICY.deep_basins(fine)
    start = _holding_mode(fine, deep)
    return SearchResult(coarse, fine, [], deep, start, True, False, None, start)


@pytest.mark.parametrize(("masses", "capped"), [((0.998, 0.002), True), ((0.994, 0.006), False)])
def test_radius_cap_lies_before_a_light_basin_above_the_start_and_counts_its_mass(masses, capped):
    radius = np.geomspace(1.0, 100.0, 81)
    grid = _bumps_grid(radius, masses, (1.0, 3.0))
    radius_map, cap, truncated = _radius_map(_search_of(grid, grid), DEFAULT_POLICY, cap=True)
    if not capped:  # 0.6 % above: sample_basins samples it, the cap would cut it off
        assert (radius_map.u_cap, cap, truncated) == (None, None, 0.0)
        return
    home, above = DEFAULT_POLICY.deep_basins(grid)
    assert cap == radius_map.bound
    assert cap == pytest.approx(np.sqrt(home.high * above.low), rel=1e-3)  # the map's inverse
    assert np.exp(1.5) < cap < np.exp(2.5)
    assert truncated == pytest.approx(masses[1], rel=1e-3)
    assert _radius_map(_search_of(grid, grid), DEFAULT_POLICY, cap=False)[1:] == (None, 0.0)


def test_radius_cap_without_a_basin_above_is_at_the_maps_last_knot():
    """Without a basin above, the cap is where u = 6 (the map's last knot); the coarse grid's
    light far basin beyond the fine grid is what it cuts off."""
    coarse = _bumps_grid(np.geomspace(1.0, 1000.0, 64), (0.997, 0.003), (1.0, 5.0))
    fine = _bumps_grid(np.geomspace(1.0, 20.0, 32), (1.0,), (1.0,))  # spans the start's basin
    radius_map, cap, truncated = _radius_map(_search_of(coarse, fine), DEFAULT_POLICY, cap=True)
    assert radius_map.u_cap == 6.0
    assert cap == pytest.approx(np.exp(radius_map._g.numpy(6.0)))
    # the map's tail: the widening normal (twice the bump's sd of 0.1) reaches log r ~ 2.1 at u = 6
    assert np.exp(1.9) < cap < np.exp(2.2)
    assert truncated == pytest.approx(0.003, rel=1e-3)


@pytest.mark.parametrize(("masses", "capped"), [((0.998, 0.002), True), ((0.993, 0.007), False)])
def test_sle_priors_caps_the_radius_below_a_light_far_basin_and_says_so(masses, capped):
    """The reshaped grids put a light basin above the start's on the coarse grid, outside the
    fine grid's span (on the fine grid the second bump is too light to make a dip): 0.2 % of the
    mass is cut off with a warning; 0.7 % is not, and the far basin stays for sample_basins."""
    D, y = _line()

    def reshape(grid):
        return two_basins(grid, masses)

    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priors, _ = searched_priors(D, np.arange(y.size), y, reshape=reshape)
    said = [str(w.message) for w in caught if "The radius is capped" in str(w.message)]
    transform = model.rvs_to_transforms[priors["radius"]]
    if not capped:
        assert (priors.radius_cap, priors.truncated_mass, transform.u_cap, said) == (
            None,
            0.0,
            None,
            [],
        )
        assert len(priors.basins) == 2
        assert priors.scales["radius"] == "quantile"
        return
    assert priors.scales["radius"] == "capped quantile"
    assert priors.truncated_mass == pytest.approx(masses[1], rel=0.01)
    assert len(said) == 1 and f"r = {priors.radius_cap:.3g}" in said[0]
    assert "cap_radius=False" in said[0]
    assert priors.basins and all(b.radius < priors.radius_cap for b in priors.basins)
    assert transform.backward(np.float64(transform.u_cap + 50.0)).eval() < priors.radius_cap
    # cap_radius=False: the model of the previous release, with the far basin kept
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priors, _ = searched_priors(D, np.arange(y.size), y, reshape=reshape, cap_radius=False)
    assert (priors.radius_cap, model.rvs_to_transforms[priors["radius"]].u_cap) == (None, None)


def _noise_grid(low_mass):
    """A grid flat in everything but the noise, whose marginal puts ``low_mass`` two decades
    below its median, 1 - ``low_mass`` at it."""
    grid = synthetic_grid(np.zeros(4), np.geomspace(1.0, 2.0, 4))
    sigma = np.geomspace(1e-3, 3.0, 16)
    weights = np.zeros(16)
    weights[[2, 10]] = low_mass, 1.0 - low_mass  # sigma 0.0029 and 0.37
    log_density = np.broadcast_to(np.log(weights + 1e-300), (4, 2, 2, 16)).copy()
    return dataclasses.replace(grid, sigma=sigma, log_density=log_density)


@pytest.mark.parametrize(("low_mass", "reaches"), [(0.0, False), (0.004, False), (0.006, True)])
def test_noise_reaches_zero_from_half_a_percent_below_a_tenth_of_its_median(low_mass, reaches):
    assert DEFAULT_POLICY.noise_reaches_zero(_noise_grid(low_mass)) is reaches


@pytest.mark.parametrize("scale_ridges", [True, False])
def test_noise_that_reaches_zero_is_sampled_on_its_quantile_scale_from_finer_cells(scale_ridges):
    """The fine grid gets 96 noise cells over the coarse grid's range, and sigma (relative to
    its ridge) a quantile map of the fine grid's marginal; the other variables keep theirs."""
    from pymc_sle.inference._transforms import CenteredLog, OnRidge, QuantileLog, Ridge

    D, y = _line()
    with pm.Model() as model:
        priors, passes = searched_priors(D, np.arange(y.size), y, policy=NOISE_AT_ZERO,
                                         scale_ridges=scale_ridges)  # fmt: skip
    calls, grids = passes.calls, passes.grids
    assert "sigma" not in calls[0] and len(calls[1]["sigma"]) == 96
    scale = float(np.std(y))
    np.testing.assert_allclose(calls[1]["sigma"][[0, -1]], [1e-3 * scale, 3.0 * scale])
    transform = model.rvs_to_transforms[model["sigma"]]
    assert isinstance(transform, OnRidge) is scale_ridges
    if scale_ridges:
        transform = transform.inner
    assert isinstance(transform, QuantileLog)
    # the map of the fine grid's marginal (relative to the floored ridge), cut above, not below
    fine = grids[-1]
    if scale_ridges:
        ridge = Ridge(fine, "sigma", floored=True)
        expected = QuantileLog.from_grid(*ridge.residual_marginal(), walls=("upper",))
    else:
        expected = QuantileLog.from_grid(np.log(fine.sigma), fine.marginal("sigma"),
                                         walls=("upper",))  # fmt: skip
    np.testing.assert_allclose(transform._g.values, expected._g.values, rtol=1e-12)
    for other in ("ls", "eta"):
        transform = model.rvs_to_transforms[model[other]]
        on_ridge = other == "ls" or scale_ridges
        assert isinstance(transform, OnRidge) is on_ridge
        assert isinstance(transform.inner if on_ridge else transform, CenteredLog)
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    assert sorted(priors) == ["eta", "ls", "radius", "sigma"]
    assert priors.scales["sigma"] == ("floored ridge, quantile" if scale_ridges else "quantile")


def test_cells_per_sd_measures_the_basin_alone_in_grid_cells():
    radius = np.exp(np.arange(0.0, 2.0, 0.04))  # cells 0.04 wide in log r
    t = np.log(radius)
    # a basin with sd 0.05 in log r, and a far light one that must not widen it
    log_marginal = np.logaddexp(
        -0.5 * ((t - 0.6) / 0.05) ** 2, np.log(0.1) - 0.5 * ((t - 1.6) / 0.05) ** 2
    )
    grid = synthetic_grid(log_marginal, radius)
    basin = Basin(float(np.exp(0.6)), 1.0, float(np.exp(0.3)), float(np.exp(1.0)))
    # the normal's sd, 0.05, over the cells' width: 1.25 cells
    assert _cells_per_sd(grid, basin) == pytest.approx(1.25, abs=0.01)
    whole = Basin(float(np.exp(0.6)), 1.0, float(radius[0]), float(radius[-1]))
    assert _cells_per_sd(grid, whole) > 2.0  # the far basin widens the whole


@pytest.mark.parametrize(("cells", "cap_radius", "zooms"),
                         [(1e9, True, True), (0.0, True, False), (1e9, False, False)])  # fmt: skip
def test_a_coarse_start_basin_gets_its_radius_map_from_a_zoomed_grid(cells, cap_radius, zooms):
    """Fewer than map_cells fine cells per sd in the start's basin: one more grid pass over that
    basin's mass range, with the fine grid's other axes, and the capped radius map built from its
    marginal; never for an uncapped map (cap_radius=False)."""
    from pymc_sle.inference._transforms import QuantileLog

    D, y = _line(n=30, seed=1)  # the start basin's mass range is narrower than the fine grid's
    policy = dataclasses.replace(DEFAULT_POLICY, map_cells=cells)
    with pm.Model() as model:
        priors, passes = searched_priors(D, np.arange(y.size), y, policy=policy,
                                         cap_radius=cap_radius)  # fmt: skip
    calls, grids = passes.calls, passes.grids
    assert len(calls) == (3 if zooms else 2)
    radius = model.rvs_to_transforms[priors["radius"]]
    if not zooms:
        assert "zoomed" not in priors.scales["radius"]
        return
    fine, zoom = grids[1], grids[2]
    basins = DEFAULT_POLICY.deep_basins(fine)
    home = _holding_mode(fine, basins)
    # a light basin below the start's, which the zoom keeps, and none above: the cap is at the
    # map's last knot
    assert [b.high <= home.high for b in basins] == [True, True]
    span = fine.mass_range("radius", DEFAULT_POLICY.fine_tail, basins)
    np.testing.assert_allclose(calls[2]["radius"], np.geomspace(*span, fine.radius.size))
    np.testing.assert_array_equal(zoom.ls, fine.ls)
    assert zoom.radius[0] > fine.radius[0] and zoom.radius[-1] <= fine.radius[-1]
    expected = QuantileLog.from_grid(np.log(zoom.radius), zoom.marginal("radius"), log_cap=np.inf)
    np.testing.assert_allclose(radius._g.values, expected._g.values, rtol=1e-12)
    assert priors.scales["radius"] == "capped quantile, zoomed"
    assert np.isfinite(model.compile_logp()(model.initial_point()))


# -- warnings for user radius priors in the degenerate regions ---------------------------------


def _build_sle_gp(radius_prior):
    x = np.linspace(0.0, 1.0, 30)
    D = np.abs(x[:, None] - x[None, :])
    with pm.Model():
        radius = radius_prior(D)
        gp = pymc_sle.gp.Marginal(cov_func=pymc_sle.SLE(D, radius=radius, ls=1.0))
        gp.marginal_likelihood("y", X=np.arange(30)[:, None], y=np.sin(6 * x), sigma=0.1)


@pytest.mark.parametrize(
    ("prior", "message"),
    [
        (
            lambda D: pm.LogNormal("r", np.log(0.01), 1.0),
            r"89 % below the smallest training distance 0\.03448",
        ),
        (lambda D: pm.HalfNormal("r", 5.0), r"84 % above the largest training distance 1 "),
        (lambda D: pm.Uniform("r", 0.0, 0.2), r"17 % below the smallest training distance"),
    ],
)  # fmt: skip
def test_radius_priors_in_degenerate_regions_warn(prior, message):
    with pytest.warns(UserWarning, match=message) as caught:
        _build_sle_gp(prior)
    assert sum("The `radius` prior puts" in str(w.message) for w in caught) == 1  # once


@pytest.mark.parametrize(
    "prior",
    [
        lambda D: pymc_sle.priors.sle_priors(D, np.arange(30), np.sin(D[0]), start="prior")[
            "radius"
        ],
        lambda D: pm.Uniform("r", 0.05, 1.0),
        # a transformed prior, as the paper reproduction's: PyMC derives its CDF
        lambda D: pm.Deterministic("r", pm.math.exp(pm.Uniform("log_r", np.log(0.05), 0.0))),
        lambda D: 0.001,  # fixed: the user's choice, not a prior
    ],
)  # fmt: skip
def test_radius_priors_between_the_distances_do_not_warn(prior):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The `radius` prior puts")
        _build_sle_gp(prior)
