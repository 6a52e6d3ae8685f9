r"""The SLE structure of a marginal likelihood's covariance, read off its PyTensor graph.

A Gaussian-process marginal likelihood has the covariance :math:`C = K(X, X) + \Sigma`. The
library recognises the forms its likelihoods specialise,

.. math::

    C = s\, K_{\mathrm{SLE}}(X, X) + v\, I, \qquad s = \prod_a s_a, \quad v = \sum_b v_b,

with :math:`K_{\mathrm{SLE}}` the tensor an :class:`~pymc_sle.SLE`'s ``full(X)`` returns (it is
tagged with the kernel and ``X``: ``pymc_sle.kernels._sle.training_covariance_of``), each
:math:`s_a` and :math:`v_b` a scalar, and each noise term a scalar times the identity:
``pt.eye`` / ``identity_like`` (PyMC's jitter), or the diagonal of a vector filled with one
value (``pm.gp.cov.WhiteNoise`` with a scalar ``sigma``). That is what
``pm.gp.Marginal(cov_func=eta**2 * SLE(...)).marginal_likelihood(..., sigma=sigma)`` builds, and
what ``pm.MvNormal(mu, cov=eta**2 * K + sigma**2 * pt.eye(n))`` is. Anything else -- another
kernel, a sum of kernels, heteroscedastic noise -- is not recognised, and keeps PyMC's density.

:func:`sparse_likelihood` then says whether the sparse exact likelihood covers a recognised form
(``pymc_sle.gp._sparse``): an SLE on a :class:`~pymc_sle.SparseDistanceMatrix`, with scalar bump
parameters, an inner kernel it has a Gaussian mixture of, fixed inputs and one output.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.tensor.basic import AllocDiag, Eye
from pytensor.tensor.elemwise import DimShuffle, Elemwise

from pymc_sle._validation import can_change, constant_value
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.gp._sparse import SparseSLEProblem, inner_mixture
from pymc_sle.kernels._sle import training_covariance_of

__all__ = ["MarginalForm", "marginal_form", "sparse_likelihood", "unfilled"]


@dataclass(frozen=True, eq=False)
class MarginalForm:
    """A covariance ``scale * SLE(X, X) + noise * I`` (module notes).

    Attributes
    ----------
    kernel : pymc_sle.SLE
        The SLE.
    X : object
        Its inputs, as given to the covariance (row indices, distances, or a
        :class:`~pymc_sle.SparseDistanceMatrix` of distances in feature mode).
    scale, noise : TensorVariable
        The scalar signal variance and the scalar noise variance (jitter included).
    covariance, original : TensorVariable
        ``kernel.full(X)`` as it stands in the graph read, and as the kernel built it (the same
        variable, or the original of a clone: PyMC's logprob rewrites clone a model's graph).
    """

    kernel: object
    X: object
    scale: pt.TensorVariable
    noise: pt.TensorVariable
    covariance: pt.TensorVariable
    original: pt.TensorVariable

    def parameters(self) -> tuple:
        """The kernel's ``(radius, amplitude, shape, ls)`` as they stand in the graph of
        :attr:`covariance`: the kernel's own tensors where the graph is the one it built; their
        counterparts where it is a clone (PyMC's logprob rewrites clone a model's graph and put
        value variables in place of its random variables)."""
        kernel = self.kernel
        wanted = (kernel.radius, kernel.amplitude, kernel.shape, kernel.ls)
        found = _counterparts(self.original, self.covariance, wanted)
        return tuple(found.get(w, w) for w in wanted)


def _operands(variable, scalar_op) -> list:
    """The operands of nested ``Elemwise`` ``scalar_op`` (``Add``, ``Mul``) nodes."""
    node = variable.owner
    if node is None or not (isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op,
                                                                          scalar_op)):  # fmt: skip
        return [variable]
    return [leaf for operand in node.inputs for leaf in _operands(operand, scalar_op)]


def _scalar(variable):
    """``variable`` as a 0-d tensor when it holds one value (a scalar, possibly expanded to
    broadcastable axes), else ``None``."""
    if variable.type.ndim == 0:
        return variable
    node = variable.owner
    if node is not None and isinstance(node.op, DimShuffle) and node.inputs[0].type.ndim == 0:
        return node.inputs[0]
    if all(variable.type.broadcastable):
        return variable.reshape(())
    return None


def _identity_coefficient(matrix):
    """``c`` when ``matrix`` is ``c`` times the identity: an ``Eye`` on the main diagonal
    (``c = 1``), or ``AllocDiag`` of a vector filled with the scalar ``c``."""
    node = matrix.owner
    if node is None:
        return None
    if isinstance(node.op, Eye):
        offset = constant_value(node.inputs[2])
        return pt.constant(1.0) if offset is not None and int(offset) == 0 else None
    if isinstance(node.op, AllocDiag) and node.op.offset == 0:
        filled = node.inputs[0].owner
        if filled is not None and isinstance(filled.op, pt.basic.Alloc):
            return _scalar(filled.inputs[0])
    return None


def marginal_form(cov) -> MarginalForm | None:
    """The :class:`MarginalForm` of the covariance tensor ``cov``, or ``None`` when ``cov`` is
    not of that form (module notes). A matrix expanded to leading axes of length 1 (as
    ``pm.MvNormal`` expands it for several outputs) is read as the matrix."""
    cov = _unexpanded(cov)
    if cov.type.ndim != 2:
        return None
    kernels, noises = [], []
    for term in _operands(cov, ps.Add):
        factors = _operands(term, ps.Mul)
        scalars = [_scalar(f) for f in factors]
        matrices = [f for f, s in zip(factors, scalars, strict=True) if s is None]
        if len(matrices) != 1:
            return None
        coefficients = [s for s in scalars if s is not None]
        tagged = training_covariance_of(matrices[0])
        if tagged is not None:
            kernels.append((tagged, coefficients, matrices[0]))
            continue
        unit = _identity_coefficient(matrices[0])
        if unit is None:
            return None
        noises.append([unit, *coefficients])
    if len(kernels) != 1 or not noises:
        return None
    (kernel, X, original), coefficients, covariance = kernels[0]
    scale = _product(coefficients)
    noise = (
        pt.add(*[_product(terms) for terms in noises]) if len(noises) > 1 else _product(noises[0])
    )
    return MarginalForm(kernel, X, scale, noise, covariance, original)


def _counterparts(original, clone, wanted) -> dict:
    """``{w: the variable at w's place in clone}`` for the variables ``wanted`` of the graph of
    ``original``, found by walking both graphs in step from their outputs (a clone has the
    original's nodes until, below the variables wanted, a random variable was replaced)."""
    wanted = {id(w): w for w in wanted}
    found, stack, seen = {}, [(original, clone)], set()
    while stack and len(found) < len(wanted):
        a, b = stack.pop()
        if (id(a), id(b)) in seen:
            continue
        seen.add((id(a), id(b)))
        if id(a) in wanted:
            found.setdefault(wanted[id(a)], b)
        if a.owner is None or b.owner is None or a.owner.op != b.owner.op:
            continue
        if len(a.owner.inputs) != len(b.owner.inputs):
            continue
        stack.extend(zip(a.owner.inputs, b.owner.inputs, strict=True))
    return found


def _product(factors):
    if not factors:
        return pt.constant(1.0)
    return pt.cast(pt.mul(*factors) if len(factors) > 1 else factors[0], "float64")


def _unexpanded(variable):
    """``variable`` without the leading axes of length 1 a ``DimShuffle`` added to it."""
    node = variable.owner
    while node is not None and isinstance(node.op, DimShuffle):
        order = list(node.op.new_order)
        kept = [axis for axis in order if axis != "x"]
        if kept != list(range(node.inputs[0].type.ndim)) or order[len(order) - len(kept) :] != kept:
            break
        variable = node.inputs[0]
        node = variable.owner
    return variable


def unfilled(mean):
    """``mean`` without the broadcasts ``pm.MvNormal`` wraps it in (``second(cov[..., -1],
    mu)``, expanded to leading axes), which would make it read the covariance."""
    mean = _unexpanded(mean)
    node = mean.owner
    while (
        node is not None
        and isinstance(node.op, Elemwise)
        and isinstance(node.op.scalar_op, ps.Second)
    ):
        mean = node.inputs[1]
        node = mean.owner
    return mean


#: The last sparse problem built, by its distances, landmarks, radius bound and inner mixture (a
#: module constant): the rewrite runs every time a log density is built, the problem's symbolic
#: factorisation once.
_PROBLEMS: dict = {}


def sparse_likelihood(form: MarginalForm, n_outputs_axes: int, stacklevel: int = 2):
    """``(problem, parameters)`` of the sparse exact likelihood of ``form`` -- the
    :class:`~pymc_sle.gp._sparse.SparseSLEProblem` and the tensors ``(radius, amplitude, shape,
    ls, scale, noise)`` -- or ``None`` when the SLE is not on sparse distances, or the sparse
    likelihood does not cover the form (then with a warning naming why). ``n_outputs_axes`` is
    the number of the observations' leading (several outputs) axes."""
    kernel, X = form.kernel, form.X
    if not isinstance(X if kernel.feature_mode else kernel.distances, SparseDistanceMatrix):
        return None
    reasons = []
    mixture = inner_mixture(kernel.inner)
    if mixture is None:
        reasons.append(
            f"inner kernel {type(kernel.inner).__name__} (needs 'rbf', 'matern12', 'matern32' or "
            "'matern52')"
        )
    if any(p.type.ndim != 0 for p in (kernel.radius, kernel.amplitude, kernel.shape)):
        reasons.append("per-landmark radius, amplitude or shape (needs scalars)")
    if not kernel.feature_mode and (can_change(X) or constant_value(X) is None):
        reasons.append("an X that is not fixed numbers (pm.Data)")
    if n_outputs_axes:
        reasons.append("several outputs in y")
    if reasons:
        warnings.warn(
            "The covariance is an SLE on sparse distances, but the sparse likelihood does not "
            f"cover {'; '.join(reasons)}: the dense n x n path runs instead.",
            UserWarning,
            stacklevel=stacklevel,
        )
        return None
    block = kernel.sparse_to_landmarks(X, "X")
    key = (block.shape, block.indptr.tobytes(), block.indices.tobytes(),
           np.asarray(block.values).tobytes(), kernel.n_landmarks, kernel.radius_max,
           id(mixture))  # fmt: skip
    problem = _PROBLEMS.get(key)
    if problem is None:
        problem = SparseSLEProblem(block.indptr, block.indices, block.values, kernel.n_landmarks,
                                   kernel.radius_max, mixture)  # fmt: skip
        _PROBLEMS.clear()  # one at a time: a problem holds the pattern of n training points
        _PROBLEMS[key] = problem
    return problem, (*form.parameters(), form.scale, form.noise)
