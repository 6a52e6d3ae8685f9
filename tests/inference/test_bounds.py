"""The radius and length-scale bounds, LogNormal priors between bounds, and the training data
they read, validated once."""

import numpy as np
import pytest
from scipy import stats

from pymc_sle import (
    lognormal_between,
    radius_bounds,
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
