"""``pm.gp.Marginal`` for large data and for any covariance: sparse predictions and draws, and
the one-factorisation likelihood whatever the kernel."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.gp.cov import BaseCovariance
from pymc.gp.util import JITTER_DEFAULT, replace_with_values
from scipy import sparse as sparse_matrix

from pymc_sle._pymc_compat import build_marginal_likelihood, product_factors
from pymc_sle._validation import constant_value
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.gp._log_density import gaussian_logp
from pymc_sle.gp._marginal_form import marginal_form, sparse_likelihood
from pymc_sle.gp._sparse import SparseSLELogDensity, draw
from pymc_sle.gp._sparse import predict as predict_sparse
from pymc_sle.kernels._sle import SLE

__all__ = ["Marginal"]


def _mvnormal_random(mu, cov, rng=None, size=None):
    """Draws of ``N(mu, cov)``, batched along the leading axes (multi-output ``y``); the same
    draws as ``rng.multivariate_normal(mu, cov, method="cholesky")`` for one output."""
    rng = np.random.default_rng(rng)
    mu, cov = np.asarray(mu), np.asarray(cov)
    batch = np.broadcast_shapes(mu.shape[:-1], cov.shape[:-2]) if size is None else tuple(size)
    z = rng.standard_normal((*batch, cov.shape[-1]))
    return mu + np.einsum("...j,...ij->...i", z, np.linalg.cholesky(cov))


class Marginal(pm.gp.Marginal):
    r""":class:`pymc.gp.Marginal` for large data, and the one-factorisation likelihood for any
    covariance.

    ``pm.gp.Marginal(cov_func=eta**2 * SLE(...))`` itself takes the library's likelihood (a
    logprob rewrite, ``pymc_sle.gp._rewrite``): dense, :class:`~pymc_sle.gp.GaussianLogDensity`
    (one Cholesky factorisation gives the value and the gradient
    :math:`\tfrac12(\alpha\alpha^\top - K^{-1})`); on a :class:`~pymc_sle.SparseDistanceMatrix`,
    :class:`~pymc_sle.gp.SparseSLELogDensity`, which never forms an ``n x n`` matrix. This class
    adds what the rewrite cannot give PyMC's:

    - :meth:`predict` on sparse distances is sparse too: pointwise means and variances at new
      points, one forward solve with the training factor per point, where PyMC's builds the
      dense conditional;
    - forward draws of the observations (``pm.sample_prior_predictive``) on sparse distances
      come from the sparse factor;
    - the one-factorisation likelihood for **any** covariance, not only an SLE (the benchmarks'
      baselines), on the C, NUMBA and JAX backends.

    Everything else -- ``conditional``, additive ``given`` -- is PyMC's. The sparse likelihood
    covers an SLE on sparse distances (its ``distances`` in index mode, or ``X`` itself in
    feature mode, with ``(n, m)`` distances from the training points to the landmarks) with an
    RBF or Matérn inner kernel and scalar bump parameters, times a scalar signal variance, with
    a scalar noise ``sigma`` (``pymc_sle.gp._marginal_form``). It is exact for the RBF; a Matérn
    inner kernel goes through a positive quadrature whose kernel values are within 1e-12
    (Matérn 3/2, 5/2) or 1e-9 (Matérn 1/2) of the exact ones. Other models on sparse distances
    run dense, with a warning.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_sle
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> y = np.sin(6 * X[:, 0])
    >>> with pm.Model() as model:
    ...     ls = pm.LogNormal("ls", 0.0, 1.0)
    ...     gp = pymc_sle.gp.Marginal(cov_func=pm.gp.cov.Matern32(1, ls=ls))
    ...     y_obs = gp.marginal_likelihood("y", X=X, y=y, sigma=0.1)
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    def marginal_likelihood(
        self, name, X, y, sigma, jitter=JITTER_DEFAULT, is_observed=True, **kwargs
    ):
        r"""The marginal likelihood :math:`y \sim \mathcal N(m(X), K(X, X) + K_n)` as an observed
        variable; arguments as in :meth:`pymc.gp.Marginal.marginal_likelihood`.

        ``y`` has shape ``(n,)``, or ``(..., n)`` for several outputs that share the GP's
        hyperparameters (multi-output): each row along the leading axes is an independent draw,
        and its log density is one entry of the variable's element-wise log-probability, as with
        :class:`pymc.MvNormal`. ``is_observed=False`` is deprecated, as in PyMC, and gives PyMC's
        unobserved ``MvNormal``. ``**kwargs`` go to :class:`pymc.CustomDist`.
        """
        noise_func = sigma if isinstance(sigma, BaseCovariance) else pm.gp.cov.WhiteNoise(sigma)
        self.X, self.y, self.sigma = X, y, noise_func
        self._sparse = None
        if not is_observed:
            warnings.warn(
                "The 'is_observed' argument has been deprecated.  If the GP is "
                "unobserved use gp.Latent instead.",
                FutureWarning,
                stacklevel=2,
            )
            return pm.MvNormal(name, *build_marginal_likelihood(self, X, noise_func, jitter),
                               **kwargs)  # fmt: skip
        _check_observations(X, y)
        _check_sparse_features(self.cov_func, X)
        mu, cov = build_marginal_likelihood(self, X, noise_func, jitter)
        form = marginal_form(cov)
        observed = _known_shape(y)
        outputs_axes = 0 if observed is None else len(observed) - 1
        sparse = None if form is None else sparse_likelihood(form, outputs_axes, stacklevel=3)
        if sparse is not None:  # never evaluates the n x n covariance
            problem, parameters = sparse
            self._sparse = (problem, parameters, form.kernel, mu)
            return pm.CustomDist(
                name,
                mu,
                *parameters,
                logp=partial(_sparse_logp, problem=problem),
                random=partial(_sparse_random, problem=problem),
                signature="(n)" + ",()" * len(parameters) + "->(n)",
                observed=y,
                **kwargs,
            )
        return pm.CustomDist(
            name,
            mu,
            cov,
            logp=gaussian_logp,
            random=_mvnormal_random,
            signature="(n),(n,n)->(n)",
            observed=y,
            **kwargs,
        )

    def predict(
        self,
        Xnew,
        point=None,
        diag=False,
        pred_noise=False,
        given=None,
        jitter=JITTER_DEFAULT,
        model=None,
    ):
        """Mean and covariance of the conditional at ``Xnew`` given ``point``, as
        :meth:`pymc.gp.Marginal.predict`.

        After a sparse marginal likelihood (see "Large data" above), the prediction is sparse
        too: ``diag=True`` is required (pointwise variances; a full covariance of the new points
        would be dense), ``given`` is not supported, and the training covariance keeps the jitter
        it had in :meth:`marginal_likelihood`. Cost: one forward solve with the training factor
        per new point, in batches.
        """
        sparse = getattr(self, "_sparse", None)
        if not sparse:
            return super().predict(Xnew, point, diag, pred_noise, given, jitter, model)
        if given:
            raise ValueError(
                f"`given` is not supported after a sparse marginal likelihood, but got {given!r}"
            )
        if not diag:
            raise ValueError(
                "after a sparse marginal likelihood, predict gives pointwise variances only: pass "
                "diag=True (a full covariance of the new points would be a dense n_new x n_new "
                "matrix)"
            )
        problem, parameters, sle_cov, mu = sparse
        block = sle_cov.sparse_to_landmarks(Xnew, "Xnew")
        values = replace_with_values(
            [*parameters, mu, self.mean_func(Xnew), pt.square(self.sigma.sigma)],
            replacements=point,
            model=model,
        )
        *numbers, mu_train, mean_new, noise = (np.asarray(v, dtype=float) for v in values)
        new = sparse_matrix.csr_matrix((block.values, block.indices, block.indptr), block.shape)
        residual = np.asarray(constant_value(self.y), dtype=float) - mu_train
        offset, variance = predict_sparse(problem, new, residual, *(float(v) for v in numbers))
        return mean_new + offset, variance + noise if pred_noise else variance


def _sparse_logp(value, mu, *parameters, problem):
    return SparseSLELogDensity(problem)(value - mu, *parameters)[0]


def _sparse_random(mu, *parameters, problem, rng=None, size=None):
    return draw(problem, *parameters, rng=np.random.default_rng(rng), size=size, mean=mu)


def _check_sparse_features(cov_func, X) -> None:
    """``X`` may be a :class:`~pymc_sle.SparseDistanceMatrix` only for a feature-mode SLE, alone
    or times scalars, whose columns it holds the distances of."""
    if not isinstance(X, SparseDistanceMatrix):
        return
    kernels = [f for f in product_factors(cov_func) if isinstance(f, BaseCovariance)]
    if not (len(kernels) == 1 and isinstance(kernels[0], SLE) and kernels[0].feature_mode):
        raise TypeError(
            "`X` may be a SparseDistanceMatrix only for a feature-mode pymc_sle.SLE (alone or "
            "times scalars), whose columns it holds the distances of, but the covariance is "
            f"{cov_func!r}"
        )


def _known_shape(value) -> tuple | None:
    """The shape of ``value`` if it is known now (numbers, constants, ``pm.Data``, sparse
    distances) or static."""
    if isinstance(value, SparseDistanceMatrix):
        return value.shape
    concrete = constant_value(value)
    if concrete is not None:
        return concrete.shape
    shape = getattr(getattr(value, "type", None), "shape", None)
    return shape if shape is not None and None not in shape else None


def _check_observations(X, y) -> None:
    """``y`` holds one observation per row of ``X`` along its last axis; errors name ``y``."""
    y_shape = _known_shape(y)
    if y_shape is None:
        return
    if len(y_shape) == 0:
        raise ValueError(
            "`y` must have shape (n,) or (..., n) with one entry per row of `X`, but is a scalar"
        )
    X_shape = _known_shape(X)
    if X_shape is not None and len(X_shape) >= 1 and y_shape[-1] != X_shape[0]:
        raise ValueError(
            f"`y` must have {X_shape[0]} entries along its last axis (one per row of `X`, which "
            f"has shape {X_shape}), but has shape {y_shape}"
        )
