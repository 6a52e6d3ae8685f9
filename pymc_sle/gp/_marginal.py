"""``pm.gp.Marginal`` with a marginal likelihood whose gradient is analytic."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
from pymc.gp.cov import BaseCovariance
from pymc.gp.util import JITTER_DEFAULT

from pymc_sle._pymc_compat import build_marginal_likelihood
from pymc_sle._validation import constant_value
from pymc_sle.gp._log_density import gaussian_logp

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
        mu, cov = build_marginal_likelihood(self, X, noise_func, jitter)
        self.X, self.y, self.sigma = X, y, noise_func
        if not is_observed:
            warnings.warn(
                "The 'is_observed' argument has been deprecated.  If the GP is "
                "unobserved use gp.Latent instead.",
                FutureWarning,
                stacklevel=2,
            )
            return pm.MvNormal(name, mu=mu, cov=cov, **kwargs)
        _check_observations(X, y)
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


def _known_shape(value) -> tuple | None:
    """The shape of ``value`` if it is known now (numbers, constants, ``pm.Data``) or static."""
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
