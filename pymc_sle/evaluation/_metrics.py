"""Scores for probabilistic predictions: RMSE, CRPS, PICP and NLPD.

Each score is averaged over test points. Lower is better for RMSE, CRPS and NLPD; PICP should be
close to the nominal level.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = [
    "crps_gaussian",
    "crps_samples",
    "evaluate",
    "nlpd_gaussian",
    "picp",
    "picp_samples",
    "rmse",
    "score_gaussian",
]


def _as_finite(name: str, values, shape=None) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if shape is not None:
        try:
            array = np.broadcast_to(array, shape)
        except ValueError:
            raise ValueError(
                f"`{name}` must have shape {shape} to match `y_true` (or broadcast to it), but has "
                f"{array.shape}"
            ) from None
    if not np.isfinite(array).all():
        raise ValueError(
            f"`{name}` must be finite, but {int((~np.isfinite(array)).sum())} entries are not"
        )
    return array


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"`level` must be in (0, 1), but got {level!r}")


def _as_draws(samples, y_true: np.ndarray) -> np.ndarray:
    draws = np.asarray(samples, dtype=float)
    if draws.ndim < 2 or draws.shape[1:] != y_true.shape:
        raise ValueError(
            f"`samples` must have shape (n_draws, *{y_true.shape}) to match `y_true`, but has "
            f"{draws.shape}"
        )
    return _as_finite("samples", draws)


def rmse(y_true, y_pred) -> float:
    r"""Root mean square error :math:`\sqrt{\frac1n \sum_i (y_i - \hat y_i)^2}`."""
    y_true = _as_finite("y_true", y_true)
    y_pred = _as_finite("y_pred", y_pred, y_true.shape)
    return float(np.sqrt(np.mean(np.square(y_true - y_pred))))


def crps_gaussian(y_true, mean, sd) -> float:
    r"""Mean CRPS of Gaussian predictions, in closed form.

    .. math::

        \mathrm{CRPS}(\mathcal N(\mu, \sigma^2), y) =
        \sigma\left[z\,(2\Phi(z) - 1) + 2\varphi(z) - \tfrac{1}{\sqrt\pi}\right],
        \qquad z = \frac{y - \mu}{\sigma}.

    References
    ----------
    Gneiting and Raftery (2007), "Strictly proper scoring rules, prediction, and estimation",
    Eq. (21).
    """
    y_true = _as_finite("y_true", y_true)
    mean = _as_finite("mean", mean, y_true.shape)
    sd = _positive_sd(sd, y_true.shape)
    z = (y_true - mean) / sd
    crps = sd * (
        z * (2.0 * stats.norm.cdf(z) - 1.0) + 2.0 * stats.norm.pdf(z) - 1.0 / np.sqrt(np.pi)
    )
    return float(np.mean(crps))


def crps_samples(y_true, samples) -> float:
    r"""Mean CRPS of the empirical distribution of predictive draws.

    .. math::

        \mathrm{CRPS}(F_S, y) = \frac1S \sum_s |x_s - y|
        - \frac{1}{2S^2} \sum_{s, t} |x_s - x_t|,

    computed in :math:`O(S \log S)` per point from the sorted draws, using
    :math:`\sum_{s,t} |x_s - x_t| = 2 \sum_i (2i - S - 1)\, x_{(i)}`.

    Parameters
    ----------
    y_true : array_like of shape (n,)
    samples : array_like of shape (S, n)
        Predictive draws, one row per draw.
    """
    y_true = _as_finite("y_true", y_true)
    draws = np.sort(_as_draws(samples, y_true), axis=0)
    n_draws = draws.shape[0]
    accuracy = np.mean(np.abs(draws - y_true), axis=0)
    weights = (2.0 * np.arange(1, n_draws + 1) - n_draws - 1.0).reshape((-1,) + (1,) * y_true.ndim)
    spread = np.sum(weights * draws, axis=0) / n_draws**2
    return float(np.mean(accuracy - spread))


def picp(y_true, lower, upper) -> float:
    """Prediction interval coverage probability: the share of ``lower <= y_true <= upper``."""
    y_true = _as_finite("y_true", y_true)
    lower = _as_finite("lower", lower, y_true.shape)
    upper = _as_finite("upper", upper, y_true.shape)
    if (lower > upper).any():
        raise ValueError(
            f"`lower` must not exceed `upper`, but does at {int((lower > upper).sum())} points"
        )
    return float(np.mean((y_true >= lower) & (y_true <= upper)))


def picp_samples(y_true, samples, level: float = 0.95) -> float:
    """PICP of the central ``level`` interval of predictive draws (empirical quantiles)."""
    _check_level(level)
    y_true = _as_finite("y_true", y_true)
    draws = _as_draws(samples, y_true)
    lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return picp(y_true, lower, upper)


def nlpd_gaussian(y_true, mean, sd) -> float:
    r"""Mean negative log predictive density of Gaussian predictions.

    .. math:: \mathrm{NLPD} = -\frac1n \sum_i \log \mathcal N(y_i \mid \mu_i, \sigma_i^2)
    """
    y_true = _as_finite("y_true", y_true)
    mean = _as_finite("mean", mean, y_true.shape)
    sd = _positive_sd(sd, y_true.shape)
    return float(np.mean(-stats.norm.logpdf(y_true, loc=mean, scale=sd)))


def _positive_sd(sd, shape) -> np.ndarray:
    sd = _as_finite("sd", sd, shape)
    if (sd <= 0).any():
        raise ValueError(f"`sd` must be > 0, but {int((sd <= 0).sum())} entries are not")
    return sd


def score_gaussian(y_true, mean, sd, level: float = 0.95) -> dict[str, float]:
    """RMSE, CRPS, PICP and NLPD of Gaussian predictions ``N(mean, sd**2)``.

    Use this for point-estimate (MAP) GP predictions, whose predictive is Gaussian.
    """
    _check_level(level)
    y_true = _as_finite("y_true", y_true)
    sd = _positive_sd(sd, y_true.shape)
    half_width = special.ndtri((1 + level) / 2) * sd
    mean = _as_finite("mean", mean, y_true.shape)
    return {
        "rmse": rmse(y_true, mean),
        "crps": crps_gaussian(y_true, mean, sd),
        "picp": picp(y_true, mean - half_width, mean + half_width),
        "nlpd": nlpd_gaussian(y_true, mean, sd),
    }


def evaluate(
    idata, y_true, var_name: str, *, level: float = 0.95, group: str = "posterior_predictive"
) -> dict[str, float]:
    """Score the predictive draws of ``var_name`` in an ArviZ ``InferenceData`` against truth.

    Chains and draws are pooled. RMSE uses the predictive mean; CRPS and PICP use the draws
    themselves (:func:`crps_samples`, :func:`picp_samples`); NLPD uses a Gaussian with the draws'
    mean and standard deviation, which is exact for a GP's Gaussian predictive.

    Parameters
    ----------
    idata : arviz.InferenceData
        Holds ``group`` with variable ``var_name`` of shape (chain, draw, n).
    y_true : array_like of shape (n,)
        Held-out truth, in the order of the variable's last dimension.
    var_name : str
        Name of the predictive variable, e.g. the name given to ``gp.conditional``.
    level : float, default 0.95
        Nominal coverage for PICP.
    group : str, default "posterior_predictive"

    Returns
    -------
    dict
        ``{"rmse", "crps", "picp", "nlpd"}`` as floats.
    """
    _check_level(level)
    if group not in idata.groups():
        raise ValueError(f"`idata` has no group {group!r}; it has {idata.groups()}")
    dataset = idata[group]
    if var_name not in dataset:
        raise ValueError(
            f"`var_name` {var_name!r} is not in idata.{group}; it has {list(dataset.data_vars)}"
        )
    values = dataset[var_name].values
    draws = values.reshape((-1, *values.shape[2:]))
    y_true = _as_finite("y_true", y_true)
    draws = _as_draws(draws, y_true)
    if draws.shape[0] < 2:
        raise ValueError(
            f"`idata.{group}[{var_name!r}]` must hold at least 2 draws (chains x draws) for the "
            f"predictive spread behind PICP and NLPD, but holds {draws.shape[0]}"
        )
    mean = draws.mean(axis=0)
    sd = np.maximum(draws.std(axis=0, ddof=1), np.finfo(float).tiny)
    return {
        "rmse": rmse(y_true, mean),
        "crps": crps_samples(y_true, draws),
        "picp": picp_samples(y_true, draws, level),
        "nlpd": nlpd_gaussian(y_true, mean, sd),
    }
