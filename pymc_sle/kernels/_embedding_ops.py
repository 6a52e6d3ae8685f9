r"""Squared distances between SLE embeddings, with cheap gradients, dense or sparse.

For an embedding :math:`\Phi \in \mathbb R^{n \times m}` with row norms :math:`\nu_i = \lVert
\phi_i \rVert^2`, the squared embedding distances are

.. math::

    \Delta_{ij} = \nu_i + \nu_j - 2\,(\Phi\Phi^\top)_{ij},

and for any upstream gradient :math:`G = \partial L / \partial \Delta`, with :math:`S = G + G^\top`
and :math:`s = S\mathbf 1`,

.. math::

    \frac{\partial L}{\partial \Phi} = 2\left(\operatorname{diag}(s)\,\Phi - S\,\Phi\right),

one :math:`n^2 m` product, where differentiating ``dot(phi, phi.T)`` generically costs two.
Every forward computes :math:`\Delta` so that it is non-negative and accurate where embeddings
nearly coincide (column means subtracted, cancelled entries recomputed from differences; see
``pymc_sle.kernels._embedding_loops``), so the kernel matrix is PSD in floating point too.

**Dense** (:func:`dense_squared_distances`): one ``phi @ phi.T`` forward (numba kernel on the C
and NUMBA backends, ``jax.numpy`` on JAX) whose gradient is that expression in PyTensor ops.

**Bump** (``pymc_sle.kernels._bump_ops``): the bump embedding on its support found at run
time, whatever the radius prior. Where that support is small, the embedding is stored by
landmark (column ``k`` has rows :math:`R_k`), and both :math:`\Phi\Phi^\top` and :math:`S\Phi`
cost :math:`\sum_k |R_k|^2 = n\,\bar s^2` multiply-adds for a square problem (:math:`\bar s`
the mean non-zeros per row) instead of :math:`n^2 m` (the sparse loops of
``pymc_sle.kernels._embedding_loops``); elsewhere it takes the dense kernels above.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pymc_sle._backends import one_blas_thread_in_workers, register_jax, register_numba
from pymc_sle._linalg._euclidean import CANCELLATION
from pymc_sle.kernels._embedding_loops import (
    cross_forward,
    dense_forward,
)

__all__ = [
    "cross_squared_distances",
    "dense_gradient_formula",
    "dense_squared_distances",
    "jax_squared_distances",
]


class _DenseSquaredDistances(Op):
    """``phi -> Delta`` for a dense embedding, with the one-product gradient."""

    __props__ = ()

    def make_node(self, phi):
        phi = pt.cast(pt.as_tensor_variable(phi), "float64")
        if phi.type.ndim != 2:
            raise ValueError(f"`phi` must be 2-D, but has ndim {phi.type.ndim}")
        n = phi.type.shape[0]
        return Apply(self, [phi], [pt.tensor(dtype="float64", shape=(n, n))])

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = dense_forward(np.ascontiguousarray(inputs[0]))

    def infer_shape(self, fgraph, node, input_shapes):
        n = input_shapes[0][0]
        return [(n, n)]

    def L_op(self, inputs, outputs, output_grads):
        (phi,), (grad,) = inputs, output_grads
        return [dense_gradient_formula(pt, phi, grad)]


def dense_gradient_formula(xp, phi, grad):
    """The module's gradient formula for ``xp`` = pytensor.tensor or jax.numpy, on the centred
    ``phi`` (the same value: :math:`s = S1` cancels a common shift), where the two terms cancel
    less. The numba kernel is ``_embedding_loops.dense_backward``."""
    centred = phi - phi.mean(axis=0)
    symmetric = grad + grad.T
    return 2.0 * (symmetric.sum(axis=1)[:, None] * centred - xp.dot(symmetric, centred))


@register_numba(_DenseSquaredDistances)
def _numba_dense_forward(op, node=None, **kwargs):
    @numba.njit
    def dense_squared_distances(phi):
        return dense_forward(np.ascontiguousarray(phi))

    return dense_squared_distances


@register_jax(_DenseSquaredDistances)
def _jax_dense(op, node=None, **kwargs):
    def squared_distances(phi):
        return jax_squared_distances(phi, phi, symmetric=True)

    return squared_distances


def dense_squared_distances(phi) -> pt.TensorVariable:
    r"""``nu_i + nu_j - 2 (phi phi^T)_ij`` for a dense ``(n, m)`` embedding; diagonal exactly 0."""
    return _DenseSquaredDistances()(phi)


class _CrossSquaredDistances(Op):
    """``(phi, phi_other) -> Delta`` between the rows of two embeddings."""

    __props__ = ()

    def make_node(self, phi, phi_other):
        inputs = [pt.cast(pt.as_tensor_variable(v), "float64") for v in (phi, phi_other)]
        for name, value in zip(("phi", "phi_other"), inputs, strict=True):
            if value.type.ndim != 2:
                raise ValueError(f"`{name}` must be 2-D, but has ndim {value.type.ndim}")
        shape = (inputs[0].type.shape[0], inputs[1].type.shape[0])
        return Apply(self, inputs, [pt.tensor(dtype="float64", shape=shape)])

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        phi, phi_other = (np.ascontiguousarray(v) for v in inputs)
        output_storage[0][0] = cross_forward(phi, phi_other)

    def infer_shape(self, fgraph, node, input_shapes):
        return [(input_shapes[0][0], input_shapes[1][0])]

    def L_op(self, inputs, outputs, output_grads):
        # Delta_ij = |a_i - b_j|^2: dL/da_i = 2 sum_j G_ij (a_i - b_j), and likewise for b.
        (phi, phi_other), (grad,) = inputs, output_grads
        shift = phi.mean(axis=0)
        a, b = phi - shift, phi_other - shift
        return [
            2.0 * (grad.sum(axis=1)[:, None] * a - pt.dot(grad, b)),
            2.0 * (grad.sum(axis=0)[:, None] * b - pt.dot(grad.T, a)),
        ]


@register_numba(_CrossSquaredDistances)
def _numba_cross_forward(op, node=None, **kwargs):
    @numba.njit
    def cross_squared_distances(phi, phi_other):
        return cross_forward(np.ascontiguousarray(phi), np.ascontiguousarray(phi_other))

    return cross_squared_distances


def cross_squared_distances(phi, phi_other) -> pt.TensorVariable:
    r""":math:`\lVert \phi_i - \phi'_j \rVert^2` between the rows of two embeddings (prediction
    cross-covariances); exactly 0 for equal rows."""
    return _CrossSquaredDistances()(phi, phi_other)


@register_jax(_CrossSquaredDistances)
def _jax_cross(op, node=None, **kwargs):
    def cross_squared_distances(phi, phi_other):
        return jax_squared_distances(phi, phi_other, symmetric=False)

    return cross_squared_distances


def jax_squared_distances(phi, phi_other, symmetric: bool):
    """The squared distances between the rows of two embeddings in ``jax.numpy``, as the numba
    loops compute them: centred, expanded, and the cancelled entries recomputed from
    differences (row by row, and only when there are any); ``symmetric`` (``phi_other`` is
    ``phi``) sets the diagonal to exactly 0."""
    import jax
    import jax.numpy as jnp

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
