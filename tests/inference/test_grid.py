"""The grid posterior of the SLE hyperparameters equals PyMC's log density of the same model."""

import numpy as np
import pymc as pm
import pytest

import pymc_sle as sle
from pymc_sle.inference import Basin, grid_posterior
from tests.support import synthetic_grid


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 1.0, 14))
    D = np.abs(x[:, None] - x[None, :])
    y = np.sin(6.0 * x) + 0.1 * rng.standard_normal(x.size)
    return D, y


@pytest.mark.parametrize("inner", ["matern32", "rbf"])
def test_log_density_equals_pymc_model_up_to_a_constant(data, inner):
    D, y = data
    rows = np.arange(y.size)
    grid = grid_posterior(D, rows, y, inner=inner, n_radius=3, n_ls=3, n_scale=3)
    with pm.Model() as model:
        priors = sle.sle_priors(D, rows, y, inner=inner, start="prior")
        cov = priors["eta"] ** 2 * sle.SLE(D, radius=priors["radius"], ls=priors["ls"], inner=inner)
        gp = pm.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=priors["sigma"])
    logp = model.compile_logp()  # on the log scale, with the log transforms' Jacobians

    def pymc_logp(i, j, k, m):
        values = {"radius": grid.radius[i], "ls": grid.ls[j], "eta": grid.eta[k],
                  "sigma": grid.sigma[m]}  # fmt: skip
        return logp({f"{name}_log__": np.log(v) for name, v in values.items()})

    cells = [(0, 0, 0, 0), (2, 1, 2, 1), (1, 2, 1, 2), (2, 2, 0, 2)]
    ours = np.array([grid.log_density[c] for c in cells])
    theirs = np.array([pymc_logp(*c) for c in cells])
    # Equal up to the priors' normalising constants: a factor of two anywhere would show.
    np.testing.assert_allclose(ours - ours[0], theirs - theirs[0], rtol=1e-8, atol=1e-6)


def test_marginals_are_probabilities(data):
    D, y = data
    grid = grid_posterior(D, np.arange(y.size), y, n_radius=4, n_ls=5, n_scale=3)
    for name, size in (("radius", 4), ("ls", 5), ("eta", 3), ("sigma", 3)):
        p = grid.marginal(name)
        assert p.shape == (size,) and (p >= 0).all() and p.sum() == pytest.approx(1.0)
    for name in ("ls", "eta", "sigma"):
        joint = grid.joint_with_radius(name)
        assert joint.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(joint.sum(axis=1), grid.marginal("radius"))
        np.testing.assert_allclose(joint.sum(axis=0), grid.marginal(name))
    with pytest.raises(ValueError, match="`name` must be one of"):
        grid.joint_with_radius("radius")
    assert grid.profile_log_likelihood.shape == (4, 5)
    assert grid.nearest_neighbour == pytest.approx(D[D > 0].min())


def test_radius_modes_split_the_mass_at_the_minimum():
    radius = np.geomspace(1.0, 100.0, 41)
    t = np.log(radius)
    # Two Gaussian bumps in log radius holding 1/4 and 3/4 of the mass.
    density = 0.25 * np.exp(-0.5 * ((t - 1.0) / 0.2) ** 2) + 0.75 * np.exp(
        -0.5 * ((t - 3.5) / 0.2) ** 2
    )
    modes = synthetic_grid(np.log(density), radius).radius_modes()
    assert len(modes) == 2
    assert modes[0].radius == pytest.approx(np.e, rel=0.15)
    assert modes[1].radius == pytest.approx(np.exp(3.5), rel=0.15)
    assert [m.mass for m in modes] == pytest.approx([0.25, 0.75], abs=1e-3)
    assert modes[0].high < modes[1].low


def test_uneven_axes_weigh_cells_by_their_width():
    radius = np.array([1.0, 1.1, 10.0])  # a flat density: mass follows the log widths
    p = synthetic_grid(np.zeros(3), radius).marginal("radius")
    widths = np.gradient(np.log(radius))
    np.testing.assert_allclose(p, widths / widths.sum())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_radius": 1}, r"`n_radius` must be an integer >= 2, but got 1"),
        ({"n_scale": 2.5}, r"`n_scale` must be an integer >= 2, but got 2.5"),
        ({"width": 0.0}, r"`width` must be a positive number, but got 0.0"),
        ({"radius": [0.5]}, r"`radius` must be a 1-D array of at least 2 positive finite"),
        ({"ls": [1.0, 0.5]}, r"`ls` must be strictly increasing"),
        ({"radius": [0.0, 1.0]}, r"`radius` must be a 1-D array of at least 2 positive"),
        ({"sigma": [[0.1, 0.2]]}, r"`sigma` must be a 1-D array of at least 2 positive"),
        ({"sigma": [0.2, 0.1]}, r"`sigma` must be strictly increasing"),
        ({"eta": [0.1, np.inf]}, r"`eta` must be a 1-D array of at least 2 positive finite"),
        ({"eta": [0.2, 0.2]}, r"`eta` must be strictly increasing"),
    ],
)
def test_invalid_grid_arguments_are_named(data, kwargs, message):
    D, y = data
    with pytest.raises(ValueError, match=message):
        grid_posterior(D, np.arange(y.size), y, **kwargs)


def test_invalid_marginal_name_is_named(data):
    D, y = data
    grid = grid_posterior(D, np.arange(y.size), y, n_radius=2, n_ls=2, n_scale=2)
    with pytest.raises(ValueError, match=r"`name` must be one of .* but got 'amplitude'"):
        grid.marginal("amplitude")


def test_shallow_dips_do_not_separate_basins_behind_a_barrier():
    radius = np.geomspace(1.0, 100.0, 81)
    t = np.log(radius)
    # Two bumps whose dividing dip is about 1 nat deep, then a far third one behind a deep dip.
    density = (np.exp(-0.5 * ((t - 1.0) / 0.3) ** 2) + np.exp(-0.5 * ((t - 1.8) / 0.3) ** 2)
               + np.exp(-0.5 * ((t - 4.0) / 0.1) ** 2))  # fmt: skip
    grid = synthetic_grid(np.log(density), radius)
    assert len(grid.radius_modes()) == 3  # every dip
    merged = grid.radius_modes(barrier=3.0)
    assert len(merged) == 2
    assert merged[0].low == radius[0] and merged[0].high < merged[1].low
    assert sum(m.mass for m in merged) == pytest.approx(1.0)


def test_mass_range_holds_all_but_the_tail_and_one_cell_more(data):
    D, y = data
    grid = grid_posterior(D, np.arange(y.size), y, n_radius=12, n_ls=8, n_scale=6)
    low, high = grid.mass_range("radius", tail=0.2)
    p, axis = grid.marginal("radius"), grid.radius
    inside = (axis >= low) & (axis <= high)
    assert p[inside].sum() >= 0.8
    assert low in axis and high in axis
    # one cell beyond where the mass drops below a tenth at each end (or the axis end)
    cdf = np.cumsum(p)
    assert low == axis[max(np.searchsorted(cdf, 0.1) - 1, 0)]
    assert high == axis[min(np.searchsorted(cdf, 0.9) + 1, axis.size - 1)]
    # restricted to the radii of given basins, the range stays within one cell of them
    lower_half = Basin(float(axis[2]), 1.0, float(axis[0]), float(axis[5]))
    assert grid.mass_range("radius", tail=0.2, basins=[lower_half])[1] <= axis[6]


@pytest.mark.parametrize("name, axis", [("eta", 2), ("sigma", 3)])
def test_an_explicit_scale_axis_replaces_the_default_one_and_the_other_keeps_n_scale(
    data, name, axis
):
    """The default axis passed explicitly gives the same grid; a finer one refines that scale
    only: every tenth of its cells is a cell of the default grid."""
    D, y = data
    rows, common = np.arange(y.size), dict(n_radius=3, n_ls=4, n_scale=5)
    default = grid_posterior(D, rows, y, **common)
    same = grid_posterior(D, rows, y, **common, **{name: getattr(default, name)})
    np.testing.assert_array_equal(same.log_density, default.log_density)
    values = getattr(default, name)
    fine = grid_posterior(D, rows, y, **common, **{name: np.geomspace(values[0], values[-1], 41)})
    shape = [3, 4, 5, 5]
    shape[axis] = 41
    assert fine.log_density.shape == tuple(shape)
    every_tenth = [slice(None)] * 4
    every_tenth[axis] = slice(None, None, 10)
    np.testing.assert_array_equal(fine.log_density[tuple(every_tenth)], default.log_density)


def test_shared_spectra_decompose_each_cell_once_and_change_no_value(data):
    """With a ``spectra`` cache, a second pass over cells of the same (radius, ls) values --
    finer scale axes, one more length scale -- decomposes only the new cells' Grams, and its
    grid equals the one computed without reuse."""
    from pymc_sle import suggest_bounds
    from pymc_sle.inference._grid import GridAxes, grid_on_block

    D, y = data
    rows = np.arange(y.size)
    first = grid_posterior(D, rows, y, n_radius=3, n_ls=4, n_scale=5)
    ls = np.append(first.ls, 2.0 * first.ls[-1])
    second = dict(radius=first.radius, ls=ls, n_scale=7)
    fresh = grid_posterior(D, rows, y, **second)
    spectra = {}
    common = dict(inner="matern32", inner_kwargs=None, mass=0.95, spectra=spectra)
    block, bounds = D[np.ix_(rows, rows)], suggest_bounds(D, rows, y)
    again = grid_on_block(block, y, bounds, GridAxes(n_radius=3, n_ls=4, n_scale=5), **common)
    assert len(spectra) == 12
    reused = grid_on_block(block, y, bounds, GridAxes(**second), **common)
    assert len(spectra) == 12 + 3  # the new length scale's cells only
    np.testing.assert_array_equal(again.log_density, first.log_density)
    np.testing.assert_array_equal(reused.log_density, fresh.log_density)
    np.testing.assert_array_equal(reused.profile_log_likelihood, fresh.profile_log_likelihood)
