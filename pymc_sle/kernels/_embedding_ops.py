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
:mod:`pymc_sle.kernels._embedding_loops`), so the kernel matrix is PSD in floating point too.

**Dense** (:func:`dense_squared_distances`): one ``phi @ phi.T`` forward (numba kernel on the C
and NUMBA backends, ``jax.numpy`` on JAX) whose gradient is that expression in PyTensor ops.

**Sparse** (:func:`sparse_squared_distances`): when the support of :math:`\Phi` is known in advance
-- a fixed radius, or a radius bounded by ``r_max``, so that :math:`\phi_{ik} = 0` wherever
:math:`d_{ik} \ge r_{\max}` -- only the values on that pattern are computed. Stored by landmark
(column ``k`` has rows :math:`R_k`), both :math:`\Phi\Phi^\top` and :math:`S\Phi` on the pattern
cost :math:`\sum_k |R_k|^2 = n\,\bar s^2` multiply-adds for a square problem (:math:`\bar s` the
mean non-zeros per row) instead of :math:`n^2 m`.

**Support** (:func:`support_squared_distances`): the pattern found at run time, from the non-zeros
of a dense :math:`\Phi` -- for a radius whose prior is unbounded (LogNormal), where no pattern
is known in advance. Each evaluation scans :math:`\Phi` (:math:`nm`), then takes the sparse
kernels above when at most ``max_fill`` of it is non-zero and the dense ones otherwise. The
gradient is the one along perturbations that keep :math:`\Phi`'s zeros at zero: the entries of
:math:`\partial L / \partial \Phi` at zeros of :math:`\Phi` are returned as 0 (on the sparse
branch). That is the exact chain rule for an embedding whose zeros have zero derivative with
respect to every parameter -- the bump's: it vanishes with all its derivatives for
:math:`d \ge r`, and where it underflows to 0 inside the support its derivative underflows too.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._euclidean import CANCELLATION
from pymc_sle._lapack import symmetric_sum
from pymc_sle.kernels._embedding_loops import (
    cross_forward,
    dense_forward,
    scatter_columns,
    sparse_backward,
    sparse_forward,
    support_of,
)

__all__ = [
    "SparsePattern",
    "cross_squared_distances",
    "dense_squared_distances",
    "sparse_squared_distances",
    "support_squared_distances",
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

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = dense_forward(np.ascontiguousarray(inputs[0]))

    def infer_shape(self, fgraph, node, input_shapes):
        n = input_shapes[0][0]
        return [(n, n)]

    def L_op(self, inputs, outputs, output_grads):
        (phi,), (grad,) = inputs, output_grads
        return [_dense_gradient(phi, grad)]


def _dense_gradient(phi, grad):
    """The module's gradient formula, on the centred ``phi`` (the same value: :math:`s = S1`
    cancels a common shift), where the two terms cancel less."""
    centred = phi - phi.mean(axis=0)
    symmetric = grad + grad.T
    return 2.0 * (symmetric.sum(axis=1)[:, None] * centred - pt.dot(symmetric, centred))


@numba_funcify.register(_DenseSquaredDistances)
def _numba_dense_forward(op, node=None, **kwargs):
    @numba.njit
    def dense_squared_distances(phi):
        return dense_forward(np.ascontiguousarray(phi))

    return dense_squared_distances


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


@numba_funcify.register(_CrossSquaredDistances)
def _numba_cross_forward(op, node=None, **kwargs):
    @numba.njit
    def cross_squared_distances(phi, phi_other):
        return cross_forward(np.ascontiguousarray(phi), np.ascontiguousarray(phi_other))

    return cross_squared_distances


def cross_squared_distances(phi, phi_other) -> pt.TensorVariable:
    r""":math:`\lVert \phi_i - \phi'_j \rVert^2` between the rows of two embeddings (prediction
    cross-covariances); exactly 0 for equal rows."""
    return _CrossSquaredDistances()(phi, phi_other)


class SparsePattern:
    """Where an ``(n, m)`` embedding can be non-zero, stored by column (landmark).

    Parameters
    ----------
    mask : ndarray of bool, shape (n, m)
        True where the embedding may be non-zero.

    Attributes
    ----------
    col_ptr, row_index : ndarray of int64
        Column ``k`` holds rows ``row_index[col_ptr[k]:col_ptr[k + 1]]`` (CSC layout).
    col_index : ndarray of int64
        The column of every stored entry.
    """

    def __init__(self, mask: np.ndarray):
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim != 2:
            raise ValueError(f"`mask` must be 2-D, but has shape {mask.shape}")
        self.shape = mask.shape
        cols, rows = np.nonzero(mask.T)
        self.row_index = rows.astype(np.int64)
        self.col_index = cols.astype(np.int64)
        self.col_ptr = np.zeros(mask.shape[1] + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=mask.shape[1]), out=self.col_ptr[1:])

    @property
    def nnz(self) -> int:
        return int(self.row_index.size)

    @property
    def fill(self) -> float:
        """Mean fraction of non-zeros per row, ``s_bar / m``."""
        return self.nnz / max(self.shape[0] * self.shape[1], 1)

    def gather(self, block: np.ndarray) -> np.ndarray:
        """The entries of an ``(n, m)`` array on the pattern, in storage order."""
        return np.ascontiguousarray(block[self.row_index, self.col_index])


class _SparseSquaredDistances(Op):
    """``(values, col_ptr, row_index) -> Delta`` for an embedding of ``n_rows`` stored by column."""

    __props__ = ("n_rows",)

    def __init__(self, n_rows: int):
        self.n_rows = int(n_rows)

    def make_node(self, values, col_ptr, row_index):
        inputs = [
            pt.cast(pt.as_tensor_variable(values), "float64"),
            pt.as_tensor_variable(col_ptr),
            pt.as_tensor_variable(row_index),
        ]
        output = pt.tensor(dtype="float64", shape=(self.n_rows, self.n_rows))
        return Apply(self, inputs, [output])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = sparse_forward(*inputs, self.n_rows)

    def infer_shape(self, fgraph, node, input_shapes):
        return [(self.n_rows, self.n_rows)]

    def L_op(self, inputs, outputs, output_grads):
        values, col_ptr, row_index = inputs
        grad = _SparseSquaredDistancesGrad()(values, col_ptr, row_index, output_grads[0])
        return [grad, disconnected_type(), disconnected_type()]

    def connection_pattern(self, node):
        return [[True], [False], [False]]


class _SparseSquaredDistancesGrad(Op):
    __props__ = ()

    def make_node(self, values, col_ptr, row_index, grad):
        inputs = [pt.as_tensor_variable(v) for v in (values, col_ptr, row_index, grad)]
        return Apply(self, inputs, [pt.vector(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        values, col_ptr, row_index, grad = inputs
        output_storage[0][0] = sparse_backward(
            values, col_ptr, row_index, np.ascontiguousarray(grad)
        )

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]


@numba_funcify.register(_SparseSquaredDistances)
def _numba_sparse_forward(op, node=None, **kwargs):
    n_rows = op.n_rows

    @numba.njit
    def sparse_squared_distances(values, col_ptr, row_index):
        return sparse_forward(values, col_ptr, row_index, n_rows)

    return sparse_squared_distances


@numba_funcify.register(_SparseSquaredDistancesGrad)
def _numba_sparse_backward(op, node=None, **kwargs):
    @numba.njit
    def sparse_squared_distances_grad(values, col_ptr, row_index, grad):
        return sparse_backward(values, col_ptr, row_index, grad)

    return sparse_squared_distances_grad


def sparse_squared_distances(values, pattern: SparsePattern) -> pt.TensorVariable:
    r""":math:`\Delta` for an embedding whose non-zeros ``values`` lie on ``pattern``.

    The diagonal is exactly 0. ``values`` are in the pattern's storage order (see
    :meth:`SparsePattern.gather`).
    """
    return _SparseSquaredDistances(pattern.shape[0])(
        values, pt.constant(pattern.col_ptr), pt.constant(pattern.row_index)
    )


@numba.njit(cache=True)
def _is_dense(phi, max_fill):
    """Whether more than ``max_fill`` of ``phi`` is non-zero: counted before the CSC copy is
    built, which would cost several times the count on the dense branch."""
    return np.count_nonzero(phi) > max_fill * phi.size


@numba.njit(cache=True)
def _support_forward(phi, max_fill):
    if _is_dense(phi, max_fill):
        return dense_forward(phi)
    values, col_ptr, row_index = support_of(phi)
    return sparse_forward(values, col_ptr, row_index, phi.shape[0])


@numba.njit(cache=True)
def _support_backward(phi, grad, max_fill):
    if _is_dense(phi, max_fill):
        symmetric = symmetric_sum(np.ascontiguousarray(grad))
        centred = phi - phi.sum(axis=0) / phi.shape[0]  # as _dense_gradient
        return 2.0 * (symmetric.sum(axis=1).reshape((-1, 1)) * centred - np.dot(symmetric, centred))
    values, col_ptr, row_index = support_of(phi)
    on_support = sparse_backward(values, col_ptr, row_index, grad)
    return scatter_columns(on_support, col_ptr, row_index, phi.shape)


class _SupportSquaredDistances(Op):
    """``phi -> Delta`` using the non-zeros of ``phi`` found at run time (see the module notes
    for the gradient)."""

    __props__ = ("max_fill",)

    def __init__(self, max_fill: float):
        self.max_fill = float(max_fill)

    def make_node(self, phi):
        phi = pt.cast(pt.as_tensor_variable(phi), "float64")
        if phi.type.ndim != 2:
            raise ValueError(f"`phi` must be 2-D, but has ndim {phi.type.ndim}")
        n = phi.type.shape[0]
        return Apply(self, [phi], [pt.tensor(dtype="float64", shape=(n, n))])

    def perform(self, node, inputs, output_storage):
        phi = np.ascontiguousarray(inputs[0])
        output_storage[0][0] = _support_forward(phi, self.max_fill)

    def infer_shape(self, fgraph, node, input_shapes):
        n = input_shapes[0][0]
        return [(n, n)]

    def L_op(self, inputs, outputs, output_grads):
        return [_SupportSquaredDistancesGrad(self.max_fill)(inputs[0], output_grads[0])]


class _SupportSquaredDistancesGrad(Op):
    __props__ = ("max_fill",)

    def __init__(self, max_fill: float):
        self.max_fill = float(max_fill)

    def make_node(self, phi, grad):
        inputs = [pt.as_tensor_variable(v) for v in (phi, grad)]
        return Apply(self, inputs, [inputs[0].type()])

    def perform(self, node, inputs, output_storage):
        phi, grad = (np.ascontiguousarray(v) for v in inputs)
        output_storage[0][0] = _support_backward(phi, grad, self.max_fill)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]


@numba_funcify.register(_SupportSquaredDistances)
def _numba_support_forward(op, node=None, **kwargs):
    max_fill = op.max_fill

    @numba.njit
    def support_squared_distances(phi):
        return _support_forward(np.ascontiguousarray(phi), max_fill)

    return support_squared_distances


@numba_funcify.register(_SupportSquaredDistancesGrad)
def _numba_support_backward(op, node=None, **kwargs):
    max_fill = op.max_fill

    @numba.njit
    def support_squared_distances_grad(phi, grad):
        return _support_backward(np.ascontiguousarray(phi), np.ascontiguousarray(grad), max_fill)

    return support_squared_distances_grad


def support_squared_distances(phi, max_fill: float) -> pt.TensorVariable:
    r""":math:`\Delta` for a dense ``(n, m)`` embedding, computed on its non-zeros found at run
    time when at most ``max_fill`` of it is non-zero (dense kernels otherwise); diagonal exactly
    0. The gradient treats zeros of ``phi`` as fixed (module notes): use it for bump embeddings."""
    if not 0.0 <= max_fill <= 1.0:
        raise ValueError(f"`max_fill` must be in [0, 1], but got {max_fill!r}")
    return _SupportSquaredDistances(max_fill)(phi)


def _register_jax() -> None:
    try:
        import jax
        import jax.numpy as jnp
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # JAX is optional
        return

    # JAX gets the pattern densified: correct on every backend, sparse-fast on C and NUMBA. The
    # pattern is a graph constant, so its column of every entry is computed once, here.
    def _columns(node):
        col_ptr = node.inputs[1].data
        return col_ptr.size - 1, np.repeat(np.arange(col_ptr.size - 1), np.diff(col_ptr))

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
        centred = phi - phi.mean(axis=0)
        symmetric = grad + grad.T
        return 2.0 * (symmetric.sum(axis=1)[:, None] * centred - symmetric @ centred)

    @jax_funcify.register(_DenseSquaredDistances)
    @jax_funcify.register(_SupportSquaredDistances)
    def _jax_dense(op, node=None, **kwargs):
        return squared_distances

    @jax_funcify.register(_CrossSquaredDistances)
    def _jax_cross(op, node=None, **kwargs):
        def cross_squared_distances(phi, phi_other):
            return accurate_squared_distances(phi, phi_other, symmetric=False)

        return cross_squared_distances

    @jax_funcify.register(_SupportSquaredDistancesGrad)
    def _jax_support_backward(op, node=None, **kwargs):
        return dense_gradient  # exact (the Op's sparse branch is C/NUMBA only)

    @jax_funcify.register(_SparseSquaredDistances)
    def _jax_forward(op, node=None, **kwargs):
        n = op.n_rows
        m, cols = _columns(node)

        def forward(values, col_ptr, row_index):
            phi = jnp.zeros((n, m), dtype=values.dtype).at[row_index, cols].set(values)
            return squared_distances(phi)

        return forward

    @jax_funcify.register(_SparseSquaredDistancesGrad)
    def _jax_backward(op, node=None, **kwargs):
        m, cols = _columns(node)

        def backward(values, col_ptr, row_index, grad):
            phi = jnp.zeros((grad.shape[0], m), dtype=values.dtype).at[row_index, cols].set(values)
            return dense_gradient(phi, grad)[row_index, cols]

        return backward


_register_jax()
