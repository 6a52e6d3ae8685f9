"""Index-mode inputs: one column of ``X`` holding integer row numbers."""

from __future__ import annotations

import pytensor.tensor as pt

from pymc_sle._validation import as_index_array, constant_value

__all__ = ["check_single_active_dim", "distance_rows", "index_rows"]


def check_single_active_dim(active_dims) -> None:
    """Index-mode kernels read exactly one column of ``X``."""
    if len(active_dims) != 1:
        raise ValueError(
            "`active_dims` must name exactly one column of X (the row index), but got "
            f"{list(active_dims)}"
        )


def index_rows(X, column: int, n_rows: int, *, name: str, axis_name: str):
    """The integer row indices in column ``column`` of ``X``, as an int64 tensor.

    When ``X`` is known (numbers or a constant), the column is validated: ``X`` must be 2-D with
    that column, and its entries integral and within ``[0, n_rows)``; errors name ``name`` and
    ``axis_name``.
    """
    concrete = constant_value(X)
    if concrete is not None:
        if concrete.ndim != 2 or concrete.shape[1] <= column:
            raise ValueError(
                f"`{name}` must be a 2-D array whose column {column} holds indices of "
                f"{axis_name}, but has shape {concrete.shape}"
            )
        as_index_array(name, concrete[:, column], n_rows, axis_name=axis_name)
    return pt.cast(pt.as_tensor_variable(X)[:, column], "int64")


def distance_rows(kernel, X, name: str):
    """``index_rows`` for a kernel with a ``distances`` matrix and one active column: the rows
    of ``kernel.distances`` that ``X`` names."""
    return index_rows(
        X,
        int(kernel.active_dims[0]),
        kernel.distances.n_points,
        name=name,
        axis_name="rows of `distances`",
    )
