r"""Predicting new points as the fitted model sees its training points: each its own landmark.

SLE embeds a point by its distances to the landmarks, by default the training points, so every
training point is its own landmark: its embedding has a coordinate equal to the bump's full
amplitude that no other point shares. That coordinate acts like a nugget in the training
covariance, and the hyperparameters are fitted with it; a new point has no such coordinate, so
``gp.conditional`` predicts it more confidently than the model predicted its own training
points (``docs/how-to/calibration.md``: on the SAXS benchmark, 95 % intervals covering 0.81 of
the test images).

:func:`own_landmark_predictive` predicts each new point :math:`x_*` by the SLE whose landmarks
are the fitted ones plus :math:`x_*` itself -- the same kernel (the paper's Eq. 5-7), so a new
point enters the model exactly as a training point did. With :math:`C'` the training covariance
and :math:`k'_*`, :math:`k'_{**}` the covariances with :math:`x_*` under that kernel, at each
posterior draw :math:`\theta_s`

.. math::

    y_* \mid y, \theta_s \sim \mathcal N\!\bigl(m(x_*) + k'^\top_* C'^{-1}(y - m(X)),\;
    k'_{**} - k'^\top_* C'^{-1} k'_* + \sigma^2\bigr),

and the draws are importance-weighted from the fitted model's posterior to that model's, with
:math:`\log w_s = \log N(y; m, C'_s) - \log N(y; m, C_s)` (Pareto-smoothed, as in
:func:`~pymc_sle.evaluation.loo.exact_loo`'s ``own_landmark="drop"``, whose mirror this is:
there a training point loses its landmark to be predicted as a new one). The predictive of
:math:`y_*` is the weighted mixture of these normals. It costs one Cholesky factorisation of the
``n x n`` training covariance per new point and draw: pass a thinned posterior.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.gp.util import JITTER_DEFAULT
from scipy import stats
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from pymc_sle._pymc_compat import build_marginal_likelihood
from pymc_sle._validation import constant_value
from pymc_sle.evaluation.loo import (
    _NOT_POSITIVE_DEFINITE,
    _check_posterior_and_gp,
    _free_inputs,
    _landmark_kernels,
    _relative_efficiency,
)

__all__ = ["OwnLandmarkPredictive", "own_landmark_predictive"]


@dataclass(frozen=True)
class OwnLandmarkPredictive:
    """The predictive of new points, each its own landmark
    (:func:`~pymc_sle.evaluation.new_points.own_landmark_predictive`).

    Attributes
    ----------
    means, variances : numpy.ndarray of shape (n_draws, n_new)
        The predictive normal of each new point at each posterior draw.
    log_weights : numpy.ndarray of shape (n_draws, n_new)
        Each draw's Pareto-smoothed, normalised log importance weight, per new point.
    pareto_k : numpy.ndarray of shape (n_new,)
        The Pareto shape of each point's weights: reliable below 0.7; 0 where the weights are
        equal (the point already is a landmark, the covariance has no landmark kernel, or every
        draw gives its landmark the same likelihood ratio).
    reff : float
        The relative efficiency of the draws, estimated as ``arviz.loo`` does.
    """

    means: np.ndarray
    variances: np.ndarray
    log_weights: np.ndarray
    pareto_k: np.ndarray
    reff: float

    @property
    def mean(self) -> np.ndarray:
        """The predictive mean of each new point, shape ``(n_new,)``."""
        return np.sum(np.exp(self.log_weights) * self.means, axis=0)

    @property
    def sd(self) -> np.ndarray:
        """The predictive standard deviation of each new point (law of total variance)."""
        second = np.sum(np.exp(self.log_weights) * (self.variances + self.means**2), axis=0)
        return np.sqrt(np.maximum(second - self.mean**2, 0.0))

    def _values(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        if y.shape != self.pareto_k.shape or not np.all(np.isfinite(y)):
            raise ValueError(
                f"`y` must be finite with shape {self.pareto_k.shape} (one value per new "
                f"point), but has shape {y.shape}"
            )
        return y

    def cdf(self, y) -> np.ndarray:
        """The predictive CDF of each new point at its value in ``y`` (the PIT of ``y``)."""
        z = (self._values(y) - self.means) / np.sqrt(self.variances)
        return np.clip(np.sum(np.exp(self.log_weights) * stats.norm.cdf(z), axis=0), 0.0, 1.0)

    def logpdf(self, y) -> np.ndarray:
        """The log predictive density of each new point at its value in ``y``."""
        densities = stats.norm.logpdf(self._values(y), self.means, np.sqrt(self.variances))
        return logsumexp(self.log_weights + densities, axis=0)

    def coverage(self, y, level: float = 0.95) -> float:
        """The share of the values ``y`` inside their point's central ``level`` interval."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"`level` must be in (0, 1), got {level!r}")
        pit, tail = self.cdf(y), (1.0 - level) / 2.0
        return float(np.mean((pit > tail) & (pit < 1.0 - tail)))

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """The central ``level`` interval of each new point, ``(lower, upper)``, to 1e-9 of the
        spread (the mixture's quantiles, by bisection)."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"`level` must be in (0, 1), got {level!r}")
        reach = 9.0 * np.sqrt(self.variances).max(axis=0)
        bounds = self.means.min(axis=0) - reach, self.means.max(axis=0) + reach
        return tuple(self._quantile(q, *bounds) for q in ((1 - level) / 2, (1 + level) / 2))

    def _quantile(self, q: float, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        low, high = low.copy(), high.copy()
        for _ in range(60):  # halves the bracket: 2**-60 of 18 sd
            middle = (low + high) / 2
            below = self.cdf(middle) < q
            low, high = np.where(below, middle, low), np.where(below, high, middle)
        return (low + high) / 2

    def sample(self, n_draws: int, seed=None) -> np.ndarray:
        """``n_draws`` draws of each new point's predictive, shape ``(n_draws, n_new)``:
        a posterior draw picked by the weights, then its normal."""
        if not isinstance(n_draws, int | np.integer) or n_draws < 1:
            raise ValueError(f"`n_draws` must be an integer >= 1, but got {n_draws!r}")
        rng = np.random.default_rng(seed)
        weights = np.exp(self.log_weights)
        weights /= weights.sum(axis=0)
        cumulative = np.cumsum(weights, axis=0)
        picks = (cumulative[None, -1] * rng.random((n_draws, weights.shape[1]))[:, None, :]
                 > cumulative[None]).sum(axis=1)  # fmt: skip
        columns = np.arange(weights.shape[1])
        mean, sd = self.means[picks, columns], np.sqrt(self.variances[picks, columns])
        return mean + sd * rng.standard_normal(mean.shape)


class _OwnLandmarkPrediction:
    """A compiled function of the free variables, the new inputs and the landmark blocks with
    one column more than fitted to ``(mu, var, log N(y; m, C))`` of the new inputs; the fitted
    model is the one whose extra column is ``inf`` (its bump is 0 at every point), a new point's
    own landmark the one whose extra column is the point's distances."""

    def __init__(self, model: pm.Model, gp: pm.gp.Marginal, jitter: float, pred_noise: bool):
        self.kernels = _landmark_kernels(gp.cov_func)
        X = constant_value(gp.X)
        self.extended = [_training_points_are_landmarks(k, X) for k in self.kernels]
        X_new = pt.tensor("X_new", dtype=X.dtype, shape=(None, X.shape[1]))
        blocks = [pt.matrix(f"landmark_block_{j}", dtype=k.landmark_block.dtype)
                  for j, k in enumerate(self.kernels)]  # fmt: skip
        with ExitStack() as stack:
            for kernel, block in zip(self.kernels, blocks, strict=True):
                stack.enter_context(kernel._landmark_block_as(block, kernel.n_landmarks + 1))
            # on a symbolic X: the embedding follows the blocks, not the fitted distances
            X_var = pt.tensor("X", dtype=X.dtype, shape=(None, X.shape[1]))
            mean, cov = build_marginal_likelihood(gp, X_var, gp.sigma, jitter)
            lower = pt.linalg.cholesky(cov)
            v = pt.linalg.solve_triangular(lower, pt.as_tensor(gp.y) - mean, lower=True)
            A = pt.linalg.solve_triangular(lower, gp.cov_func(X_var, X_new), lower=True)
            mu = gp.mean_func(X_new) + A.T @ v
            var = gp.cov_func(X_new, diag=True) - (A**2).sum(axis=0)
            if pred_noise:
                var = var + gp.sigma(X_new, diag=True)
        log_density = -0.5 * (
            X.shape[0] * np.log(2.0 * np.pi) + 2.0 * pt.log(pt.diagonal(lower)).sum() + v @ v
        )
        outputs = [mu, var, log_density]
        inputs = _free_inputs(model, outputs)
        self.names = [rv.name for rv in inputs]
        self._function = pm.pytensorf.compile(
            [*inputs, X_var, X_new, *blocks], outputs, allow_input_downcast=True
        )
        self.X = X
        fitted = [np.asarray(k.landmark_block.data) for k in self.kernels]
        self.fitted_blocks = [np.column_stack([b, np.full(b.shape[0], np.inf, b.dtype)])
                              for b in fitted]  # fmt: skip

    def __call__(self, values, X_new: np.ndarray, blocks: list[np.ndarray]):
        return self._function(*values, self.X, X_new, *blocks)

    def own_blocks(self, row: np.ndarray) -> list[np.ndarray] | None:
        """The landmark blocks whose extra column is the new point ``row``'s (one row of
        ``X_new``) in every kernel whose training points are its landmarks and the point is not
        one already; ``None`` if in none."""
        blocks, added = [], False
        for kernel, block, extended in zip(self.kernels, self.fitted_blocks, self.extended,
                                           strict=True):  # fmt: skip
            point = int(row[int(kernel.active_dims[0])])
            if point in kernel.landmarks or not extended:
                blocks.append(block)
                continue
            own = block.copy()
            own[:, -1] = kernel.distances.values[:, point]
            blocks.append(own)
            added = True
        return blocks if added else None


def _training_points_are_landmarks(kernel, X: np.ndarray) -> bool:
    """Whether every training point of ``X`` is one of ``kernel``'s landmarks (``True``) or none
    is (``False``); some but not all is an error: a new point cannot then enter the model as the
    training points did."""
    rows = X[:, int(kernel.active_dims[0])].astype(np.int64)
    among = np.isin(rows, kernel.landmarks)
    if among.any() and not among.all():
        raise ValueError(
            "`own_landmark_predictive` predicts a new point as the training points were fitted: "
            f"each its own landmark, or none; but {int(among.sum())} of the {among.size} "
            f"training points are landmarks of {kernel!r}. Predict with gp.conditional"
        )
    return bool(among.all())


def _check_extendable(kernel) -> None:
    """A new point can join ``kernel``'s landmarks: index mode on a square distance matrix (the
    point's column holds its distances to every point) and one bump for every landmark."""
    if kernel.feature_mode or kernel.distances.n_points != kernel.distances.n_columns:
        raise ValueError(
            "`own_landmark_predictive` needs every landmark kernel on a square distance matrix "
            "over every point (index mode; a new point's column is its distances to the other "
            f"points), but {kernel!r} takes "
            + ("distances as features" if kernel.feature_mode else
               f"a {kernel.distances.n_points} x {kernel.distances.n_columns} block")
        )  # fmt: skip
    if getattr(kernel, "embedding", None) == "sparse":
        raise ValueError(
            "`own_landmark_predictive` evaluates the kernel on other landmark sets, which "
            f"embedding='sparse' (a pattern fixed at the fitted landmarks) cannot; {kernel!r} "
            "needs embedding='auto' or 'dense'"
        )
    per_landmark = [name for name in ("radius", "amplitude", "shape")
                    if getattr(kernel, name, pt.constant(0.0)).ndim > 0]  # fmt: skip
    if per_landmark:
        raise ValueError(
            "`own_landmark_predictive` gives a new landmark the kernel's bump, so the bump "
            f"parameters must be scalars, but {per_landmark} of {kernel!r} vary per landmark"
        )


def own_landmark_predictive(
    idata: az.InferenceData,
    gp: pm.gp.Marginal,
    X_new,
    *,
    model: pm.Model | None = None,
    jitter: float = JITTER_DEFAULT,
    pred_noise: bool = True,
) -> OwnLandmarkPredictive:
    """The predictive of new points with each its own landmark, as every training point is.

    The formulas are in :mod:`pymc_sle.evaluation.new_points`. A covariance without landmark
    kernels (a Matérn), an SLE whose landmarks are apart from the training points (no point is
    its own landmark) and a new point that already is a landmark keep the fitted covariance:
    their predictive is ``gp.conditional``'s marginal, averaged over the draws, so one call
    serves SLE and its baselines.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of ``model`` (``pm.sample`` or :func:`pymc_sle.inference.sample_basins`);
        thin it first, e.g. ``idata.sel(draw=slice(None, None, 10))``: the cost is one Cholesky
        factorisation per new point and draw.
    gp : pymc.gp.Marginal
        The GP whose ``marginal_likelihood`` was given the training data. Every landmark kernel
        of its covariance must be in index mode on a square distance matrix over every point,
        with scalar bump parameters, and have every training point, or none, among its
        landmarks.
    X_new : array_like of shape (n_new, input_dim)
        The new points' inputs: row numbers into the distance matrix, as for ``gp.conditional``.
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    jitter : float
        Added to the training covariance's diagonal, as in ``gp.marginal_likelihood``.
    pred_noise : bool, default True
        Predict noisy observations (``False``: the latent function).

    Returns
    -------
    OwnLandmarkPredictive

    Examples
    --------
    >>> from pymc_sle.evaluation.new_points import own_landmark_predictive
    >>> new = own_landmark_predictive(idata.sel(draw=slice(None, None, 10)), gp, X_test,
    ...                               model=model)  # doctest: +SKIP
    >>> lower, upper = new.interval(0.95)  # doctest: +SKIP
    >>> new.coverage(y_test), new.logpdf(y_test).mean()  # doctest: +SKIP
    """
    model = pm.modelcontext(model)
    _check_posterior_and_gp(idata, gp)
    y = constant_value(gp.y)
    if y is None or y.ndim != 1:
        raise ValueError(
            "`gp` must have observed one output of shape (n,), but its `y` has shape "
            f"{None if y is None else y.shape}"
        )
    for kernel in _landmark_kernels(gp.cov_func):
        _check_extendable(kernel)
        _training_points_are_landmarks(kernel, constant_value(gp.X))
    X_new = np.asarray(X_new)
    X = constant_value(gp.X)
    if X_new.ndim != 2 or X_new.shape[1] != X.shape[1] or X_new.shape[0] == 0:
        raise ValueError(
            f"`X_new` must have shape (n_new >= 1, {X.shape[1]}), like the training inputs, but "
            f"has shape {X_new.shape}"
        )
    if np.issubdtype(X.dtype, np.integer) and not np.array_equal(X_new, np.round(X_new)):
        raise ValueError(
            "`X_new` must hold row numbers (integers), like the training inputs, but holds "
            f"{X_new[X_new != np.round(X_new)][:3].tolist()}"
        )
    prediction = _OwnLandmarkPrediction(model, gp, jitter, pred_noise)
    missing = [name for name in prediction.names if name not in idata.posterior]
    if missing:
        raise ValueError(f"`idata.posterior` must hold the model's variables {missing}")
    posterior = idata.posterior
    n_draws = posterior.sizes["chain"] * posterior.sizes["draw"]
    values = [posterior[name].values.reshape(n_draws, *posterior[name].shape[2:])
              for name in prediction.names]  # fmt: skip
    means, variances, log_ratio = np.zeros((3, n_draws, X_new.shape[0]))
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            fitted = [prediction([v[s] for v in values], X_new, prediction.fitted_blocks)
                      for s in range(n_draws)]  # fmt: skip
            means[:], variances[:] = (np.array([f[k] for f in fitted]) for k in (0, 1))
            for j, row in enumerate(X_new):
                blocks = prediction.own_blocks(row)
                if blocks is None:
                    continue
                for s in range(n_draws):
                    mu, var, log_density = prediction([v[s] for v in values], row[None], blocks)
                    means[s, j], variances[s, j] = mu[0], var[0]
                    log_ratio[s, j] = log_density - fitted[s][2]
    except np.linalg.LinAlgError as error:
        raise ValueError(_NOT_POSITIVE_DEFINITE) from error
    if not np.all(variances > 0.0):
        raise ValueError(_NOT_POSITIVE_DEFINITE)
    reff = _relative_efficiency(posterior[prediction.names], n_draws)
    log_weights = np.full(log_ratio.shape, -np.log(n_draws))
    pareto_k = np.zeros(X_new.shape[0])
    weighted = np.flatnonzero(np.ptp(log_ratio, axis=0) > 0.0)  # equal ratios: equal weights
    if weighted.size:
        smoothed, k = az.psislw(log_ratio[:, weighted].T, reff=reff)
        log_weights[:, weighted], pareto_k[weighted] = smoothed.T, k
    return OwnLandmarkPredictive(means, variances, log_weights, pareto_k, reff)
