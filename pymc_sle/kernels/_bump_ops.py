r"""Squared distances of the bump embedding, on its support found at run time.

The pattern (:func:`bump_squared_distances`) found at run time, at the current parameter values --
whatever the radius prior (LogNormal included), where no pattern is known in advance. One Op takes
the distance block :math:`D` and the bump parameters, finds the support :math:`(d_{ik}/r_k)^2 < 1`
-- from every column's distances sorted once when :math:`D` is constant (the support is a prefix of
each; the work is proportional to the support), by a scan otherwise. When at most ``max_fill`` of
:math:`\Phi` is non-zero, it evaluates the bump on the support only and takes the sparse kernels of
``pymc_sle.kernels._embedding_ops``; otherwise it evaluates the bump element-wise on the whole
block and takes the dense ones. It returns the support (or the dense :math:`\Phi`) with
:math:`\Delta`, and its gradient Ops take it from there, on the same branch: the exact chain rule
through the bump, whose derivatives vanish outside the support (see
``pymc_sle.kernels._bump_loops``). Nothing of size :math:`n \times m` is built on the sparse
branch except when the gradient with respect to :math:`D` itself is asked for.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pymc_sle._backends import one_blas_thread_in_workers, register_jax, register_numba
from pymc_sle.kernels._bump import bump_formula
from pymc_sle.kernels._bump_loops import (
    bump_backward,
    bump_block_backward,
    bump_embedding_backward,
    bump_forward,
)
from pymc_sle.kernels._embedding_ops import dense_gradient_formula, jax_squared_distances

__all__ = ["bump_squared_distances"]


_BUMP_INPUTS = ("block", "order", "ordered", "radius", "amplitude", "shape")


class _BumpSquaredDistances(Op):
    """``(block, order, ordered, radius, amplitude, shape) -> (Delta, *support)`` for the bump
    embedding of a distance block, on its support at the current parameters (module notes). The
    parameters are ``(m,)``. For a constant block, ``ordered`` holds every column's distances in
    increasing order and ``order`` their rows, both ``(m, n)``; for a block that can change both
    are empty ``(0, 0)``, and the support is found by a scan. The support is an auxiliary output
    for the gradient Ops only (not differentiable), and tells them the branch the forward took:
    the embedding's non-zeros, their distances, ``col_ptr`` and ``row_index`` when at most
    ``max_fill`` of the embedding is non-zero (sparse); the whole embedding, raveled, and three
    empty vectors otherwise (dense; always on JAX). The gradient goes through
    :class:`_BumpEmbeddingGrad` (the products with the upstream gradient, once) to the cheap
    loops of :class:`_BumpSquaredDistancesGrad` and :class:`_BumpSquaredDistancesBlockGrad`."""

    __props__ = ("max_fill",)

    def __init__(self, max_fill: float):
        self.max_fill = float(max_fill)

    def make_node(self, block, order, ordered, radius, amplitude, shape):
        block, ordered, radius, amplitude, shape = (
            pt.cast(pt.as_tensor_variable(v), "float64")
            for v in (block, ordered, radius, amplitude, shape)
        )
        order = pt.as_tensor_variable(order)
        inputs = [block, order, ordered, radius, amplitude, shape]
        for name, value, ndim in zip(_BUMP_INPUTS, inputs, (2, 2, 2, 1, 1, 1), strict=True):
            if value.type.ndim != ndim:
                raise ValueError(f"`{name}` must be {ndim}-D, but has ndim {value.type.ndim}")
        n = block.type.shape[0]
        support = [pt.dvector(), pt.dvector(), pt.lvector(), pt.lvector()]
        return Apply(self, inputs, [pt.tensor(dtype="float64", shape=(n, n)), *support])

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        for storage, value in zip(
            output_storage, bump_forward(*inputs, self.max_fill), strict=True
        ):
            storage[0] = value

    def infer_shape(self, fgraph, node, input_shapes):
        n = input_shapes[0][0]
        return [(n, n), None, None, None, None]  # the support's size is known at run time

    def L_op(self, inputs, outputs, output_grads):
        block, _, _, radius, amplitude, shape = inputs
        values, _, col_ptr, row_index = outputs[1:]
        g = _BumpEmbeddingGrad()(block, values, col_ptr, row_index, output_grads[0])
        args = [block, radius, amplitude, shape, *outputs[1:], g]
        return [
            _BumpSquaredDistancesBlockGrad()(*args),
            disconnected_type(),
            disconnected_type(),
            *_BumpSquaredDistancesGrad()(*args),
        ]

    def connection_pattern(self, node):
        connected = [True, False, False, False, False]  # Delta only
        return [connected, [False] * 5, [False] * 5, connected, connected, connected]


class _BumpEmbeddingGrad(Op):
    """``(block, values, col_ptr, row_index, grad) -> g``: the gradient of
    :class:`_BumpSquaredDistances` with respect to the embedding's stored entries (laid out as
    ``values``), given ``grad`` with respect to its output. One Op, so that the gradients with
    respect to the parameters and to the block share it."""

    __props__ = ()

    def make_node(self, *inputs):
        inputs = [pt.as_tensor_variable(v) for v in inputs]
        return Apply(self, inputs, [inputs[1].type()])

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = bump_embedding_backward(*inputs)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[1]]


@register_numba(_BumpEmbeddingGrad)
def _numba_bump_embedding_backward(op, node=None, **kwargs):
    return bump_embedding_backward


class _BumpSquaredDistancesGrad(Op):
    """Gradients of :class:`_BumpSquaredDistances` with respect to its three parameters, from
    ``(block, radius, amplitude, shape, *support, g)``, ``g`` from :class:`_BumpEmbeddingGrad`."""

    __props__ = ()

    def make_node(self, *inputs):
        inputs = [pt.as_tensor_variable(v) for v in inputs]
        return Apply(self, inputs, [v.type() for v in inputs[1:4]])

    def perform(self, node, inputs, output_storage):
        grads = bump_backward(*_backward_arguments(inputs))
        for storage, value in zip(output_storage, grads, strict=True):
            storage[0] = value

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes[1:4]


class _BumpSquaredDistancesBlockGrad(Op):
    """Gradient of :class:`_BumpSquaredDistances` with respect to the distance block, from the
    same inputs as :class:`_BumpSquaredDistancesGrad`: its own Op, so that a graph whose block
    is a constant never computes it."""

    __props__ = ()

    def make_node(self, *inputs):
        inputs = [pt.as_tensor_variable(v) for v in inputs]
        return Apply(self, inputs, [inputs[0].type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = bump_block_backward(*_backward_arguments(inputs))

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]


def _backward_arguments(inputs):
    """The numba kernels' ``(block, radius, amplitude, shape, support, g)`` from the gradient
    Ops' inputs."""
    block, radius, amplitude, shape, *support, g = inputs
    return block, radius, amplitude, shape, tuple(support), g


@register_numba(_BumpSquaredDistances)
def _numba_bump_forward(op, node=None, **kwargs):
    max_fill = op.max_fill

    @numba.njit
    def bump_squared_distances(block, order, ordered, radius, amplitude, shape):
        return bump_forward(block, order, ordered, radius, amplitude, shape, max_fill)

    return bump_squared_distances


def _register_numba_backward(op_class, kernel) -> None:
    @register_numba(op_class)
    def funcify(op, node=None, **kwargs):
        @numba.njit
        def call(block, radius, amplitude, shape, values, distance, col_ptr, row_index, g):
            support = (values, distance, col_ptr, row_index)
            return kernel(block, radius, amplitude, shape, support, g)

        return call


_register_numba_backward(_BumpSquaredDistancesGrad, bump_backward)
_register_numba_backward(_BumpSquaredDistancesBlockGrad, bump_block_backward)


# On JAX the bump Ops run dense -- the same values and gradients (the support is a C/NUMBA
# speed-up) -- with the dense branch's support, the raveled embedding: the gradient with respect
# to it as on that branch, and through the bump by jax.vjp of the formula PyTensor uses.


def _jax_bump_pullback(block, radius, amplitude, shape, g):
    import jax
    import jax.numpy as jnp

    _, pullback = jax.vjp(functools.partial(bump_formula, jnp), block, radius, amplitude, shape)
    return pullback(g.reshape(block.shape))


@register_jax(_BumpSquaredDistances)
def _jax_bump_forward(op, node=None, **kwargs):
    import jax.numpy as jnp

    def bump_squared_distances(block, order, ordered, radius, amplitude, shape):
        phi = bump_formula(jnp, block, radius, amplitude, shape)
        empty = jnp.zeros(0, dtype=jnp.float64), jnp.zeros(0, dtype=jnp.int64)
        squared = jax_squared_distances(phi, phi, symmetric=True)
        return squared, phi.ravel(), empty[0], empty[1], empty[1]

    return bump_squared_distances


@register_jax(_BumpEmbeddingGrad)
def _jax_bump_embedding_backward(op, node=None, **kwargs):
    import jax.numpy as jnp

    def bump_embedding_grad(block, values, col_ptr, row_index, grad):
        return dense_gradient_formula(jnp, values.reshape(block.shape), grad).ravel()

    return bump_embedding_grad


@register_jax(_BumpSquaredDistancesGrad)
def _jax_bump_backward(op, node=None, **kwargs):
    def bump_squared_distances_grad(block, radius, amplitude, shape, *support_and_g):
        return _jax_bump_pullback(block, radius, amplitude, shape, support_and_g[-1])[1:]

    return bump_squared_distances_grad


@register_jax(_BumpSquaredDistancesBlockGrad)
def _jax_bump_block_backward(op, node=None, **kwargs):
    def bump_squared_distances_block_grad(block, radius, amplitude, shape, *support_and_g):
        return _jax_bump_pullback(block, radius, amplitude, shape, support_and_g[-1])[0]

    return bump_squared_distances_block_grad


def bump_squared_distances(
    block, radius, amplitude, shape, max_fill: float, radius_max: float | None = None
) -> pt.TensorVariable:
    r""":math:`\Delta` for the bump embedding :math:`\phi_{ik} = b(d_{ik}; a_k, r_k, \beta_k)` of
    an ``(n, m)`` distance ``block``, computed on the embedding's support at the current
    parameters: sparse kernels when at most ``max_fill`` of it is non-zero, dense ones otherwise.
    ``radius``, ``amplitude`` and ``shape`` are scalars or ``(m,)`` vectors. Diagonal exactly 0;
    values and gradients equal ``dense_squared_distances(bump(block, ...))``.

    A ``block`` of numbers has its columns sorted once, here, so that finding the support costs
    as much as the support; with ``radius_max``, a bound the radius never exceeds, only the
    distances below it are kept (memory as the largest possible support, not ``n m``). A
    symbolic ``block`` is scanned at every evaluation.
    """
    if not 0.0 <= max_fill <= 1.0:
        raise ValueError(f"`max_fill` must be in [0, 1], but got {max_fill!r}")
    if isinstance(block, np.ndarray):
        order = np.argsort(block, axis=0, kind="stable").T
        ordered = np.take_along_axis(block.T, order, axis=1)
        if radius_max is not None:
            width = int((ordered < radius_max).sum(axis=1).max(initial=0))
            order, ordered = order[:, :width], ordered[:, :width]
        order = np.ascontiguousarray(order, dtype=np.int32)
        ordered = np.ascontiguousarray(ordered, dtype=np.float64)
    else:
        order, ordered = np.empty((0, 0), dtype=np.int32), np.empty((0, 0))
    block = pt.cast(pt.as_tensor_variable(block), "float64")
    m = block.type.shape[1]  # a number where known: JAX needs shapes it can see when tracing
    m = block.shape[1] if m is None else m
    params = [
        pt.broadcast_to(pt.cast(pt.as_tensor_variable(v), "float64"), (m,))
        for v in (radius, amplitude, shape)
    ]
    squared, *_ = _BumpSquaredDistances(max_fill)(
        block, pt.constant(order), pt.constant(ordered), *params
    )
    return squared
