r"""The exact SLE marginal likelihood through a sparse factorisation.

For the SLE with scalar bump parameters and signal variance :math:`s`, let :math:`\Phi` be the
(sparse) embedding of the training points, :math:`n_i = \lVert\phi_i\rVert^2`,
:math:`G = \Phi\Phi^\top`, :math:`E_{ij} = \lVert\phi_i - \phi_j\rVert^2` and
:math:`\gamma = 1/\ell^2`. The inner kernel is a positive mixture of Gaussians,
:math:`h(\sqrt x) = \sum_k w_k e^{-a_k x}` (exact for the RBF: one term, :math:`a = 1/2`; a
quadrature for Matérn, ``pymc_sle.gp._sparse._mixtures``). With :math:`c_k = a_k\gamma` and
:math:`u^k_i = e^{-c_k n_i}`, each term splits as :math:`e^{-c_k E_{ij}} = u^k_i u^k_j
e^{2 c_k G_{ij}}`, and the covariance of the observations is

.. math::

    C = K + vI = B + U U^\top, \qquad
    B_{ij} = s \sum_k w_k \tilde k^k_{ij} + v\,\delta_{ij}, \qquad
    \tilde k^k_{ij} = e^{-c_k E_{ij}} - u^k_i u^k_j = u^k_i u^k_j \bigl(e^{2c_k G_{ij}} - 1\bigr),

with :math:`U_{ik} = \sqrt{s w_k}\, u^k_i` and :math:`v` the noise variance (jitter included).
:math:`\tilde k^k_{ij} = 0` wherever :math:`G_{ij} = 0` -- two points that share no landmark --
so :math:`B` is sparse, and it is positive definite: :math:`e^{\circ 2c_k G} - \mathbf 1\mathbf
1^\top = \sum_{p \ge 1} (2c_k G)^{\circ p}/p!` is a sum of Hadamard powers of a PSD matrix
(Schur), and the weights are positive. Its entries lie in :math:`[-s, s] + v\delta_{ij}`:
computing them never overflows, as :math:`e^{c_k n_i}` would. Columns of :math:`U` that vanish
numerically (large :math:`c_k n_i`) are dropped. With :math:`Z = B^{-1}U` and
:math:`M = I + U^\top Z = L_M L_M^\top`, the determinant lemma and Woodbury give

.. math::

    \log|C| = \log|B| + \log|M|, \qquad
    \alpha = C^{-1}r = B^{-1}r - Z M^{-1} U^\top B^{-1} r, \qquad
    \log p(r) = -\tfrac12 r^\top\alpha - \tfrac12\log|C| - \tfrac n2\log 2\pi.

**Gradient.** :math:`\partial\log p = \tfrac12\operatorname{tr}\bigl((\alpha\alpha^\top -
C^{-1})\,\partial C\bigr)` with :math:`C^{-1} = B^{-1} - YY^\top`, :math:`Y = Z L_M^{-\top}`.
:math:`\partial B` is non-zero only on :math:`B`'s pattern, so :math:`B^{-1}` is needed there
only: the selected inverse (``pymc_sle._linalg._supernodal``). The low-rank part contributes through
:math:`\partial\log p/\partial U = \alpha(\alpha^\top U) - C^{-1}U` with :math:`C^{-1}U = Z
M^{-1}`. The radius, amplitude and shape act through :math:`E_{ij}` and :math:`n_i`, whose
derivatives come from the bump's on the embedding's non-zeros.

**Pattern.** The pattern of :math:`B` is that of :math:`G` at the largest radius the model allows
(the distances' ``cutoff``): pairs sharing a landmark within it. A smaller radius leaves explicit
zeros, so one symbolic analysis serves every evaluation.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import linalg

from pymc_sle._linalg._supernodal import (
    factorize,
    log_determinant,
    multiply_factor,
    selected_inverse,
    solve,
)
from pymc_sle.gp._sparse._problem import SparseSLEProblem

__all__ = [
    "PARAMETERS",
    "admissible",
    "bump_embedding",
    "covariance_entries",
    "draw",
    "factor_entries",
    "factorise",
    "inverse_parts",
    "log_density",
    "log_determinant_of",
    "parameter_gradients",
    "posterior_weights",
    "row_norms",
    "solve_b",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Parameters of the log density after the residual, in the Op's input order.
PARAMETERS = ("radius", "amplitude", "shape", "ls", "scale", "noise")


@numba.njit(cache=True, nogil=True)
def bump_embedding(distances, radius, amplitude, shape):
    """The bump :math:`a e^{\\beta(1 - t)}`, :math:`t = 1/(1 - d^2/r^2)`, and its derivatives in
    the radius and the shape (the amplitude's is ``phi / a``)."""
    phi = np.zeros(distances.size)
    d_radius = np.zeros(distances.size)
    d_shape = np.zeros(distances.size)
    for e in range(distances.size):
        d = distances[e]
        if d < radius:
            q = (d / radius) ** 2
            t = 1.0 / (1.0 - q)
            value = amplitude * np.exp(shape * (1.0 - t))
            phi[e] = value
            if value > 0.0:
                d_radius[e] = 2.0 * shape * value * t * t * q / radius
                d_shape[e] = value * (1.0 - t)
    return phi, d_radius, d_shape


@numba.njit(cache=True, nogil=True)
def _pair_quantities(phi, d_radius, d_shape, norms, pair_ptr, left, right, pair_i, pair_j):
    r"""Per pair: ``E``, ``G`` and the radius and shape derivatives of ``E``, from the products
    of ``_pair_products`` (entries the current radius leaves at 0 add 0). Then
    :math:`E_{ij} = n_i + n_j - 2G_{ij}`, floored at 0: the cancellation costs at most
    :math:`\epsilon (n_i + n_j)` absolutely, far below what moves a kernel value."""
    n_pairs = pair_i.size
    values, radius_norms, shape_norms = norms
    squared = np.zeros(n_pairs)
    inner = np.zeros(n_pairs)
    squared_radius = np.zeros(n_pairs)
    squared_shape = np.zeros(n_pairs)
    for e in range(n_pairs):
        i, j = pair_i[e], pair_j[e]
        if i == j:
            continue
        g = g_radius = g_shape = 0.0
        for t in range(pair_ptr[e], pair_ptr[e + 1]):
            a, b = left[t], right[t]
            fa, fb = phi[a], phi[b]
            g += fa * fb
            g_radius += d_radius[a] * fb + fa * d_radius[b]
            g_shape += d_shape[a] * fb + fa * d_shape[b]
        inner[e] = g
        squared[e] = max(values[i] + values[j] - 2.0 * g, 0.0)
        squared_radius[e] = radius_norms[i] + radius_norms[j] - 2.0 * g_radius
        squared_shape[e] = shape_norms[i] + shape_norms[j] - 2.0 * g_shape
    return squared, inner, squared_radius, squared_shape


#: exp(-x) underflows to 0 beyond this x: mixture terms past it are skipped.
_UNDERFLOW = 745.0


@numba.njit(cache=True, nogil=True)
def _tilde(norms, squared, inner, pair_i, pair_j, rates, weights):
    """``sum_k w_k k~^k`` per pair (see the module docstring), without overflow; ``rates`` are
    ``c_k = a_k / ls**2`` in increasing order."""
    n_pairs = pair_i.size
    tilde = np.zeros(n_pairs)
    for e in range(n_pairs):
        i, j = pair_i[e], pair_j[e]
        both = norms[i] + norms[j]
        total = 0.0
        for k in range(rates.size):
            c = rates[k]
            if c * squared[e] > _UNDERFLOW:
                break
            if i == j:
                total -= weights[k] * np.expm1(-c * both)
            elif 2.0 * c * inner[e] < 1.0:
                total += weights[k] * np.exp(-c * both) * np.expm1(2.0 * c * inner[e])
            else:
                total += weights[k] * (np.exp(-c * squared[e]) - np.exp(-c * both))
        tilde[e] = total
    return tilde


@numba.njit(cache=True, nogil=True)
def row_norms(indptr, phi, d_radius, d_shape):
    n = indptr.size - 1
    norms = np.zeros(n)
    norms_radius = np.zeros(n)
    norms_shape = np.zeros(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            norms[i] += phi[p] * phi[p]
            norms_radius[i] += 2.0 * phi[p] * d_radius[p]
            norms_shape[i] += 2.0 * phi[p] * d_shape[p]
    return norms, norms_radius, norms_shape


@numba.njit(cache=True, nogil=True)
def covariance_gradient(
    pair_i, pair_j, selected, whitened, alpha, minus, squared, squared_radius, squared_shape,
    norms, norms_radius, norms_shape, g_low_rank, low_rank, rates, weights, kept,
    scale, gamma, amplitude,
):  # fmt: skip
    """``tr(Omega dC)`` with respect to radius, amplitude, shape, gamma, scale and the noise,
    for ``Omega = (alpha alpha^T - minus minus^T - C^{-1}) / 2`` (the Gaussian log density's
    ``d log p / d C`` with ``minus = 0``; the Laplace approximation's with ``alpha`` and ``minus``
    from ``pymc_sle.gp._laplace``).

    ``whitened`` is ``Y = Z L_M^{-T}`` (``C^{-1} = B^{-1} - Y Y^T``), ``g_low_rank`` is ``2 Omega
    U`` and ``low_rank`` is ``U``, both for the kept columns ``kept`` of the mixture."""
    g_radius = g_amplitude = g_shape = g_gamma = g_scale = g_noise = 0.0
    per_norm = np.zeros(norms.size)
    for e in range(pair_i.size):
        i, j = pair_i[e], pair_j[e]
        correction = 0.0
        for q in range(whitened.shape[1]):
            correction += whitened[i, q] * whitened[j, q]
        weight = 0.5 * (alpha[i] * alpha[j] - minus[i] * minus[j] - selected[e] + correction)
        if i == j:
            g_noise += weight
        else:
            weight *= 2.0
        both = norms[i] + norms[j]
        d_scale = d_gamma = d_squared = d_both = 0.0
        for k in range(rates.size):
            c = rates[k]
            if c * squared[e] > _UNDERFLOW:
                break
            exponential = np.exp(-c * squared[e])
            uu = np.exp(-c * both)
            d_scale += weights[k] * (exponential - uu)
            a = c / gamma
            d_gamma += weights[k] * a * (both * uu - squared[e] * exponential)
            d_squared -= weights[k] * c * exponential
            d_both += weights[k] * c * uu
        g_scale += weight * d_scale
        g_gamma += weight * scale * d_gamma
        along = weight * scale * d_squared
        g_radius += along * squared_radius[e]
        g_shape += along * squared_shape[e]
        g_amplitude += along * 2.0 * squared[e] / amplitude
        # each endpoint's norm, in both ordered pairs; the diagonal's u_i^2 holds n_i twice
        through_norms = weight * scale * d_both * (1.0 if i != j else 2.0)
        per_norm[i] += through_norms
        if i != j:
            per_norm[j] += through_norms
    for i in range(norms.size):
        for q in range(kept.size):
            c = rates[kept[q]]
            term = g_low_rank[i, q] * low_rank[i, q]
            g_scale += term / (2.0 * scale)
            g_gamma -= term * (c / gamma) * norms[i]
            per_norm[i] -= term * c
        g_radius += per_norm[i] * norms_radius[i]
        g_shape += per_norm[i] * norms_shape[i]
        g_amplitude += per_norm[i] * 2.0 * norms[i] / amplitude
    return g_radius, g_amplitude, g_shape, g_gamma, g_scale, g_noise


def admissible(radius, amplitude, ls, scale, noise) -> bool:
    """Whether the parameters define a covariance: all finite, the radius, amplitude, length
    scale and scale positive. A sampler's wild step outside (an underflowed radius, an
    overflowed length scale) gets ``-inf``, a rejected proposal."""
    values = (radius, amplitude, ls, scale, noise)
    return bool(np.all(np.isfinite(values))) and min(radius, amplitude, ls, scale) > 0.0


def _check_radius(problem: SparseSLEProblem, radius: float) -> None:
    if radius > problem.cutoff * (1.0 + 1e-12):
        raise ValueError(
            f"`radius` must be at most the cutoff {problem.cutoff:.6g} of the sparse distances "
            f"(larger distances are not stored), but is {radius:.6g}"
        )


#: Columns of U whose largest entry is below this fraction of sqrt(scale) are dropped: their
#: contribution to C is below 1e-32 * scale.
_NEGLIGIBLE = 1e-16


def covariance_entries(problem: SparseSLEProblem, radius, amplitude, shape, ls, scale):
    """The signal part of ``B`` on its pattern (``scale * sum_k w_k k~^k`` per pair, no noise),
    the low-rank part ``U`` (its kept mixture columns ``kept``), ``gamma`` and the embedding's
    norms and pair quantities: what one set of parameters fixes, whatever the noise."""
    _check_radius(problem, radius)
    gamma = 1.0 / (ls * ls)
    rates = problem.mixture.rates * gamma
    weights = problem.mixture.weights
    phi, d_radius, d_shape = bump_embedding(problem.distances, radius, amplitude, shape)
    norms = row_norms(problem.indptr, phi, d_radius, d_shape)
    pairs = _pair_quantities(
        phi, d_radius, d_shape, norms, *problem.pair_products, problem.pair_i, problem.pair_j
    )
    tilde = _tilde(norms[0], pairs[0], pairs[1], problem.pair_i, problem.pair_j, rates, weights)
    low_rank = np.sqrt(scale * weights) * np.exp(-np.outer(norms[0], rates))
    kept = np.flatnonzero(low_rank.max(axis=0) > _NEGLIGIBLE * np.sqrt(scale))
    low_rank = np.ascontiguousarray(low_rank[:, kept])
    return scale * tilde, low_rank, kept, gamma, norms, pairs


def factor_entries(problem: SparseSLEProblem, entries, noise):
    """The supernodal factor of ``B`` = the pattern's ``entries`` plus ``noise`` (a scalar, or
    one value per training point) on the diagonal; ``None`` if ``B`` is not numerically
    positive definite."""
    values = np.zeros(problem.symbolic.n_values)
    with_noise = entries.copy()
    with_noise[problem.diagonal] += noise
    values[problem.symbolic.entry_index] = with_noise
    return values if factorize(problem.symbolic, values) else None


def factorise(problem: SparseSLEProblem, radius, amplitude, shape, ls, scale, noise):
    """Everything one evaluation needs: the embedding's quantities, the factor of ``B``
    (``None`` if ``B`` is not numerically positive definite) and the low-rank part ``U``."""
    entries, low_rank, kept, gamma, norms, pairs = covariance_entries(
        problem, radius, amplitude, shape, ls, scale
    )
    factor = factor_entries(problem, entries, noise)
    return factor, low_rank, kept, gamma, norms, pairs


def solve_b(problem: SparseSLEProblem, factor, rhs: np.ndarray) -> np.ndarray:
    """``B^{-1} rhs`` in the original numbering."""
    symbolic = problem.symbolic
    solved_f = solve(
        factor,
        symbolic.sn_start,
        symbolic.rows_ptr,
        symbolic.rows,
        symbolic.l_ptr,
        np.ascontiguousarray(rhs[symbolic.perm]),
    )
    solved = np.empty_like(solved_f)
    solved[symbolic.perm] = solved_f
    return solved


def log_determinant_of(problem: SparseSLEProblem, factor) -> float:
    """``log |B|`` from its supernodal factor."""
    symbolic = problem.symbolic
    return log_determinant(factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.l_ptr)


def posterior_weights(problem, factor, low_rank, residual):
    """``alpha = C^{-1} r``, ``Z = B^{-1} U``, ``L_M`` and ``log |C| - log |B|`` (Woodbury);
    ``None`` if ``M`` is not numerically positive definite."""
    solved = solve_b(problem, factor, np.column_stack([residual, low_rank]))
    b_residual, z = solved[:, 0], solved[:, 1:]
    inner = np.eye(low_rank.shape[1]) + low_rank.T @ z
    try:
        chol_m = np.linalg.cholesky(inner)
    except np.linalg.LinAlgError:
        return None
    coefficients = linalg.cho_solve((chol_m, True), low_rank.T @ b_residual)
    alpha = b_residual - z @ coefficients
    return alpha, z, chol_m, 2.0 * np.sum(np.log(np.diag(chol_m)))


def log_density(
    problem: SparseSLEProblem,
    residual,
    radius,
    amplitude,
    shape,
    ls,
    scale,
    noise,
    with_gradients: bool = True,
):
    """``log p(residual)`` and, optionally, its gradient: ``(-alpha, d/d radius, amplitude,
    shape, ls, scale, noise)``. ``-inf`` and zero gradients when ``C`` is not numerically
    positive definite."""
    n = problem.n
    residual = np.asarray(residual, dtype=float)
    if not admissible(radius, amplitude, ls, scale, noise):
        zeros = (np.zeros(n), *np.zeros(len(PARAMETERS)))
        return -np.inf, zeros if with_gradients else None
    factor, low_rank, kept, gamma, norms, pairs = factorise(
        problem, radius, amplitude, shape, ls, scale, noise
    )
    weights_out = None if factor is None else posterior_weights(problem, factor, low_rank, residual)
    if weights_out is None:
        zeros = (np.zeros(n), *np.zeros(len(PARAMETERS)))
        return -np.inf, zeros if with_gradients else None
    alpha, z, chol_m, log_det_m = weights_out
    log_det = log_determinant_of(problem, factor) + log_det_m
    value = -0.5 * (residual @ alpha) - 0.5 * log_det - 0.5 * n * _LOG_2PI
    if not with_gradients:
        return value, None
    g_radius, g_amplitude, g_shape, g_ls, g_scale, g_noise = parameter_gradients(
        problem, factor, low_rank, kept, gamma, norms, pairs, z, chol_m, alpha,
        np.zeros(n), (amplitude, ls, scale),
    )  # fmt: skip
    return value, (-alpha, g_radius, g_amplitude, g_shape, g_ls, g_scale, g_noise)


def inverse_parts(problem: SparseSLEProblem, factor, z, chol_m):
    """``C^{-1} = B^{-1} - Y Y^T`` on ``B``'s pattern: the selected inverse of ``B`` per pair
    and ``Y = Z L_M^{-T}``."""
    symbolic = problem.symbolic
    selected = selected_inverse(symbolic, factor)[symbolic.entry_index]
    whitened = np.ascontiguousarray(linalg.solve_triangular(chol_m, z.T, lower=True).T)
    return selected, whitened


def parameter_gradients(
    problem, factor, low_rank, kept, gamma, norms, pairs, z, chol_m, alpha, minus, values,
    inverse=None,
):  # fmt: skip
    """``tr(Omega dC)`` for ``Omega = (alpha alpha^T - minus minus^T - C^{-1}) / 2`` with respect
    to ``(radius, amplitude, shape, ls, scale, noise)``; ``values`` are ``(amplitude, ls,
    scale)`` and ``inverse`` what :func:`inverse_parts` gives (computed when ``None``)."""
    amplitude, ls, scale = values
    selected, whitened = inverse_parts(problem, factor, z, chol_m) if inverse is None else inverse
    c_inverse_u = linalg.cho_solve((chol_m, True), z.T).T  # C^{-1} U = Z M^{-1}
    g_low_rank = np.ascontiguousarray(
        np.outer(alpha, alpha @ low_rank) - np.outer(minus, minus @ low_rank) - c_inverse_u
    )
    squared, _, squared_radius, squared_shape = pairs
    g_radius, g_amplitude, g_shape, g_gamma, g_scale, g_noise = covariance_gradient(
        problem.pair_i, problem.pair_j, selected, whitened, alpha, minus, squared,
        squared_radius, squared_shape, *norms, g_low_rank, low_rank, problem.mixture.rates * gamma,
        problem.mixture.weights, kept, scale, gamma, amplitude,
    )  # fmt: skip
    g_ls = g_gamma * (-2.0 / ls**3)
    return g_radius, g_amplitude, g_shape, g_ls, g_scale, g_noise


def draw(problem: SparseSLEProblem, *parameters, rng, size=(), mean=0.0):
    """Draws of ``N(mean, C)`` of shape ``(*size, n)``: ``mean + L_B w + U zeta`` with ``w``,
    ``zeta`` standard normal, whose covariance is ``B + U U^T = C``. ``parameters`` are
    :data:`PARAMETERS` (scalars or 0-d arrays); ``mean`` broadcasts against ``(n,)``."""
    values = (float(np.asarray(p)) for p in parameters)
    factor, low_rank, *_ = factorise(problem, *values)
    if factor is None:
        raise ValueError(
            "the SLE covariance at these parameters is not numerically positive definite; "
            "no draw exists"
        )
    symbolic = problem.symbolic
    size = () if size is None else tuple(np.atleast_1d(size).astype(int))
    count = int(np.prod(size)) if size else 1
    white = rng.standard_normal((problem.n, count))
    correlated_f = multiply_factor(
        factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.rows, symbolic.l_ptr, white
    )
    correlated = np.empty_like(correlated_f)
    correlated[symbolic.perm] = correlated_f
    correlated += low_rank @ rng.standard_normal((low_rank.shape[1], count))
    return np.asarray(mean) + correlated.T.reshape((*size, problem.n))
