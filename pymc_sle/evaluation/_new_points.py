r"""Predicting new points as the fitted model sees its training points: each its own landmark.

SLE embeds a point by its distances to the landmarks, by default the training points, so every
training point is its own landmark: its embedding has a coordinate equal to the bump's full
amplitude that no other point shares. That coordinate acts like a nugget in the training
covariance, and the hyperparameters are fitted with it; a new point has no such coordinate, so
``gp.conditional`` predicts it more confidently than the model predicted its own training
points (:doc:`/how-to/calibration` measures how much).

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
:func:`~pymc_sle.exact_loo`'s ``own_landmark="drop"``, whose mirror this is:
there a training point loses its landmark to be predicted as a new one). The predictive of
:math:`y_*` is the weighted mixture of these normals. A new landmark changes only the rows and
columns of the training covariance whose points its bump reaches: where those are ``k`` of the
``n``, the fitted factorisation is updated at rank ``2k`` (``O(n^2 k)``; see
``_OwnLandmarkPrediction.predict``), where they are most, :math:`C'` is factorised anew
(``O(n^3)``). Either is per new point and draw: pass a thinned posterior. The points of a
draw are independent, so ``n_jobs`` threads share them (the factorisation is compiled by numba
without Python's lock), and they go through in blocks of ``_POINTS_PER_BLOCK``, so the memory
does not grow with their number.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.gp.cov import Covariance
from pymc.gp.util import JITTER_DEFAULT
from scipy import linalg, stats
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from pymc_sle._pymc_compat import build_marginal_likelihood
from pymc_sle._validation import constant_value, thread_count
from pymc_sle.evaluation._landmark_update import low_rank_change, refactorised_change
from pymc_sle.evaluation._landmarks import (
    check_extendable,
    landmark_kernels,
    new_landmark_distances,
    on_squared_distances,
)
from pymc_sle.evaluation._posterior import (
    NOT_POSITIVE_DEFINITE,
    check_posterior_and_gp,
    free_inputs,
    relative_efficiency,
)

__all__ = ["OwnLandmarkPredictive", "own_landmark_predictive"]


@dataclass(frozen=True)
class OwnLandmarkPredictive:
    """The predictive of new points, each its own landmark
    (:func:`~pymc_sle.own_landmark_predictive`).

    Attributes
    ----------
    means, variances : numpy.ndarray of shape (n_draws, n_new)
        The predictive normal of each new point at each posterior draw.
    log_weights : numpy.ndarray of shape (n_draws, n_new)
        Each draw's Pareto-smoothed, normalised log importance weight, per new point.
    pareto_k : numpy.ndarray of shape (n_new,)
        The Pareto shape of each point's weights: reliable below 0.7; 0 where the weights are
        equal (the point already is a landmark, the covariance has no landmark kernel, or every
        draw gives its landmark the same likelihood ratio); ``inf`` where ArviZ finds fewer than
        5 draws in the tail to fit (e.g. the point's bump reaches training points at a few
        draws only, and the others' ratios are all 1): those weights are the raw ratios.
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


#: A new point whose bump reaches ``k`` of the ``n`` training points changes ``k`` rows and
#: columns of the training covariance: a rank-``2k`` update of the fitted factorisation (Woodbury)
#: when ``2k <= n * _LOW_RANK_SHARE``, a new factorisation otherwise (the cheaper of the two).
_LOW_RANK_SHARE = 0.5
#: Rows of covariance updates built per call: bounds the memory of one call to a few
#: ``_ROWS_PER_CALL x n`` matrices.
_ROWS_PER_CALL = 4096
#: New points predicted together: bounds the memory of their covariances with the training
#: points and of their landmarks' bumps to a few ``n x _POINTS_PER_BLOCK`` matrices.
_POINTS_PER_BLOCK = 2048


class _OwnLandmarkPrediction:
    r"""The own-landmark predictive at one posterior draw, from two compiled functions of the
    free variables.

    ``_fitted`` gives the fitted model's training covariance :math:`C` and mean, each landmark
    kernel's squared embedding distances between the training points, the bump
    :math:`\delta_{ij} = b(d(x_i, x_{*j}))` that each new point's landmark gives training point
    :math:`i` (0 where the point gets no landmark), and the covariances :math:`k'_*`,
    :math:`k'_{**}` of the new points under their own landmarks: a landmark adds one coordinate to
    the embedding, so squared embedding distances grow by the squared difference of that
    coordinate, :math:`s'_{ij} = s_{ij} + (\delta_i - \delta_j)^2`, and a new point's own
    coordinate is the bump at distance 0. ``_updates`` gives the rows :math:`K` of
    :math:`C' - C` for the training points a new point's bump reaches -- the only rows and
    columns its landmark changes, as the difference of two covariances built alike (so that
    terms the landmarks do not touch, a white-noise term in the covariance included, cancel).
    The algebra on them is in :meth:`predict`. The new points are inputs of both functions, so
    one compilation serves every block of them (:meth:`points`)."""

    def __init__(self, model, gp, jitter: float, pred_noise: bool):
        self.kernels = landmark_kernels(gp.cov_func)
        X = constant_value(gp.X)
        n, count = X.shape[0], len(self.kernels)
        X_new = pt.tensor("X_new", dtype=X.dtype, shape=(None, X.shape[1]))
        to_new = [pt.matrix(f"to_new_{j}") for j in range(count)]
        own = [pt.vector(f"own_{j}") for j in range(count)]
        mean, cov = build_marginal_likelihood(gp, gp.X, gp.sigma, jitter)
        train_sq = [k.square_embedding_distance(gp.X) for k in self.kernels]
        delta = [k._embed(d) for k, d in zip(self.kernels, to_new, strict=True)]
        star_sq = [k.square_embedding_distance(X_new, gp.X)
                   + (k._embed(o[None, :])[0][:, None] - d.T) ** 2
                   for k, o, d in zip(self.kernels, own, delta, strict=True)]  # fmt: skip
        (k_star,) = on_squared_distances([gp.cov_func(X_new, gp.X)], self.kernels, star_sq)
        k_star_star = gp.cov_func(X_new, diag=True)
        if pred_noise:
            k_star_star = k_star_star + gp.sigma(X_new, diag=True)
        outputs = [cov, mean, gp.mean_func(X_new), k_star, k_star_star, *train_sq, *delta]
        inputs = free_inputs(model, outputs)
        self.names = [rv.name for rv in inputs]
        self._fitted = pm.pytensorf.compile([*inputs, X_new, *to_new, *own], outputs,
                                            allow_input_downcast=True)  # fmt: skip

        X_rows = pt.tensor("X_rows", dtype=X.dtype, shape=(None, X.shape[1]))
        rows, points = pt.lvector("rows"), pt.lvector("points")
        train_sq_in = [pt.matrix(f"train_sq_{j}") for j in range(count)]
        delta_in = [pt.matrix(f"delta_{j}") for j in range(count)]
        fit_sq = [s[rows] for s in train_sq_in]
        own_sq = [f + (d[rows, points][:, None] - d[:, points].T) ** 2
                  for f, d in zip(fit_sq, delta_in, strict=True)]  # fmt: skip
        rows_cov = gp.cov_func(X_rows, gp.X)
        (own_rows,) = on_squared_distances([rows_cov], self.kernels, own_sq)
        (fit_rows,) = on_squared_distances([rows_cov], self.kernels, fit_sq)
        self._updates = pm.pytensorf.compile(
            [*inputs, X_rows, rows, points, *train_sq_in, *delta_in], own_rows - fit_rows,
            allow_input_downcast=True, on_unused_input="ignore",
        )  # fmt: skip
        self.X, self.y, self.n = X, np.asarray(constant_value(gp.y), float), n

    def points(self, X_new: np.ndarray) -> tuple:
        """What :meth:`predict` reads of a block of new points: their inputs and, per landmark
        kernel, the distances to their landmarks (:func:`new_landmark_distances`)."""
        distances = [new_landmark_distances(k, self.X, X_new) for k in self.kernels]
        return X_new, [d[0] for d in distances], [d[1] for d in distances]

    def predict(self, values, points, map_=map) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""``(means, variances, log_ratios)`` of a block of new points (:meth:`points`) at one
        draw's ``values``; each point's change is computed by ``map_`` (a thread pool's ``map``
        runs points in parallel).

        With :math:`C = LL^\top`, :math:`\hat a = L^{-1}(y - m)`, :math:`\hat w = L^{-1}k'_*`
        and :math:`E = C' - C`, non-zero only in the rows and columns :math:`K` the point's bump
        reaches: :math:`E = UWU^\top` with :math:`U = [E_{:K}, I_{:K}]` and
        :math:`W^{-1} = [[E_{KK}, I], [I, 0]]`. With :math:`\hat U = L^{-1}U`,
        :math:`M = W^{-1} + \hat U^\top \hat U`, :math:`b = \hat U^\top \hat a` and
        :math:`c = \hat U^\top \hat w` (Woodbury and the determinant lemma):

        .. math::

            \mu = m_* + \hat w^\top \hat a - c^\top M^{-1} b, \quad
            \sigma^2 = k'_{**} - \hat w^\top \hat w + c^\top M^{-1} c, \quad
            \log\frac{N(y; m, C')}{N(y; m, C)} = -\tfrac12 \log\lvert\det M\rvert
            + \tfrac12 b^\top M^{-1} b,

        at :math:`O(n^2 k)` a point; where :math:`2k` exceeds ``_LOW_RANK_SHARE`` of the training
        points, :math:`C'` is factorised instead."""
        X_new, to_new, own = points
        C, mean, mean_new, k_star, k_star_star, *rest = self._fitted(*values, X_new, *to_new, *own)
        train_sq, delta = rest[: len(self.kernels)], rest[len(self.kernels) :]
        lower = linalg.cholesky(C, lower=True, check_finite=False)
        residual = self.y - mean
        a_hat = linalg.solve_triangular(lower, residual, lower=True, check_finite=False)
        inverse = linalg.solve_triangular(lower, np.eye(self.n), lower=True, check_finite=False)
        w_hat = inverse @ k_star.T
        means = mean_new + w_hat.T @ a_hat
        variances = k_star_star - np.einsum("ij,ij->j", w_hat, w_hat)
        log_ratios = np.zeros(X_new.shape[0])
        reach = np.zeros((self.n, X_new.shape[0]), dtype=bool)
        for d in delta:
            reach |= d != 0.0
        reached = np.flatnonzero(reach.any(axis=0))
        fitted_log_det = 2.0 * float(np.sum(np.log(np.diagonal(lower))))

        def change(item):
            j, K, E = item
            low_rank = 2 * K.size <= _LOW_RANK_SHARE * self.n
            found = low_rank_change(E, K, inverse, a_hat, w_hat[:, j]) if low_rank else None
            if found is None:
                found = refactorised_change(C, E, K, residual, k_star[j], fitted_log_det,
                                             a_hat, w_hat[:, j])  # fmt: skip
            return j, found

        for chunk in _chunks(reach[:, reached].sum(axis=0), _ROWS_PER_CALL):
            points = reached[chunk]
            rows = [np.flatnonzero(reach[:, j]) for j in points]
            updates = self._updates(
                *values, self.X[np.concatenate(rows)], np.concatenate(rows),
                np.repeat(points, [r.size for r in rows]), *train_sq, *delta,
            )  # fmt: skip
            starts = np.cumsum([0, *(K.size for K in rows)])
            items = [(j, K, updates[starts[i] : starts[i + 1]])
                     for i, (j, K) in enumerate(zip(points, rows, strict=True))]  # fmt: skip
            for j, (mean_change, variance_change, log_ratio) in map_(change, items):
                means[j] += mean_change
                variances[j] += variance_change
                log_ratios[j] = log_ratio
        return means, variances, log_ratios


def _chunks(sizes: np.ndarray, limit: int) -> list[np.ndarray]:
    """Consecutive positions of ``sizes`` in groups whose sizes sum to at most ``limit`` (or a
    single position, if it alone exceeds it)."""
    groups, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if total + size > limit and i > start:
            groups.append(np.arange(start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        groups.append(np.arange(start, len(sizes)))
    return groups


def own_landmark_predictive(
    idata: az.InferenceData,
    gp: pm.gp.Marginal,
    X_new,
    *,
    model: pm.Model | None = None,
    jitter: float = JITTER_DEFAULT,
    pred_noise: bool = True,
    n_jobs: int = 1,
) -> OwnLandmarkPredictive:
    """The predictive of new points with each its own landmark, as every training point is.

    The formulas are in ``pymc_sle.evaluation._new_points``. A covariance without landmark
    kernels (a Matérn), an SLE whose landmarks are apart from the training points (no point is
    its own landmark) and a new point that already is a landmark keep the fitted covariance:
    their predictive is ``gp.conditional``'s marginal, averaged over the draws, so one call
    serves SLE and its baselines.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of ``model`` (``pm.sample`` or :func:`pymc_sle.sample_basins`);
        thin it first, e.g. ``idata.sel(draw=slice(None, None, 10))``: the cost is, per new
        point and draw, a rank-``2k`` update of the training covariance's factorisation
        (``O(n^2 k)``) where the point's bump reaches ``k`` training points, a new one
        (``O(n^3)``) where it reaches most of them.
    gp : pymc.gp.Marginal
        The GP whose ``marginal_likelihood`` was given the training data. Every landmark kernel
        of its covariance must be in index mode, with scalar bump parameters, and have every
        training point, or none, among its landmarks; the noise must hold none. A new point's
        distances to the training points are its column of the distance matrix, or, past the
        columns of a rectangular block (whose columns are its first rows, as for a
        ``(points, training points)`` block), its row, which needs a symmetric distance.
    X_new : array_like of shape (n_new, input_dim)
        The new points' inputs: row numbers into the distance matrix, as for ``gp.conditional``.
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    jitter : float
        Added to the training covariance's diagonal, as in ``gp.marginal_likelihood``.
    pred_noise : bool, default True
        Predict noisy observations (``False``: the latent function).
    n_jobs : int, default 1
        Threads that update or factorise the training covariance for several new points at
        once, each with one BLAS thread (``-1``: one per CPU). The results do not depend on it.

    Returns
    -------
    OwnLandmarkPredictive

    Examples
    --------
    >>> from pymc_sle import own_landmark_predictive
    >>> new = own_landmark_predictive(idata.sel(draw=slice(None, None, 10)), gp, X_test,
    ...                               model=model)  # doctest: +SKIP
    >>> lower, upper = new.interval(0.95)  # doctest: +SKIP
    >>> new.coverage(y_test), new.logpdf(y_test).mean()  # doctest: +SKIP
    """
    model = pm.modelcontext(model)
    threads = thread_count(n_jobs)
    check_posterior_and_gp(idata, gp)
    y = constant_value(gp.y)
    if y is None or y.ndim != 1:
        raise ValueError(
            "`gp` must have observed one output of shape (n,), but its `y` has shape "
            f"{None if y is None else y.shape}"
        )
    kernels = landmark_kernels(gp.cov_func)
    for kernel in kernels:  # whether the training points are landmarks: at build
        check_extendable(kernel)
    if isinstance(gp.sigma, Covariance) and landmark_kernels(gp.sigma):
        raise ValueError(
            "`own_landmark_predictive` adds landmarks to the covariance, not to the noise, but "
            f"the noise of `gp` holds {landmark_kernels(gp.sigma)}"
        )
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
    for kernel in kernels:
        rows = X_new[:, int(kernel.active_dims[0])]
        outside = rows[(rows < 0) | (rows >= kernel.distances.n_points)]
        if outside.size:
            raise ValueError(
                f"`X_new` must index the {kernel.distances.n_points} rows of the distance matrix "
                f"(0 to {kernel.distances.n_points - 1}), but holds {outside[:3].tolist()}"
            )
    prediction = _OwnLandmarkPrediction(model, gp, jitter, pred_noise)
    blocks = np.array_split(np.arange(len(X_new)), -(-len(X_new) // _POINTS_PER_BLOCK))
    missing = [name for name in prediction.names if name not in idata.posterior]
    if missing:
        raise ValueError(f"`idata.posterior` must hold the model's variables {missing}")
    posterior = idata.posterior
    n_draws = posterior.sizes["chain"] * posterior.sizes["draw"]
    values = [posterior[name].values.reshape(n_draws, *posterior[name].shape[2:])
              for name in prediction.names]  # fmt: skip
    means, variances, log_ratio = np.zeros((3, n_draws, X_new.shape[0]))
    try:
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
            map_ = map if threads == 1 else pool.map
            for columns in blocks:  # the distances of one block at a time, for every draw
                points = prediction.points(X_new[columns])
                for s in range(n_draws):
                    found = prediction.predict([v[s] for v in values], points, map_)
                    means[s, columns], variances[s, columns], log_ratio[s, columns] = found
    except np.linalg.LinAlgError as error:
        raise ValueError(NOT_POSITIVE_DEFINITE) from error
    if not np.all(variances > 0.0):
        raise ValueError(NOT_POSITIVE_DEFINITE)
    reff = relative_efficiency(posterior[prediction.names], n_draws)
    log_weights = np.full(log_ratio.shape, -np.log(n_draws))
    pareto_k = np.zeros(X_new.shape[0])
    weighted = np.flatnonzero(np.ptp(log_ratio, axis=0) > 0.0)  # equal ratios: equal weights
    if weighted.size:
        smoothed, k = az.psislw(log_ratio[:, weighted].T, reff=reff)
        log_weights[:, weighted], pareto_k[weighted] = smoothed.T, k
    return OwnLandmarkPredictive(means, variances, log_weights, pareto_k, reff)
