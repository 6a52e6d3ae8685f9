r"""The Laplace approximation on the sparse SLE structure (large data).

The latent covariance of the sparse SLE (``pymc_sle.gp._sparse._likelihood``) is
:math:`K = B_0 + UU^\top`, with :math:`B_0` sparse on the pairs of training points that share a
landmark (jitter on its diagonal) and :math:`U` of a few columns. Newton's steps and the
gradient of ``pymc_sle.gp._laplace._approximation`` need :math:`C = K + W^{-1} =
(B_0 + W^{-1}) + UU^\top`: the Gaussian likelihood's structure with the noise variance
:math:`W_i^{-1}` per point, factorised the same way (a supernodal Cholesky factor of
:math:`B = B_0 + W^{-1}`, Woodbury for :math:`U`), with :math:`C^{-1}` needed on :math:`B`'s
pattern only -- its selected inverse. :math:`Ka` is one pass over the pattern.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import linalg

from pymc_sle.gp._laplace._approximation import laplace_terms
from pymc_sle.gp._sparse._likelihood import (
    PARAMETERS,
    admissible,
    covariance_entries,
    factor_entries,
    inverse_parts,
    log_determinant_of,
    parameter_gradients,
    solve_b,
)
from pymc_sle.gp._sparse._problem import SparseSLEProblem

__all__ = ["SparseStructure", "sparse_approximation"]


@numba.njit(cache=True, nogil=True)
def _pattern_matvec(pair_i, pair_j, entries, x):
    """``S x`` for the symmetric ``S`` whose lower triangle ``entries`` holds on the pairs."""
    out = np.zeros(x.size)
    for e in range(pair_i.size):
        i, j = pair_i[e], pair_j[e]
        out[i] += entries[e] * x[j]
        if i != j:
            out[j] += entries[e] * x[i]
    return out


class SparseStructure:
    """``K = B_0 + UU^T`` of a sparse SLE at given parameters, as the Newton iteration uses it
    (``_approximation``'s structure)."""

    def __init__(self, problem: SparseSLEProblem, radius, amplitude, shape, ls, scale, jitter):
        self.problem = problem
        self.n = problem.n
        self.values = (amplitude, ls, scale)
        entries, self.low_rank, self.kept, self.gamma, self.norms, self.pairs = covariance_entries(
            problem, radius, amplitude, shape, ls, scale
        )
        self.entries = entries.copy()
        self.entries[problem.diagonal] += jitter

    def matvec(self, a):
        problem = self.problem
        out = _pattern_matvec(problem.pair_i, problem.pair_j, self.entries, a)
        return out + self.low_rank @ (self.low_rank.T @ a)

    def factor(self, noise):
        factor = factor_entries(self.problem, self.entries, noise)
        if factor is None:
            return None
        z = solve_b(self.problem, factor, self.low_rank)
        try:
            chol_m = np.linalg.cholesky(np.eye(self.low_rank.shape[1]) + self.low_rank.T @ z)
        except np.linalg.LinAlgError:
            return None
        return _SparseFactor(self, factor, z, chol_m)


class _SparseFactor:
    """``C = B + UU^T`` factorised: ``B``'s supernodal factor, ``Z = B^{-1}U`` and ``L_M``."""

    def __init__(self, structure, factor, z, chol_m):
        self.structure, self.values, self.z, self.chol_m = structure, factor, z, chol_m
        self._inverse = None

    def solve(self, rhs):
        """``C^{-1} rhs`` for a vector ``rhs`` (Woodbury)."""
        solved = solve_b(self.structure.problem, self.values, rhs[:, None])[:, 0]
        coefficients = linalg.cho_solve((self.chol_m, True), self.structure.low_rank.T @ solved)
        return solved - self.z @ coefficients

    def log_det(self):
        log_det_m = 2.0 * float(np.sum(np.log(np.diag(self.chol_m))))
        return log_determinant_of(self.structure.problem, self.values) + log_det_m

    def inverse(self):
        """``(selected, whitened)``: ``C^{-1}`` on ``B``'s pattern (``inverse_parts``)."""
        if self._inverse is None:
            self._inverse = inverse_parts(self.structure.problem, self.values, self.z, self.chol_m)
        return self._inverse

    def inverse_diagonal(self):
        selected, whitened = self.inverse()
        return selected[self.structure.problem.diagonal] - np.einsum("iq,iq->i", whitened,
                                                                     whitened)  # fmt: skip


def sparse_approximation(
    problem: SparseSLEProblem, y, mean, likelihood, radius, amplitude, shape, ls, scale, jitter,
    parameters=(), *, terms=laplace_terms, with_gradients=True, warm=None, describe=None,
):  # fmt: skip
    """``log q(y)`` by ``terms`` (``laplace_terms`` or EP's) and, with gradients, its
    derivatives ``(d/d mean, d/d radius, amplitude, shape, ls, scale, jitter, d/d each
    likelihood parameter)``; ``-inf`` and zeros when the approximation's ``C`` is not
    numerically positive definite."""
    failed = -np.inf, (np.zeros(problem.n), *np.zeros(len(PARAMETERS) + len(parameters)))
    if not admissible(radius, amplitude, ls, scale, jitter):
        return failed
    structure = SparseStructure(problem, radius, amplitude, shape, ls, scale, jitter)
    found = terms(structure, likelihood, y, mean, parameters, with_gradients=with_gradients,
                  warm=warm, describe=describe)  # fmt: skip
    if found is None:
        return failed
    if not with_gradients:
        return found.value, None
    factor = found.state.factor
    kernel_gradients = parameter_gradients(
        problem, factor.values, structure.low_rank, structure.kept, structure.gamma,
        structure.norms, structure.pairs, factor.z, factor.chol_m, found.p, found.t,
        structure.values, inverse=factor.inverse(),
    )  # fmt: skip
    return found.value, (found.p, *kernel_gradients, *found.d_params)
