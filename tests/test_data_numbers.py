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


def _fused_ops_compiled_by(build, monkeypatch) -> set:
    """The fused elementwise Ops (whose C source PyTensor caches) of every function ``build()``
    compiles, ``.eval()`` included."""
    import pytensor.compile.function as compile_function
    from pytensor.scalar import Composite

    compiled, original = [], compile_function.function

    def recording(*args, **kwargs):
        compiled.append(original(*args, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(compile_function, "function", recording)
    build()
    monkeypatch.undo()
    return {node.op for function in compiled for node in function.maker.fgraph.apply_nodes
            if isinstance(getattr(node.op, "scalar_op", None), Composite)}  # fmt: skip


def _sle_model_on_distances_times(factor):
    import dataclasses

    from pymc_sle import DistanceMatrix
    from pymc_sle.datasets import one_dimensional
    from pymc_sle.demo import sle_model

    data = one_dimensional(n_train=15, n_test=5, seed=1)
    scaled = DistanceMatrix(factor * data.distances.values)
    return sle_model(dataclasses.replace(data, distances=scaled))


def _basin_intervals_times(factor):
    from pymc_sle.inference._basins import Basin, cuts
    from pymc_sle.inference._sampler import _intervals
    from pymc_sle.inference._transforms import CenteredLog

    basins = [Basin(factor * r, 0.25, factor * r / 1.5, factor * r * 1.5, {}) for r in (1, 4)]
    return _intervals(basins, cuts(basins), CenteredLog(2.0, 0.5))


def _coordinate_times(factor):
    from pymc_sle.inference._basins import coordinates
    from pymc_sle.inference._transforms import CenteredLog

    return coordinates(CenteredLog(2.0, 0.5), factor * 1.7, [factor, factor * 2.0])


@pytest.mark.parametrize(
    "build", [_sle_model_on_distances_times, _basin_intervals_times, _coordinate_times],
    ids=["SLE's prior mass check", "basin intervals", "transform coordinate"],
)  # fmt: skip
def test_numbers_read_off_the_data_compile_no_new_module(build, monkeypatch):
    """What the library evaluates while it builds a model or samples basins (the radius prior's
    mass beyond the training distances, the basins' cuts on the sampled scale) compiles the
    same C code for data of another scale: a number inlined as a literal would differ."""
    once = _fused_ops_compiled_by(lambda: build(1.0), monkeypatch)
    assert once and once == _fused_ops_compiled_by(lambda: build(1.5), monkeypatch)
