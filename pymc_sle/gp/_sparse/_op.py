"""The PyTensor Op of the sparse SLE likelihood (``pymc_sle.gp._sparse._likelihood``)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._backends import (
    object_mode_perform,
    one_blas_thread_in_workers,
    register_value_only,
)
from pymc_sle.gp._sparse._likelihood import PARAMETERS, log_density
from pymc_sle.gp._sparse._problem import SparseSLEProblem

__all__ = ["SparseSLELogDensity"]


class SparseSLELogDensity(Op):
    """``(residual, radius, amplitude, shape, ls, scale, noise) -> log p [, gradient]`` of the
    SLE-RBF marginal likelihood on a fixed `SparseSLEProblem` (see the module docstring).

    ``scale`` is the signal variance, ``noise`` the noise variance with jitter. With
    ``with_gradients``, the node also outputs the gradient with respect to each input, from the
    same factorisation.
    """

    __props__ = ("problem", "with_gradients")

    def __init__(self, problem: SparseSLEProblem, with_gradients: bool = True):
        self.problem = problem
        self.with_gradients = bool(with_gradients)

    def make_node(self, residual, *parameters):
        if len(parameters) != len(PARAMETERS):
            raise TypeError(f"SparseSLELogDensity takes the residual and {PARAMETERS}")
        residual = pt.cast(pt.as_tensor_variable(residual), "float64")
        if residual.type.ndim != 1:
            raise ValueError(f"`residual` must be a vector, but has ndim {residual.type.ndim}")
        scalars = []
        for name, parameter in zip(PARAMETERS, parameters, strict=True):
            parameter = pt.cast(pt.as_tensor_variable(parameter), "float64")
            if parameter.type.ndim != 0:
                raise ValueError(f"`{name}` must be a scalar, but has ndim {parameter.type.ndim}")
            scalars.append(parameter)
        outputs = [pt.scalar(dtype="float64")]
        if self.with_gradients:
            outputs += [pt.vector(dtype="float64")] + [pt.scalar(dtype="float64") for _ in scalars]
        return Apply(self, [residual, *scalars], outputs)

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        residual, *parameters = inputs
        if residual.shape != (self.problem.n,):
            raise ValueError(
                f"`residual` must have shape ({self.problem.n},), but has {residual.shape}"
            )
        value, gradient = log_density(
            self.problem,
            residual,
            *(float(p) for p in parameters),
            with_gradients=self.with_gradients,
        )
        output_storage[0][0] = np.asarray(value)
        if self.with_gradients:
            for storage, part in zip(output_storage[1:], gradient, strict=True):
                storage[0] = np.asarray(part, dtype=float)

    def L_op(self, inputs, outputs, output_grads):
        gradient = (
            outputs[1:] if self.with_gradients else SparseSLELogDensity(self.problem)(*inputs)[1:]
        )
        return [output_grads[0] * part for part in gradient]


register_value_only(SparseSLELogDensity, lambda op: SparseSLELogDensity(op.problem, False))


@numba_funcify.register(SparseSLELogDensity)
def _numba_sparse_sle(op, node=None, **kwargs):
    """``perform`` in object mode (``pymc_sle._backends.object_mode_perform``): the work is one
    sparse factorisation per call, so the Python round trip costs nothing measurable."""
    return object_mode_perform(op, node)
