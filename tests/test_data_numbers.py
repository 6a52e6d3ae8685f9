"""Data numbers: values the compiled code takes as inputs, never as literals."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_sle._data_numbers import DataNumber, data_number
from pymc_sle._validation import constant_value


@pytest.mark.parametrize(
    "value", [0.123456789, np.array([1.5, -2.5, 3.25]), np.array([True, False])]
)
def test_the_value_survives_compilation_as_an_input_not_a_literal(value):
    number = data_number(value)
    x = pt.dscalar("x")
    f = pytensor.function([x], x * number)
    np.testing.assert_array_equal(f(2.0), 2.0 * np.asarray(value))
    nodes = f.maker.fgraph.apply_nodes
    assert any(isinstance(node.op, DataNumber) for node in nodes)  # not folded away
    assert number.type.shape == (None,) * np.ndim(value)  # no static shape either


def test_gradients_flow_through_the_variable_and_constant_value_sees_through():
    x = pt.dscalar("x")
    y = data_number(3.0) * x**2
    np.testing.assert_allclose(pytensor.grad(y, x).eval({x: 2.0}), 12.0)
    np.testing.assert_array_equal(constant_value(data_number([1.0, 2.0])), [1.0, 2.0])
    assert data_number(2).dtype == "int64" and data_number(np.float32(1.5)).dtype == "float64"


def test_non_numbers_are_refused():
    with pytest.raises(TypeError, match="`value` must be numbers, but got an array of dtype <U1"):
        data_number(["a"])
