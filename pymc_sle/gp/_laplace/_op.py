"""The PyTensor Op of the Laplace approximation, dense or sparse (``_approximation``,
``_sparse``)."""

from __future__ import annotations

import weakref

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._backends import (
    object_mode_perform,
    one_blas_thread_in_workers,
    register_value_only,
)
from pymc_sle.gp._laplace._approximation import dense_approximation, laplace_terms
from pymc_sle.gp._laplace._ep import ep_terms
from pymc_sle.gp._laplace._likelihoods import Likelihood
from pymc_sle.gp._laplace._sparse import sparse_approximation
from pymc_sle.gp._laplace._warm import WarmStart, forget
from pymc_sle.gp._sparse import PARAMETERS, SparseSLEProblem

__all__ = ["APPROXIMATIONS", "LaplaceLogDensity"]

#: The sparse Op's SLE inputs after the mean (the jitter is the Gaussian path's noise).
SPARSE_PARAMETERS = (*PARAMETERS[:-1], "jitter")
#: The approximations of the marginal likelihood, by name: their ``Terms`` functions.
APPROXIMATIONS = {"laplace": laplace_terms, "ep": ep_terms}


class LaplaceLogDensity(Op):
    """An approximation of ``log p(y)`` for a latent GP (``approximation``: ``"laplace"`` or
    ``"ep"``, expectation propagation), and its gradient.

    Dense (``problem=None``): inputs ``(y, cov, mean, *likelihood parameters)``, ``cov`` the
    latent covariance with jitter. Sparse (``problem`` a
    ``pymc_sle.gp._sparse.SparseSLEProblem``): inputs ``(y, mean, radius, amplitude,
    shape, ls, scale, jitter, *likelihood parameters)``. The outputs are ``log q`` and, with
    ``with_gradients``, its gradient with respect to each input after ``y``, all from one
    Newton iteration or EP run (warm-started from this Op's mode or sites at the nearest
    inputs, ``_warm``).
    """

    __props__ = ("likelihood", "problem", "with_gradients", "approximation")

    def __init__(
        self,
        likelihood: Likelihood,
        problem: SparseSLEProblem | None = None,
        with_gradients: bool = True,
        approximation: str = "laplace",
    ):
        if approximation not in APPROXIMATIONS:
            raise ValueError(f"`approximation` must be one of {sorted(APPROXIMATIONS)}, but got "
                             f"{approximation!r}")  # fmt: skip
        self.likelihood = likelihood
        self.problem = problem
        self.with_gradients = bool(with_gradients)
        self.approximation = approximation
        weakref.finalize(self, forget, id(self))  # its warm starts go with it

    def _names(self) -> tuple[str, ...]:
        structure = ("cov", "mean") if self.problem is None else ("mean", *SPARSE_PARAMETERS)
        return (*structure, *self.likelihood.parameter_names)

    def make_node(self, y, *inputs):
        names = self._names()
        if len(inputs) != len(names):
            raise TypeError(
                f"LaplaceLogDensity takes `y` and {names}, but got {len(inputs)} inputs"
            )
        y = pt.cast(pt.as_tensor_variable(y), "float64")
        checked = []
        for name, variable in zip(names, inputs, strict=True):
            variable = pt.cast(pt.as_tensor_variable(variable), "float64")
            wanted = {"cov": 2, "mean": 1}.get(name, 0)
            if variable.type.ndim != wanted:
                raise ValueError(
                    f"`{name}` must have ndim {wanted}, but has ndim {variable.type.ndim}"
                )
            checked.append(variable)
        outputs = [pt.scalar(dtype="float64")]
        if self.with_gradients:
            outputs += [variable.type() for variable in checked]
        return Apply(self, [y, *checked], outputs)

    def _describe(self, inputs):
        names = self._names()
        scalars = [
            f"{name}={float(value):.6g}"
            for name, value in zip(names, inputs, strict=True)
            if np.ndim(value) == 0
        ]
        return f"{self.likelihood!r}" + (f" with {', '.join(scalars)}" if scalars else "")

    @one_blas_thread_in_workers
    def perform(self, node, inputs, output_storage):
        y, *rest = inputs
        n = y.shape[0] if self.problem is None else self.problem.n
        if y.shape != (n,) or rest[0 if self.problem is not None else 1].shape != (n,):
            raise ValueError(f"`y` and `mean` must have shape ({n},), but have {y.shape}")
        options = {"terms": APPROXIMATIONS[self.approximation],
                   "warm": WarmStart(id(self), rest),
                   "with_gradients": self.with_gradients,
                   "describe": lambda: self._describe(rest)}  # fmt: skip
        if self.problem is None:
            cov, mean, *parameters = rest
            value, gradient = dense_approximation(cov, y, mean, self.likelihood, parameters,
                                                  **options)  # fmt: skip
        else:
            mean, *values = rest
            sle_values = [float(v) for v in values[: len(SPARSE_PARAMETERS)]]
            parameters = [float(v) for v in values[len(SPARSE_PARAMETERS) :]]
            value, gradient = sparse_approximation(self.problem, y, mean, self.likelihood,
                                                   *sle_values, parameters, **options)  # fmt: skip
        output_storage[0][0] = np.asarray(value, dtype=float)
        if self.with_gradients:
            for storage, part in zip(output_storage[1:], gradient, strict=True):
                storage[0] = np.asarray(part, dtype=float)

    def L_op(self, inputs, outputs, output_grads):
        gradient = (
            outputs[1:]
            if self.with_gradients
            else LaplaceLogDensity(self.likelihood, self.problem, True, self.approximation)(
                *inputs
            )[1:]
        )
        undefined = grad_undefined(self, 0, inputs[0], "the observations are data")
        return [undefined, *(output_grads[0] * part for part in gradient)]


register_value_only(
    LaplaceLogDensity,
    lambda op: LaplaceLogDensity(op.likelihood, op.problem, False, op.approximation),
)


@numba_funcify.register(LaplaceLogDensity)
def _numba_laplace(op, node=None, **kwargs):
    """``perform`` in object mode (``pymc_sle._backends.object_mode_perform``)."""
    return object_mode_perform(op, node)
