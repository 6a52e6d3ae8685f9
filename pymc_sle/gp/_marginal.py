"""``pm.gp.Marginal`` with a marginal likelihood whose gradient is analytic."""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.gp.cov import BaseCovariance
from pymc.gp.util import JITTER_DEFAULT

from pymc_sle._pymc_compat import build_marginal_likelihood
from pymc_sle.gp._log_density import gaussian_logp

__all__ = ["Marginal"]


def _mvnormal_random(mu, cov, rng=None, size=None):
    rng = np.random.default_rng(rng)
    return rng.multivariate_normal(mu, cov, size=size, method="cholesky")


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

    def marginal_likelihood(self, name, X, y, sigma, jitter=JITTER_DEFAULT, **kwargs):
        r"""The marginal likelihood :math:`y \sim \mathcal N(m(X), K(X, X) + K_n)` as an observed
        variable; arguments as in :meth:`pymc.gp.Marginal.marginal_likelihood` (without the
        deprecated ``is_observed``). ``**kwargs`` go to :class:`pymc.CustomDist`.
        """
        noise_func = sigma if isinstance(sigma, BaseCovariance) else pm.gp.cov.WhiteNoise(sigma)
        mu, cov = build_marginal_likelihood(self, X, noise_func, jitter)
        self.X, self.y, self.sigma = X, y, noise_func
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
