"""Numbers read off the data, kept out of the C code PyTensor compiles and caches.

PyTensor writes the scalar constants of a fused elementwise graph into its C source
(``local_inline_composite_constants``), and keys its on-disk cache by that source. A prior's
scale, a transform's centre or spline knots, read off one data set, would then make new C
modules for every data set, seconds of compilation each (``benchmarks/compile_cost.py``
measures what a new data set costs).

:func:`data_number` wraps such a number in :class:`DataNumber`, an identity that constant
folding leaves alone: compiled code receives the value as an input, so the C source, and the
cached module, depend on the model's structure only. Unlike a shared variable, it is not an
input PyMC's forward sampling treats as changed data (``pm.sample_posterior_predictive``
resamples every variable downstream of a shared variable missing from ``constant_data``).
The JAX and NUMBA backends implement it as the identity (PyTensor's ``TypeCastingOp``); the
C backend returns a view of the constant.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.ops import TypeCastingOp
from pytensor.graph.basic import Apply
from pytensor.tensor.type import TensorType

__all__ = ["DataNumber", "data_number"]


class DataNumber(TypeCastingOp):
    """The identity on a constant, neither folded nor inlined (module notes). The output has
    no static shape, so neither the knots' count nor the value reaches the compiled code."""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [TensorType(x.type.dtype, shape=(None,) * x.type.ndim)()])

    def do_constant_folding(self, fgraph, node) -> bool:
        return False

    def grad(self, inputs, output_gradients):
        return output_gradients


_data_number = DataNumber()


def data_number(value) -> pt.TensorVariable:
    """``value`` (a number or an array of them) as a tensor whose value the compiled code takes
    as an input: floats as float64, booleans and integers with their own dtype.

    Examples
    --------
    >>> from pymc_sle._data_numbers import data_number
    >>> float(data_number(0.25).eval())
    0.25
    """
    value = np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise TypeError(f"`value` must be numbers, but got an array of dtype {value.dtype}")
    if value.dtype.kind == "f":
        value = value.astype("float64")
    return _data_number(pt.as_tensor_variable(value))
