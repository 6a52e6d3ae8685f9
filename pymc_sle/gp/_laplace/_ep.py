r"""Expectation propagation (EP) for a latent GP: its marginal likelihood and gradient.

EP replaces each likelihood term by a Gaussian *site* :math:`\tilde Z_i\,\mathcal N(f_i;
\tilde\mu_i, \tilde\tau_i^{-1})`, so the posterior approximation is the Gaussian :math:`q(f)
\propto \mathcal N(f; m, K) \prod_i \mathcal N(f_i; \tilde\mu_i, \tilde\tau_i^{-1})`: with
:math:`C = K + \tilde T^{-1}` (:math:`\tilde T = \operatorname{diag}\tilde\tau`, the noise
variances of a Gaussian model, the structure the dense and the sparse Gaussian likelihoods
factorise) and :math:`a = C^{-1}(\tilde\mu - m)`, its marginals are

.. math::

    \mu_i = \tilde\mu_i - a_i / \tilde\tau_i, \qquad
    \sigma_i^2 = \tilde\tau_i^{-1} - \tilde\tau_i^{-2} (C^{-1})_{ii}.

A sweep (parallel EP: every site from the same posterior) forms each cavity
:math:`\tau_{-i} = \sigma_i^{-2} - \tilde\tau_i`, :math:`\tau_{-i}\mu_{-i} = \mu_i\sigma_i^{-2}
- \tilde\tau_i\tilde\mu_i`, the moments :math:`(\hat\mu_i, \hat\sigma_i^2)` and normaliser
:math:`Z_i` of the tilted :math:`p(y_i \mid f)\,\mathcal N(f; \mu_{-i}, \tau_{-i}^{-1})`
(``Likelihood.tilted``), and moves each site towards :math:`\tau_i^{\text{new}} =
\hat\sigma_i^{-2} - \tau_{-i}`, :math:`\tau_i^{\text{new}}\mu_i^{\text{new}} = \hat\mu_i
\hat\sigma_i^{-2} - \tau_{-i}\mu_{-i}` by the fraction ``damping`` of the way in natural
parameters (halved, down to ``MIN_DAMPING``, whenever a sweep's residual grows). The sweeps
converge linearly, slowly where the sites are sharp (separable labels); Anderson acceleration
(Walker & Ni, *SIAM J. Numer. Anal.* 49, 2011) takes as the next sites, in natural parameters
:math:`x = (\tilde\tau, \tilde\tau\tilde\mu)`, the combination of the last
``ANDERSON_DEPTH`` damped updates :math:`G(x_j)` whose residuals :math:`G(x_j) - x_j` combine to
the least-squares smallest, and the damped update itself when a combined precision falls below
``W_FLOOR``; a growing residual also restarts the combination. It stops when
the posterior marginals match the tilted moments: :math:`|\hat\mu_i - \mu_i| / \sigma_i` and
:math:`|\hat\sigma_i^2 / \sigma_i^2 - 1|` at most ``tol`` for every :math:`i`. It starts from
sites found before at the nearest inputs (a warm start, ``_warm``), else from the Laplace mode's
:math:`(W, \hat f + b / W)`. For log-concave likelihoods every tilted variance is below its
cavity's, so :math:`\tilde\tau_i \ge 0` (floored at ``W_FLOOR``, as the Laplace path floors
:math:`W`). Then (Rasmussen & Williams, *GPML*, eq. 3.65)

.. math::

    \log Z_{\text{EP}} = \log\mathcal N(\tilde\mu; m, C) + \sum_i \Bigl[\log Z_i
        - \log\mathcal N\bigl(\tilde\mu_i; \mu_{-i}, \tau_{-i}^{-1} + \tilde\tau_i^{-1}\bigr)
        \Bigr].

**Gradient.** At the fixed point the bracket is stationary in the cavity (matched moments), so
with the sites held, only :math:`\log\mathcal N(\tilde\mu; m, C)` depends on :math:`K` and
:math:`m` (GPML eq. 5.27):

.. math::

    \frac{\partial \log Z_{\text{EP}}}{\partial K} = \tfrac12\bigl(a a^\top - C^{-1}\bigr),
    \qquad \frac{\partial \log Z_{\text{EP}}}{\partial m} = a,

the Gaussian marginal likelihood's gradient with observations :math:`\tilde\mu` and noise
:math:`\tilde T^{-1}`; a likelihood parameter :math:`\psi` adds :math:`\sum_i \partial_\psi
\log Z_i` at the fixed cavities. For a Gaussian likelihood the sites are exact after one sweep
and :math:`\log Z_{\text{EP}}` is the exact marginal likelihood.
"""

from __future__ import annotations

import collections

import numpy as np

from pymc_sle.gp._laplace._approximation import Terms, described, find_mode
from pymc_sle.gp._laplace._likelihoods import W_FLOOR, Likelihood

__all__ = ["EPError", "EPSites", "ep_terms", "find_sites", "log_marginal"]

#: The default tolerance on the moment-matching residual (module notes).
TOLERANCE = 1e-8
#: Sweeps before :class:`EPError`.
MAX_SWEEPS = 500
#: The smallest damping the sweeps halve to.
MIN_DAMPING = 1.0 / 64.0
#: Damped updates Anderson's acceleration combines (module notes; chosen in
#: benchmarks/results/studies/ep_acceleration.md).
ANDERSON_DEPTH = 5


class EPError(ValueError):
    """Expectation propagation did not converge (the message names the parameters)."""


class EPSites:
    """The converged sites: precisions ``w`` (:math:`\\tilde\\tau`), ``pseudo_observations``
    (:math:`\\tilde\\mu - m`), ``a`` (:math:`C^{-1}(\\tilde\\mu - m)`), the factorisation of
    :math:`C`, the cavities' means and variances, the tilted log normalisers and the sweeps
    taken. Predictions read ``a``, ``factor``, ``w`` and ``pseudo_observations``, as they read
    a Laplace mode's."""

    __slots__ = ("a", "cavity_mean", "cavity_variance", "factor", "log_z", "pseudo_observations",
                 "site_mean", "sweeps", "w")  # fmt: skip

    def __init__(self, a, factor, w, site_mean, mean, cavity_mean, cavity_variance, log_z,
                 sweeps):  # fmt: skip
        self.a, self.factor, self.w = a, factor, w
        self.site_mean, self.pseudo_observations = site_mean, site_mean - mean
        self.cavity_mean, self.cavity_variance, self.log_z = cavity_mean, cavity_variance, log_z
        self.sweeps = sweeps


def find_sites(
    structure,
    likelihood: Likelihood,
    y,
    mean,
    parameters=(),
    *,
    describe=None,
    tol: float = TOLERANCE,
    max_sweeps: int = MAX_SWEEPS,
    anderson_depth: int = ANDERSON_DEPTH,
    warm=None,
):
    """Parallel EP (module notes): :class:`EPSites`, or ``None`` when ``K + diag(1/tau)`` is not
    numerically positive definite, rounding leaves a cavity variance that is not positive, or
    a tilted distribution has no finite moments (a sampler then rejects the point, as where
    the covariance is not positive definite).
    ``structure``, ``describe`` and ``warm`` are as for
    ``pymc_sle.gp._laplace._approximation.find_mode``; ``anderson_depth`` damped updates are
    combined (1: the damped sweeps alone).

    Raises
    ------
    EPError
        If ``max_sweeps`` sweeps do not converge.
    """
    n = structure.n
    start = None if warm is None else warm.get()
    if isinstance(start, tuple) and start[0].shape == (n,):
        precision, site_mean = start
    else:
        mode = find_mode(structure, likelihood, y, mean, parameters, describe=describe)
        if mode is None:
            return None
        precision, site_mean = mode.w, mean + mode.pseudo_observations
    damping, previous, sweeps = 1.0, np.inf, 0
    updates = collections.deque(maxlen=anderson_depth)  # (sites, damped update) pairs
    while sweeps < max_sweeps:
        sweeps += 1
        factor = structure.factor(1.0 / precision)
        if factor is None:
            return None
        a = factor.solve(site_mean - mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = (1.0 - factor.inverse_diagonal() / precision) / precision
            cavity_precision = 1.0 / variance - precision
        posterior_mean = site_mean - a / precision
        # rounding (a site so weak that its variance cancels to zero): as if C were not
        # positive definite
        if not np.all((cavity_precision > 0) & np.isfinite(cavity_precision)):
            return None
        cavity_variance = 1.0 / cavity_precision
        cavity_mean = cavity_variance * (posterior_mean / variance - precision * site_mean)
        log_z, tilted_mean, tilted_variance = likelihood.tilted(
            y, cavity_mean, cavity_variance, *parameters
        )
        # a cavity mean at which the likelihood's slope overflows has no finite tilted moments
        # (``tilted_by_quadrature``): the point is rejected
        if not np.all(np.isfinite(tilted_mean) & (tilted_variance > 0)):
            return None
        residual = max(
            float(np.max(np.abs(tilted_mean - posterior_mean) / np.sqrt(variance))),
            float(np.max(np.abs(tilted_variance / variance - 1.0))),
        )
        if residual <= tol:
            break
        if residual > previous:
            damping = max(0.5 * damping, MIN_DAMPING)
            updates.clear()
        previous = residual
        new_precision = np.maximum(1.0 / tilted_variance - cavity_precision, W_FLOOR)
        new_natural = tilted_mean / tilted_variance - cavity_precision * cavity_mean
        sites = np.concatenate([precision, precision * site_mean])
        damped = sites + damping * (np.concatenate([new_precision, new_natural]) - sites)
        updates.append((sites, damped))
        sites = _accelerated(updates, n)
        precision, site_mean = sites[:n], sites[n:] / sites[:n]
    else:
        raise EPError(
            f"expectation propagation did not converge in {max_sweeps} sweeps (tolerance "
            f"{tol:g}, last residual {residual:.3g}) at {described(describe)}"
        )
    if warm is not None:
        warm.put((precision, site_mean))
    return EPSites(a, factor, precision, site_mean, mean, cavity_mean, cavity_variance, log_z,
                   sweeps)  # fmt: skip


def _accelerated(updates, n: int) -> np.ndarray:
    """Anderson's next sites from the ``(sites, damped update)`` pairs (module notes): the
    updates combined with weights summing to one that minimise the combined residual, or the
    last damped update when there is one pair, a residual is not finite or a combined
    precision (the first ``n`` entries) is below ``W_FLOOR``."""
    damped = updates[-1][1]
    residuals = np.array([update - sites for sites, update in updates])
    if len(updates) < 2 or not np.all(np.isfinite(residuals)):
        return damped
    images = np.array([update for _, update in updates])
    weights = np.linalg.lstsq(np.diff(residuals, axis=0).T, residuals[-1], rcond=None)[0]
    combined = damped - weights @ np.diff(images, axis=0)
    return combined if np.all(combined[:n] >= W_FLOOR) else damped


def log_marginal(sites: EPSites) -> float:
    """:math:`\\log Z_{\\text{EP}}` at converged sites (module notes)."""
    total = sites.cavity_variance + 1.0 / sites.w
    site_terms = sites.log_z + 0.5 * (
        np.log(total) + (sites.cavity_mean - sites.site_mean) ** 2 / total
    )
    return float(
        -0.5 * sites.pseudo_observations @ sites.a - 0.5 * sites.factor.log_det() + site_terms.sum()
    )


def ep_terms(structure, likelihood, y, mean, parameters=(), *, with_gradients=True, warm=None,
             describe=None):  # fmt: skip
    """EP's :class:`~pymc_sle.gp._laplace._approximation.Terms` (module notes), ``None`` when
    :math:`C` is not numerically positive definite."""
    sites = find_sites(structure, likelihood, y, mean, parameters, warm=warm, describe=describe)
    if sites is None:
        return None
    value = log_marginal(sites)
    if not with_gradients:
        return Terms(value, sites)
    d_params = likelihood.tilted_parameter_derivatives(
        y, sites.cavity_mean, sites.cavity_variance, *parameters
    )
    return Terms(value, sites, sites.a, np.zeros(structure.n), d_params)
