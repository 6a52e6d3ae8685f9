"""The changes of variable ``sle_priors`` samples in: smooth bijections, the model unchanged."""

import dataclasses

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import interpolate, stats

from pymc_sle.inference import grid_posterior
from pymc_sle.inference._transforms import Hermite, QuantileLog, Ridge


def _function(transform_method):
    x = pt.dscalar("x")
    return pytensor.function([x], transform_method(x))


@pytest.fixture
def hermite():
    return Hermite(-1.0, 0.5, [0.0, 0.3, 0.35, 1.2, 2.0])  # knots -1, -0.5, 0, 0.5, 1


def test_hermite_is_pchip_inside_and_linear_outside(hermite):
    value_and_slope = _function(lambda x: hermite(x))
    knots = -1.0 + 0.5 * np.arange(5)
    pchip = interpolate.PchipInterpolator(knots, hermite.values)
    for x in np.linspace(-0.99, 0.99, 23):
        value, slope = value_and_slope(x)
        assert value == pytest.approx(pchip(x), abs=1e-12)
        assert slope == pytest.approx(pchip.derivative()(x), abs=1e-12)
        assert hermite.numpy(x) == pytest.approx(value, abs=1e-12)
    xs = np.linspace(-3.0, 3.0, 13)  # arrays too, across both linear pieces
    np.testing.assert_allclose(hermite.numpy(xs), [value_and_slope(x)[0] for x in xs], atol=1e-12)
    end_slope = pchip.derivative()(1.0)
    assert value_and_slope(3.0)[0] == pytest.approx(2.0 + 2.0 * end_slope, abs=1e-12)
    assert hermite.numpy(3.0) == pytest.approx(2.0 + 2.0 * end_slope, abs=1e-12)
    assert value_and_slope(-3.0)[1] == pytest.approx(pchip.derivative()(-1.0), abs=1e-12)


@pytest.mark.parametrize("x", [-1.0, -0.5, 0.0, 0.5, 1.0])
def test_hermite_value_and_slope_are_continuous_at_knots_and_ends(hermite, x):
    value_and_slope = _function(lambda x: hermite(x))
    below, above = value_and_slope(x - 1e-9), value_and_slope(x + 1e-9)
    np.testing.assert_allclose(below, above, atol=1e-7)
    value = _function(lambda x: hermite(x)[0])
    numeric = (value(x + 1e-6) - value(x - 1e-6)) / 2e-6  # off by ~1e-6 x the jump in f''
    assert value_and_slope(x)[1] == pytest.approx(numeric, abs=1e-5)


def test_hermite_gradients_are_its_slope_and_curvature_and_infinities_stay_infinite(hermite):
    """What NUTS differentiates: the value's gradient is the slope it returns, and the slope's
    (the Jacobian term's) is PCHIP's second derivative inside, 0 on the lines."""
    x = pt.dscalar("x")
    value, slope = hermite(x)
    gradients = pytensor.function([x], [pytensor.grad(value, x), slope, pytensor.grad(slope, x)])
    pchip = interpolate.PchipInterpolator(-1.0 + 0.5 * np.arange(5), hermite.values)
    for point in (-0.9, -0.3, 0.2, 0.7, 0.95):
        gradient, returned, curvature = gradients(point)
        assert gradient == pytest.approx(returned, abs=1e-12)
        assert curvature == pytest.approx(pchip.derivative(2)(point), abs=1e-10)
    for point in (-4.0, 3.0):
        gradient, returned, curvature = gradients(point)
        assert gradient == pytest.approx(returned, abs=1e-12) and curvature == 0.0
    value_at = _function(lambda x: hermite(x)[0])
    assert value_at(np.inf) == np.inf and value_at(-np.inf) == -np.inf
    assert hermite.numpy(np.inf) == np.inf and hermite.numpy(-np.inf) == -np.inf


def _two_bumps(log_axis):
    """Cell probabilities of a marginal with a mode, a dip of about 2 nats and a second mode."""
    density = 0.7 * stats.norm.pdf(log_axis, 0.0, 0.3) + 0.3 * stats.norm.pdf(log_axis, 1.2, 0.2)
    return density / density.sum()


@pytest.fixture
def quantile():
    log_axis = np.linspace(-1.5, 2.5, 48)
    return QuantileLog.from_grid(log_axis, _two_bumps(log_axis)), log_axis


def _widened_target(log_axis, x):
    """The documented target density of ``QuantileLog.from_grid`` at fine points ``x``: 98 % the
    grid marginal, 2 % a normal with its mean and twice its sd, cut below its 0.5 % quantile by a
    Gaussian one cell wide."""
    p, step = _two_bumps(log_axis), log_axis[1] - log_axis[0]
    mean = p @ log_axis
    sd = np.sqrt(p @ (log_axis - mean) ** 2)
    ends = np.concatenate([[log_axis[0] - step], log_axis, [log_axis[-1] + step]])
    grid = np.interp(x, ends, np.pad(p / step, 1))  # down to 0 one cell beyond the ends
    wall = x[np.argmax(np.cumsum(grid) / grid.sum() >= 0.005)]
    wide = stats.norm.pdf(x, mean, 2 * sd) * np.exp(-0.5 * (np.minimum(x - wall, 0) / step) ** 2)
    return 0.98 * grid / grid.sum() + 0.02 * wide / wide.sum()


def test_quantile_log_pushes_a_standard_normal_onto_the_widened_grid_marginal(quantile):
    transform, log_axis = quantile
    u = np.random.default_rng(0).standard_normal(200_000)
    backward = np.vectorize(_function(transform.backward))
    log_x = np.log(backward(u))
    x = np.linspace(-12.0, 12.0, 240_001)
    q = _widened_target(log_axis, x)
    mean = q @ x
    assert log_x.mean() == pytest.approx(mean, abs=0.01)
    assert log_x.std() == pytest.approx(np.sqrt(q @ (x - mean) ** 2), rel=0.02)
    share_in_second_bump = np.mean(log_x > 0.75)
    # the map interpolates between 49 knots: off by up to 0.01 across the dip
    assert share_in_second_bump == pytest.approx(q[x > 0.75].sum(), abs=0.01)
    for level in (0.001, 0.01, 0.5, 0.99, 0.999):
        expected = x[np.searchsorted(np.cumsum(q), level)]
        assert np.quantile(log_x, level) == pytest.approx(expected, abs=0.03)


def test_quantile_log_lower_tail_stops_at_a_wall_and_upper_tail_stays_wide(monkeypatch):
    """A marginal that drops to 0 below log x = -0.5 (as the radius posterior does below the
    nearest-neighbour spacing): u = -3 maps within a grid cell of the drop, and further down g
    moves about one grid cell per unit of u. Without the cut (``wall_quantile = 0``) the
    widening normal's tail moves g by over twice the marginal's sd per unit of u. The upper tail
    follows the widening normal far past the grid either way."""
    log_axis = np.linspace(-1.5, 2.5, 48)
    step = log_axis[1] - log_axis[0]
    p = np.where(log_axis < -0.5, 0.0, _two_bumps(log_axis))
    p /= p.sum()
    sd = np.sqrt(p @ (log_axis - p @ log_axis) ** 2)

    def map_of_current_settings():
        transform = QuantileLog.from_grid(log_axis, p)
        backward = _function(transform.backward)
        return transform, lambda u: float(np.log(backward(u)))

    transform, log_g = map_of_current_settings()
    assert np.all(transform._g.slopes[[0, -1]] > 0)  # g keeps rising beyond its knots
    for u in np.linspace(-12.0, 7.0, 39):  # the inverse, also where the marginal drops
        assert transform.to_unit(np.exp(log_g(u))) == pytest.approx(u, abs=0.01)
    assert -0.5 - step < log_g(-3.0) < -0.5
    assert 0.5 * step < (log_g(-6.0) - log_g(-12.0)) / 6.0 < 1.5 * step
    above = log_g(6.0)
    assert above > log_axis[-1] + 2 * step
    monkeypatch.setattr(QuantileLog, "wall_quantile", 0.0)
    _, log_g = map_of_current_settings()
    # a 2 % share of N(mean, (2 sd)^2) in the tail: slightly more than 2 sd per unit of u
    assert 2 * sd < (log_g(-6.0) - log_g(-12.0)) / 6.0 < 2.5 * sd
    assert log_g(6.0) == pytest.approx(above, abs=0.1)


def test_quantile_log_upper_wall_stops_the_upper_tail_and_leaves_the_lower_one_wide():
    """The noise's marginal, which drops to 0 above log x = 1.5 (the data's spread), and has a
    long tail below: with ``walls=("upper",)`` u = 3 maps within a grid cell of the drop and
    further up g moves about one grid cell per unit of u; the lower tail follows the widening
    normal as without walls. The default cuts the lower end only."""
    log_axis = np.linspace(-1.5, 2.5, 48)
    step = log_axis[1] - log_axis[0]
    p = np.where(log_axis > 1.5, 0.0, _two_bumps(log_axis))
    p /= p.sum()

    def log_g(transform):
        backward = _function(transform.backward)
        return lambda u: float(np.log(backward(u)))

    upper = log_g(QuantileLog.from_grid(log_axis, p, walls=("upper",)))
    none = log_g(QuantileLog.from_grid(log_axis, p, walls=()))
    lower = log_g(QuantileLog.from_grid(log_axis, p))
    assert 1.5 < upper(3.0) < 1.5 + step
    assert 0.5 * step < (upper(12.0) - upper(6.0)) / 6.0 < 1.5 * step
    assert (none(12.0) - none(6.0)) / 6.0 > 5 * step
    assert upper(-6.0) == pytest.approx(none(-6.0), abs=0.05)
    assert lower(12.0) == pytest.approx(none(12.0), abs=0.05)
    with pytest.raises(ValueError, match=r"`walls` must hold only 'lower' and 'upper', but got "
                                         r"\('top',\)"):  # fmt: skip
        QuantileLog.from_grid(log_axis, p, walls=("top",))


def test_quantile_log_forward_inverts_backward_and_jacobian_is_the_derivative(quantile):
    transform, _ = quantile
    backward = _function(transform.backward)
    forward = _function(transform.forward)
    log_jac_det = _function(transform.log_jac_det)
    for u in np.linspace(-7.0, 7.0, 29):
        assert forward(backward(u)) == pytest.approx(u, abs=2e-3)
        assert transform.to_unit(backward(u)) == pytest.approx(u, abs=2e-3)
        numeric = (backward(u + 1e-6) - backward(u - 1e-6)) / 2e-6
        assert np.exp(log_jac_det(u)) == pytest.approx(numeric, rel=1e-5)


#: Where ``capped`` caps log x: between the two bumps of ``_two_bumps``.
LOG_CAP = 0.6


@pytest.fixture
def capped():
    log_axis = np.linspace(-1.5, 2.5, 48)
    return QuantileLog.from_grid(log_axis, _two_bumps(log_axis), log_cap=LOG_CAP), log_axis


def test_capped_quantile_log_is_the_map_of_the_cells_below_the_cap(capped):
    transform, log_axis = capped
    p = _two_bumps(log_axis)
    kept = np.where(log_axis <= LOG_CAP, p, 0.0)
    below = QuantileLog.from_grid(log_axis, kept / kept.sum())
    assert transform._g.values == pytest.approx(below._g.values, abs=1e-12)
    assert below.u_cap is None
    assert transform.u_cap == pytest.approx(float(below.to_unit(np.exp(LOG_CAP))), abs=1e-12)
    # the map over every cell puts LOG_CAP at the 70 % quantile (u = 0.47), below the second
    # bump's 30 %; the capped map puts it near the top of its cells' mass
    uncapped = QuantileLog.from_grid(log_axis, p)
    assert uncapped.to_unit(np.exp(LOG_CAP)) == pytest.approx(0.47, abs=0.05)
    assert transform.u_cap > 2.0


def test_capped_quantile_log_stays_below_the_cap_and_follows_the_map_well_below_it(capped):
    """x <= exp(g(u_cap)) ~ exp(LOG_CAP) for every sampled value, to the rounding of exp and log
    (far above the cap u equals u_cap in floating point, and log(exp(g)) can come out one ulp
    above g, depending on the platform's libm); 3 units of u below the cap, the sampled value is
    u to within tau * log(1 + e^-6) = 0.0012."""
    transform, _ = capped
    backward = _function(transform.backward)
    log_bound = float(transform._g.numpy(transform.u_cap))
    assert log_bound == pytest.approx(LOG_CAP, abs=2e-3)
    log_x = np.log([backward(v) for v in np.linspace(-7.0, 60.0, 135)])
    assert np.all(log_x <= log_bound + 4 * np.spacing(log_bound)) and np.all(np.diff(log_x) >= 0)
    assert log_x[-1] == pytest.approx(log_bound, abs=1e-9)
    for v in np.linspace(-7.0, transform.u_cap - 3.0, 12):
        expected = float(transform._g.numpy(v))
        assert np.log(backward(v)) == pytest.approx(expected, abs=0.0013 * 2.0)  # slope <= 2


def test_capped_quantile_log_forward_inverts_backward_and_jacobian_is_the_derivative(capped):
    transform, _ = capped
    backward = _function(transform.backward)
    forward = _function(transform.forward)
    log_jac_det = _function(transform.log_jac_det)
    for v in np.linspace(-7.0, transform.u_cap + 2.0, 24):
        if v < transform.u_cap:  # beyond, x barely moves: inverting it amplifies rounding
            assert forward(backward(v)) == pytest.approx(v, abs=2e-3)
            assert transform.to_sampled(backward(v)) == pytest.approx(v, abs=2e-3)
        numeric = (backward(v + 1e-6) - backward(v - 1e-6)) / 2e-6
        assert np.exp(log_jac_det(v)) == pytest.approx(numeric, rel=1e-5)


def test_capped_quantile_log_validates_the_cap(capped):
    transform, log_axis = capped
    with pytest.raises(ValueError, match=r"`x` must lie below the cap 1\.819, but got 2\.014"):
        transform.to_sampled(np.array([1.0, np.exp(0.7)]))
    # an infinite cap is the map's last knot, u = 6
    at_last_knot = QuantileLog.from_grid(log_axis, _two_bumps(log_axis), log_cap=np.inf)
    assert at_last_knot.u_cap == 6.0
    assert at_last_knot.bound == pytest.approx(np.exp(at_last_knot._g.numpy(6.0)))
    assert at_last_knot._g.values == pytest.approx(
        QuantileLog.from_grid(log_axis, _two_bumps(log_axis))._g.values
    )
    message = r"`log_cap` must lie above the grid's first point -1\.5, but got -1\.5"
    with pytest.raises(ValueError, match=message):
        QuantileLog.from_grid(log_axis, _two_bumps(log_axis), log_cap=-1.5)


def test_ridge_is_the_conditional_mean():
    """log ls | log r ~ N(0.4 - 1.3 log r, 0.2): the ridge is that line."""
    log_r = np.linspace(-1.0, 1.0, 24)
    log_ls = np.linspace(-2.0, 2.5, 46)  # cells of 0.1, half the conditional sd
    centre = 0.4 - 1.3 * log_r
    log_density = -0.5 * ((log_ls[None, :] - centre[:, None]) / 0.2) ** 2
    ridge = Ridge(_grid(np.exp(log_r), np.exp(log_ls), log_density))
    np.testing.assert_allclose(ridge.values, centre, atol=1e-3)
    np.testing.assert_allclose(ridge.spread, 0.2, rtol=0.01)


def test_ridges_of_ls_eta_and_sigma_are_their_own_conditional_means():
    """Independent given r: log theta | log r ~ N(c_theta(log r), 0.2), three different lines.
    Each ridge must be its own line, whatever the other axes do."""
    log_r = np.linspace(-1.0, 1.0, 12)
    axis = np.linspace(-2.5, 2.5, 51)  # cells of 0.1, half the conditional sd
    lines = {"ls": 0.4 - 1.3 * log_r, "eta": 0.2 + 0.5 * log_r, "sigma": -0.3 - 0.8 * log_r}
    log_density = sum(
        np.expand_dims(-0.5 * ((axis[None, :] - line[:, None]) / 0.2) ** 2,
                       tuple(a for a in (1, 2, 3) if a != k + 1))
        for k, line in enumerate(lines.values())
    )  # fmt: skip
    grid = dataclasses.replace(
        _grid(np.exp(log_r), np.exp(axis), np.zeros((12, 51))),
        eta=np.exp(axis), sigma=np.exp(axis), log_density=log_density,
    )  # fmt: skip
    for name, line in lines.items():
        ridge = Ridge(grid, name)
        np.testing.assert_allclose(ridge.values, line, atol=1e-3)
        np.testing.assert_allclose(ridge.spread, 0.2, rtol=0.01)
    with pytest.raises(ValueError, match=r"`name` must be one of \('ls', 'eta', 'sigma'\), "
                                         r"but got 'radius'"):  # fmt: skip
        Ridge(grid, "radius")


def test_residual_marginal_is_the_marginal_of_log_theta_minus_the_ridge():
    """log sigma | log r ~ N(-0.3 - 0.8 log r, 0.2): the residual is N(0, 0.2) at every radius,
    so its marginal is that normal, and sharing each cell's mass linearly between two centres
    keeps the mass and the mean exactly."""
    log_r = np.linspace(-1.0, 1.0, 12)
    axis = np.linspace(-3.0, 2.0, 51)  # cells of 0.1
    line = -0.3 - 0.8 * log_r
    log_density = np.broadcast_to(
        np.expand_dims(-0.5 * ((axis[None, :] - line[:, None]) / 0.2) ** 2, (1, 2)), (12, 2, 2, 51)
    )
    grid = dataclasses.replace(
        _grid(np.exp(log_r), np.array([1.0, 2.0]), np.zeros((12, 2))),
        sigma=np.exp(axis), log_density=log_density.copy(),
    )  # fmt: skip
    ridge = Ridge(grid, "sigma")
    centres, p = ridge.residual_marginal()
    np.testing.assert_allclose(np.diff(centres), 0.1, rtol=1e-9)
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and np.all(p >= 0.0)
    residuals = axis[None, :] - ridge.values[:, None]
    assert p @ centres == pytest.approx(np.sum(ridge._joint * residuals), abs=1e-12)
    assert p @ centres == pytest.approx(0.0, abs=1e-3)
    assert np.sqrt(p @ centres**2) == pytest.approx(0.2, rel=0.03)  # + the sharing's spread


@pytest.mark.parametrize("name, slope", [("sigma", -0.8), ("eta", 0.5), ("sigma", 1.7)])
def test_floored_ridge_follows_the_conditional_mean_only_above_its_level(name, slope):
    """log theta | log r ~ N(c + slope log r, 0.2), radius weights rising along the axis: the
    floored ridge is the line where it lies well above the grid posterior's mean of log theta,
    that mean where the line lies well below it, and never below either."""
    log_r = np.linspace(-1.0, 1.0, 12)
    axis = np.linspace(-3.0, 3.0, 61)  # cells of 0.1, half the conditional sd
    line = 0.2 + slope * log_r
    log_weight = 0.7 * log_r  # the radius marginal is not uniform: the level is weighted
    one = -0.5 * ((axis[None, :] - line[:, None]) / 0.2) ** 2 + log_weight[:, None]
    keep = 1 + Ridge.followed.index(name)
    log_density = np.expand_dims(one, tuple(a for a in (1, 2, 3) if a != keep))
    log_density = np.broadcast_to(log_density, (12, 61, 61, 61)).copy()
    grid = dataclasses.replace(
        _grid(np.exp(log_r), np.exp(axis), np.zeros((12, 61))),
        eta=np.exp(axis), sigma=np.exp(axis), log_density=log_density,
    )  # fmt: skip
    ridge, floored = Ridge(grid, name), Ridge(grid, name, floored=True)
    weights = np.exp(log_weight) / np.exp(log_weight).sum()
    level = float(weights @ line)
    assert floored.level == pytest.approx(level, abs=1e-3) and ridge.level == floored.level
    np.testing.assert_allclose(ridge.values, line, atol=1e-3)  # flooring is opt-in
    above, below = line > level + 0.3, line < level - 0.3
    assert above.any() and below.any()
    np.testing.assert_allclose(floored.values[above], line[above], atol=2e-3)
    np.testing.assert_allclose(floored.values[below], level, atol=2e-3)
    assert np.all(floored.values >= np.maximum(line, level) - 1e-3)
    assert np.all(floored.values <= np.maximum(line, level) + Ridge.floor_width * np.log(2) + 1e-3)
    assert np.all(np.diff(floored.values) * np.sign(slope) >= -1e-9)  # monotone like the line


def test_ridge_moves_continuously_when_the_conditional_has_two_modes():
    """Two ls modes (0.55 and 1.0, as on Teddy) whose weights trade places across the radii: the
    conditional mode would jump by 0.45 between neighbouring radii, the mean moves in steps."""
    log_r = np.linspace(3.0, 3.2, 32)
    log_ls = np.linspace(0.2, 1.4, 40)
    weight = 1.0 / (1.0 + np.exp(-(log_r - 3.1) / 0.02))  # of the lower mode
    density = (weight[:, None] * stats.norm.pdf(log_ls, 0.55, 0.05)
               + (1 - weight[:, None]) * stats.norm.pdf(log_ls, 1.0, 0.05))  # fmt: skip
    ridge = Ridge(_grid(np.exp(log_r), np.exp(log_ls), np.log(density)))
    assert ridge.values[0] == pytest.approx(1.0 - 0.45 * weight[0], abs=0.01)
    assert ridge.values[-1] == pytest.approx(1.0 - 0.45 * weight[-1], abs=0.01)
    assert np.max(np.abs(np.diff(ridge.values))) < 0.06  # the mode's jump would be 0.45


def _grid(radius, ls, log_density_radius_ls):
    scales = np.array([0.5, 1.0])
    density = np.broadcast_to(
        log_density_radius_ls[:, :, None, None], (*log_density_radius_ls.shape, 2, 2)
    )
    return dataclasses.replace(
        grid_posterior(np.abs(np.subtract.outer(*[np.linspace(0, 1, 6)] * 2)), np.arange(6),
                       np.sin(np.arange(6.0)), n_radius=2, n_ls=2, n_scale=2),
        radius=radius, ls=ls, eta=scales, sigma=scales, log_density=density.copy(),
    )  # fmt: skip


@pytest.mark.parametrize("log_cap", [0.35, 0.9, 1.2])
def test_capped_map_bound_never_passes_the_cap_and_starts_lie_below_it(log_cap):
    log_axis = np.linspace(-1.0, 1.2, 23)
    p = np.exp(-0.5 * ((log_axis - 0.4) / 0.3) ** 2)
    qmap = QuantileLog.from_grid(log_axis, p / p.sum(), log_cap=log_cap)
    assert qmap.bound <= np.exp(log_cap)  # the two interpolants' mismatch cannot lift it
    assert qmap.inside(1.0) == 1.0  # well below the cap: unchanged
    start = qmap.inside(qmap.bound)
    assert start < qmap.bound and np.isfinite(qmap.to_sampled(start))
