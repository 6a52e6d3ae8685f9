r"""The exact SLE-RBF marginal likelihood through a sparse factorisation.

For the SLE with an RBF inner kernel, scalar bump parameters and signal variance :math:`s`, let
:math:`\Phi` be the (sparse) embedding of the training points, :math:`n_i = \lVert\phi_i\rVert^2`,
:math:`G = \Phi\Phi^\top`, :math:`E_{ij} = \lVert\phi_i - \phi_j\rVert^2`, :math:`\gamma = 1/\ell^2`
and :math:`u_i = e^{-\gamma n_i / 2}`. Then :math:`K_{ij} = s\,e^{-\gamma E_{ij}/2} =
s\,u_i u_j e^{\gamma G_{ij}}`, and the covariance of the observations is

.. math::

    C = K + vI = B + s\,u u^\top, \qquad
    B_{ij} = s\,\tilde k_{ij} + v\,\delta_{ij}, \qquad
    \tilde k_{ij} = e^{-\gamma E_{ij}/2} - u_i u_j = u_i u_j \bigl(e^{\gamma G_{ij}} - 1\bigr),

with :math:`v` the noise variance (jitter included). :math:`\tilde k_{ij} = 0` wherever
:math:`G_{ij} = 0` -- two points that share no landmark -- so :math:`B` is sparse, and it is
positive definite: :math:`e^{\circ\gamma G} - \mathbf 1\mathbf 1^\top = \sum_{p \ge 1}
(\gamma G)^{\circ p}/p!` is a sum of Hadamard powers of a PSD matrix (Schur). Its entries lie in
:math:`[-s, s] + v\delta_{ij}`: computing them never overflows, as :math:`e^{\gamma n_i/2}`
would. With :math:`z = B^{-1}u` and :math:`c = 1 + s\,u^\top z`, the determinant lemma and
Sherman--Morrison give

.. math::

    \log|C| = \log|B| + \log c, \qquad
    \alpha = C^{-1}r = B^{-1}r - \frac{s\,(u^\top B^{-1} r)}{c}\, z, \qquad
    \log p(r) = -\tfrac12 r^\top\alpha - \tfrac12\log|C| - \tfrac n2\log 2\pi.

**Gradient.** :math:`\partial\log p = \tfrac12\operatorname{tr}\bigl((\alpha\alpha^\top -
C^{-1})\,\partial C\bigr)` with :math:`C^{-1} = B^{-1} - s\,zz^\top/c`. :math:`\partial B` is
non-zero only on :math:`B`'s pattern, so :math:`B^{-1}` is needed there only: the selected
inverse (``pymc_sle.gp._supernodal``). The rank-one part contributes through
:math:`\partial\log p/\partial u = s\,\bigl((\alpha^\top u)\,\alpha - z/c\bigr)`. The radius,
amplitude and shape act through :math:`E_{ij}` and :math:`n_i`, whose derivatives come from the
bump's on the embedding's non-zeros.

**Pattern.** The pattern of :math:`B` is that of :math:`G` at the largest radius the model allows
(the distances' ``cutoff``): pairs sharing a landmark within it. A smaller radius leaves explicit
zeros, so one symbolic analysis serves every evaluation.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.link.numba.dispatch import numba_funcify
from pytensor.tensor.rewriting.basic import register_specialize
from scipy import sparse

from pymc_sle.gp import _supernodal
from pymc_sle.gp._supernodal import SymbolicFactor

__all__ = ["SparseSLEProblem", "SparseSLELogDensity"]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Parameters of the log density after the residual, in the Op's input order.
PARAMETERS = ("radius", "amplitude", "shape", "ls", "scale", "noise")


class SparseSLEProblem:
    """The fixed part of a sparse SLE likelihood: the training points' distances to the
    landmarks below the cutoff (CSR, columns sorted), the pairs of training points that share a
    landmark (the pattern of ``B``) and its symbolic factorisation.

    Parameters
    ----------
    indptr, indices, distances : ndarray
        CSR rows of the ``(n_train, m)`` distance block, only the entries below ``cutoff``.
    n_landmarks : int
    cutoff : float
        The largest radius the embedding may take.
    """

    def __init__(self, indptr, indices, distances, n_landmarks: int, cutoff: float):
        block = sparse.csr_matrix(
            (np.asarray(distances, float), np.asarray(indices), np.asarray(indptr)),
            shape=(len(indptr) - 1, n_landmarks),
        )
        block.sort_indices()
        self.indptr = block.indptr.astype(np.int64)
        self.indices = block.indices.astype(np.int64)
        self.distances = np.ascontiguousarray(block.data)
        self.n = block.shape[0]
        self.cutoff = float(cutoff)
        touches = sparse.csr_matrix(
            (np.ones(self.indices.size), self.indices, self.indptr), shape=block.shape
        )
        shared = sparse.tril(touches @ touches.T + sparse.identity(self.n), format="coo")
        by_row = np.lexsort((shared.col, shared.row))  # grouped by i, as _pair_quantities needs
        self.pair_i = shared.row[by_row].astype(np.int64)
        self.pair_j = shared.col[by_row].astype(np.int64)
        self.n_landmarks = int(n_landmarks)
        self.symbolic: SymbolicFactor = _supernodal.analyse(self.n, self.pair_i, self.pair_j)

    @property
    def n_pairs(self) -> int:
        """Entries of ``B``'s lower triangle (diagonal included)."""
        return self.pair_i.size


@numba.njit(cache=True)
def _embedding(distances, radius, amplitude, shape):
    """The bump :math:`a e^{\\beta(1 - t)}`, :math:`t = 1/(1 - d^2/r^2)`, and its derivatives in
    the radius and the shape (the amplitude's is ``phi / a``)."""
    phi = np.zeros(distances.size)
    d_radius = np.zeros(distances.size)
    d_shape = np.zeros(distances.size)
    for e in range(distances.size):
        d = distances[e]
        if d < radius:
            q = (d / radius) ** 2
            t = 1.0 / (1.0 - q)
            value = amplitude * np.exp(shape * (1.0 - t))
            phi[e] = value
            if value > 0.0:
                d_radius[e] = 2.0 * shape * value * t * t * q / radius
                d_shape[e] = value * (1.0 - t)
    return phi, d_radius, d_shape


@numba.njit(cache=True)
def _pair_quantities(indptr, indices, phi, d_radius, d_shape, pair_i, pair_j, n_landmarks):
    """Per pair: ``E``, ``G`` and the radius and shape derivatives of ``E``, from direct
    differences (no cancellation for nearly equal embeddings). Pairs come grouped by ``i``: row
    ``i`` is scattered into a dense work row once, and each pair walks row ``j`` and then the
    entries of row ``i`` that row ``j`` did not have."""
    n_pairs = pair_i.size
    squared = np.zeros(n_pairs)
    inner = np.zeros(n_pairs)
    squared_radius = np.zeros(n_pairs)
    squared_shape = np.zeros(n_pairs)
    work = np.zeros(n_landmarks)
    work_radius = np.zeros(n_landmarks)
    work_shape = np.zeros(n_landmarks)
    seen = np.full(n_landmarks, -1, dtype=np.int64)
    current = -1
    for e in range(n_pairs):
        i, j = pair_i[e], pair_j[e]
        if i != current:
            if current >= 0:
                for p in range(indptr[current], indptr[current + 1]):
                    work[indices[p]] = work_radius[indices[p]] = work_shape[indices[p]] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                work[indices[p]] = phi[p]
                work_radius[indices[p]] = d_radius[p]
                work_shape[indices[p]] = d_shape[p]
            current = i
        if i == j:
            continue
        total = dot = total_r = total_b = 0.0
        for q in range(indptr[j], indptr[j + 1]):
            k = indices[q]
            seen[k] = e
            diff = work[k] - phi[q]
            total += diff * diff
            dot += work[k] * phi[q]
            total_r += 2.0 * diff * (work_radius[k] - d_radius[q])
            total_b += 2.0 * diff * (work_shape[k] - d_shape[q])
        for p in range(indptr[i], indptr[i + 1]):
            if seen[indices[p]] != e:
                total += phi[p] * phi[p]
                total_r += 2.0 * phi[p] * d_radius[p]
                total_b += 2.0 * phi[p] * d_shape[p]
        squared[e], inner[e] = total, dot
        squared_radius[e], squared_shape[e] = total_r, total_b
    return squared, inner, squared_radius, squared_shape


@numba.njit(cache=True)
def _kernel_parts(norms, squared, inner, pair_i, pair_j, gamma):
    """``k~`` and ``u_i u_j`` per pair (see the module docstring), without overflow."""
    n_pairs = pair_i.size
    tilde = np.empty(n_pairs)
    both = np.empty(n_pairs)
    for e in range(n_pairs):
        i, j = pair_i[e], pair_j[e]
        uu = np.exp(-0.5 * gamma * (norms[i] + norms[j]))
        both[e] = uu
        if i == j:
            tilde[e] = -np.expm1(-gamma * norms[i])
        elif gamma * inner[e] < 1.0:
            tilde[e] = uu * np.expm1(gamma * inner[e])
        else:
            tilde[e] = np.exp(-0.5 * gamma * squared[e]) - uu
    return tilde, both


@numba.njit(cache=True)
def _norms(indptr, phi, d_radius, d_shape):
    n = indptr.size - 1
    norms = np.zeros(n)
    norms_radius = np.zeros(n)
    norms_shape = np.zeros(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            norms[i] += phi[p] * phi[p]
            norms_radius[i] += 2.0 * phi[p] * d_radius[p]
            norms_shape[i] += 2.0 * phi[p] * d_shape[p]
    return norms, norms_radius, norms_shape


@numba.njit(cache=True)
def _gradient(
    pair_i,
    pair_j,
    selected,
    tilde,
    both,
    squared,
    squared_radius,
    squared_shape,
    norms,
    norms_radius,
    norms_shape,
    alpha,
    z,
    u,
    scale,
    gamma,
    amplitude,
    c,
):
    """``d log p`` with respect to radius, amplitude, shape, gamma, scale and the noise."""
    g_radius = g_amplitude = g_shape = g_gamma = g_scale = g_noise = 0.0
    per_norm = np.zeros(norms.size)
    for e in range(pair_i.size):
        i, j = pair_i[e], pair_j[e]
        weight = 0.5 * (alpha[i] * alpha[j] - selected[e] + scale * z[i] * z[j] / c)
        if i == j:
            g_noise += weight
        else:
            weight *= 2.0
        exponential = tilde[e] + both[e]
        g_scale += weight * tilde[e]
        g_gamma += (
            weight
            * scale
            * (-0.5 * squared[e] * exponential + 0.5 * (norms[i] + norms[j]) * both[e])
        )
        along = -0.5 * weight * scale * gamma * exponential
        g_radius += along * squared_radius[e]
        g_shape += along * squared_shape[e]
        g_amplitude += along * 2.0 * squared[e] / amplitude
        through_norms = weight * scale * gamma * both[e] * (0.5 if i != j else 1.0)
        per_norm[i] += through_norms
        if i != j:
            per_norm[j] += through_norms
    alpha_u = alpha @ u
    g_scale += 0.5 * alpha_u * alpha_u - 0.5 * (u @ z) / c
    for i in range(norms.size):
        g_u = scale * (alpha_u * alpha[i] - z[i] / c)
        g_gamma += g_u * (-0.5 * norms[i]) * u[i]
        per_norm[i] += g_u * (-0.5 * gamma) * u[i]
        g_radius += per_norm[i] * norms_radius[i]
        g_shape += per_norm[i] * norms_shape[i]
        g_amplitude += per_norm[i] * 2.0 * norms[i] / amplitude
    return g_radius, g_amplitude, g_shape, g_gamma, g_scale, g_noise


def _check_radius(problem: SparseSLEProblem, radius: float) -> None:
    if radius > problem.cutoff * (1.0 + 1e-12):
        raise ValueError(
            f"`radius` must be at most the cutoff {problem.cutoff:.6g} of the sparse distances "
            f"(larger distances are not stored), but is {radius:.6g}"
        )


def _factor(problem: SparseSLEProblem, radius, amplitude, shape, ls, scale, noise):
    """Everything one evaluation needs: the embedding's quantities and the factor of ``B``
    (``None`` if ``B`` is not numerically positive definite)."""
    _check_radius(problem, radius)
    gamma = 1.0 / (ls * ls)
    phi, d_radius, d_shape = _embedding(problem.distances, radius, amplitude, shape)
    norms = _norms(problem.indptr, phi, d_radius, d_shape)
    pairs = _pair_quantities(
        problem.indptr,
        problem.indices,
        phi,
        d_radius,
        d_shape,
        problem.pair_i,
        problem.pair_j,
        problem.n_landmarks,
    )
    tilde, both = _kernel_parts(norms[0], pairs[0], pairs[1], problem.pair_i, problem.pair_j, gamma)
    values = np.zeros(problem.symbolic.n_values)
    entries = scale * tilde
    entries[problem.pair_i == problem.pair_j] += noise
    values[problem.symbolic.entry_index] = entries
    ok = _supernodal.factorize(problem.symbolic, values)
    u = np.exp(-0.5 * gamma * norms[0])
    return (values if ok else None), u, gamma, norms, pairs, tilde, both


def log_density(
    problem: SparseSLEProblem,
    residual,
    radius,
    amplitude,
    shape,
    ls,
    scale,
    noise,
    with_gradients: bool = True,
):
    """``log p(residual)`` and, optionally, its gradient: ``(-alpha, d/d radius, amplitude,
    shape, ls, scale, noise)``. ``-inf`` and zero gradients when ``B`` is not numerically
    positive definite."""
    n = problem.n
    residual = np.asarray(residual, dtype=float)
    factor, u, gamma, norms, pairs, tilde, both = _factor(
        problem, radius, amplitude, shape, ls, scale, noise
    )
    if factor is None:
        zeros = (np.zeros(n), *np.zeros(len(PARAMETERS)))
        return -np.inf, zeros if with_gradients else None
    symbolic = problem.symbolic
    rhs = np.column_stack([residual, u])[symbolic.perm]
    solved_f = _supernodal.solve(
        factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.rows, symbolic.l_ptr, rhs
    )
    solved = np.empty_like(solved_f)
    solved[symbolic.perm] = solved_f
    b_residual, z = np.ascontiguousarray(solved[:, 0]), np.ascontiguousarray(solved[:, 1])
    c = 1.0 + scale * (u @ z)
    alpha = b_residual - (scale * (u @ b_residual) / c) * z
    log_det = _supernodal.log_determinant(
        factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.l_ptr
    ) + np.log(c)
    value = -0.5 * (residual @ alpha) - 0.5 * log_det - 0.5 * n * _LOG_2PI
    if not with_gradients:
        return value, None
    selected = _supernodal.selected_inverse(symbolic, factor)[symbolic.entry_index]
    squared, _, squared_radius, squared_shape = pairs
    g_radius, g_amplitude, g_shape, g_gamma, g_scale, g_noise = _gradient(
        problem.pair_i,
        problem.pair_j,
        selected,
        tilde,
        both,
        squared,
        squared_radius,
        squared_shape,
        *norms,
        alpha,
        z,
        u,
        scale,
        gamma,
        amplitude,
        c,
    )
    g_ls = g_gamma * (-2.0 / ls**3)
    return value, (-alpha, g_radius, g_amplitude, g_shape, g_ls, g_scale, g_noise)


def draw(problem: SparseSLEProblem, radius, amplitude, shape, ls, scale, noise, rng, size=()):
    """Draws of ``N(0, C)`` of shape ``(*size, n)``: ``L_B w + sqrt(s) u zeta`` with ``w``,
    ``zeta`` standard normal, whose covariance is ``B + s u u^T = C``."""
    factor, u, *_ = _factor(problem, radius, amplitude, shape, ls, scale, noise)
    if factor is None:
        raise ValueError(
            "the SLE covariance at these parameters is not numerically positive "
            "definite; no draw exists"
        )
    symbolic = problem.symbolic
    size = tuple(np.atleast_1d(size).astype(int)) if np.ndim(size) or size != () else ()
    count = int(np.prod(size)) if size else 1
    white = rng.standard_normal((problem.n, count))
    correlated_f = _supernodal.multiply_factor(
        factor, symbolic.sn_start, symbolic.rows_ptr, symbolic.rows, symbolic.l_ptr, white
    )
    correlated = np.empty_like(correlated_f)
    correlated[symbolic.perm] = correlated_f
    correlated += np.sqrt(scale) * u[:, None] * rng.standard_normal(count)
    return correlated.T.reshape((*size, problem.n))


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


@register_specialize
@node_rewriter([SparseSLELogDensity])
def local_sparse_sle_value_only(fgraph, node):
    """Skip the selected inversion when nothing uses the gradient outputs."""
    if not node.op.with_gradients:
        return None
    if any(fgraph.clients.get(output) for output in node.outputs[1:]):
        return None
    value = SparseSLELogDensity(node.op.problem, False)(*node.inputs)
    return [value] + [None] * (len(node.outputs) - 1)


@numba_funcify.register(SparseSLELogDensity)
def _numba_sparse_sle(op, node=None, **kwargs):
    """The NUMBA backend (nutpie) calls ``perform`` in object mode: the work is one sparse
    factorisation per call, so the Python round trip costs nothing measurable."""
    from pytensor.link.numba.dispatch.basic import get_numba_type

    signature = numba.types.Tuple([get_numba_type(output.type) for output in node.outputs])
    n_outputs = len(node.outputs)

    def python_perform(*inputs):
        storage = [[None] for _ in range(n_outputs)]
        op.perform(node, inputs, storage)
        return tuple(cell[0] for cell in storage)

    @numba.njit
    def sparse_sle(*inputs):
        with numba.objmode(result=signature):
            result = python_perform(*inputs)
        return result

    if n_outputs > 1:
        return sparse_sle

    @numba.njit
    def value_only(*inputs):
        return sparse_sle(*inputs)[0]

    return value_only
