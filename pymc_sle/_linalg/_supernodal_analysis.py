"""The symbolic phase of the supernodal Cholesky factorisation (`pymc_sle._linalg._supernodal`).

Given a symmetric pattern, once per pattern:

- **Ordering.** METIS nested dissection (``pymetis``) of the graph of :math:`A`, then a postorder
  of the elimination tree, so that columns with nested structures are contiguous.
- **Supernodes.** Consecutive columns :math:`j, j+1` whose structures agree below the diagonal
  (parent of :math:`j` is :math:`j+1` and the column counts differ by one) are stored together as
  one dense column-major block of :math:`m_s` rows (the supernode's row structure) by
  :math:`k_s` columns; small neighbours are then merged (relaxed supernodes, at the price of
  some explicit zeros).
- **Addresses.** Each supernode's rows, their positions in its parent's rows (the relative
  indices the numeric phase scatters and gathers with), and where each entry of the pattern
  sits in the factor's values.

`analyse` returns a `SymbolicFactor`; the numeric phase reuses it for every evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["SymbolicFactor", "analyse"]


@dataclass(frozen=True, eq=False)
class SymbolicFactor:
    """The structure of a supernodal Cholesky factor; built by `analyse`.

    Columns are numbered in the factor's order: row ``k`` of the permuted matrix is row
    ``perm[k]`` of the original one. Supernode ``s`` owns columns ``sn_start[s]`` to
    ``sn_start[s + 1] - 1``; its row structure is ``rows[rows_ptr[s]:rows_ptr[s + 1]]`` (its own
    columns first), and its values fill ``values[l_ptr[s]:l_ptr[s + 1]]`` column-major. For the
    rows below its diagonal block, ``relative`` holds their positions in the parent's rows.
    ``entry_index[e]`` is where entry ``e`` of the pattern given to `analyse` sits in ``values``.
    """

    n: int
    perm: np.ndarray
    sn_start: np.ndarray
    sn_parent: np.ndarray
    rows_ptr: np.ndarray
    rows: np.ndarray
    relative: np.ndarray
    l_ptr: np.ndarray
    child_ptr: np.ndarray
    children: np.ndarray
    entry_index: np.ndarray

    @property
    def n_supernodes(self) -> int:
        return self.sn_start.size - 1

    @property
    def n_values(self) -> int:
        """Stored entries of the factor (explicit zeros of the supernodal blocks included)."""
        return int(self.l_ptr[-1])

    @property
    def flops(self) -> float:
        """Floating-point operations of one factorisation (the dense-block count)."""
        k = np.diff(self.sn_start).astype(float)
        m = np.diff(self.rows_ptr).astype(float)
        below = m - k
        return float(np.sum(k**3 / 3 + below * k**2 + below**2 * k))


def _fill_reducing_order(n: int, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """METIS nested dissection of the graph with edges ``first[e] -- second[e]``."""
    import pymetis

    off = first != second
    a, b = np.concatenate([first[off], second[off]]), np.concatenate([second[off], first[off]])
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=xadj[1:])
    if b.size == 0:
        return np.arange(n)
    perm, _ = pymetis.nested_dissection(pymetis.CSRAdjacency(xadj, b))
    return np.asarray(perm, dtype=np.int64)


@numba.njit(cache=True)
def _elimination_tree(n, col_ptr, row_index):
    """Parent of each column (-1 for roots), from the strict upper triangle given by columns
    (``row_index[col_ptr[k]:col_ptr[k+1]]`` are the rows ``i < k`` of column ``k``)."""
    parent = np.full(n, -1, dtype=np.int64)
    ancestor = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        for p in range(col_ptr[k], col_ptr[k + 1]):
            i = row_index[p]
            while i != -1 and i < k:
                following = ancestor[i]
                ancestor[i] = k
                if following == -1:
                    parent[i] = k
                i = following
    return parent


@numba.njit(cache=True)
def _postorder(parent):
    """A postorder of the forest (children in increasing order): ``order[new] = old``."""
    n = parent.size
    head = np.full(n, -1, dtype=np.int64)
    following = np.full(n, -1, dtype=np.int64)
    for j in range(n - 1, -1, -1):
        if parent[j] != -1:
            following[j] = head[parent[j]]
            head[parent[j]] = j
    order = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    count = 0
    for root in range(n):
        if parent[root] != -1:
            continue
        top = 0
        stack[0] = root
        while top >= 0:
            node = stack[top]
            child = head[node]
            if child == -1:
                order[count] = node
                count += 1
                top -= 1
            else:
                head[node] = following[child]
                top += 1
                stack[top] = child
    return order


@numba.njit(cache=True)
def _column_counts(n, parent, col_ptr, row_index):
    """Non-zeros of each column of L (diagonal included), from row subtrees."""
    counts = np.ones(n, dtype=np.int64)
    mark = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        mark[k] = k
        for p in range(col_ptr[k], col_ptr[k + 1]):
            i = row_index[p]
            while mark[i] != k:
                counts[i] += 1
                mark[i] = k
                i = parent[i]
    return counts


@numba.njit(cache=True)
def _supernode_rows(n, sn_start, sn_of, parent, lower_ptr, lower_index):
    """Row structure of every supernode (sorted, own columns first) and its parent supernode."""
    n_sn = sn_start.size - 1
    sn_parent = np.full(n_sn, -1, dtype=np.int64)
    for s in range(n_sn):
        last_parent = parent[sn_start[s + 1] - 1]
        if last_parent != -1:
            sn_parent[s] = sn_of[last_parent]
    child_count = np.zeros(n_sn + 1, dtype=np.int64)
    for s in range(n_sn):
        if sn_parent[s] != -1:
            child_count[sn_parent[s] + 1] += 1
    child_ptr = np.cumsum(child_count)
    children = np.empty(child_ptr[-1], dtype=np.int64)
    fill = child_ptr[:-1].copy()
    for s in range(n_sn):
        if sn_parent[s] != -1:
            children[fill[sn_parent[s]]] = s
            fill[sn_parent[s]] += 1
    rows_ptr = np.zeros(n_sn + 1, dtype=np.int64)
    chunks = []
    mark = np.full(n, -1, dtype=np.int64)
    for s in range(n_sn):
        first, end = sn_start[s], sn_start[s + 1]
        below = []
        for j in range(first, end):
            for p in range(lower_ptr[j], lower_ptr[j + 1]):
                i = lower_index[p]
                if i >= end and mark[i] != s:
                    mark[i] = s
                    below.append(i)
        for c in range(child_ptr[s], child_ptr[s + 1]):
            child = children[c]
            child_rows = chunks[child]
            for t in range(sn_start[child + 1] - sn_start[child], child_rows.size):
                i = child_rows[t]
                if i >= end and mark[i] != s:
                    mark[i] = s
                    below.append(i)
        rows = np.empty(end - first + len(below), dtype=np.int64)
        for t in range(end - first):
            rows[t] = first + t
        tail = np.sort(np.array(below, dtype=np.int64))
        rows[end - first :] = tail
        chunks.append(rows)
        rows_ptr[s + 1] = rows_ptr[s] + rows.size
    all_rows = np.empty(rows_ptr[-1], dtype=np.int64)
    for s in range(n_sn):
        all_rows[rows_ptr[s] : rows_ptr[s + 1]] = chunks[s]
    return sn_parent, child_ptr, children, rows_ptr, all_rows


@numba.njit(cache=True)
def _relative_indices(n, sn_start, sn_parent, child_ptr, children, rows_ptr, rows):
    """For the rows of each supernode below its diagonal block, their positions in the parent."""
    relative = np.full(rows.size, -1, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    for p in range(sn_start.size - 1):
        for t in range(rows_ptr[p], rows_ptr[p + 1]):
            position[rows[t]] = t - rows_ptr[p]
        for c in range(child_ptr[p], child_ptr[p + 1]):
            child = children[c]
            k = sn_start[child + 1] - sn_start[child]
            for t in range(rows_ptr[child] + k, rows_ptr[child + 1]):
                relative[t] = position[rows[t]]
    return relative


@numba.njit(cache=True)
def _entry_index(n, entry_row, entry_col, sn_start, sn_of, rows_ptr, rows, l_ptr):
    """Flat position in the factor's values of each (row >= col) entry, in factor numbering."""
    n_entries = entry_row.size
    order = np.argsort(sn_of[entry_col], kind="mergesort")
    index = np.empty(n_entries, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    current = -1
    for t in range(n_entries):
        e = order[t]
        s = sn_of[entry_col[e]]
        if s != current:
            for u in range(rows_ptr[s], rows_ptr[s + 1]):
                position[rows[u]] = u - rows_ptr[s]
            current = s
        m = rows_ptr[s + 1] - rows_ptr[s]
        index[e] = l_ptr[s] + (entry_col[e] - sn_start[s]) * m + position[entry_row[e]]
    return index


#: Relaxed supernodes (CHOLMOD's defaults): a supernode absorbs its last child when together
#: they have at most ``columns`` columns and at most ``zeros`` of the stored entries are zeros
#: -- fewer, larger dense blocks for BLAS at the price of a few explicit zeros.
_RELAX = ((4, 1.0), (16, 0.8), (48, 0.1), (np.iinfo(np.int64).max, 0.05))


@numba.njit(cache=True)
def _relaxed(fundamental, parent, counts):
    """Merge each fundamental supernode into the next one when that is its parent (postorder
    makes the last child adjacent) and the merged block stays dense enough (`_RELAX`)."""
    n_sn = fundamental.size - 1
    starts = [0]
    group_k = fundamental[1] - fundamental[0]
    group_true = 0
    for j in range(fundamental[0], fundamental[1]):
        group_true += counts[j]
    for s in range(1, n_sn):
        first, end = fundamental[s], fundamental[s + 1]
        k = end - first
        true = 0
        for j in range(first, end):
            true += counts[j]
        merged = False
        if parent[first - 1] == first:  # the group's last column is a child of this one
            new_k = group_k + k
            new_m = group_k + counts[first]
            stored = new_k * new_m - new_k * (new_k - 1) // 2
            zeros = 1.0 - (group_true + true) / stored
            for columns, fraction in _RELAX:
                if new_k <= columns and zeros <= fraction:
                    merged = True
                    break
        if merged:
            group_k += k
            group_true += true
        else:
            starts.append(first)
            group_k, group_true = k, true
    starts.append(fundamental[-1])
    return np.array(starts, dtype=np.int64)


def _compressed(n: int, major: np.ndarray, minor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, index)``: the ``minor`` entries grouped by ``major``, sorted within each group."""
    order = np.lexsort((minor, major))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n), out=ptr[1:])
    return ptr, np.ascontiguousarray(minor[order])


def analyse(n: int, entry_row, entry_col) -> SymbolicFactor:
    """The symbolic factorisation of a symmetric ``n x n`` pattern.

    Parameters
    ----------
    n : int
    entry_row, entry_col : array_like of int
        The lower triangle's entries, ``entry_row[e] >= entry_col[e]``, in the original
        numbering, each once; the diagonal must be among them.
    """
    entry_row = np.asarray(entry_row, dtype=np.int64)
    entry_col = np.asarray(entry_col, dtype=np.int64)
    if entry_row.shape != entry_col.shape or (entry_row < entry_col).any():
        raise ValueError(
            "`entry_row` and `entry_col` must list lower-triangle entries (row >= col)"
        )
    if np.count_nonzero(entry_row == entry_col) != n:
        raise ValueError(f"the pattern must hold each of the {n} diagonal entries once")
    order = _fill_reducing_order(n, entry_row, entry_col)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    high, low = inverse[entry_row], inverse[entry_col]
    high, low = np.maximum(high, low), np.minimum(high, low)
    off = high != low
    upper_ptr, upper_index = _compressed(n, high[off], low[off])
    parent = _elimination_tree(n, upper_ptr, upper_index)
    post = _postorder(parent)
    relabel = np.empty(n, dtype=np.int64)
    relabel[post] = np.arange(n)
    perm = order[post]
    parent = np.where(parent[post] == -1, -1, relabel[np.maximum(parent[post], 0)])
    high, low = relabel[high], relabel[low]
    upper_ptr, upper_index = _compressed(n, high[off], low[off])
    lower_ptr, lower_index = _compressed(n, low[off], high[off])
    counts = _column_counts(n, parent, upper_ptr, upper_index)
    merge = (parent[:-1] == np.arange(1, n)) & (counts[:-1] == counts[1:] + 1)
    fundamental = np.concatenate([[0], np.flatnonzero(~merge) + 1, [n]]).astype(np.int64)
    sn_start = _relaxed(fundamental, parent, counts)
    sn_of = np.repeat(np.arange(sn_start.size - 1), np.diff(sn_start))
    sn_parent, child_ptr, children, rows_ptr, rows = _supernode_rows(
        n, sn_start, sn_of, parent, lower_ptr, lower_index
    )
    k, m = np.diff(sn_start), np.diff(rows_ptr)
    l_ptr = np.concatenate([[0], np.cumsum(k * m)]).astype(np.int64)
    relative = _relative_indices(n, sn_start, sn_parent, child_ptr, children, rows_ptr, rows)
    entry_index = _entry_index(n, high, low, sn_start, sn_of, rows_ptr, rows, l_ptr)
    return SymbolicFactor(
        n=n,
        perm=perm,
        sn_start=sn_start,
        sn_parent=sn_parent,
        rows_ptr=rows_ptr,
        rows=rows,
        relative=relative,
        l_ptr=l_ptr,
        child_ptr=child_ptr,
        children=children,
        entry_index=entry_index,
    )
