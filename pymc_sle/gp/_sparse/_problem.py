"""The fixed part of a sparse SLE likelihood: the pattern of ``B`` and what reads it.

Built once per training set (``pymc_sle.gp._sparse._likelihood`` evaluates on it): the training
points' distances to the landmarks, the pairs of training points that share a landmark (``B``'s
pattern at the largest radius), the embedding products that make up each pair's ``G``, and the
symbolic factorisation.
"""

from __future__ import annotations

import numba
import numpy as np
from pymc.gp.cov import ExpQuad
from scipy import sparse

from pymc_sle._linalg._supernodal_analysis import SymbolicFactor, analyse
from pymc_sle.gp._sparse._mixtures import MIXTURES

__all__ = ["SparseSLEProblem"]


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
    mixture : Mixture, optional
        The inner kernel as a mixture of Gaussians (``_mixtures``; default the RBF).
    """

    def __init__(self, indptr, indices, distances, n_landmarks: int, cutoff: float, mixture=None):
        self.mixture = MIXTURES[ExpQuad] if mixture is None else mixture
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
        by_row = np.lexsort((shared.col, shared.row))  # by i, then j: as _pair_products needs
        self.pair_i = shared.row[by_row].astype(np.int64)
        self.pair_j = shared.col[by_row].astype(np.int64)
        self.n_landmarks = int(n_landmarks)
        #: The pairs ``(i, i)``, where ``B`` holds the noise.
        self.diagonal = np.flatnonzero(self.pair_i == self.pair_j)
        #: ``(pair_ptr, left, right)``: the embedding products that make up each pair's ``G``.
        self.pair_products = _pair_products(
            self.indptr, self.indices, self.pair_i, self.pair_j, self.n_landmarks
        )
        self.symbolic: SymbolicFactor = analyse(self.n, self.pair_i, self.pair_j)

    @property
    def n_pairs(self) -> int:
        """Entries of ``B``'s lower triangle (diagonal included)."""
        return self.pair_i.size


@numba.njit(cache=True, nogil=True)
def _columns(indptr, indices, n_landmarks):
    """The embedding's entries by landmark column: ``entries`` (CSR positions, column after
    column, each column's sorted by row), ``column_ptr``, and ``column_rows`` (the row of each)."""
    n = indptr.size - 1
    counts = np.zeros(n_landmarks + 1, dtype=np.int64)
    for p in range(indices.size):
        counts[indices[p] + 1] += 1
    column_ptr = np.cumsum(counts)
    fill = column_ptr[:-1].copy()
    entries = np.empty(indices.size, dtype=np.int64)
    column_rows = np.empty(indices.size, dtype=np.int64)
    for i in range(n):  # rows in order: each column's entries come out sorted by row
        for p in range(indptr[i], indptr[i + 1]):
            entries[fill[indices[p]]] = p
            column_rows[fill[indices[p]]] = i
            fill[indices[p]] += 1
    return entries, column_ptr, column_rows


@numba.njit(cache=True, nogil=True)
def _pair_products(indptr, indices, pair_i, pair_j, n_landmarks):
    r"""The products that make up each pair's :math:`G_{ij} = \sum_k \phi_{ik}\phi_{jk}`:
    pair ``e`` sums ``phi[left[t]] * phi[right[t]]`` over ``t`` in ``pair_ptr[e]:pair_ptr[e+1]``
    (CSR positions of row ``i``'s and row ``j``'s entries in one landmark column). Built once
    per pattern; row ``i``'s pairs are contiguous in the pattern (sorted by ``i``, then ``j``),
    so a dense map ``j -> pair`` rebuilt per row places each product."""
    n, n_pairs = indptr.size - 1, pair_i.size
    entries, column_ptr, column_rows = _columns(indptr, indices, n_landmarks)
    total = 0
    for k in range(n_landmarks):
        c = column_ptr[k + 1] - column_ptr[k]
        total += c * (c - 1) // 2
    left = np.empty(total, dtype=np.int32)
    right = np.empty(total, dtype=np.int32)
    pair_ptr = np.zeros(n_pairs + 1, dtype=np.int64)
    pair_of = np.empty(n, dtype=np.int64)
    e = t = 0
    for i in range(n):
        first = e
        while e < n_pairs and pair_i[e] == i:
            pair_of[pair_j[e]] = e
            e += 1
        for p in range(indptr[i], indptr[i + 1]):  # count the products per pair of row i
            k = indices[p]
            for a in range(column_ptr[k], column_ptr[k + 1]):
                if column_rows[a] >= i:
                    break
                pair_ptr[pair_of[column_rows[a]] + 1] += 1
        fill = np.empty(e - first, dtype=np.int64)
        for pair in range(first, e):
            fill[pair - first] = t
            t += pair_ptr[pair + 1]
            pair_ptr[pair + 1] = t
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            for a in range(column_ptr[k], column_ptr[k + 1]):
                if column_rows[a] >= i:
                    break
                slot = fill[pair_of[column_rows[a]] - first]
                left[slot], right[slot] = p, entries[a]
                fill[pair_of[column_rows[a]] - first] += 1
    return pair_ptr, left, right
