"""sle_priors on sparse distances: the subproblem, the bounded grid, the model it builds."""

import warnings

import numpy as np
import pymc as pm
import pytest
import trimesh
from pymc.distributions.transforms import Interval
from pytensor.graph.traversal import ancestors

import pymc_sle as sle
from pymc_sle.distances import geodesic
from pymc_sle.inference._subsample import subproblem
from pymc_sle.inference._transforms import CenteredLog, below_cutoff
from pymc_sle.inference.basins import basin_models
from pymc_sle.inference.grid import grid_posterior
from pymc_sle.inference.priors import Basin, SLEPriors, sle_priors
from pymc_sle.kernels import embedding_distances


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
    sub = subproblem(D, np.arange(D.n_points), y, None, size, seed=seed)
    chosen = min(size, 160)
    assert sub.positions.size == chosen and np.unique(sub.positions).size == chosen
    assert np.all(np.diff(sub.positions) > 0)
    np.testing.assert_array_equal(sub.y, y[sub.positions])
    full = D.to_dense(fill=D.cutoff)[sub.positions]
    for radius in (0.3 * D.cutoff, D.cutoff):
        expected = embedding_distances(full, radius=radius)
        got = embedding_distances(sub.distances.values, radius=radius)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    # every column the block keeps is one a chosen point reaches below the cutoff, named in
    # the sparse matrix's numbering
    assert (sub.distances.values < D.cutoff).any(axis=0).all()
    np.testing.assert_array_equal(sub.distances.values, D.to_dense(fill=D.cutoff)[
        np.ix_(sub.positions, sub.columns)])  # fmt: skip


def test_subproblem_rows_and_landmarks_are_positions_into_the_matrix():
    D, y = _sphere_problem()
    rows, landmarks = np.arange(40, 160), np.arange(0, 160, 2)
    sub = subproblem(D, rows, y[40:], landmarks, 30, seed=3)
    expected = D.to_dense(fill=D.cutoff)[np.ix_(rows[sub.positions], sub.columns)]
    np.testing.assert_array_equal(sub.distances.values, expected)
    assert set(sub.columns) <= set(landmarks)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 9}, "`search_points` must be an integer >= 10, but got 9"),
        ({"size": True}, "`search_points` must be an integer >= 10"),
        ({"size": 20.0}, "`search_points` must be an integer >= 10"),
        ({"y": np.zeros(3)}, r"`y` must have shape \(160,\)"),
    ],
)
def test_subproblem_validates(kwargs, match):
    D, y = _sphere_problem()
    arguments = {"y": y, "size": 20, **kwargs}
    with pytest.raises(ValueError, match=match):
        subproblem(D, np.arange(160), arguments["y"], None, arguments["size"])


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
