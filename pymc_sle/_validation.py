"""Input validation shared by the public API.

Every helper raises ``ValueError`` or ``TypeError`` with a message that names the public argument,
the expected value and the actual one, so that a user never meets a failure deep inside PyTensor.
"""

from __future__ import annotations

import numbers
import os
import sys

import numpy as np

__all__ = [
    "as_index_array",
    "can_change",
    "check_finite_nonnegative",
    "check_positive_parameter",
    "constant_value",
    "indices_or_all",
    "thread_count",
]


def _is_symbolic(value) -> bool:
    """Whether ``value`` is a PyTensor variable (PyTensor is imported only if it already is:
    without it, no variable can exist, and the distance builders stay light)."""
    if "pytensor" not in sys.modules:
        return False
    from pytensor.graph.basic import Variable

    return isinstance(value, Variable)


def can_change(value) -> bool:
    """Whether ``value`` is a PyTensor variable whose value can change between evaluations
    (``pm.Data``, a graph input), unlike numbers and constants: a pattern or a sort built from
    its current value could go stale."""
    if not _is_symbolic(value):
        return False
    from pytensor.graph.basic import Constant

    return not isinstance(value, Constant)


def constant_value(value):
    """Return the numpy value of ``value`` when it is known now, else ``None``.

    Numbers, arrays, PyTensor constants, shared variables (``pm.Data``) and data numbers
    (:func:`~pymc_sle._data_numbers.data_number`) have a value now; random variables and other
    symbolic expressions do not.
    """
    if not _is_symbolic(value):
        return np.asarray(value)
    from pytensor.graph.basic import Constant
    from pytensor.tensor.sharedvar import TensorSharedVariable

    from pymc_sle._data_numbers import DataNumber

    if value.owner is not None and isinstance(value.owner.op, DataNumber):
        value = value.owner.inputs[0]
    if isinstance(value, Constant):
        return np.asarray(value.data)
    if isinstance(value, TensorSharedVariable):
        return np.asarray(value.get_value(borrow=True))
    return None


def _describe_nonfinite(values: np.ndarray) -> str:
    n_nan = int(np.isnan(values).sum())
    n_inf = int(np.isinf(values).sum())
    parts = []
    if n_nan:
        parts.append(f"{n_nan} {'entry is' if n_nan == 1 else 'entries are'} NaN")
    if n_inf:
        parts.append(f"{n_inf} {'entry is' if n_inf == 1 else 'entries are'} infinite")
    return " and ".join(parts)


def check_finite_nonnegative(name: str, values: np.ndarray) -> None:
    """Raise ``ValueError`` unless every entry of the real array ``values`` is finite and >= 0."""
    finite = np.isfinite(values)
    if not finite.all():
        raise ValueError(f"`{name}` must be finite, but {_describe_nonfinite(values)}")
    negative = values < 0
    if negative.any():
        raise ValueError(
            f"`{name}` must be non-negative, but {int(negative.sum())} "
            f"{'entry is' if negative.sum() == 1 else 'entries are'} negative "
            f"(smallest {values.min():.6g})"
        )


def as_index_array(name: str, values, size: int, *, axis_name: str) -> np.ndarray:
    """Validate integer indices into an axis of length ``size``; return them as ``int64``.

    Float arrays are accepted when every entry is integral (PyMC passes ``X`` as floats).

    Parameters
    ----------
    name : str
        Public name of the argument, used in messages.
    values : array_like
        The indices.
    size : int
        Length of the indexed axis; valid indices are ``0 .. size - 1``.
    axis_name : str
        What the axis is, e.g. ``"rows of distances"``.
    """
    array = np.asarray(values)
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"`{name}` must hold integer indices, but has dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating):
        if not np.isfinite(array).all():
            raise ValueError(
                f"`{name}` must be finite integer indices, but {_describe_nonfinite(array)}"
            )
        fractional = array != np.round(array)
        if fractional.any():
            first = array[fractional].ravel()[0].item()
            raise ValueError(
                f"`{name}` must hold integer indices, but {int(fractional.sum())} "
                f"{'entry is' if fractional.sum() == 1 else 'entries are'} not integral "
                f"(e.g. {first!r})"
            )
    array = array.astype(np.int64)
    if array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ValueError(
                f"`{name}` must index the {size} {axis_name} (0 to {size - 1}), but contains {bad}"
            )
    return array


def indices_or_all(name: str, values, size: int, *, axis_name: str) -> np.ndarray:
    """A non-empty 1-D :func:`as_index_array` of ``values``; all of ``0 .. size - 1`` if None."""
    if values is None:
        return np.arange(size)
    indices = as_index_array(name, values, size, axis_name=axis_name)
    if indices.ndim != 1 or indices.size == 0:
        raise ValueError(
            f"`{name}` must be a non-empty 1-D array of indices, but has shape {indices.shape}"
        )
    return indices


def check_positive_parameter(name: str, value, n_landmarks: int | None):
    """Validate a positive parameter: a scalar, or a vector of length ``n_landmarks``.

    ``n_landmarks=None`` admits scalars only. Numbers and arrays are checked for shape,
    finiteness and positivity. Symbolic values (PyMC random variables) are checked for their
    number of dimensions and, where PyTensor knows it, their static length; their values are the
    prior's business.

    Returns
    -------
    numpy.ndarray or pytensor Variable
        ``value`` as a float64 array when it is concrete, unchanged otherwise.
    """
    expected = (
        "a scalar"
        if n_landmarks is None
        else f"a scalar or a vector of length {n_landmarks} (one per landmark)"
    )
    allowed_lengths = () if n_landmarks is None else (1, n_landmarks)
    if _is_symbolic(value):
        ndim = value.type.ndim
        length = value.type.shape[0] if ndim == 1 else None
        if ndim > 1 or (ndim == 1 and n_landmarks is None):
            raise ValueError(f"`{name}` must be {expected}, but is a {ndim}-D tensor")
        if length is not None and length not in allowed_lengths:
            raise ValueError(f"`{name}` must be {expected}, but has length {length}")
        concrete = constant_value(value)
        if concrete is None:
            return value
        value = concrete
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, numbers.Real | np.ndarray | list | tuple
    ):
        raise TypeError(
            f"`{name}` must be a positive number, array or PyMC variable, but got {value!r}"
        )
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must be numeric, but got {value!r}") from err
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] not in allowed_lengths):
        raise ValueError(f"`{name}` must be {expected}, but has shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"`{name}` must be finite, but {_describe_nonfinite(array)}")
    if (array <= 0).any():
        raise ValueError(f"`{name}` must be > 0, but got {array.min():.6g}")
    return array


def thread_count(n_jobs) -> int:
    """The number of workers ``n_jobs`` asks for: itself when positive, every CPU for -1."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer):
        raise TypeError(f"`n_jobs` must be an integer, but got {type(n_jobs).__name__}")
    if n_jobs == -1:
        return os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"`n_jobs` must be a positive integer or -1, but got {n_jobs}")
    return int(n_jobs)
