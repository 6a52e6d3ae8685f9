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

**Bump**: the bump embedding on its support found at run time, whatever the radius prior
(:mod:`pymc_sle.kernels._bump_ops`), on the sparse kernels above or the dense ones.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._blas_threads import one_blas_thread_in_workers
from pymc_sle.kernels._embedding_loops import (
    cross_forward,
    dense_forward,
    sparse_backward,
    sparse_forward,
)

__all__ = [
    "SparsePattern",
    "cross_squared_distances",
    "dense_squared_distances",
    "sparse_squared_distances",
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
        return [_dense_gradient_formula(pt, phi, grad)]


def _dense_gradient_formula(xp, phi, grad):
    """The module's gradient formula for ``xp`` = pytensor.tensor or jax.numpy, on the centred
    ``phi`` (the same value: :math:`s = S1` cancels a common shift), where the two terms cancel
    less. The numba kernel is ``_embedding_loops.dense_backward``."""
    centred = phi - phi.mean(axis=0)
    symmetric = grad + grad.T
    return 2.0 * (symmetric.sum(axis=1)[:, None] * centred - xp.dot(symmetric, centred))


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
