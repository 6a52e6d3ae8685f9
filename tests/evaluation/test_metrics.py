import arviz as az
import numpy as np
import pytest
from scipy import integrate, stats

import pymc_sle as sle


def _crps_by_integration(y, mu, sd):
    """CRPS = integral of (F(x) - 1[x >= y])^2 dx, by quadrature."""
    below = integrate.quad(lambda x: stats.norm.cdf(x, mu, sd) ** 2, -np.inf, y)[0]
    above = integrate.quad(lambda x: stats.norm.sf(x, mu, sd) ** 2, y, np.inf)[0]
    return below + above


@pytest.mark.parametrize("y, mu, sd", [(0.0, 0.0, 1.0), (1.3, -0.4, 0.7), (-2.0, 0.5, 3.0)])
def test_crps_gaussian_matches_definition(y, mu, sd):
    assert sle.crps_gaussian([y], [mu], [sd]) == pytest.approx(
        _crps_by_integration(y, mu, sd), rel=1e-7
    )


def test_crps_samples_matches_brute_force(rng):
    y = rng.normal(size=4)
    draws = rng.normal(size=(7, 4))
    accuracy = np.abs(draws - y).mean(axis=0)
    spread = np.abs(draws[:, None, :] - draws[None, :, :]).mean(axis=(0, 1)) / 2
    assert sle.crps_samples(y, draws) == pytest.approx(np.mean(accuracy - spread), rel=1e-12)


def test_crps_samples_approaches_gaussian(rng):
    y = np.array([0.3, -1.0, 2.0])
    draws = rng.normal(0.1, 0.8, size=(200_000, 3))
    # Monte Carlo error of the empirical CRPS with 2e5 draws is ~1e-3 here.
    assert sle.crps_samples(y, draws) == pytest.approx(sle.crps_gaussian(y, 0.1, 0.8), abs=3e-3)


def test_rmse_picp_nlpd():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    assert sle.rmse(y, y + np.array([1.0, -1.0, 1.0, -1.0])) == 1.0
    assert sle.picp(y, y - 1, np.array([1.0, 0.5, 3.0, 3.0])) == 0.75  # second misses
    expected = -stats.norm.logpdf(y, 0.5, 2.0).mean()
    assert sle.nlpd_gaussian(y, 0.5, 2.0) == pytest.approx(expected, rel=1e-14)


def test_score_gaussian_coverage_is_nominal_for_calibrated_predictions(rng):
    mean = rng.normal(size=100_000)
    y = mean + 0.5 * rng.normal(size=mean.size)
    scores = sle.score_gaussian(y, mean, 0.5, level=0.9)
    assert scores["picp"] == pytest.approx(0.9, abs=0.005)  # binomial sd ~1e-3
    assert scores["rmse"] == pytest.approx(0.5, rel=0.01)


def test_picp_samples_uses_central_interval(rng):
    draws = rng.uniform(0, 1, size=(100_001, 3))
    y = np.array([0.01, 0.5, 0.99])
    assert sle.picp_samples(y, draws, level=0.95) == pytest.approx(1 / 3)


def test_evaluate_scores_posterior_predictive(rng):
    y = rng.normal(size=5)
    draws = y + rng.normal(scale=0.1, size=(2, 300, 5))
    idata = az.from_dict(posterior_predictive={"y_test": draws})
    scores = sle.evaluate(idata, y, "y_test")
    pooled = draws.reshape(-1, 5)
    assert scores["rmse"] == pytest.approx(sle.rmse(y, pooled.mean(0)))
    assert scores["crps"] == pytest.approx(sle.crps_samples(y, pooled))
    assert set(scores) == {"rmse", "crps", "picp", "nlpd"}


def test_evaluate_rejects_missing_variable(rng):
    idata = az.from_dict(posterior_predictive={"y_test": rng.normal(size=(1, 5, 2))})
    with pytest.raises(
        ValueError,
        match=r"`var_name` 'f' is not in idata.posterior_predictive; it has \['y_test'\]",
    ):
        sle.evaluate(idata, np.zeros(2), "f")


def test_evaluate_rejects_missing_group(rng):
    idata = az.from_dict(posterior={"a": rng.normal(size=(1, 5))})
    with pytest.raises(ValueError, match="has no group 'posterior_predictive'"):
        sle.evaluate(idata, np.zeros(2), "y")


def test_rejects_shape_mismatch():
    with pytest.raises(
        ValueError,
        match=r"`y_pred` must have shape \(3,\) to match `y_true` \(or broadcast to it\), but has",
    ):
        sle.rmse(np.zeros(3), np.zeros(2))


def test_rejects_samples_shape_mismatch():
    with pytest.raises(ValueError, match=r"`samples` must have shape \(n_draws, \*\(3,\)\)"):
        sle.crps_samples(np.zeros(3), np.zeros((10, 2)))


def test_rejects_nonpositive_sd():
    with pytest.raises(ValueError, match="`sd` must be > 0, but 1 entries are not"):
        sle.crps_gaussian(np.zeros(2), np.zeros(2), np.array([1.0, 0.0]))


def test_rejects_nan_truth():
    with pytest.raises(ValueError, match="`y_true` must be finite"):
        sle.rmse(np.array([np.nan]), np.zeros(1))


@pytest.mark.parametrize("level", [0.0, 1.0])
def test_rejects_level_out_of_range(level):
    with pytest.raises(ValueError, match=r"`level` must be in \(0, 1\)"):
        sle.picp_samples(np.zeros(2), np.zeros((5, 2)), level=level)


def test_rejects_crossed_interval():
    with pytest.raises(ValueError, match="`lower` must not exceed `upper`"):
        sle.picp(np.zeros(2), np.ones(2), np.zeros(2))


def test_evaluate_with_one_draw_names_the_draws(rng):
    idata = az.from_dict(posterior_predictive={"y_test": rng.normal(size=(1, 1, 2))})
    with pytest.raises(ValueError, match=r"must hold at least 2 draws .* but holds 1"):
        sle.evaluate(idata, np.zeros(2), "y_test")
