"""Index-mode inputs: one column of ``X`` holding integer row numbers.

A concrete ``X`` (numbers, a constant) is validated when the graph is built. A ``pm.Data``
container or any other symbolic ``X`` can change after that (``pm.set_data``), so its column goes
through :class:`CheckedRows`, which validates the values every time the graph runs, on the C,
NUMBA and JAX backends. A bad index raises a ``ValueError`` naming the input (on JAX, the
``JaxRuntimeError`` that carries it: a traced program cannot raise) instead of reaching the
gather, where it would wrap around (``-1`` is the last row), be truncated (``2.7`` is row 2) or
fail deep inside PyTensor.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._validation import as_index_array, constant_value

__all__ = ["CheckedRows", "check_single_active_dim", "distance_rows", "index_rows"]


def check_single_active_dim(active_dims) -> None:
    """Index-mode kernels read exactly one column of ``X``."""
    if len(active_dims) != 1:
        raise ValueError(
            "`active_dims` must name exactly one column of X (the row index), but got "
            f"{list(active_dims)}"
        )


class CheckedRows(Op):
    """``values -> int64(values)``, after checking that every value is an integral row index.

    Parameters
    ----------
    n_rows : int
        Valid indices are ``0 .. n_rows - 1``.
    name : str
        The input as the user knows it (e.g. ``"Xnew"``), used in the error message.
    axis_name : str
        What the indices point into, e.g. ``"rows of `distances`"``.
    """

    __props__ = ("n_rows", "name", "axis_name")

    def __init__(self, n_rows: int, name: str, axis_name: str):
        self.n_rows = int(n_rows)
        self.name = str(name)
        self.axis_name = str(axis_name)

    @property
    def message(self) -> str:
        """The error raised by the compiled backends (which cannot format the bad value)."""
        return (
            f"`{self.name}` must hold integer indices of {self.axis_name} in "
            f"[0, {self.n_rows}), but holds a negative, too large, non-integral or non-finite value"
        )

    def make_node(self, values):
        values = pt.as_tensor_variable(values)
        if values.type.ndim != 1:
            raise ValueError(f"CheckedRows needs a 1-D input, but got ndim {values.type.ndim}")
        if not (values.dtype.startswith("int") or values.dtype.startswith("float")):
            raise TypeError(
                f"`{self.name}` must hold integer indices, but has dtype {values.dtype}"
            )
        return Apply(self, [values], [pt.TensorType("int64", shape=values.type.shape)()])

    def perform(self, node, inputs, output_storage):
        values = inputs[0]
        if not _valid_rows(values, self.n_rows):
            as_index_array(self.name, values, self.n_rows, axis_name=self.axis_name)  # raises
        output_storage[0][0] = values.astype(np.int64)

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes

    def L_op(self, inputs, outputs, output_grads):
        return [disconnected_type()]

    def connection_pattern(self, node):
        return [[False]]


@numba.njit(cache=True)
def _valid_rows(values, n_rows):
    """Whether every value is an integral index in ``[0, n_rows)`` (NaN is not)."""
    for i in range(values.shape[0]):
        value = values[i]
        if not (value >= 0 and value < n_rows) or value != np.floor(value):
            return False
    return True


@numba_funcify.register(CheckedRows)
def _numba_checked_rows(op, node=None, **kwargs):
    n_rows, message = op.n_rows, op.message

    @numba.njit
    def checked_rows(values):
        if not _valid_rows(values, n_rows):
            raise ValueError(message)
        return values.astype(np.int64)

    return checked_rows


def _register_jax() -> None:
    try:
        import jax
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # JAX is optional
        return

    @jax_funcify.register(CheckedRows)
    def _jax_checked_rows(op, **kwargs):
        # A traced program cannot raise; the check runs on the host through a callback, and
        # its ValueError aborts the computation with the message.
        def check(values):
            return as_index_array(op.name, np.asarray(values), op.n_rows, axis_name=op.axis_name)

        def checked_rows(values):
            result = jax.ShapeDtypeStruct(values.shape, np.int64)
            return jax.pure_callback(check, result, values, vmap_method="sequential")

        return checked_rows


_register_jax()


def _display_name(X, name: str) -> str:
    label = getattr(X, "name", None)
    return f"{name} ({label})" if label and label != name else name


def index_rows(X, column: int, n_rows: int, *, name: str, axis_name: str, input_dim: int = 1):
    """The integer row indices in column ``column`` of ``X``, as an int64 tensor.

    When ``X`` is known now (numbers, a constant, the current value of ``pm.Data``), the column is
    validated: ``X`` must be 2-D with that column, and its entries integral and within
    ``[0, n_rows)``; errors name ``name`` and ``axis_name``. Unless ``X`` is a constant, the
    indices are checked again whenever the graph runs (:class:`CheckedRows`), so values set later
    by ``pm.set_data`` cannot slip through. Like PyMC's kernels, it warns when ``X`` has a number
    of columns other than the kernel's ``input_dim`` (columns no kernel reads).
    """
    concrete = constant_value(X)
    if concrete is not None:
        if concrete.ndim != 2 or concrete.shape[1] <= column:
            raise ValueError(
                f"`{name}` must be a 2-D array whose column {column} holds indices of "
                f"{axis_name}, but has shape {concrete.shape}"
            )
        as_index_array(name, concrete[:, column], n_rows, axis_name=axis_name)
    X = pt.as_tensor_variable(X)
    if X.type.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D array whose column {column} holds indices of {axis_name}, "
            f"but has {X.type.ndim} dimensions"
        )
    n_columns = concrete.shape[1] if concrete is not None else X.type.shape[1]
    if n_columns is not None and n_columns != input_dim:
        warnings.warn(
            f"Only {input_dim} column(s) out of {n_columns} of `{name}` are used by the "
            "covariance function. If this is not intended, set `input_dim` to the number of "
            "columns and `active_dims` to the index column; ignore otherwise.",
            UserWarning,
            stacklevel=2,
        )
    if isinstance(X, Constant):
        return pt.cast(X[:, column], "int64")
    return CheckedRows(n_rows, _display_name(X, name), axis_name)(X[:, column])


def distance_rows(kernel, X, name: str):
    """``index_rows`` for a kernel with a ``distances`` matrix and one active column: the rows
    of ``kernel.distances`` that ``X`` names."""
    return index_rows(
        X,
        int(kernel.active_dims[0]),
        kernel.distances.n_points,
        name=name,
        axis_name="rows of `distances`",
        input_dim=kernel.input_dim,
    )
