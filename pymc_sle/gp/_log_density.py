r"""A zero-mean Gaussian log density whose gradient is computed analytically.

For :math:`r \sim \mathcal N(0, K)` with :math:`K = LL^\top` and :math:`\alpha = K^{-1} r`,

.. math::

    \log p(r) = -\tfrac12 r^\top\alpha - \sum_i \log L_{ii} - \tfrac n2 \log 2\pi, \qquad
    \frac{\partial \log p}{\partial K} = \tfrac12\left(\alpha\alpha^\top - K^{-1}\right), \qquad
    \frac{\partial \log p}{\partial r} = -\alpha.

One Cholesky factorisation (``dpotrf``), one solve (``dpotrs``) and the inverse from the factor
(``dpotri``) give the value and both gradients: about :math:`n^3` flops in all. Differentiating
PyTensor's generic Cholesky and triangular solves instead costs several times that, which is what
decides the speed of NUTS on a Gaussian-process marginal likelihood.

:class:`GaussianLogDensity` is the Op. Its node has three outputs -- the log density and the two
gradients -- so a graph that asks for the log density and its gradient factorises :math:`K` once.
A rewrite swaps in a value-only variant (no ``dpotri``) when the gradient outputs are unused. The
same numba kernel runs in the C backend (through ``perform``) and the NUMBA backend; the JAX
backend gets a ``jax.numpy`` implementation when JAX is installed (``jnp.linalg.cholesky``; a
covariance that is not positive definite gives ``-inf`` and zero gradients there too).

A covariance that is not numerically positive definite gives ``-inf`` and zero gradients, which
samplers treat as a rejected proposal, as PyMC's ``MvNormal`` does.
"""

from __future__ import annotations

import numba
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pymc_sle._backends import (
    one_blas_thread_in_workers,
    register_jax,
    register_numba,
    register_value_only,
)
from pymc_sle._linalg._lapack import (
    cholesky_inplace,
    cholesky_inverse_inplace,
    cholesky_solve_inplace,
    mirror_upper_inplace,
)

__all__ = ["GaussianLogDensity", "gaussian_logp"]

_LOG_2PI = float(np.log(2.0 * np.pi))


@numba.njit(cache=True)
def _factor_and_solve(cov, residuals):
    """Cholesky-factorise ``cov`` and solve it for each row of ``residuals`` (shape (k, n)).

    Returns ``(ok, factor, alpha, log_densities)``; ``factor`` holds the factor in its
    LAPACK-lower triangle. When ``cov`` is not numerically positive definite, ``ok`` is False and
    the log densities are ``-inf``.
    """
    k, n = residuals.shape
    factor = np.ascontiguousarray(cov).copy()
    alpha = np.ascontiguousarray(residuals).copy()
    if cholesky_inplace(factor) != 0:
        return False, factor, np.zeros((k, n)), np.full(k, -np.inf)
    log_det_half = 0.0
    for i in range(n):
        log_det_half += np.log(factor[i, i])
    cholesky_solve_inplace(factor, alpha)
    log_densities = np.empty(k)
    for j in range(k):
        log_densities[j] = -0.5 * (residuals[j] @ alpha[j]) - log_det_half - 0.5 * n * _LOG_2PI
    return True, factor, alpha, log_densities


@numba.njit(cache=True)
def _log_density_and_gradients(cov, residual, with_gradients):
    """One residual: ``log p``, ``d log p / d cov`` and ``d log p / d residual``."""
    n = cov.shape[0]
    ok, factor, alpha, log_densities = _factor_and_solve(
        cov, np.ascontiguousarray(residual).reshape((1, n))
    )
    if not ok or not with_gradients:
        return log_densities[0], np.zeros((n, n) if with_gradients else (0, 0)), -alpha[0]
    cholesky_inverse_inplace(factor)  # C-upper triangle now holds K^{-1}
    for i in range(n):
        for j in range(i, n):
            factor[i, j] = 0.5 * (alpha[0, i] * alpha[0, j] - factor[i, j])
    mirror_upper_inplace(factor)
    return log_densities[0], factor, -alpha[0]


@numba.njit(cache=True)
def _batched_log_densities(cov, residuals, with_gradients):
    """Rows of ``residuals`` as independent draws: ``log p`` of each, ``K^{-1}`` and ``alpha``."""
    n = residuals.shape[1]
    ok, factor, alpha, log_densities = _factor_and_solve(cov, residuals)
    if not with_gradients:
        return log_densities, np.zeros((0, 0)), np.zeros((0, 0))
    if not ok:
        return log_densities, np.zeros((n, n)), alpha
    cholesky_inverse_inplace(factor)
    mirror_upper_inplace(factor)
    return log_densities, factor, alpha


class GaussianLogDensity(Op):
    """Log density of a zero-mean Gaussian, ``(cov, residual) -> log p [, gradient parts]``.

    ``residual`` is a vector of length n, or a ``(k, n)`` matrix whose rows are independent draws
    (multi-output ``y``); ``log p`` is then a vector of k log densities, all from one
    factorisation of ``cov``.

    Parameters
    ----------
    with_gradients : bool, default True
        Whether the node also outputs what the gradient is made of, so that value and gradient
        share one factorisation: for a vector residual, ``d log p / d cov`` and
        ``d log p / d residual``; for a matrix, ``K^{-1}`` and ``alpha = residual K^{-1}``, from
        which the gradient of any weighted sum of the k log densities is formed.
    """

    __props__ = ("with_gradients",)

    def __init__(self, with_gradients: bool = True):
        self.with_gradients = bool(with_gradients)

    def make_node(self, cov, residual):
        cov = pt.as_tensor_variable(cov)
        residual = pt.as_tensor_variable(residual)
        if cov.type.ndim != 2 or residual.type.ndim not in (1, 2):
            raise ValueError(
                "GaussianLogDensity needs a 2-D `cov` and a 1-D or 2-D `residual`, but got "
                f"ndim {cov.type.ndim} and {residual.type.ndim}"
            )
        for name, variable in (("cov", cov), ("residual", residual)):
            if variable.dtype.startswith("complex") or variable.dtype == "bool":
                raise TypeError(f"`{name}` must be real, but has dtype {variable.dtype}")
        cov = pt.cast(cov, "float64")
        residual = pt.cast(residual, "float64")
        batched = residual.type.ndim == 2
        outputs = [pt.vector(dtype="float64") if batched else pt.scalar(dtype="float64")]
        if self.with_gradients:
            outputs += [pt.matrix(dtype="float64"), residual.type()]
        return Apply(self, [cov, residual], outputs)

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        cov, residual = inputs
        n = residual.shape[-1]
        if cov.shape != (n, n):
            raise ValueError(
                f"`cov` must have shape ({n}, {n}) to match `residual`, but has shape {cov.shape}"
            )
        compute = _batched_log_densities if residual.ndim == 2 else _log_density_and_gradients
        log_density, *gradient_parts = compute(cov, residual, self.with_gradients)
        output_storage[0][0] = np.asarray(log_density)
        if self.with_gradients:
            output_storage[1][0], output_storage[2][0] = gradient_parts

    def infer_shape(self, fgraph, node, input_shapes):
        cov_shape, residual_shape = input_shapes
        shapes = [residual_shape[:-1]]
        if self.with_gradients:
            shapes += [cov_shape, residual_shape]
        return shapes

    def L_op(self, inputs, outputs, output_grads):
        for grad in output_grads[1:]:
            if not isinstance(grad.type, DisconnectedType):
                raise NotImplementedError(
                    "GaussianLogDensity is differentiable through its log density only"
                )
        if self.with_gradients:
            _, first, second = outputs
        else:
            _, first, second = GaussianLogDensity(True)(*inputs)
        scale = output_grads[0]
        if inputs[1].type.ndim == 1:  # first = d log p / d cov, second = d log p / d residual
            return [scale * first, scale * second]
        # first = K^{-1}, second = alpha: d/dK sum_j w_j log p_j = (A^T diag(w) A - sum(w) K^{-1})/2
        weighted = scale[:, None] * second
        grad_cov = 0.5 * (pt.dot(second.T, weighted) - pt.sum(scale) * first)
        return [grad_cov, -weighted]


def _shared_matrix(cov):
    """``cov`` without leading axes of length 1, or ``None`` if it is a batch of matrices.

    PyMC hands a distribution's parameters to its log density with axes of length 1 in front for
    the batch axes of the value (multi-output ``y``); the matrix is the same for every draw.
    """
    extra = cov.type.ndim - 2
    if extra and cov.type.shape[:extra] != (1,) * extra:
        return None
    return cov[(0,) * extra] if extra else cov


def gaussian_logp(value, mu, cov):
    r"""``log N(value | mu, cov)`` through :class:`~pymc_sle.gp.GaussianLogDensity` (one
    factorisation).

    Parameters
    ----------
    value : TensorVariable of shape (..., n)
        One draw, or a batch of independent draws (multi-output ``y``) along leading axes.
    mu : TensorVariable broadcastable to ``value``
    cov : TensorVariable of shape (n, n), or (1, ..., 1, n, n)
        Symmetric; only its LAPACK-lower triangle is read, as by any Cholesky factorisation, and
        the gradient returned for it is symmetric. A batch of different matrices is left to
        :class:`pymc.MvNormal`.

    Returns
    -------
    TensorVariable of shape ``value.shape[:-1]``
        The log density of each draw, as :class:`pymc.MvNormal` returns it.
    """
    value = pt.as_tensor_variable(value)
    shared = _shared_matrix(pt.as_tensor_variable(cov))
    if shared is None:
        return pm.logp(pm.MvNormal.dist(mu=mu, cov=cov), value)
    residual = value - mu
    if residual.type.ndim <= 1:
        return GaussianLogDensity(True)(shared, residual)[0]
    rows = residual.reshape((-1, residual.shape[-1]))
    log_densities = GaussianLogDensity(True)(shared, rows)[0]
    return log_densities.reshape(residual.shape[:-1], ndim=residual.type.ndim - 1)


register_value_only(GaussianLogDensity, lambda op: GaussianLogDensity(False))


@register_numba(GaussianLogDensity)
def _numba_gaussian_log_density(op, node=None, **kwargs):
    with_gradients, residual_ndim = op.with_gradients, node.inputs[1].type.ndim
    compute = _batched_log_densities if residual_ndim == 2 else _log_density_and_gradients

    if with_gradients:

        @numba.njit
        def gaussian_log_density(cov, residual):
            log_density, first, second = compute(cov, residual, True)
            return np.asarray(log_density), first, second

    else:

        @numba.njit
        def gaussian_log_density(cov, residual):
            return np.asarray(compute(cov, residual, False)[0])

    return gaussian_log_density, residual_ndim  # the cache key's integer: one kernel per ndim


@register_jax(GaussianLogDensity)
def _jax_gaussian_log_density(op, node=None, **kwargs):
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_solve

    with_gradients = op.with_gradients
    batched = node is not None and node.inputs[1].type.ndim == 2

    def gaussian_log_density(cov, residual):
        n = cov.shape[0]
        rows = residual if batched else residual[None, :]
        factor = jnp.linalg.cholesky(cov)
        alpha = cho_solve((factor, True), rows.T).T
        diagonal = jnp.diagonal(factor)
        ok = jnp.all(jnp.isfinite(diagonal) & (diagonal > 0))
        log_density = (
            -0.5 * jnp.sum(rows * alpha, axis=1) - jnp.sum(jnp.log(diagonal)) - 0.5 * n * _LOG_2PI
        )
        log_density = jnp.where(ok, log_density, -jnp.inf)
        alpha = jnp.where(ok, alpha, 0.0)
        if not batched:
            log_density, alpha = log_density[0], alpha[0]
        if not with_gradients:
            return log_density
        inverse = jnp.where(ok, cho_solve((factor, True), jnp.eye(n, dtype=cov.dtype)), 0.0)
        if batched:
            return log_density, inverse, alpha
        return log_density, 0.5 * (jnp.outer(alpha, alpha) - inverse), -alpha

    return gaussian_log_density
