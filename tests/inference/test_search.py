"""sle_priors on sparse distances: the subproblem, the bounded grid, the model it builds."""

import dataclasses
import warnings

import numpy as np
import pymc as pm
import pytest
import trimesh
from pymc.distributions.transforms import Interval
from pytensor.graph.traversal import ancestors

import pymc_sle as sle
from pymc_sle import (
    SLEPriors,
    basin_models,
    embedding_distances,
    sle_priors,
)
from pymc_sle.distances import geodesic
from pymc_sle.inference import DEFAULT_POLICY, Basin, grid_posterior
from pymc_sle.inference._bounds import training_data
from pymc_sle.inference._search import (
    _cells_per_sd,
    _covering_pass,
    _holding_mode,
    _noise_reaches_zero,
)
from pymc_sle.inference._transforms import CenteredLog, below_cutoff
from tests.support import (
    NOISE_NEVER_AT_ZERO,
    search_problem,
    searched_priors,
    sine_on_a_line,
    synthetic_grid,
    two_basins,
)


def _sphere_problem(n=160, per_bump=40.0, frequency=3.0, seed=0):
    sphere = trimesh.creation.icosphere(subdivisions=3)
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(len(sphere.vertices), n, replace=False))
    cutoff = float(np.sqrt(per_bump * 4.0 / n))  # per_bump points within the cutoff (area 4 pi)
    D = geodesic(sphere.vertices, sphere.faces, rows=train, cols=train, cutoff=cutoff)
    y = np.sin(frequency * sphere.vertices[train, 0]) + 0.1 * rng.standard_normal(n)
    return D, y


@pytest.mark.parametrize(("size", "seed"), [(20, 0), (57, 1), (159, 2), (160, 0), (500, 0)])
def test_subproblem_gives_the_model_kernel_exactly(size, seed):
    D, y = _sphere_problem()
    sub = training_data(D, np.arange(D.n_points), y, sparse=True).subsample(size, seed=seed)
    chosen = min(size, 160)
    assert sub.positions.size == chosen and np.unique(sub.positions).size == chosen
    assert np.all(np.diff(sub.positions) > 0)
    np.testing.assert_array_equal(sub.y, y[sub.positions])
    full = D.to_dense(fill=D.cutoff)[sub.positions]
    for radius in (0.3 * D.cutoff, D.cutoff):
        expected = embedding_distances(full, radius=radius)
        got = embedding_distances(sub.block, radius=radius)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    # every column the block keeps is one a chosen point reaches below the cutoff, named in
    # the sparse matrix's numbering
    assert (sub.block < D.cutoff).any(axis=0).all()
    np.testing.assert_array_equal(sub.block, D.to_dense(fill=D.cutoff)[
        np.ix_(sub.positions, sub.columns)])  # fmt: skip


def test_subproblem_rows_and_landmarks_are_positions_into_the_matrix():
    D, y = _sphere_problem()
    rows, landmarks = np.arange(40, 160), np.arange(0, 160, 2)
    sub = training_data(D, rows, y[40:], landmarks, sparse=True).subsample(30, seed=3)
    expected = D.to_dense(fill=D.cutoff)[np.ix_(rows[sub.positions], sub.columns)]
    np.testing.assert_array_equal(sub.block, expected)
    assert set(sub.columns) <= set(landmarks)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 9}, "`search_points` must be an integer >= 10, but got 9"),
        ({"size": True}, "`search_points` must be an integer >= 10"),
        ({"size": 20.0}, "`search_points` must be an integer >= 10"),
    ],
)
def test_subsample_validates_its_size(kwargs, match):
    D, y = _sphere_problem()
    data = training_data(D, np.arange(160), y, sparse=True)
    with pytest.raises(ValueError, match=match):
        data.subsample(kwargs["size"])


def test_sparse_training_data_validates_y():
    D, _ = _sphere_problem()
    with pytest.raises(ValueError, match=r"`y` must have shape \(160,\)"):
        training_data(D, np.arange(160), np.zeros(3), sparse=True)


def test_grid_radius_max():
    D, y = _sphere_problem(n=60)
    dense, rows = D.to_dense(fill=D.cutoff), np.arange(60)
    grid = grid_posterior(dense, rows, y, n_radius=4, n_ls=3, n_scale=3, radius_max=D.cutoff)
    unbounded = grid_posterior(dense, rows, y, n_radius=4, n_ls=3, n_scale=3)
    assert unbounded.radius[-1] > D.cutoff  # the default axis would pass the cutoff
    assert grid.radius[-1] == pytest.approx(D.cutoff, rel=1e-12)
    assert grid.radius[0] == unbounded.radius[0]
    assert np.allclose(np.diff(np.log(grid.radius)), np.log(grid.radius[1] / grid.radius[0]))
    with pytest.raises(ValueError, match="must lie within `radius_max`"):
        grid_posterior(dense, rows, y, radius=[0.1, 2 * D.cutoff], n_ls=2, n_scale=2,
                       radius_max=D.cutoff)  # fmt: skip


def _sparse_op(model):
    return [
        v.owner.op
        for v in ancestors([model.logp()])
        if v.owner is not None and type(v.owner.op).__name__ == "SparseSLELogDensity"
    ]


def test_sle_priors_on_sparse_distances_builds_a_sparse_model_below_the_cutoff():
    D, y = _sphere_problem(n=160, per_bump=300.0, frequency=20.0)
    rows = np.arange(160)
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the posterior lies well below the cutoff
        priors = sle_priors(D, rows, y, search_points=60)
        gp = sle.gp.Marginal(cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=priors["sigma"])
    assert priors.kernel["distances"] is D
    assert priors.radius_cap is not None and priors.radius_cap <= D.cutoff
    assert _sparse_op(model)  # the model takes the sparse likelihood
    point = model.initial_point()
    assert np.isfinite(model.compile_logp()(point))
    assert priors["radius"].eval() <= D.cutoff  # the initial radius
    draws = pm.draw(priors["radius"], draws=500, random_seed=1)
    assert draws.max() < D.cutoff  # the prior is truncated at the cutoff
    # the start of every basin lies below the cap, so sample_basins can start there
    assert all(b.start["radius"] < priors.radius_cap for b in priors.basins)


def test_sle_priors_sparse_prior_start_and_the_cutoff_warning():
    D, y = _sphere_problem(n=160, per_bump=20.0, frequency=1.0)  # a smooth field: large radii
    rows = np.arange(160)
    with pm.Model() as model:
        priors = sle_priors(D, rows, y, start="prior")
    assert isinstance(model.rvs_to_transforms[priors["radius"]], Interval)
    assert pm.draw(priors["radius"], draws=300, random_seed=0).max() < D.cutoff
    with pm.Model(), pytest.warns(UserWarning, match="reaches the distances' cutoff"):
        priors = sle_priors(D, rows, y, search_points=60)
    assert priors.radius_cap <= D.cutoff


@pytest.mark.parametrize(("centre", "scale", "cutoff"), [(1.0, 0.5, 2.0), (0.2, 0.05, 0.21)])
def test_centred_log_below_the_cutoff(centre, scale, cutoff):
    """Where several basins hold mass (no quantile map), the radius's centred log scale is
    chained with an interval whose top is the cutoff."""
    transform = below_cutoff(CenteredLog(centre, scale), cutoff)
    v = np.concatenate([[-40.0, 40.0], np.linspace(-4.0, 4.0, 9)])
    x = transform.backward(v).eval()
    far, x, v = x[:2], x[2:], v[2:]
    assert 0 <= far.min() and far.max() <= cutoff * (1 + 1e-12)  # never above it, however far
    assert (x > 0).all() and (x < cutoff).all() and (np.diff(x) < 0).all()  # log(top - .)
    np.testing.assert_allclose(transform.forward(x).eval(), v, rtol=1e-9, atol=1e-9)


def test_basin_models_confine_a_truncated_radius():
    """sample_basins' restricted models work on the sparse model's truncated, capped radius."""
    D, y = _sphere_problem(n=160, per_bump=300.0, frequency=20.0)
    rows = np.arange(160)
    with pm.Model() as model:
        priors = sle_priors(D, rows, y, search_points=60)
        gp = sle.gp.Marginal(cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=priors["sigma"])
    (only,) = priors.basins
    start = dict(only.start)
    low = dict(start, radius=0.8 * start["radius"])
    halves = (
        Basin(low["radius"], 0.5, 0.6 * start["radius"], 0.9 * start["radius"], low),
        Basin(start["radius"], 0.5, 0.9 * start["radius"], priors.radius_cap, start),
    )
    two = SLEPriors(dict(priors), halves, priors.radius_cap, 0.0, priors.scales, priors.kernel)
    restricted = basin_models(two, model=model)
    assert [basin for basin, _ in restricted] == list(halves)
    for basin, basin_model in restricted:
        point = basin_model.initial_point()
        assert np.isfinite(basin_model.compile_logp()(point))
        (radius_value,) = basin_model.replace_rvs_by_values([basin_model["radius"]])
        radius = basin_model.compile_fn(radius_value, inputs=basin_model.value_vars,
                                        on_unused_input="ignore")(point)  # fmt: skip
        # through the quantile map and its inverse, two interpolants: equal to about 1e-4
        assert radius == pytest.approx(basin.start["radius"], rel=1e-3) and radius < D.cutoff


@pytest.mark.parametrize(("min_basin_mass", "weighs"), [(0.3, True), (0.5, False)])
def test_several_sampled_basins_are_weighed_on_scale_cells_over_their_mass(min_basin_mass, weighs):
    """Where more than one basin holds min_basin_mass (what sample_basins samples), one more pass
    of the fine grid with weighing_scales cells of eta and sigma over the coarse grid's mass
    range; the basins' masses come from it. It has the fine pass's (radius, ls) cells, so it
    decomposes no Gram again, and its grid equals one computed from scratch."""
    D, y = sine_on_a_line()
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
    fresh = search_problem(D, y).grid(
        **passes.calls[2]
    )  # a new problem: every cell decomposed again
    np.testing.assert_array_equal(passes.problem.grid(**passes.calls[2]).log_density,
                                  fresh.log_density)  # fmt: skip


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
    assert _noise_reaches_zero(_noise_grid(low_mass), DEFAULT_POLICY) is reaches


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

    D, y = sine_on_a_line(
        n=30, seed=1
    )  # the start basin's mass range is narrower than the fine grid's
    policy = dataclasses.replace(DEFAULT_POLICY, map_cells=cells, widenings=0)
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


def _toy_problem():
    """30 points of sin(6 x), noiseless: the coarse pass over the priors' ranges ends inside the
    posterior of the noise (towards 0), of ``ls`` and of the radius (towards large values)."""
    x = np.sort(np.random.default_rng(2).uniform(size=30))
    return search_problem(np.abs(x[:, None] - x[None, :]), np.sin(6 * x))


def test_the_coarse_pass_is_widened_until_its_end_cells_hold_no_mass():
    problem = _toy_problem()
    plain = problem.grid(**DEFAULT_POLICY.start_grid)
    assert plain.marginal("sigma")[0] > 0.5 and plain.marginal("ls")[-1] > 0.1  # the premise
    grid, scales = _covering_pass(problem, DEFAULT_POLICY)
    for name in ("radius", "ls", "eta", "sigma"):
        marginal, axis, before = grid.marginal(name), getattr(grid, name), getattr(plain, name)
        assert max(marginal[0], marginal[-1]) <= DEFAULT_POLICY.edge_mass, name
        # the same cells, more of them at the same spacing in the log
        np.testing.assert_allclose(np.diff(np.log(axis)), np.log(before[1] / before[0]))
        start = int(np.argmin(np.abs(axis - before[0])))
        np.testing.assert_array_equal(axis[start : start + before.size], before)  # bit for bit
    assert set(scales) == {"eta", "sigma"}  # the later passes take the widened scale axes
    np.testing.assert_array_equal(scales["sigma"], grid.sigma)


def test_a_widened_pass_decomposes_only_its_new_cells():
    """The cells the coarse pass already had keep their values bit for bit, so their spectra are
    looked up, not computed again."""
    problem = _toy_problem()
    plain = problem.grid(**DEFAULT_POLICY.start_grid)
    cells = set(problem.spectra)
    grid, _ = _covering_pass(dataclasses.replace(problem, spectra={}), DEFAULT_POLICY)
    kept = {(float(r), float(ls)) for r in grid.radius for ls in grid.ls}
    assert cells <= kept and len(cells) == plain.radius.size * plain.ls.size


def test_the_radius_is_widened_up_to_the_cutoff_only():
    problem = _toy_problem()
    plain = problem.grid(**DEFAULT_POLICY.start_grid)
    assert plain.marginal("radius")[-1] > DEFAULT_POLICY.edge_mass  # the premise
    step = np.log(plain.radius[1] / plain.radius[0])
    cutoff = float(plain.radius[-1] * np.exp(2.5 * step))  # room for two more cells
    bounded = dataclasses.replace(problem, cutoff=cutoff, spectra={})
    grid, _ = _covering_pass(bounded, DEFAULT_POLICY)
    assert grid.radius.size == bounded.grid(**DEFAULT_POLICY.start_grid).radius.size + 2
    assert grid.radius[-1] <= cutoff


def test_a_coarse_pass_that_holds_the_posterior_is_kept_as_it_is():
    """Where no end cell holds ``edge_mass``, the coarse pass is the one over the priors'
    ranges, its values unchanged."""
    problem = _toy_problem()
    plain = problem.grid(**DEFAULT_POLICY.start_grid)
    edge = max(max(plain.marginal(k)[[0, -1]]) for k in ("radius", "ls", "eta", "sigma"))
    grid, scales = _covering_pass(problem, dataclasses.replace(DEFAULT_POLICY, edge_mass=edge))
    assert scales == {}
    np.testing.assert_array_equal(grid.log_density, plain.log_density)


def test_no_widening_is_the_pass_over_the_priors_ranges():
    problem = _toy_problem()
    grid, scales = _covering_pass(problem, dataclasses.replace(DEFAULT_POLICY, widenings=0))
    assert scales == {}
    np.testing.assert_array_equal(grid.radius, problem.grid(**DEFAULT_POLICY.start_grid).radius)
