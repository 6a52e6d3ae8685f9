"""The Matérn-on-a-distance baseline."""

import numpy as np
import pytest

from pymc_sle.baselines import DistanceCovariance


@pytest.fixture
def line():
    x = np.array([0.0, 0.3, 0.7, 1.5])
    return np.abs(x[:, None] - x[None, :])


@pytest.mark.parametrize(
    ("inner", "h"),
    [
        ("matern12", lambda s: np.exp(-s)),
        ("matern32", lambda s: (1 + np.sqrt(3) * s) * np.exp(-np.sqrt(3) * s)),
        ("rbf", lambda s: np.exp(-0.5 * s**2)),
    ],
)
def test_distance_covariance_applies_the_kernel_to_the_distance(line, inner, h):
    cov = DistanceCovariance(line, ls=0.4, inner=inner)
    rows, cols = np.array([[0], [2], [3]]), np.array([[1], [3]])
    np.testing.assert_allclose(cov(rows, cols).eval(), h(line[[0, 2, 3]][:, [1, 3]] / 0.4))
    np.testing.assert_allclose(cov(rows, diag=True).eval(), np.ones(3))
    np.testing.assert_allclose(np.diag(cov(rows).eval()), np.ones(3))


def test_distance_covariance_validates(line):
    with pytest.raises(ValueError, match="`distances` must be square"):
        DistanceCovariance(line[:, :3], ls=1.0)
    with pytest.raises(ValueError, match="`ls`"):
        DistanceCovariance(line, ls=-1.0)
    with pytest.raises(ValueError, match="`inner` must be one of"):
        DistanceCovariance(line, ls=1.0, inner="cosine")
