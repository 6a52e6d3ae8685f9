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
backend gets a ``jax.numpy`` implementation when JAX is installed.

A covariance that is not numerically positive definite gives ``-inf`` and zero gradients, which
samplers treat as a rejected proposal, as PyMC's ``MvNormal`` does.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.link.numba.dispatch import numba_funcify
from pytensor.tensor.rewriting.basic import register_specialize

from pymc_sle._lapack import (
    cholesky_inplace,
    cholesky_inverse_inplace,
    cholesky_solve_inplace,
    mirror_upper_inplace,
)

__all__ = ["GaussianLogDensity", "gaussian_logp"]

_LOG_2PI = float(np.log(2.0 * np.pi))


@numba.njit(cache=True)
def _log_density_and_gradients(cov, residual, with_gradients):
    n = cov.shape[0]
    factor = np.ascontiguousarray(cov).copy()
    alpha = np.ascontiguousarray(residual).copy()
    if cholesky_inplace(factor) != 0:
        return -np.inf, np.zeros((n, n) if with_gradients else (0, 0)), np.zeros(n)
    log_det_half = 0.0
    for i in range(n):
        log_det_half += np.log(factor[i, i])
    cholesky_solve_inplace(factor, alpha)
    log_density = -0.5 * (residual @ alpha) - log_det_half - 0.5 * n * _LOG_2PI
    if not with_gradients:
        return log_density, np.zeros((0, 0)), -alpha
    cholesky_inverse_inplace(factor)  # C-upper triangle now holds K^{-1}
    for i in range(n):
        for j in range(i, n):
            factor[i, j] = 0.5 * (alpha[i] * alpha[j] - factor[i, j])
    mirror_upper_inplace(factor)
    return log_density, factor, -alpha


class GaussianLogDensity(Op):
    """Log density of a zero-mean Gaussian, ``(cov, residual) -> log p [, d/dcov, d/dresidual]``.

    Parameters
    ----------
    with_gradients : bool, default True
        Whether the node also outputs ``d log p / d cov`` and ``d log p / d residual``. The
        gradient of the log density is expressed through those outputs, so value and gradient
        share one factorisation.
    """

    __props__ = ("with_gradients",)

    def __init__(self, with_gradients: bool = True):
        self.with_gradients = bool(with_gradients)

    def make_node(self, cov, residual):
        cov = pt.as_tensor_variable(cov)
        residual = pt.as_tensor_variable(residual)
        if cov.type.ndim != 2 or residual.type.ndim != 1:
            raise ValueError(
                "GaussianLogDensity needs a 2-D `cov` and a 1-D `residual`, but got "
                f"ndim {cov.type.ndim} and {residual.type.ndim}"
            )
        for name, variable in (("cov", cov), ("residual", residual)):
            if variable.dtype.startswith("complex") or variable.dtype == "bool":
                raise TypeError(f"`{name}` must be real, but has dtype {variable.dtype}")
        cov = pt.cast(cov, "float64")
        residual = pt.cast(residual, "float64")
        outputs = [pt.scalar(dtype="float64")]
        if self.with_gradients:
            outputs += [pt.matrix(dtype="float64"), pt.vector(dtype="float64")]
        return Apply(self, [cov, residual], outputs)

    def perform(self, node, inputs, output_storage):
        cov, residual = inputs
        if cov.shape != (residual.size, residual.size):
            raise ValueError(
                f"`cov` must have shape ({residual.size}, {residual.size}) to match `residual`, "
                f"but has shape {cov.shape}"
            )
        log_density, grad_cov, grad_residual = _log_density_and_gradients(
            cov, residual, self.with_gradients
        )
        output_storage[0][0] = np.asarray(log_density)
        if self.with_gradients:
            output_storage[1][0] = grad_cov
            output_storage[2][0] = grad_residual

    def infer_shape(self, fgraph, node, input_shapes):
        cov_shape, residual_shape = input_shapes
        shapes = [()]
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
            _, grad_cov, grad_residual = outputs
        else:
            _, grad_cov, grad_residual = GaussianLogDensity(True)(*inputs)
        scale = output_grads[0]
        return [scale * grad_cov, scale * grad_residual]


def gaussian_logp(value, mu, cov):
    r"""``log N(value | mu, cov)`` through :class:`GaussianLogDensity` (one factorisation).

    Parameters
    ----------
    value, mu : TensorVariable of shape (n,)
    cov : TensorVariable of shape (n, n)
        Symmetric; only its LAPACK-lower triangle is read, as by any Cholesky factorisation, and
        the gradient returned for it is the symmetric :math:`\tfrac12(\alpha\alpha^\top - K^{-1})`.
    """
    return GaussianLogDensity(True)(cov, pt.as_tensor_variable(value) - mu)[0]


@register_specialize
@node_rewriter([GaussianLogDensity])
def local_gaussian_value_only(fgraph, node):
    """Drop ``dpotri`` when nothing uses the gradient outputs."""
    if not node.op.with_gradients:
        return None
    if any(fgraph.clients.get(output) for output in node.outputs[1:]):
        return None
    return [GaussianLogDensity(False)(*node.inputs), None, None]


@numba_funcify.register(GaussianLogDensity)
def _numba_gaussian_log_density(op, node=None, **kwargs):
    with_gradients = op.with_gradients

    if with_gradients:

        @numba.njit
        def gaussian_log_density(cov, residual):
            log_density, grad_cov, grad_residual = _log_density_and_gradients(cov, residual, True)
            return np.asarray(log_density), grad_cov, grad_residual

    else:

        @numba.njit
        def gaussian_log_density(cov, residual):
            return np.asarray(_log_density_and_gradients(cov, residual, False)[0])

    return gaussian_log_density


def _register_jax() -> None:
    try:
        import jax.numpy as jnp
        from jax.scipy.linalg import cho_solve
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # JAX is optional
        return

    @jax_funcify.register(GaussianLogDensity)
    def _jax_gaussian_log_density(op, **kwargs):
        with_gradients = op.with_gradients

        def gaussian_log_density(cov, residual):
            n = residual.shape[0]
            factor = jnp.linalg.cholesky(cov)
            alpha = cho_solve((factor, True), residual)
            diagonal = jnp.diagonal(factor)
            ok = jnp.all(jnp.isfinite(diagonal) & (diagonal > 0))
            log_density = -0.5 * residual @ alpha - jnp.sum(jnp.log(diagonal)) - 0.5 * n * _LOG_2PI
            log_density = jnp.where(ok, log_density, -jnp.inf)
            if not with_gradients:
                return log_density
            inverse = cho_solve((factor, True), jnp.eye(n, dtype=cov.dtype))
            grad_cov = jnp.where(ok, 0.5 * (jnp.outer(alpha, alpha) - inverse), 0.0)
            return log_density, grad_cov, jnp.where(ok, -alpha, 0.0)

        return gaussian_log_density


_register_jax()
