"""``pm.gp.Marginal`` with a marginal likelihood whose gradient is analytic."""

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
from pymc_sle._validation import can_change, constant_value
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.gp._log_density import gaussian_logp
from pymc_sle.gp._sparse._likelihood import draw
from pymc_sle.gp._sparse._mixtures import inner_mixture
from pymc_sle.gp._sparse._op import SparseSLELogDensity
from pymc_sle.gp._sparse._prediction import predict as predict_sparse
from pymc_sle.gp._sparse._problem import SparseSLEProblem

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
    r"""Drop-in :class:`pymc.gp.Marginal` for fast NUTS on a Gaussian-process marginal likelihood.

    Everything -- ``conditional``, ``predict``, additive ``given`` -- is PyMC's. Only
    :meth:`marginal_likelihood` differs: its observed variable has the same density as PyMC's
    ``MvNormal(mu, K + noise)``, evaluated by :class:`pymc_sle.gp.GaussianLogDensity`, which
    returns the gradient :math:`\tfrac12(\alpha\alpha^\top - K^{-1})` from the same Cholesky
    factorisation. PyTensor's generic gradient of a Cholesky factorisation and triangular solves
    costs several times that.

    Works with any covariance, not only :class:`pymc_sle.SLE`, on the C, NUMBA and JAX backends
    (``pm.sample()``, ``nuts_sampler="nutpie"``, ``nuts_sampler="numpyro"``).

    **Large data.** When the covariance is an SLE on a :class:`~pymc_sle.SparseDistanceMatrix`
    -- its ``distances`` in index mode, or ``X`` itself in feature mode, with ``(n, m)`` distances
    from the training points to the landmarks -- (RBF or Matérn inner kernel, scalar bump
    parameters) times any scalar signal variance, and
    the noise is a scalar ``sigma``, the likelihood never forms an ``n x n`` matrix: it factorises
    a sparse matrix and adds a low-rank term (:class:`pymc_sle.gp.SparseSLELogDensity`). It is
    exact for the RBF; a Matérn inner kernel goes through a positive quadrature whose kernel
    values are within 1e-12 (Matérn 3/2, 5/2) or 1e-9 (Matérn 1/2) of the exact ones. Other
    covariances on sparse distances take the dense path, with a warning. ``predict`` is then
    sparse too (below); ``conditional`` stays PyMC's (dense).

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
        sparse = None
        if is_observed:
            _check_observations(X, y)
            sparse = _sparse_likelihood(self.cov_func, X, y, noise_func, jitter)
        self._sparse = None
        if sparse is not None:  # never builds the n x n covariance
            problem, parameters, sle_cov = sparse
            mu = self.mean_func(X)
            self._sparse = (problem, parameters, sle_cov, mu)
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
        mu, cov = build_marginal_likelihood(self, X, noise_func, jitter)
        if not is_observed:
            warnings.warn(
                "The 'is_observed' argument has been deprecated.  If the GP is "
                "unobserved use gp.Latent instead.",
                FutureWarning,
                stacklevel=2,
            )
            return pm.MvNormal(name, mu=mu, cov=cov, **kwargs)
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
    rng = np.random.default_rng(rng)
    values = [float(np.asarray(p)) for p in parameters]
    return np.asarray(mu) + draw(problem, *values, rng=rng, size=() if size is None else size)


def _sparse_sle_factors(cov_func, X):
    """``(sle, scalars)`` if ``cov_func`` is an SLE on sparse distances (in index mode, its
    ``distances``; in feature mode, ``X``), alone or times scalar factors; ``None`` otherwise."""
    from pymc_sle.kernels._sle import SLE

    factors = product_factors(cov_func)
    kernels = [f for f in factors if isinstance(f, BaseCovariance)]
    sle = kernels[0] if len(kernels) == 1 and isinstance(kernels[0], SLE) else None
    if isinstance(X, SparseDistanceMatrix) and (sle is None or not sle.feature_mode):
        raise TypeError(
            "`X` may be a SparseDistanceMatrix only for a feature-mode pymc_sle.SLE (alone or "
            "times scalars), whose columns it holds the distances of, but the covariance is "
            f"{cov_func!r}"
        )
    if sle is None or not isinstance(
        X if sle.feature_mode else sle.distances, SparseDistanceMatrix
    ):
        return None
    scalars = [pt.as_tensor_variable(f) for f in factors if not isinstance(f, BaseCovariance)]
    return sle, scalars


def _sparse_likelihood(cov_func, X, y, noise_func, jitter):
    """``(problem, parameters, sle)`` for the sparse exact likelihood, or ``None`` (with a warning
    naming why, when the distances are sparse but the model is not of the supported form)."""
    found = _sparse_sle_factors(cov_func, X)
    if found is None:
        return None
    sle, scalars = found
    reasons = []
    mixture = inner_mixture(sle.inner)
    if mixture is None:
        reasons.append(
            f"inner kernel {type(sle.inner).__name__} (needs 'rbf', 'matern12', 'matern32' or "
            "'matern52')"
        )
    if any(p.type.ndim != 0 for p in (sle.radius, sle.amplitude, sle.shape)):
        reasons.append("per-landmark radius, amplitude or shape (needs scalars)")
    if any(f.type.ndim != 0 for f in scalars):
        reasons.append("a non-scalar factor of the covariance")
    if (
        type(noise_func) is not pm.gp.cov.WhiteNoise
        or pt.as_tensor_variable(noise_func.sigma).type.ndim
    ):
        reasons.append("a noise that is not one scalar sigma")
    if not sle.feature_mode and (can_change(X) or constant_value(X) is None):
        reasons.append("an X that is not fixed numbers (pm.Data)")
    observed = constant_value(y)
    if observed is not None and observed.ndim != 1:
        reasons.append("several outputs in y")
    if reasons:
        warnings.warn(
            "The covariance is an SLE on sparse distances, but the sparse likelihood does not "
            f"cover {'; '.join(reasons)}: the dense n x n path runs instead, with the sparse "
            "distances filled in as dense.",
            UserWarning,
            stacklevel=3,
        )
        return None
    block = sle.sparse_to_landmarks(X, "X")
    problem = SparseSLEProblem(
        block.indptr, block.indices, block.values, sle.n_landmarks, sle.radius_max, mixture
    )
    scale = pt.prod(pt.stack(scalars)) if scalars else pt.constant(1.0)
    noise = pt.square(noise_func.sigma) + jitter
    return problem, (sle.radius, sle.amplitude, sle.shape, sle.ls, scale, noise), sle


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
