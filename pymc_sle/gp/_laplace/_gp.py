r"""The Laplace latent GP: a non-Gaussian likelihood whose observed variable has the Laplace
approximation of its marginal likelihood as its density."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.gp.util import JITTER_DEFAULT
from pytensor.graph.traversal import ancestors
from scipy import sparse as sparse_matrix

from pymc_sle._validation import constant_value
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.gp._laplace._approximation import DenseStructure
from pymc_sle.gp._laplace._likelihoods import Likelihood
from pymc_sle.gp._laplace._op import APPROXIMATIONS, SPARSE_PARAMETERS, LaplaceLogDensity
from pymc_sle.gp._laplace._sparse import SparseStructure
from pymc_sle.gp._marginal_form import marginal_form, sparse_likelihood
from pymc_sle.gp._sparse import draw
from pymc_sle.gp._sparse import predict as predict_sparse

__all__ = ["EP", "Laplace", "LaplacePrediction"]


@dataclass(frozen=True)
class LaplacePrediction:
    """Predictions at new points, averaged over hyperparameter draws.

    Attributes
    ----------
    latent_mean, latent_variance : ndarray of shape (n_new,)
        Mean and variance of the latent :math:`f_*` under the mixture of the draws' Laplace
        posteriors (the variance includes the spread of the draws' means).
    mean : ndarray of shape (n_new,)
        The predictive mean of an observation: the probability of a 1 (Bernoulli), the success
        probability (Binomial), the rate (Poisson), the mean (Gaussian).
    draws : int
        How many hyperparameter draws were averaged.
    """

    latent_mean: np.ndarray
    latent_variance: np.ndarray
    mean: np.ndarray
    draws: int


class Laplace:
    r"""A latent GP :math:`f \sim \mathcal{GP}(m, k)` observed through a non-Gaussian likelihood,
    with the hyperparameters' posterior targeted through the Laplace approximation.

    :meth:`marginal_likelihood` adds the observations as a variable whose log density is

    .. math::

        \log q(y \mid \theta) = \log p(y \mid \hat f) - \tfrac12 (\hat f - m)^\top K^{-1}
        (\hat f - m) - \tfrac12 \log\bigl|I + W^{1/2} K W^{1/2}\bigr|,

    :math:`\hat f` the mode of :math:`p(f \mid y, \theta)` (Newton's method, damped, started
    from the last mode) and :math:`W = -\nabla\nabla \log p(y \mid \hat f)`, with its exact
    gradient in every hyperparameter of :math:`m` and :math:`k` (and the likelihood's), so NUTS
    samples the hyperparameters alone, or :func:`pymc.find_MAP` fits them, while the latent
    values are integrated out (:doc:`/how-to/classification`). For a Gaussian likelihood it
    is the exact marginal likelihood.

    The approximation costs what the Gaussian path does: dense, a Cholesky factorisation per
    Newton step for any covariance; for an SLE on a :class:`~pymc_sle.SparseDistanceMatrix`
    (the forms ``pm.gp.Marginal`` takes sparse, with the same warnings), the sparse
    factorisation, never an ``n x n`` matrix.

    Parameters
    ----------
    mean_func : pymc.gp.mean.Mean, default Zero
    cov_func : pymc.gp.cov.Covariance
        The latent covariance, e.g. ``eta**2 * pymc_sle.SLE(...)``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_sle as sle
    >>> x = np.linspace(0, 1, 30)
    >>> y = (np.sin(6 * x) > 0).astype(float)
    >>> with pm.Model() as model:
    ...     ls = pm.LogNormal("ls", -1.0, 0.5)
    ...     gp = sle.gp.Laplace(cov_func=4.0 * pm.gp.cov.ExpQuad(1, ls=ls))
    ...     y_obs = gp.marginal_likelihood("y", X=x[:, None], y=y, likelihood=sle.gp.Bernoulli())
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    #: The approximation of the marginal likelihood (``LaplaceLogDensity``'s).
    approximation = "laplace"

    def __init__(self, *, mean_func=None, cov_func=None):
        if cov_func is None:
            raise TypeError("`cov_func` is required: the latent GP's covariance")
        self.mean_func = pm.gp.mean.Zero() if mean_func is None else mean_func
        self.cov_func = cov_func
        self._fit = None

    def marginal_likelihood(
        self, name, X, y, likelihood: Likelihood, jitter=JITTER_DEFAULT, **kwargs
    ):
        """The observations ``y`` as a variable whose density is the Laplace approximation.

        Parameters
        ----------
        name : str
        X : array-like or SparseDistanceMatrix
            The training inputs (in index mode, row indices as a column).
        y : array-like of shape (n,)
            The observations: 0/1 (Bernoulli), successes (Binomial), counts (Poisson), reals.
        likelihood : Bernoulli, Binomial, Poisson or Gaussian
        jitter : float, default 1e-6
            Added to the latent covariance's diagonal, as in :class:`pymc.gp.Latent`.
        **kwargs
            Passed to :class:`pymc.CustomDist` (``dims``, ...).

        Raises
        ------
        TypeError
            If ``likelihood`` is not one of the library's likelihoods.
        ValueError
            If ``y`` is not a finite vector of values the likelihood accepts, with one entry
            per row of ``X``.
        """
        if not isinstance(likelihood, Likelihood):
            raise TypeError(
                "`likelihood` must be a pymc_sle.gp likelihood (Bernoulli, Binomial, Poisson, "
                f"Gaussian), but got {type(likelihood).__name__}"
            )
        values = _observations(y, X, likelihood)
        n = values.size
        cov = self.cov_func(X) + jitter * pt.eye(n)
        mean = pt.broadcast_to(self.mean_func(X), (n,))
        form = marginal_form(cov)
        found = None if form is None else sparse_likelihood(form, 0, stacklevel=3)
        extra = likelihood.parameters()
        if found is not None:
            problem, parameters = found
            op = LaplaceLogDensity(likelihood, problem, approximation=self.approximation)
            dist_params = (mean, *parameters, *extra)
            logp = partial(_sparse_logp, op=op)
            random = partial(_sparse_random, problem=problem, likelihood=likelihood)
            signature = "(n)" + ",()" * (len(parameters) + len(extra)) + "->(n)"
        else:
            problem, parameters = None, (cov,)
            op = LaplaceLogDensity(likelihood, approximation=self.approximation)
            dist_params = (mean, cov, *extra)
            logp = partial(_dense_logp, op=op)
            random = partial(_dense_random, likelihood=likelihood)
            signature = "(n),(n,n)" + ",()" * len(extra) + "->(n)"
        self._fit = _Fit(X, values, likelihood, jitter, problem, parameters, mean, extra, form)
        return pm.CustomDist(name, *dist_params, logp=logp, random=random, signature=signature,
                             observed=values, **kwargs)  # fmt: skip

    def predict(self, Xnew, point=None, model=None):
        """Mean and variance of the latent :math:`f_*` at ``Xnew`` under the Laplace posterior
        at the hyperparameters ``point`` (a dict of the model's variables by name, e.g. from
        :func:`pymc.find_MAP`), pointwise: ``(mean, variance)``, each ``(n_new,)``.

        Sparse after a sparse likelihood: one forward solve with the training factor per new
        point."""
        predictor = self._predictor(Xnew, model)
        return predictor(predictor.values(point or {}))

    def predictive(self, Xnew, idata, *, n_draws: int | None = 200, random_seed=None,
                   model=None) -> LaplacePrediction:  # fmt: skip
        """Predictions at ``Xnew`` averaged over the posterior draws of ``idata`` (``n_draws`` of
        them, evenly spread; ``None``: all): :class:`LaplacePrediction`.

        Raises
        ------
        ValueError
            If ``n_draws`` is not a positive integer or ``idata`` lacks a hyperparameter.
        """
        if n_draws is not None and (not isinstance(n_draws, int | np.integer) or n_draws < 1):
            raise ValueError(f"`n_draws` must be a positive integer or None, but got {n_draws!r}")
        predictor = self._predictor(Xnew, model)
        posterior = idata.posterior.stack(sample=("chain", "draw"))
        missing = [name for name in predictor.names if name not in posterior]
        if missing:
            raise ValueError(f"`idata.posterior` must hold {missing}, the hyperparameters")
        total = posterior.sizes["sample"]
        count = total if n_draws is None else min(n_draws, total)
        chosen = np.linspace(0, total - 1, count).round().astype(int)
        means, variances, expected = [], [], []
        likelihood = self._fit.likelihood
        for index in chosen:
            point = {name: posterior[name].values[..., index] for name in predictor.names}
            mean, variance = predictor(predictor.values(point))
            means.append(mean)
            variances.append(variance)
            expected.append(likelihood.mean(mean, variance))
        means, variances = np.array(means), np.array(variances)
        return LaplacePrediction(means.mean(0), variances.mean(0) + means.var(0),
                                 np.mean(expected, axis=0), count)  # fmt: skip

    def _predictor(self, Xnew, model):
        if self._fit is None:
            raise ValueError("call `marginal_likelihood` before predicting")
        return _Predictor(self, Xnew, pm.modelcontext(model))


class EP(Laplace):
    r"""A latent GP observed through a non-Gaussian likelihood, with the hyperparameters'
    posterior targeted through expectation propagation (EP): the interface of
    :class:`~pymc_sle.gp.Laplace`, with the observed variable's log density

    .. math::

        \log Z_{\text{EP}}(y \mid \theta) = \log\mathcal N(\tilde\mu; m, K + \tilde T^{-1})
            + \sum_i \Bigl[\log Z_i - \log\mathcal N\bigl(\tilde\mu_i; \mu_{-i},
            \tau_{-i}^{-1} + \tilde\tau_i^{-1}\bigr)\Bigr],

    the Gaussian sites :math:`\mathcal N(f_i; \tilde\mu_i, \tilde\tau_i^{-1})` chosen so
    that each posterior marginal has the mean and variance of its tilted distribution
    :math:`p(y_i \mid f_i)\,\mathcal N(f_i; \mu_{-i}, \tau_{-i}^{-1})` (cavity
    :math:`\mathcal N(\mu_{-i}, \tau_{-i}^{-1})`, normaliser :math:`Z_i`). Each EP sweep
    costs one factorisation of :math:`K + \tilde T^{-1}` and the diagonal of its inverse (the
    selected inverse on sparse distances), against a Newton step's factorisation alone, and an
    evaluation takes more sweeps than Newton steps; in return its marginal likelihood is much
    closer to the exact one where the likelihood is far from Gaussian (binary labels; Kuss &
    Rasmussen, *JMLR* 2005). :doc:`/how-to/classification` says what is measured.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_sle as sle
    >>> x = np.linspace(0, 1, 30)
    >>> y = (np.sin(6 * x) > 0).astype(float)
    >>> with pm.Model() as model:
    ...     ls = pm.LogNormal("ls", -1.0, 0.5)
    ...     gp = sle.gp.EP(cov_func=4.0 * pm.gp.cov.ExpQuad(1, ls=ls))
    ...     y_obs = gp.marginal_likelihood("y", X=x[:, None], y=y, likelihood=sle.gp.Bernoulli())
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    approximation = "ep"


@dataclass
class _Fit:
    X: object
    y: np.ndarray
    likelihood: Likelihood
    jitter: float
    problem: object
    parameters: tuple
    mean: object
    extra: tuple
    form: object


class _Predictor:
    """The numbers a prediction needs, as one compiled function of the model's variables."""

    def __init__(self, gp: Laplace, Xnew, model: pm.Model):
        fit = gp._fit
        self.fit = fit
        self.terms, self.method = APPROXIMATIONS[gp.approximation], type(gp).__name__
        mean_new = pt.broadcast_to(gp.mean_func(Xnew), (_rows(Xnew),))
        if fit.problem is None:
            wanted = [fit.parameters[0], gp.cov_func(fit.X, Xnew), gp.cov_func(Xnew, diag=True)]
        else:
            wanted = list(fit.parameters)
            block = fit.form.kernel.sparse_to_landmarks(Xnew, "Xnew")
            self.new = sparse_matrix.csr_matrix((block.values, block.indices, block.indptr),
                                                block.shape)  # fmt: skip
        wanted += [fit.mean, mean_new, *fit.extra]
        self.n_structure = len(wanted) - 2 - len(fit.extra)
        named = set(model.named_vars.values())
        inputs = [v for v in ancestors(wanted) if v in named]
        self.names = [v.name for v in inputs]
        self.function = pm.compile(inputs, wanted, on_unused_input="ignore")

    def values(self, point):
        missing = [name for name in self.names if name not in point]
        if missing:
            raise ValueError(f"`point` must hold values for {missing}")
        return self.function(*(point[name] for name in self.names))

    def __call__(self, values):
        fit = self.fit
        structure = values[: self.n_structure]
        mean, mean_new, *extra = (np.asarray(v, float) for v in values[self.n_structure :])
        if fit.problem is None:
            cov, cross, prior = (np.asarray(v, float) for v in structure)
            mode = self._state(DenseStructure(cov), mean, extra)
            solved = mode.factor.solve(cross)
            variance = prior - np.einsum("ij,ij->j", cross, solved)
            return mean_new + cross.T @ mode.a, np.maximum(variance, 0.0)
        numbers = [float(v) for v in structure]
        mode = self._state(SparseStructure(fit.problem, *numbers), mean, extra)
        *sle_values, jitter = numbers
        offset, variance = predict_sparse(fit.problem, self.new, mode.pseudo_observations,
                                          *sle_values, jitter + 1.0 / mode.w)  # fmt: skip
        return mean_new + offset, variance

    def _state(self, structure, mean, extra):
        """The Laplace mode or EP's sites: ``a``, ``factor``, ``w``, ``pseudo_observations``."""
        found = self.terms(structure, self.fit.likelihood, self.fit.y, mean, extra,
                           with_gradients=False)  # fmt: skip
        if found is None:
            raise ValueError(
                f"the {self.method} approximation cannot be formed "
                "at these hyperparameters (the latent covariance is not numerically positive "
                "definite, or EP's cavities lost their precision); no prediction exists"
            )
        return found.state


def _rows(X) -> int:
    if isinstance(X, SparseDistanceMatrix):
        return X.shape[0]
    shape = np.shape(constant_value(X))
    if not shape:
        raise ValueError("`Xnew` must be a 2-D array of inputs (or row indices as a column)")
    return shape[0]


def _observations(y, X, likelihood: Likelihood) -> np.ndarray:
    """``y`` as a checked float vector with one entry per row of ``X``."""
    values = constant_value(y)
    if values is None:
        raise TypeError("`y` must be observed numbers (an array or pm.Data), not a graph")
    if values.dtype.kind not in "biuf":
        raise TypeError(f"`y` must be a real numeric array, but has dtype {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"`y` must be a vector (n,), but has shape {values.shape}")
    values = values.astype(float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"`y` must be finite, but has {int(np.sum(~np.isfinite(values)))} "
                         "non-finite entries")  # fmt: skip
    rows = _rows(X)
    if rows != values.size:
        raise ValueError(f"`y` must have one entry per row of `X` ({rows}), but has {values.size}")
    return likelihood.check(values)


def _dense_logp(value, mean, cov, *extra, op):
    return op(value, cov, mean, *extra)[0]


def _sparse_logp(value, mean, *parameters, op):
    return op(value, mean, *parameters)[0]


def _dense_random(mean, cov, *extra, likelihood, rng=None, size=None):
    rng = np.random.default_rng(rng)
    mean, cov = np.asarray(mean, float), np.asarray(cov, float)
    shape = tuple(size) if size is not None else ()
    f = rng.multivariate_normal(mean, cov, size=shape or None, method="cholesky")
    return likelihood.sample(f, rng, *(float(np.asarray(e)) for e in extra))


def _sparse_random(mean, *parameters, problem, likelihood, rng=None, size=None):
    rng = np.random.default_rng(rng)
    count = len(SPARSE_PARAMETERS)
    f = draw(problem, *parameters[:count], rng=rng, size=size, mean=mean)
    return likelihood.sample(f, rng, *(float(np.asarray(p)) for p in parameters[count:]))
