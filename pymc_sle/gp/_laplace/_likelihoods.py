r"""The observation models of the Laplace GP: log-concave likelihoods of a latent value.

Each observation :math:`y_i` depends on the latent value :math:`f_i` alone, through
:math:`\log p(y_i \mid f_i)`. The Laplace approximation needs, at each :math:`f`, the
derivatives

.. math::

    b_i = \frac{\partial \log p(y_i \mid f_i)}{\partial f_i}, \qquad
    W_i = -\frac{\partial^2 \log p(y_i \mid f_i)}{\partial f_i^2}, \qquad
    c_i = \frac{\partial^3 \log p(y_i \mid f_i)}{\partial f_i^3},

all elementwise. Every model here is log-concave (:math:`W_i \ge 0`), so the Laplace
objective has exactly one mode. :math:`W_i` is floored at ``W_FLOOR`` (a point whose
probability has saturated, or a binomial with no trials), which moves the approximate
log marginal likelihood by at most :math:`\tfrac12 W_{\text{floor}} K_{ii}`.

=====================================  ==============================================  ==========
model                                  :math:`\log p(y \mid f)`                         parameters
=====================================  ==============================================  ==========
``Bernoulli()`` (logit)                :math:`\log\sigma(s f)`, :math:`s = 2y - 1`      --
``Bernoulli(link="probit")``           :math:`\log\Phi(s f)`                            --
``Binomial(n)`` (logit)                :math:`y f - n \log(1 + e^f) + \log\binom ny`     --
``Poisson()`` (log link)               :math:`y f - e^f - \log y!`                      --
``Gaussian(sigma)``                    :math:`\log\mathcal N(y; f, \sigma^2)`           ``sigma``
=====================================  ==============================================  ==========

A likelihood with parameters (the Gaussian's ``sigma``) also gives their derivatives of
:math:`\log p`, :math:`b` and :math:`W` (``Likelihood.parameter_derivatives``), which the
gradient of the approximation needs.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from scipy import special

__all__ = ["W_FLOOR", "Bernoulli", "Binomial", "Gaussian", "Likelihood", "Poisson",
           "tilted_by_quadrature"]  # fmt: skip

#: The smallest curvature :math:`W_i` the Newton iteration uses (module notes).
W_FLOOR = 1e-12
_LOG_2PI = float(np.log(2.0 * np.pi))


class Likelihood:
    """An observation model ``p(y_i | f_i)`` (module notes): subclasses give
    ``log_density`` and ``pointwise``, and ``check`` the observations they accept."""

    #: Names of the likelihood's parameters, in the order the Op takes them.
    parameter_names: tuple[str, ...] = ()

    def parameters(self) -> tuple:
        """The parameters as PyTensor scalars, in :attr:`parameter_names`' order."""
        return ()

    def check(self, y: np.ndarray) -> np.ndarray:
        """``y`` as a float array after checking its values; raises ``ValueError``."""
        return y

    def log_density(self, y, f, *parameters):
        r""":math:`\log p(y_i \mid f_i)` elementwise; ``f`` may carry leading axes beyond
        ``y``'s."""
        raise NotImplementedError

    def pointwise(self, y, f, *parameters):
        r"""``(log p, b, W, c)`` elementwise: ``log_density`` and its first, minus second
        and third derivatives in :math:`f_i` (module notes); ``f`` may carry leading axes
        beyond ``y``'s."""
        raise NotImplementedError

    def derivatives(self, y, f, *parameters):
        r"""``(log p, b, W, c)``: :math:`\sum_i \log p(y_i \mid f_i)` and the elementwise
        derivatives of ``pointwise``."""
        log_p, b, w, third = self.pointwise(y, f, *parameters)
        return float(np.sum(log_p)), b, w, third

    def tilted(self, y, cavity_mean, cavity_variance, *parameters):
        r"""``(log Z, mean, variance)`` of each tilted distribution :math:`p(y_i \mid f)\,
        \mathcal N(f; \mu_i, v_i)` (expectation propagation): its log normaliser and its
        moments. By default ``tilted_by_quadrature``, the trapezoidal rule over the tilted
        density's mass."""
        return tilted_by_quadrature(self, y, cavity_mean, cavity_variance, parameters)

    def tilted_parameter_derivatives(self, y, cavity_mean, cavity_variance, *parameters):
        r"""For each parameter, the derivative of :math:`\sum_i \log Z_i` at fixed cavities;
        none by default (a likelihood with parameters overrides it)."""
        if self.parameter_names:
            raise NotImplementedError(f"{type(self).__name__} has no tilted parameter derivatives")
        return ()

    def parameter_derivatives(self, y, f, *parameters):
        """For each parameter, the derivatives ``(d log p, d b, d W)``; none by default."""
        return ()

    def mean(self, latent_mean, latent_variance):
        """The predictive mean of ``y`` (probability, rate) at latent ``N(mean, variance)``."""
        raise NotImplementedError

    def sample(self, f, rng, *parameters):
        """Draws of ``y`` given the latent values ``f`` (any shape)."""
        raise NotImplementedError

    def key(self) -> tuple:
        """What identifies the model (its Op compares likelihoods by it)."""
        return (type(self).__name__,)

    def __eq__(self, other):
        return isinstance(other, Likelihood) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return f"{type(self).__name__}()"


def _check_binary(y):
    if not np.all((y == 0) | (y == 1)):
        bad = y[(y != 0) & (y != 1)][0]
        raise ValueError(f"`y` must hold 0 or 1 for a Bernoulli likelihood, but holds {bad!r}")
    return y


def _check_counts(y, upper=None, what="counts"):
    if np.any(y < 0) or np.any(y != np.round(y)):
        bad = y[(y < 0) | (y != np.round(y))][0]
        raise ValueError(f"`y` must hold non-negative integer {what}, but holds {bad!r}")
    if upper is not None and np.any(y > upper):
        i = int(np.flatnonzero(y > upper)[0])
        raise ValueError(
            f"`y` must be at most the number of trials `n`, but y[{i}] = {y[i]:g} > n[{i}] = "
            f"{upper[i]:g}"
        )
    return y


#: Gauss-Hermite nodes and weights (probabilists'), for predictive means without closed form.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(64)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _gauss_hermite(function, mean, variance):
    """``E[function(f)]`` for ``f ~ N(mean, variance)`` (64-point Gauss-Hermite)."""
    mean, sd = np.asarray(mean, float), np.sqrt(np.maximum(variance, 0.0))
    return function(mean[..., None] + sd[..., None] * _NODES) @ _WEIGHTS


#: The tilted quadrature (``tilted_by_quadrature``): bisection steps for each end of its
#: range, the tilted log density's drop at the ends, the fewest nodes over the range, the
#: widest spacing in units of the latent value, and the most nodes (chosen by the study in
#: benchmarks/results/studies/tilted_quadrature.md).
_END_STEPS, _DROP = 12, 40.0
_MIN_NODES, _MAX_SPACING, _MAX_NODES = 81, 0.3, 4001
#: Nodes times observations per block of the quadrature's sums (bounds its memory).
_BLOCK = 2**21
#: Safeguarded Newton steps for the tilted modes, and their relative tolerance: enough for
#: bisection alone to close any finite bracket (width below 2¹⁰²⁴) to the tolerance.
_MODE_STEPS, _MODE_TOLERANCE = 1100, 1e-13


@np.errstate(over="ignore", invalid="ignore")  # exp overflows far above a Poisson mode
def tilted_by_quadrature(
    likelihood,
    y,
    cavity_mean,
    cavity_variance,
    parameters,
    *,
    min_nodes=_MIN_NODES,
    max_spacing=_MAX_SPACING,
    max_nodes=_MAX_NODES,
):
    r"""``Likelihood.tilted`` by the trapezoidal rule over each tilted density's mass.

    The tilted log density :math:`h(f) = \log p(y \mid f) - (f - \mu)^2 / 2v` is concave with
    slope :math:`b(f) - (f - \mu)/v`, so its mode :math:`\hat f` lies between :math:`\mu` and
    :math:`\mu + v\,b(\mu)` (Newton's method within that bracket from its first step,
    bisecting where a step leaves it), and it falls by ``_DROP`` within :math:`\sqrt{2 \cdot
    \mathrm{\_DROP}\, v}` of the mode on either side (bisection finds where). Over that range
    the trapezoidal rule with equally spaced nodes converges geometrically for these analytic
    integrands, at a rate set by the spacing against the tilted density's width and against
    the distance of the likelihood's singularities from the real axis (:math:`\pi` for the
    logistic): at least ``min_nodes`` nodes span the range, at most ``max_spacing`` apart
    (up to ``max_nodes``). All observations share the largest count; the extra nodes fall
    beyond the range, where the density has dropped by more than ``_DROP``. The moments come
    from the same nodes, about the mode. A cavity mean at which the likelihood's slope
    overflows (counts: a log rate above 709) leaves no finite bracket: ``log Z`` and the
    moments are then NaN (EP rejects the point)."""
    mu = np.asarray(cavity_mean, float)
    v = np.asarray(cavity_variance, float)

    def log_tilted(f):
        return likelihood.log_density(y, f, *parameters) - 0.5 * (f - mu) ** 2 / v

    _, b, w, _ = likelihood.pointwise(y, mu, *parameters)
    end = mu + v * b
    low, high = np.minimum(mu, end), np.maximum(mu, end)
    f, last = mu + b / (w + 1.0 / v), high - low  # the first Newton step, inside the bracket
    found = np.zeros(np.shape(f), dtype=bool)
    for _ in range(_MODE_STEPS):
        _, b, w, _ = likelihood.pointwise(y, f, *parameters)
        slope = b - (f - mu) / v
        low, high = np.where(slope > 0, f, low), np.where(slope > 0, high, f)
        newton = slope / (w + 1.0 / v)
        # bisect where Newton leaves the bracket or does not halve the step before
        slow = ~np.isfinite(newton) | (np.abs(newton) > 0.5 * last)
        stepped = np.where(slow, 0.5 * (low + high), f + newton)
        stepped = np.where((stepped < low) | (stepped > high), 0.5 * (low + high), stepped)
        stepped = np.where(found, f, stepped)
        last = np.abs(stepped - f)
        f = stepped
        found |= last <= _MODE_TOLERANCE * (1.0 + np.abs(f))
        if np.all(found):
            break
    top = log_tilted(f)
    # both ends at once: row 0 below the mode, row 1 above
    inside = np.stack([f, f])
    outside = inside + np.sqrt(2.0 * _DROP * v) * np.array([[-1.0], [1.0]])
    for _ in range(_END_STEPS):
        middle = 0.5 * (inside + outside)
        above = log_tilted(middle) > top - _DROP
        inside, outside = np.where(above, middle, inside), np.where(above, outside, middle)
    start, width = outside[0], outside[1] - outside[0]
    needed = np.maximum(min_nodes, np.ceil(width / max_spacing) + 1)
    count = int(min(np.nanmax(needed, initial=min_nodes), max_nodes))  # NaN cavities: NaN moments
    step = np.maximum(np.minimum(width / (min_nodes - 1), max_spacing), width / (count - 1))
    moments = np.zeros((3, *np.shape(f)))
    rows = max(1, _BLOCK // max(1, np.size(f)))
    for first in range(0, count, rows):
        nodes = start + step * np.arange(first, min(first + rows, count))[:, None]
        terms = np.exp(log_tilted(nodes) - top)
        offsets = nodes - f
        moments += [terms.sum(0), (terms * offsets).sum(0), (terms * offsets**2).sum(0)]
    mass, shift = moments[0], moments[1] / moments[0]
    log_z = top + np.log(mass * step / np.sqrt(2.0 * np.pi * v))
    return log_z, f + shift, moments[2] / mass - shift**2


class Bernoulli(Likelihood):
    r"""Binary observations, :math:`P(y = 1 \mid f) = \sigma(f)` (``link="logit"``) or
    :math:`\Phi(f)` (``link="probit"``).

    Parameters
    ----------
    link : {"logit", "probit"}
    """

    def __init__(self, link: str = "logit"):
        if link not in ("logit", "probit"):
            raise ValueError(f"`link` must be 'logit' or 'probit', but got {link!r}")
        self.link = link

    def check(self, y):
        return _check_binary(y)

    def log_density(self, y, f):
        z = (2.0 * y - 1.0) * f
        if self.link == "probit":
            return special.log_ndtr(z)
        return np.minimum(z, 0.0) - np.log1p(np.exp(-np.abs(z)))  # log sigmoid(z), stably

    def pointwise(self, y, f):
        s = 2.0 * y - 1.0
        z = s * f
        log_p = self.log_density(y, f)
        if self.link == "logit":
            p = special.expit(f)
            w = p * (1.0 - p)
            return log_p, y - p, w, -w * (1.0 - 2.0 * p)
        log_cdf = log_p
        ratio = np.exp(-0.5 * z * z - 0.5 * _LOG_2PI - log_cdf)  # phi(z) / Phi(z)
        w = ratio * (z + ratio)
        d_ratio = -w
        third = -(d_ratio * (z + ratio) + ratio * (1.0 + d_ratio))
        return log_cdf, s * ratio, w, s * third

    def tilted(self, y, cavity_mean, cavity_variance):
        """Closed form for the probit link (Rasmussen & Williams, eq. 3.58); quadrature for
        the logit."""
        if self.link == "logit":
            return super().tilted(y, cavity_mean, cavity_variance)
        s = 2.0 * y - 1.0
        root = np.sqrt(1.0 + cavity_variance)
        z = s * cavity_mean / root
        log_z = special.log_ndtr(z)
        ratio = np.exp(-0.5 * z * z - 0.5 * _LOG_2PI - log_z)
        mean = cavity_mean + s * cavity_variance * ratio / root
        variance = cavity_variance - cavity_variance**2 * ratio * (z + ratio) / (
            1.0 + cavity_variance
        )
        return log_z, mean, variance

    def mean(self, latent_mean, latent_variance):
        if self.link == "probit":
            return special.ndtr(latent_mean / np.sqrt(1.0 + latent_variance))
        return _gauss_hermite(special.expit, latent_mean, latent_variance)

    def sample(self, f, rng):
        p = special.expit(f) if self.link == "logit" else special.ndtr(f)
        return (rng.uniform(size=np.shape(f)) < p).astype(float)

    def key(self):
        return ("Bernoulli", self.link)

    def __repr__(self):
        return f"Bernoulli(link={self.link!r})"


class Binomial(Likelihood):
    r"""Successes out of ``n`` trials, :math:`y \sim \mathrm{Binomial}(n, \sigma(f))`.

    Parameters
    ----------
    n : int or array of int
        Trials per observation (broadcast to ``y``), at least 0.
    """

    def __init__(self, n):
        n = np.asarray(n, dtype=float)
        if np.any(n < 0) or np.any(n != np.round(n)) or not np.all(np.isfinite(n)):
            raise ValueError(f"`n` must hold non-negative integer trial counts, but got {n!r}")
        self.n = n

    def check(self, y):
        try:
            n = np.broadcast_to(self.n, y.shape)
        except ValueError:
            raise ValueError(
                f"`n` must broadcast to the shape {y.shape} of `y`, but has shape {self.n.shape}"
            ) from None
        return _check_counts(y, n, "successes")

    def log_density(self, y, f):
        n = np.broadcast_to(self.n, np.shape(y))
        log_choose = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
        return y * f - n * np.logaddexp(0.0, f) + log_choose

    def pointwise(self, y, f):
        n = np.broadcast_to(self.n, np.shape(y))
        p = special.expit(f)
        w = n * p * (1.0 - p)
        return self.log_density(y, f), y - n * p, w, -w * (1.0 - 2.0 * p)

    def mean(self, latent_mean, latent_variance):
        """The success probability (multiply by the trials for the expected count)."""
        return _gauss_hermite(special.expit, latent_mean, latent_variance)

    def sample(self, f, rng):
        return rng.binomial(np.broadcast_to(self.n, np.shape(f)).astype(int), special.expit(f))

    def key(self):
        return ("Binomial", self.n.shape, self.n.tobytes())

    def __repr__(self):
        return f"Binomial(n={self.n!r})"


class Poisson(Likelihood):
    r"""Counts, :math:`y \sim \mathrm{Poisson}(e^{f})` (an exposure enters as the log offset of
    the GP's mean function)."""

    def check(self, y):
        return _check_counts(y)

    # far above the counts (a line search's trial step), exp overflows: the log density is
    # -inf there, which rejects the step
    @np.errstate(over="ignore")
    def log_density(self, y, f):
        return y * f - np.exp(f) - special.gammaln(y + 1)

    @np.errstate(over="ignore")
    def pointwise(self, y, f):
        rate = np.exp(f)
        return self.log_density(y, f), y - rate, rate, -rate

    def mean(self, latent_mean, latent_variance):
        return np.exp(latent_mean + 0.5 * latent_variance)

    def sample(self, f, rng):
        return rng.poisson(np.exp(f)).astype(float)


class Gaussian(Likelihood):
    r"""Real observations, :math:`y \sim \mathcal N(f, \sigma^2)`: the Laplace approximation is
    then exact, and equals the GP's marginal likelihood (a check of the machinery).

    Parameters
    ----------
    sigma : float or TensorVariable
        The noise standard deviation (a model variable to give it a prior).
    """

    parameter_names = ("sigma",)

    def __init__(self, sigma):
        self.sigma = sigma

    def parameters(self):
        return (pt.as_tensor_variable(self.sigma),)

    def check(self, y):
        return y

    def log_density(self, y, f, sigma):
        return -0.5 * ((y - f) / sigma) ** 2 - np.log(sigma) - 0.5 * _LOG_2PI

    def pointwise(self, y, f, sigma):
        residual = y - f
        precision = 1.0 / (sigma * sigma)
        w = np.full(np.shape(residual), precision)
        return self.log_density(y, f, sigma), residual * precision, w, np.zeros(np.shape(residual))

    def parameter_derivatives(self, y, f, sigma):
        residual = y - f
        d_value = np.sum(residual**2) / sigma**3 - np.size(f) / sigma
        d_b = -2.0 * residual / sigma**3
        d_w = np.full(np.shape(f), -2.0 / sigma**3)
        return ((d_value, d_b, d_w),)

    def tilted(self, y, cavity_mean, cavity_variance, sigma):
        total = sigma * sigma + cavity_variance
        residual = y - cavity_mean
        log_z = -0.5 * (residual**2 / total + np.log(total) + _LOG_2PI)
        return (
            log_z,
            cavity_mean + cavity_variance * residual / total,
            (cavity_variance * sigma * sigma / total),
        )

    def tilted_parameter_derivatives(self, y, cavity_mean, cavity_variance, sigma):
        total = sigma * sigma + cavity_variance
        return (float(np.sum(sigma * ((y - cavity_mean) ** 2 / total - 1.0) / total)),)

    def mean(self, latent_mean, latent_variance):
        return np.asarray(latent_mean, float)

    def sample(self, f, rng, sigma):
        return f + sigma * rng.standard_normal(np.shape(f))

    def __repr__(self):
        return f"Gaussian(sigma={self.sigma!r})"
