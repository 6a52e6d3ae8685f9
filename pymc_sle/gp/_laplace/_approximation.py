r"""The Laplace approximation of a latent GP's marginal likelihood, its mode and its gradient.

For :math:`f = m + g`, :math:`g \sim \mathcal N(0, K)` and observations with a log-concave
likelihood (``_likelihoods``: :math:`b = \nabla\log p(y\mid f)`, :math:`W = -\nabla\nabla\log
p(y \mid f)` diagonal, :math:`c` the third derivatives), the mode :math:`\hat g` of
:math:`\Psi(g) = \log p(y \mid m + g) - \tfrac12 g^\top K^{-1} g` is found by Newton's method,
each step

.. math::

    a' = C^{-1}\bigl(g + W^{-1} b\bigr), \qquad g' = K a', \qquad C = K + W^{-1},

(Rasmussen & Williams, *GPML*, §3.4, written with :math:`C = K + W^{-1}`, the covariance
of a Gaussian model with noise variances :math:`W_i^{-1}`: the structure the dense and the
sparse Gaussian likelihoods factorise), damped by step halving until :math:`\Psi` does not
decrease. The iteration stops when a full step moves :math:`g` by at most ``tol`` times
:math:`1 + \lVert g\rVert_\infty`, or a step (full or halved) raises :math:`\Psi` by no
more than rounding (``ROUNDING`` of :math:`|\Psi|`) after ``PATIENCE`` steps: an
ill-conditioned :math:`K` can make the first test unreachable -- rounding in the solve then
moves the full step's :math:`g` by more than ``tol`` and lowers :math:`\Psi` -- and the second
alone would stop at a mode accurate to the square root of rounding only. It starts from a
mode found before at the nearest inputs (a warm start, ``_warm``: in a sampler, the chain's
previous evaluation), or from :math:`0` where that is higher.
At the mode :math:`a = K^{-1}\hat g = b`, and

.. math::

    \log q(y) = \log p(y \mid \hat f) - \tfrac12 a^\top \hat g
        - \tfrac12\bigl(\log|C| + \textstyle\sum_i \log W_i\bigr),

the last term being :math:`\log|I + W^{1/2} K W^{1/2}|`. **Gradient** (GPML Algorithm 5.1:
an explicit term and an implicit one through :math:`\hat f`). With :math:`\Sigma =
(K^{-1} + W)^{-1}`, :math:`\Sigma_{ii} = W_i^{-1} - W_i^{-2} (C^{-1})_{ii}`,
:math:`s = \tfrac12 \Sigma_{ii} c_i` and :math:`t = C^{-1}(s / W)` (that is
:math:`(I + WK)^{-1} s`),

.. math::

    \frac{\partial \log q}{\partial K} = \tfrac12\bigl(a a^\top - C^{-1}\bigr)
        + \tfrac12\bigl(a t^\top + t a^\top\bigr)
        = \tfrac12\bigl(p p^\top - t t^\top - C^{-1}\bigr), \quad p = a + t, \qquad
    \frac{\partial \log q}{\partial m} = a + t,

and for a likelihood parameter :math:`\psi`, :math:`\partial_\psi \log p(y \mid \hat f) -
\tfrac12 \sum_i \Sigma_{ii}\, \partial_\psi W_i + (K t)^\top \partial_\psi b`. For a Gaussian
likelihood (:math:`W = \sigma^{-2}`, :math:`c = 0`) the mode is the posterior mean after one
step, and :math:`\log q` is the exact marginal likelihood.

A *structure* gives :math:`K` as its solver needs it: :class:`DenseStructure` (any covariance
matrix) and, in ``_sparse``, the sparse SLE's :math:`K = B + UU^\top`. It provides
``n``, ``matvec(a)`` (:math:`Ka`), ``factor(noise)`` (a factorisation of :math:`K +
\operatorname{diag}(noise)`, ``None`` if not positive definite) and ``gradient(factor,
alpha, minus)``, the parameters' gradient for :math:`\Omega = \tfrac12(\alpha\alpha^\top -
\mu\mu^\top - C^{-1})`. A factorisation provides ``solve(rhs)``, ``log_det()`` and
``inverse_diagonal()``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from pymc_sle.gp._laplace._likelihoods import W_FLOOR, Likelihood

__all__ = [
    "DenseStructure",
    "LaplaceMode",
    "NewtonError",
    "Terms",
    "dense_approximation",
    "described",
    "find_mode",
    "implicit_terms",
    "laplace_terms",
    "likelihood_gradients",
    "log_marginal",
]

#: Newton's default tolerance on the change of the latent mode (relative to its size).
TOLERANCE = 1e-10
#: Newton steps before :class:`NewtonError`.
MAX_ITERATIONS = 100
#: Step halvings per Newton step before the line search gives up.
MAX_HALVINGS = 40
#: Changes of the objective below this fraction of it are rounding (about 50 ulps).
ROUNDING = 1e-14
#: Newton steps after which a step that gains only rounding also ends the iteration.
PATIENCE = 20


class NewtonError(ValueError):
    """Newton's method did not find the Laplace mode (the message names the parameters)."""


class DenseStructure:
    """A dense covariance matrix ``K`` (jitter included) as the Newton iteration uses it."""

    def __init__(self, cov):
        self.cov = np.asarray(cov, dtype=float)
        self.n = self.cov.shape[0]

    def matvec(self, a):
        return self.cov @ a

    def factor(self, noise):
        matrix = self.cov.copy()
        matrix[np.diag_indices(self.n)] += noise
        try:
            return _DenseFactor(linalg.cho_factor(matrix, lower=True, check_finite=False))
        except linalg.LinAlgError:
            return None


class _DenseFactor:
    def __init__(self, factor):
        self.cho = factor
        self._inverse = None

    def solve(self, rhs):
        return linalg.cho_solve(self.cho, rhs, check_finite=False)

    def log_det(self):
        return 2.0 * float(np.sum(np.log(np.diag(self.cho[0]))))

    def inverse(self):
        if self._inverse is None:
            lower = np.tril(lapack.dpotri(self.cho[0], lower=1)[0])
            self._inverse = lower + np.tril(lower, -1).T
        return self._inverse

    def inverse_diagonal(self):
        r""":math:`(C^{-1})_{ii} = \sum_k (L^{-1})_{ki}^2` (half the work of the inverse)."""
        root = np.tril(lapack.dtrtri(self.cho[0], lower=1)[0])
        return np.einsum("ki,ki->i", root, root)


class LaplaceMode:
    """The converged Newton iterate: ``a``, ``g`` (``K a``), the likelihood's ``(log p, b, W,
    c)`` at ``m + g``, the factorisation of ``K + W^{-1}`` and the iterations taken."""

    __slots__ = ("a", "b", "factor", "g", "iterations", "log_lik", "third", "w")

    def __init__(self, a, g, log_lik, b, w, third, factor, iterations):
        self.a, self.g, self.log_lik, self.b, self.w = a, g, log_lik, b, w
        self.third, self.factor, self.iterations = third, factor, iterations

    @property
    def pseudo_observations(self):
        """``g + b / W``: the Gaussian observations with noise ``1 / W`` whose posterior mean
        is the mode (``C^{-1}`` of them is ``a``)."""
        return self.g + self.b / self.w


def _objective(likelihood, y, mean, a, g, parameters):
    log_lik = likelihood.derivatives(y, mean + g, *parameters)[0]
    return log_lik - 0.5 * float(a @ g) if np.isfinite(log_lik) else -np.inf


def find_mode(
    structure,
    likelihood: Likelihood,
    y,
    mean,
    parameters=(),
    *,
    describe=None,
    tol: float = TOLERANCE,
    max_iterations: int = MAX_ITERATIONS,
    warm=None,
):
    """Newton's method for the Laplace mode (module notes); ``None`` when ``K + W^{-1}`` is not
    numerically positive definite. ``describe()`` names the parameters in the error; ``warm``,
    a ``_warm.WarmStart``, gives the start and keeps the mode.

    Raises
    ------
    NewtonError
        If ``max_iterations`` steps do not converge.
    """
    n = structure.n
    start = None if warm is None else warm.get()
    a = np.zeros(n)
    g = np.zeros(n)
    psi = _objective(likelihood, y, mean, a, g, parameters)
    if isinstance(start, np.ndarray) and start.shape == (n,):
        g_start = structure.matvec(start)
        psi_start = _objective(likelihood, y, mean, start, g_start, parameters)
        if psi_start > psi:
            a, g, psi = start, g_start, psi_start
    taken = 0
    while taken < max_iterations:
        taken += 1
        _, b, w, _ = likelihood.derivatives(y, mean + g, *parameters)
        w = np.maximum(w, W_FLOOR)
        factor = structure.factor(1.0 / w)
        if factor is None:
            return None
        a_full = factor.solve(g + b / w)
        stepped = _line_search(structure, likelihood, y, mean, parameters, a, g, psi, a_full)
        if stepped is None:  # no ascent along an ascent direction: the optimum, to rounding
            break
        a_new, g_new, psi_new, full = stepped
        moved = np.max(np.abs(g_new - g))
        gain = psi_new - psi
        a, g, psi = a_new, g_new, psi_new
        rounding = taken >= PATIENCE and gain <= ROUNDING * max(1.0, abs(psi))
        if (full and moved <= tol * (1.0 + np.max(np.abs(g)))) or rounding:
            break
    else:
        raise NewtonError(
            f"Newton's method for the Laplace mode did not converge in {max_iterations} "
            f"iterations (tolerance {tol:g}) at {described(describe)}"
        )
    if warm is not None:
        warm.put(a)
    log_lik, b, w, third = likelihood.derivatives(y, mean + g, *parameters)
    return LaplaceMode(a, g, log_lik, b, np.maximum(w, W_FLOOR), third, factor, taken)


def _line_search(structure, likelihood, y, mean, parameters, a, g, psi, a_full):
    r"""``(a, g, psi, full step?)`` after the longest step towards ``a_full`` (halved until
    :math:`\Psi` does not decrease beyond rounding), or ``None`` when none does."""
    g_full = structure.matvec(a_full)
    step = 1.0
    for _ in range(MAX_HALVINGS):
        a_try = a + step * (a_full - a)
        g_try = g + step * (g_full - g)
        psi_try = _objective(likelihood, y, mean, a_try, g_try, parameters)
        if psi_try >= psi - ROUNDING * max(1.0, abs(psi)):
            return a_try, g_try, psi_try, step == 1.0
        step *= 0.5
    return None


def described(describe) -> str:
    """What an error names: ``describe()``, or "these parameters" without it."""
    return "these parameters" if describe is None else describe()


def log_marginal(mode: LaplaceMode) -> float:
    """``log q(y)`` at the mode (module notes)."""
    return (
        mode.log_lik
        - 0.5 * float(mode.a @ mode.g)
        - 0.5 * (mode.factor.log_det() + float(np.sum(np.log(mode.w))))
    )


def implicit_terms(mode: LaplaceMode, inverse_diagonal):
    """``(Sigma_ii, t)`` of the gradient (module notes), from ``diag(C^{-1})``."""
    w = mode.w
    variance = 1.0 / w - inverse_diagonal / (w * w)
    s = 0.5 * variance * mode.third
    return variance, mode.factor.solve(s / w)


def likelihood_gradients(mode, structure, likelihood, y, mean, parameters, variance, t):
    """``d log q / d psi`` for each likelihood parameter (module notes)."""
    derivatives = likelihood.parameter_derivatives(y, mean + mode.g, *parameters)
    if not derivatives:
        return ()
    k_t = structure.matvec(t)
    return tuple(
        float(d_value - 0.5 * np.sum(variance * d_w) + k_t @ d_b)
        for d_value, d_b, d_w in derivatives
    )


class Terms(NamedTuple):
    r"""What the log density and its gradient need from an approximation: ``value`` (the log
    marginal likelihood), ``state`` (a :class:`LaplaceMode` or EP's sites: ``a``, ``factor``,
    ``w``, ``pseudo_observations``) and, with gradients, ``p`` and ``t`` with
    :math:`\partial/\partial K = \tfrac12(pp^\top - tt^\top - C^{-1})`,
    :math:`\partial/\partial m = p`, and ``d_params``, one per likelihood parameter."""

    value: float
    state: object
    p: np.ndarray | None = None
    t: np.ndarray | None = None
    d_params: tuple = ()


def laplace_terms(structure, likelihood, y, mean, parameters=(), *, with_gradients=True,
                  warm=None, describe=None):  # fmt: skip
    """The Laplace approximation's :class:`Terms` (module notes), ``None`` when ``K +
    W^{-1}`` is not numerically positive definite."""
    mode = find_mode(structure, likelihood, y, mean, parameters, warm=warm, describe=describe)
    if mode is None:
        return None
    value = log_marginal(mode)
    if not with_gradients:
        return Terms(value, mode)
    variance, t = implicit_terms(mode, mode.factor.inverse_diagonal())
    d_params = likelihood_gradients(mode, structure, likelihood, y, mean, parameters, variance, t)
    return Terms(value, mode, mode.a + t, t, d_params)


def dense_approximation(cov, y, mean, likelihood, parameters=(), *, terms=laplace_terms,
                        with_gradients=True, warm=None, describe=None):  # fmt: skip
    """``log q(y)`` by ``terms`` (:func:`laplace_terms` or EP's) for the dense covariance
    ``cov`` (jitter included) and, with gradients, ``(d/d cov, d/d mean, d/d each likelihood
    parameter)``; ``-inf`` and zeros when the approximation's ``C`` is not numerically
    positive definite."""
    structure = DenseStructure(cov)
    n = structure.n
    found = terms(structure, likelihood, y, mean, parameters, with_gradients=with_gradients,
                  warm=warm, describe=describe)  # fmt: skip
    if found is None:
        return -np.inf, (np.zeros((n, n)), np.zeros(n), *np.zeros(len(parameters)))
    if not with_gradients:
        return found.value, None
    p, t = found.p, found.t
    d_cov = 0.5 * (np.outer(p, p) - np.outer(t, t) - found.state.factor.inverse())
    return found.value, (d_cov, p, *found.d_params)
