"""What the active columns of ``X`` hold, validated whenever they can change.

- **Index mode** (a kernel with a ``distances`` matrix): one column of integer row numbers into
  that matrix (:func:`index_rows`).
- **Feature mode** (no ``distances``): ``m`` columns, each point's distances to the ``m``
  landmarks (:func:`feature_block`).

A concrete ``X`` (numbers, a constant) is validated when the graph is built. A ``pm.Data``
container or any other symbolic ``X`` can change after that (``pm.set_data``), so its columns go
through :class:`CheckedRows` or :class:`CheckedDistances`, which validate the values every time
the graph runs, on the C, NUMBA and JAX backends. A bad value raises a ``ValueError`` naming the
input (on JAX, the ``JaxRuntimeError`` that carries it: a traced program cannot raise) instead of
reaching the kernel, where an index would wrap around (``-1`` is the last row) or be truncated
(``2.7`` is row 2), and a NaN distance would turn every prediction into NaN.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op

from pymc_sle._backends import register_jax, register_numba
from pymc_sle._validation import as_index_array, check_finite_nonnegative, constant_value

__all__ = [
    "CheckedDistances",
    "CheckedRows",
    "check_single_active_dim",
    "distance_rows",
    "feature_block",
    "index_rows",
]


def check_single_active_dim(active_dims) -> None:
    """Index-mode kernels read exactly one column of ``X``."""
    if len(active_dims) != 1:
        raise ValueError(
            "`active_dims` must name exactly one column of X (the row index), but got "
            f"{list(active_dims)}"
        )


class _CheckedInput(Op):
    """``values -> values`` cast to ``out_dtype``, after checking every value.

    Subclasses give ``ndim``, ``out_dtype``, ``holds`` (what the values are), ``message`` (the
    error of the compiled backends, which cannot format the bad value), ``_all_valid`` (a fast
    test) and ``_raise_for`` (the detailed ``ValueError``), and register their NUMBA
    implementation.
    """

    ndim: int
    out_dtype: str
    holds: str
    name: str

    def make_node(self, values):
        values = pt.as_tensor_variable(values)
        if values.type.ndim != self.ndim:
            raise ValueError(
                f"{type(self).__name__} needs {self.ndim}-D input, but got ndim {values.type.ndim}"
            )
        if not (values.dtype.startswith("int") or values.dtype.startswith("float")):
            raise TypeError(f"`{self.name}` must hold {self.holds}, but has dtype {values.dtype}")
        return Apply(self, [values], [pt.TensorType(self.out_dtype, shape=values.type.shape)()])

    def perform(self, node, inputs, output_storage):
        values = inputs[0]
        if not self._all_valid(values):
            self._raise_for(values)
            raise ValueError(self.message)  # in case the two tests ever disagree
        output_storage[0][0] = values.astype(self.out_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes


@register_jax(_CheckedInput)
def _jax_checked_input(op, **kwargs):
    """A traced program cannot raise: the check runs on the host through a callback, whose
    ``ValueError`` aborts the computation with the message. The gradient of
    :class:`CheckedDistances` is the identity in PyTensor's graph, so JAX never differentiates
    this."""
    import jax

    def check(values):
        values = np.asarray(values)
        if not op._all_valid(values):
            op._raise_for(values)
        return values.astype(op.out_dtype)

    def checked(values):
        result = jax.ShapeDtypeStruct(values.shape, np.dtype(op.out_dtype))
        return jax.pure_callback(check, result, values, vmap_method="sequential")

    return checked


class CheckedRows(_CheckedInput):
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
    ndim = 1
    out_dtype = "int64"
    holds = "integer indices"

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

    def _all_valid(self, values) -> bool:
        return _valid_rows(values, self.n_rows)

    def _raise_for(self, values) -> None:
        as_index_array(self.name, values, self.n_rows, axis_name=self.axis_name)

    def L_op(self, inputs, outputs, output_grads):
        return [disconnected_type()]

    def connection_pattern(self, node):
        return [[False]]


class CheckedDistances(_CheckedInput):
    """``values -> float64(values)``, after checking that every value is a finite, non-negative
    distance; the gradient passes through unchanged.

    Parameters
    ----------
    name : str
        The input as the user knows it (e.g. ``"Xnew"``), used in the error message.
    """

    __props__ = ("name",)
    ndim = 2
    out_dtype = "float64"
    holds = "distances"

    def __init__(self, name: str):
        self.name = str(name)

    @property
    def message(self) -> str:
        """The error raised by the compiled backends (which cannot format the bad value)."""
        return (
            f"`{self.name}` must hold distances to the landmarks (finite and non-negative), but "
            "holds a negative, NaN or infinite value"
        )

    def _all_valid(self, values) -> bool:
        return _valid_distances(values)

    def _raise_for(self, values) -> None:
        check_finite_nonnegative(self.name, np.asarray(values, dtype=float))

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]]


@numba.njit(cache=True)
def _valid_rows(values, n_rows):
    """Whether every value is an integral index in ``[0, n_rows)`` (NaN is not)."""
    for i in range(values.shape[0]):
        value = values[i]
        if not (value >= 0 and value < n_rows) or value != np.floor(value):
            return False
    return True


@numba.njit(cache=True)
def _valid_distances(values):
    """Whether every value is finite and ``>= 0`` (NaN is not)."""
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            value = values[i, j]
            if not (value >= 0 and value < np.inf):
                return False
    return True


@register_numba(CheckedRows)
def _numba_checked_rows(op, node=None, **kwargs):
    n_rows, message = op.n_rows, op.message

    @numba.njit
    def checked_rows(values):
        if not _valid_rows(values, n_rows):
            raise ValueError(message)
        return values.astype(np.int64)

    return checked_rows


@register_numba(CheckedDistances)
def _numba_checked_distances(op, node=None, **kwargs):
    message = op.message

    @numba.njit
    def checked_distances(values):
        if not _valid_distances(values):
            raise ValueError(message)
        return values.astype(np.float64)

    return checked_distances


def _display_name(X, name: str) -> str:
    label = getattr(X, "name", None)
    return f"{name} ({label})" if label and label != name else name


def _two_dimensional(X, name: str, what: str, last_column: int, input_dim: int):
    """``(X as a tensor, its value if known now)``, after checking that ``X`` is 2-D and has
    ``last_column``. Like PyMC's kernels, warns when ``X`` has a number of columns other than the
    kernel's ``input_dim`` (columns no kernel reads)."""
    concrete = constant_value(X)
    if concrete is not None and concrete.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be a 2-D array of numbers, but has dtype {concrete.dtype}")
    if concrete is not None and (concrete.ndim != 2 or concrete.shape[1] <= last_column):
        raise ValueError(
            f"`{name}` must be a 2-D array whose {what}, but has shape {concrete.shape}"
        )
    X = pt.as_tensor_variable(X)
    if X.type.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D array whose {what}, but has {X.type.ndim} dimensions"
        )
    n_columns = concrete.shape[1] if concrete is not None else X.type.shape[1]
    if n_columns is not None and n_columns != input_dim:
        warnings.warn(
            f"Only {input_dim} column(s) out of {n_columns} of `{name}` are used by the "
            "covariance function. If this is not intended, set `input_dim` to the number of "
            "columns and `active_dims` to the columns the kernel should read; ignore otherwise.",
            UserWarning,
            stacklevel=3,
        )
    return X, concrete


def index_rows(X, column: int, n_rows: int, *, name: str, axis_name: str, input_dim: int = 1):
    """The integer row indices in column ``column`` of ``X``, as an int64 tensor.

    When ``X`` is known now (numbers, a constant, the current value of ``pm.Data``), the column is
    validated: ``X`` must be 2-D with that column, and its entries integral and within
    ``[0, n_rows)``; errors name ``name`` and ``axis_name``. Unless ``X`` is a constant, the
    indices are checked again whenever the graph runs (:class:`CheckedRows`), so values set later
    by ``pm.set_data`` cannot slip through.
    """
    what = f"column {column} holds indices of {axis_name}"
    X, concrete = _two_dimensional(X, name, what, column, input_dim)
    if concrete is not None:
        as_index_array(name, concrete[:, column], n_rows, axis_name=axis_name)
    if isinstance(X, Constant):
        return pt.cast(X[:, column], "int64")
    return CheckedRows(n_rows, _display_name(X, name), axis_name)(X[:, column])


def feature_block(X, columns, *, name: str, input_dim: int):
    """The distances to the landmarks held in ``columns`` of ``X``, as a float64 ``(n, m)``
    tensor.

    When ``X`` is known now, those columns must be finite and non-negative; unless ``X`` is a
    constant, they are checked again whenever the graph runs (:class:`CheckedDistances`).
    """
    columns = [int(c) for c in columns]
    what = f"columns {columns} hold distances to the landmarks"
    X, concrete = _two_dimensional(X, name, what, max(columns), input_dim)
    if concrete is not None:
        check_finite_nonnegative(name, np.asarray(concrete[:, columns], dtype=float))
    contiguous = columns == list(range(columns[0], columns[0] + len(columns)))
    block = X[:, columns[0] : columns[-1] + 1] if contiguous else X[:, columns]
    if isinstance(X, Constant):
        return pt.cast(block, "float64")
    return CheckedDistances(_display_name(X, name))(block)


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
