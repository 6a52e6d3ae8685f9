"""The library's Ops on PyTensor's JAX backend, registered with ``jax_funcify`` once.

Each Op has a ``jax.numpy`` implementation here; the C and NUMBA backends run the Ops' numba
kernels. ``pymc_sle.kernels`` and ``pymc_sle.gp`` import this module, so the JAX backend knows
every Op as soon as a graph can hold one; without JAX installed nothing is registered.

- **Embedding distances** run dense on JAX -- the same values and gradients; the bump's
  support is a C/NUMBA speed-up. The forward is computed as the numba loops do:
  centred, expanded, and the cancelled entries recomputed from differences.
- **The Gaussian log density** factorises with ``jnp.linalg.cholesky``; a covariance that is not
  positive definite gives ``-inf`` and zero gradients, as on the other backends.
- **The checked distances** run their check on the host through ``jax.pure_callback``: a traced
  program cannot raise, and the callback's ``ValueError`` aborts the computation with the
  message.
"""

from __future__ import annotations

import functools

import numpy as np

from pymc_sle._euclidean import CANCELLATION
from pymc_sle.gp._log_density import _LOG_2PI, GaussianLogDensity
from pymc_sle.kernels._bump import bump_formula
from pymc_sle.kernels._bump_ops import (
    _BumpEmbeddingGrad,
    _BumpSquaredDistances,
    _BumpSquaredDistancesBlockGrad,
    _BumpSquaredDistancesGrad,
)
from pymc_sle.kernels._embedding_ops import (
    _CrossSquaredDistances,
    _dense_gradient_formula,
    _DenseSquaredDistances,
)
from pymc_sle.kernels._inputs import _CheckedInput

try:
    import jax
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_solve
    from pytensor.link.jax.dispatch import jax_funcify
except ImportError:  # JAX is optional
    jax_funcify = None

__all__: list[str] = []


def _jax_checked_input(op, **kwargs):
    # A traced program cannot raise; the check runs on the host through a callback, and
    # its ValueError aborts the computation with the message. The gradient of
    # CheckedDistances is the identity in PyTensor's graph, so JAX never differentiates this.
    def check(values):
        values = np.asarray(values)
        if not op._all_valid(values):
            op._raise_for(values)
        return values.astype(op.out_dtype)

    def checked(values):
        result = jax.ShapeDtypeStruct(values.shape, np.dtype(op.out_dtype))
        return jax.pure_callback(check, result, values, vmap_method="sequential")

    return checked


def _jax_gaussian_log_density(op, node=None, **kwargs):
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


def accurate_squared_distances(phi, phi_other, symmetric: bool):
    # As the numba loops: centre, expand, recompute the cancelled entries from differences
    # (row by row, and only when there are any).
    shift = phi.mean(axis=0)
    a, b = phi - shift, phi_other - shift
    norms_a, norms_b = jnp.sum(a * a, axis=1), jnp.sum(b * b, axis=1)
    scale = norms_a[:, None] + norms_b[None, :]
    out = scale - 2.0 * (a @ b.T)
    cancelled = ~(out > CANCELLATION * scale)  # also NaN (inf - inf): overflow
    if symmetric:
        cancelled = cancelled & ~jnp.eye(out.shape[0], dtype=bool)

    def refine(out):
        direct = jax.lax.map(lambda row: jnp.sum(jnp.square(row - b), axis=1), a)
        return jnp.where(cancelled, direct, out)

    out = jax.lax.cond(jnp.any(cancelled), refine, lambda out: out, out)
    if symmetric:
        out = out.at[jnp.diag_indices(out.shape[0])].set(0.0)
    return out


def squared_distances(phi):
    return accurate_squared_distances(phi, phi, symmetric=True)


def dense_gradient(phi, grad):
    return _dense_gradient_formula(jnp, phi, grad)


def _jax_dense(op, node=None, **kwargs):
    return squared_distances


def _jax_cross(op, node=None, **kwargs):
    def cross_squared_distances(phi, phi_other):
        return accurate_squared_distances(phi, phi_other, symmetric=False)

    return cross_squared_distances


# The bump Ops run dense on JAX -- the same values and gradients (the support is a C/NUMBA
# speed-up) -- with the dense branch's support, the raveled embedding: the gradient with
# respect to it as on that branch, and through the bump by jax.vjp of the formula PyTensor
# uses.
def bump_pullback(block, radius, amplitude, shape, g):
    bump_of = functools.partial(bump_formula, jnp)
    _, pullback = jax.vjp(bump_of, block, radius, amplitude, shape)
    return pullback(g.reshape(block.shape))


def _jax_bump_forward(op, node=None, **kwargs):
    def bump_squared_distances(block, order, ordered, radius, amplitude, shape):
        phi = bump_formula(jnp, block, radius, amplitude, shape)
        empty = jnp.zeros(0, dtype=jnp.float64), jnp.zeros(0, dtype=jnp.int64)
        return squared_distances(phi), phi.ravel(), empty[0], empty[1], empty[1]

    return bump_squared_distances


def _jax_bump_embedding_backward(op, node=None, **kwargs):
    def bump_embedding_grad(block, values, col_ptr, row_index, grad):
        return dense_gradient(values.reshape(block.shape), grad).ravel()

    return bump_embedding_grad


def _jax_bump_backward(op, node=None, **kwargs):
    def bump_squared_distances_grad(block, radius, amplitude, shape, *support_and_g):
        return bump_pullback(block, radius, amplitude, shape, support_and_g[-1])[1:]

    return bump_squared_distances_grad


def _jax_bump_block_backward(op, node=None, **kwargs):
    def bump_squared_distances_block_grad(block, radius, amplitude, shape, *support_and_g):
        return bump_pullback(block, radius, amplitude, shape, support_and_g[-1])[0]

    return bump_squared_distances_block_grad


#: Each Op and the function that gives ``jax_funcify`` its JAX implementation.
_IMPLEMENTATIONS = {
    _CheckedInput: _jax_checked_input,
    GaussianLogDensity: _jax_gaussian_log_density,
    _DenseSquaredDistances: _jax_dense,
    _CrossSquaredDistances: _jax_cross,
    _BumpSquaredDistances: _jax_bump_forward,
    _BumpEmbeddingGrad: _jax_bump_embedding_backward,
    _BumpSquaredDistancesGrad: _jax_bump_backward,
    _BumpSquaredDistancesBlockGrad: _jax_bump_block_backward,
}

if jax_funcify is not None:
    for _op_class, _implementation in _IMPLEMENTATIONS.items():
        jax_funcify.register(_op_class)(_implementation)
