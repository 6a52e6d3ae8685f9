r"""Exact leave-one-out predictive checks of a marginal GP, per posterior draw.

A marginal GP's observations form one multivariate normal, so the pointwise log-likelihood that
``arviz.loo`` needs does not exist: ``pm.compute_log_likelihood`` gives one joint value per draw,
and ArviZ would treat the whole data set as one observation. For a Gaussian likelihood the
leave-one-out predictive given the hyperparameters :math:`\theta` is closed-form (Rasmussen and
Williams 2006, Sec. 5.4.2): with :math:`C = K(X, X) + \Sigma_{\text{noise}}` (jittered as the
likelihood builds it), :math:`g = C^{-1}(y - m(X))` and :math:`\bar c_i = [C^{-1}]_{ii}`,

.. math::

    y_i \mid y_{-i}, \theta \sim \mathcal N\!\left(y_i - g_i / \bar c_i,\; 1 / \bar c_i\right),
    \qquad
    \log p(y_i \mid y_{-i}, \theta) = -\tfrac12 \log 2\pi + \tfrac12 \log \bar c_i
    - \tfrac12\, g_i^2 / \bar c_i .

Bürkner, Gabry and Vehtari (2021, "Efficient leave-one-out cross-validation for Bayesian
non-factorized normal and Student-t models", *Computational Statistics* 36) show that these
conditional densities, used as the pointwise log-likelihood, make PSIS-LOO exact for such
models up to the importance sampling over :math:`\theta`. :func:`exact_loo` computes them at
every posterior draw and stores them in ``idata.log_likelihood``, so ``arviz.loo`` and
``arviz.compare`` work on a GP, and returns the LOO probability integral transform (PIT) of each
observation, :math:`\sum_s w_{is}\,\Phi\big(g_{is} / \sqrt{\bar c_{is}}\big)` with the
Pareto-smoothed weights :math:`w_{is}`: uniform on [0, 1] for a calibrated model, so the share
of PIT values inside :math:`[\alpha/2, 1 - \alpha/2]` estimates the coverage of the central
:math:`1 - \alpha` predictive interval without a test set.

With an SLE whose landmarks include the training points, a held-out point keeps its own
landmark in these densities, which a new point does not have; ``own_landmark="drop"`` predicts
each point as a new one instead (the model without its landmark, importance-weighted to it:
see :func:`exact_loo`).
"""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pymc.gp.util import JITTER_DEFAULT
from scipy import stats
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from pymc_sle._pymc_compat import build_marginal_likelihood, value_variable
from pymc_sle._validation import constant_value
from pymc_sle.evaluation._landmarks import landmark_kernels, on_landmark_blocks, own_columns
from pymc_sle.evaluation._posterior import (
    NOT_POSITIVE_DEFINITE,
    check_posterior_and_gp,
    free_inputs,
    relative_efficiency,
)

__all__ = ["ExactLOO", "exact_loo"]


@dataclass(frozen=True)
class ExactLOO:
    """The leave-one-out predictive checks of :func:`~pymc_sle.exact_loo`.

    Attributes
    ----------
    log_likelihood : xarray.DataArray
        :math:`\\log p(y_i \\mid y_{-i}, \\theta)` with dims ``(chain, draw, <var_name>_dim_0)``,
        as stored in ``idata.log_likelihood`` (``own_landmark="keep"``); with
        ``own_landmark="drop"``, the same under the covariance without the point's own
        landmarks, not stored.
    pit : numpy.ndarray of shape (n,)
        The LOO probability integral transform of each observation.
    pareto_k : numpy.ndarray of shape (n,)
        The Pareto shape of each observation's importance weights: the PIT (and ``arviz.loo``)
        are reliable where it is below 0.7.
    elpd_loo : numpy.ndarray of shape (n,)
        Each observation's PSIS-LOO expected log predictive density,
        :math:`\\log \\sum_s w_{is}\\, p(y_i \\mid y_{-i}, \\theta_s)`: ``arviz.loo``'s
        ``loo_i`` (its ``elpd_loo`` is the sum), for spotting the observations the model
        predicts worst.
    reff : float
        The relative efficiency of the draws that the Pareto smoothing uses, estimated as
        ``arviz.loo`` does (mean ESS over the sample size; 1 for one chain or fewer than 4
        draws per chain), here from the posterior variables the GP depends on.
    """

    log_likelihood: xr.DataArray
    pit: np.ndarray
    pareto_k: np.ndarray
    elpd_loo: np.ndarray
    reff: float

    def coverage(self, level: float = 0.95) -> float:
        """The share of observations inside their central ``level`` LOO predictive interval."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"`level` must be in (0, 1), got {level!r}")
        tail = (1.0 - level) / 2.0
        return float(np.mean((self.pit > tail) & (self.pit < 1.0 - tail)))


def _observed_data(model: pm.Model, var_name: str) -> np.ndarray:
    """The observations of ``model``'s observed variable ``var_name`` (1-D)."""
    names = [rv.name for rv in model.observed_RVs]
    if var_name not in names:
        raise ValueError(
            f"`var_name` must name an observed variable of the model ({names}), got {var_name!r}"
        )
    y = constant_value(value_variable(model, model[var_name]))
    if y is None or y.ndim != 1:
        raise ValueError(
            f"`var_name` {var_name!r} must hold one output of shape (n,) for an exact LOO, "
            f"but its observations have shape {None if y is None else y.shape}"
        )
    return y


def _loo_function(model: pm.Model, gp: pm.gp.Marginal, jitter: float):
    """A compiled function from the free variables the GP depends on to ``(g, cbar)``, and their
    names in the order it takes them."""
    mean, cov = build_marginal_likelihood(gp, gp.X, gp.sigma, jitter)
    precision = pt.linalg.inv(cov)
    g = precision @ (pt.as_tensor(gp.y) - mean)
    outputs = [g, pt.diagonal(precision)]
    inputs = free_inputs(model, outputs)
    function = pm.pytensorf.compile(inputs, outputs, allow_input_downcast=True)
    return function, [rv.name for rv in inputs]


class _DroppedOwnLandmarks:
    """The LOO predictive of each observation with its own landmark dropped: a compiled
    function of the free variables, the landmark blocks and observations ``rows``, to
    ``(g[rows], cbar[rows], log N(y; m, C'))`` with ``C'`` the covariance of those blocks. An
    observation's own landmark (``own_columns``; one per landmark kernel) is dropped by setting
    its column to ``inf``: its bump vanishes for every point. Observations without one
    (landmarks apart from the training points) share one call with the blocks as they are."""

    def __init__(self, model: pm.Model, gp: pm.gp.Marginal, jitter: float):
        kernels = landmark_kernels(gp.cov_func)
        features = [repr(k) for k in kernels if k.landmark_block is None]
        if features:
            raise ValueError(
                "`own_landmark='drop'` needs every landmark kernel of `gp`'s covariance on a "
                "distance matrix (index mode, X holding row numbers), but these take distances "
                f"to the landmarks as features: {features}"
            )
        X = constant_value(gp.X)
        X_var = pt.tensor("X", dtype=X.dtype, shape=(None, X.shape[1]))
        blocks = [k.landmark_block.type(f"landmark_block_{j}") for j, k in enumerate(kernels)]
        mean, cov = on_landmark_blocks(
            build_marginal_likelihood(gp, X_var, gp.sigma, jitter), kernels, blocks
        )
        rows = pt.lvector("rows")
        lower = pt.linalg.cholesky(cov)
        v = pt.linalg.solve_triangular(lower, pt.as_tensor(gp.y) - mean, lower=True)
        c = pt.linalg.solve_triangular(lower, pt.eye(X.shape[0])[:, rows], lower=True)
        log_density = -0.5 * (
            X.shape[0] * np.log(2.0 * np.pi) + 2.0 * pt.log(pt.diagonal(lower)).sum() + v @ v
        )
        outputs = [c.T @ v, (c**2).sum(axis=0), log_density]
        inputs = free_inputs(model, outputs)
        self.names = [rv.name for rv in inputs]
        self._function = pm.pytensorf.compile(
            [*inputs, X_var, *blocks, rows], outputs, allow_input_downcast=True
        )
        self._X = X
        self._blocks = [np.array(k.landmark_block.data) for k in kernels]  # copies, edited below
        self._own = [
            own_columns(k, block, X[:, int(k.active_dims[0])])
            for k, block in zip(kernels, self._blocks, strict=True)
        ]
        has_own = np.zeros(X.shape[0], dtype=bool)
        for own in self._own:
            has_own |= own >= 0
        self._with_own, self._without_own = np.flatnonzero(has_own), np.flatnonzero(~has_own)

    def __call__(self, values: list[np.ndarray], n: int):
        """``(g, cbar, log N(y; C'_i) - log N(y; C))`` of the ``n`` observations at one draw:
        the log importance ratio less the ``- log p'(y_i | y_-i)`` that every LOO has."""
        g, cbar, joint = np.empty((3, n))
        as_fitted = self._without_own if self._without_own.size else np.arange(1)
        g_fitted, cbar_fitted, full = self._function(*values, self._X, *self._blocks, as_fitted)
        g[self._without_own] = g_fitted[: self._without_own.size]
        cbar[self._without_own] = cbar_fitted[: self._without_own.size]
        joint[self._without_own] = full
        for i in self._with_own:
            drops = [(block, own[i]) for block, own in zip(self._blocks, self._own, strict=True)
                     if own[i] >= 0]  # fmt: skip
            saved = [block[:, column].copy() for block, column in drops]
            for block, column in drops:
                block[:, column] = np.inf
            try:
                out = self._function(*values, self._X, *self._blocks, np.array([i]))
            finally:
                for (block, column), old in zip(drops, saved, strict=True):
                    block[:, column] = old
            g[i], cbar[i], joint[i] = out[0][0], out[1][0], out[2]
        return g, cbar, joint - full


def _log_density(g: np.ndarray, cbar: np.ndarray) -> np.ndarray:
    """``log p(y_i | y_-i)`` from ``g`` and ``cbar`` (the module's formula)."""
    return -0.5 * np.log(2.0 * np.pi) + 0.5 * np.log(cbar) - 0.5 * g**2 / cbar


def exact_loo(
    idata: az.InferenceData,
    gp: pm.gp.Marginal,
    *,
    var_name: str,
    model: pm.Model | None = None,
    jitter: float = JITTER_DEFAULT,
    overwrite: bool = False,
    own_landmark: str = "keep",
) -> ExactLOO:
    r"""Exact leave-one-out predictive densities and PIT of a marginal GP at every posterior draw.

    The formulas are in ``pymc_sle.evaluation._loo``. Costs one inversion of the ``n x n``
    training covariance per posterior draw (``own_landmark="keep"``), or one Cholesky
    factorisation per observation and draw (``"drop"``): thin ``idata`` first for long runs,
    e.g. ``idata.sel(draw=slice(None, None, 10))``.

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior of ``model`` (``pm.sample`` or :func:`pymc_sle.sample_basins`).
        With ``own_landmark="keep"`` its ``log_likelihood`` group gets the variable
        ``var_name``.
    gp : pymc.gp.Marginal
        The GP whose ``marginal_likelihood`` observed ``var_name`` (``pm.gp.Marginal`` or
        :class:`pymc_sle.gp.Marginal`), with a one-dimensional ``y``.
    var_name : str
        The name given to ``gp.marginal_likelihood``.
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    jitter : float
        Added to the covariance's diagonal, as in ``gp.marginal_likelihood``: pass the same.
    overwrite : bool, default False
        Replace an existing ``idata.log_likelihood[var_name]`` (for instance the joint density
        that ``pm.sample(idata_kwargs={"log_likelihood": True})`` stores, which has no
        pointwise form); without it an existing variable is an error.
    own_landmark : {"keep", "drop"}, default "keep"
        What happens to a held-out observation's own landmark in a landmark-embedding kernel
        (:class:`~pymc_sle.SLE` and its family, on a distance matrix, the training points among
        the landmarks).

        - ``"keep"``: the covariance stays as fitted; only the observation leaves. Any
          covariance works. For SLE this check can be optimistic: a training point is its own
          landmark, a new point is not (``docs/how-to/calibration.md``).
        - ``"drop"``: the observation is predicted as a new point would be, by the model fitted
          without it: its own landmark leaves every point's embedding (with a square distance
          matrix over every point, the column with its row number, if a landmark at distance
          0 from it: a duplicate of its input that is another landmark stays; with a block of
          distances to the landmarks only, a landmark at distance 0 from it), and the posterior
          is importance-weighted to that model and the other observations, with the log ratio
          :math:`\log N(y; m, C'_i) - \log p'(y_i \mid y_{-i}) - \log N(y; m, C)`
          (:math:`C'_i` the covariance without that landmark; its marginal over the other
          observations is that model's likelihood). ``idata`` is left unchanged: these
          ratios are not the ``1 / p(y_i | y_-i)`` that ``arviz.loo`` assumes, so use the
          returned ``elpd_loo``, ``pit`` and ``pareto_k``. Observations without an own landmark
          (and every observation of a covariance without landmark kernels, e.g. a Matérn)
          keep the fitted covariance, so one call serves models of either kind. Landmark
          kernels that take their distances as features (no distance matrix) are an error:
          which columns are an observation's own is not known there.

    Returns
    -------
    ExactLOO

    Examples
    --------
    >>> import arviz as az
    >>> loo = exact_loo(idata, gp, var_name="y", model=model)  # doctest: +SKIP
    >>> az.loo(idata), loo.coverage(0.95)  # doctest: +SKIP
    >>> thinned = idata.sel(draw=slice(None, None, 10))  # doctest: +SKIP
    >>> exact_loo(thinned, gp, var_name="y", own_landmark="drop").coverage()  # doctest: +SKIP
    """
    model = pm.modelcontext(model)
    if own_landmark not in ("keep", "drop"):
        raise ValueError(f"`own_landmark` must be 'keep' or 'drop', got {own_landmark!r}")
    check_posterior_and_gp(idata, gp)
    y = _observed_data(model, var_name)
    gp_y = constant_value(gp.y)
    if gp_y is None or gp_y.shape != y.shape or not np.array_equal(gp_y, y):
        raise ValueError(
            f"`var_name` {var_name!r} must be the variable observed by `gp`'s "
            "marginal_likelihood; its observations differ from the GP's `y`"
        )
    keep = own_landmark == "keep"
    stored = "log_likelihood" in idata.groups() and var_name in idata.log_likelihood
    if keep and stored and not overwrite:
        raise ValueError(
            f"`idata.log_likelihood` already holds {var_name!r}; pass overwrite=True to replace it"
        )
    if keep:
        function, names = _loo_function(model, gp, jitter)
    else:
        dropped = _DroppedOwnLandmarks(model, gp, jitter)
        names = dropped.names
    missing = [name for name in names if name not in idata.posterior]
    if missing:
        raise ValueError(f"`idata.posterior` must hold the model's variables {missing}")
    posterior = idata.posterior
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    if chains * draws < _MIN_DRAWS:
        raise ValueError(
            f"`idata.posterior` must hold at least {_MIN_DRAWS} draws (chains x draws) for the "
            f"Pareto-smoothed importance weights, but holds {chains * draws}"
        )
    values = [posterior[name].values.reshape(chains * draws, *posterior[name].shape[2:])
              for name in names]  # fmt: skip
    # log p'(y_-i | theta) / p(y | theta) = log N(y; C'_i) - log N(y; C) - log p'(y_i | y_-i):
    # the first two differ only where the drop mode removes a landmark (0 otherwise).
    g, cbar, model_ratio = np.zeros((3, chains * draws, y.size))
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for s in range(chains * draws):
                draw = [v[s] for v in values]
                if keep:
                    g[s], cbar[s] = function(*draw)
                else:
                    g[s], cbar[s], model_ratio[s] = dropped(draw, y.size)
    except np.linalg.LinAlgError as error:
        raise ValueError(NOT_POSITIVE_DEFINITE) from error
    if not np.all(cbar > 0.0):
        raise ValueError(NOT_POSITIVE_DEFINITE)
    log_lik = _log_density(g, cbar)
    dim = f"{var_name}_dim_0"
    array = xr.DataArray(
        log_lik.reshape(chains, draws, y.size),
        dims=("chain", "draw", dim),
        coords={"chain": posterior.chain, "draw": posterior.draw, dim: np.arange(y.size)},
        name=var_name,
    )
    if keep and "log_likelihood" in idata.groups():
        idata.log_likelihood[var_name] = array
    elif keep:
        idata.add_groups(log_likelihood=xr.Dataset({var_name: array}))
    reff = relative_efficiency(posterior[names], chains * draws)
    log_weights, pareto_k = az.psislw((model_ratio - log_lik).T, reff=reff)
    pit = np.sum(np.exp(log_weights) * stats.norm.cdf(g.T / np.sqrt(cbar.T)), axis=1)
    return ExactLOO(
        log_likelihood=array,
        pit=np.clip(pit, 0.0, 1.0),
        pareto_k=pareto_k,
        elpd_loo=logsumexp(log_weights + log_lik.T, axis=1),
        reff=reff,
    )


#: The fewest posterior draws whose importance weights ``arviz.psislw`` can smooth.
_MIN_DRAWS = 2
