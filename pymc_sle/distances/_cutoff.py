r"""A cutoff chosen by how many columns a row's bump should reach (``cutoff="auto"``).

A sparse SLE stores the distances below a cutoff :math:`c`, and its radius stays at or below
it; the stored entries of a row are the landmarks its bump can reach. ``cutoff="auto"`` picks
:math:`c` so that a typical row reaches ``per_bump`` columns:

.. math::

    c = \operatorname{median}_{i \in S} d_{i,(k)}, \qquad k = \texttt{per\_bump},

with :math:`d_{i,(k)}` the :math:`k`-th smallest distance from row :math:`i` to the columns and
:math:`S` at most :data:`SAMPLED_ROWS` rows evenly spaced through the rows (deterministic: the
same rows give the same cutoff). The distances of :math:`S` to every column are computed in full
once, so the choice costs ``len(S) * n_cols`` distances on top of the sparse build. On a surface
with :math:`n` evenly spread columns this is the radius of a disc holding :math:`k` of them,
:math:`\sqrt{k\,A / (\pi n)}` for a surface of area :math:`A`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pymc_sle.distances._sparse_matrix import checked_cutoff

__all__ = ["SAMPLED_ROWS", "resolve_cutoff"]

#: At most this many rows are searched in full to choose an automatic cutoff.
SAMPLED_ROWS = 256


def resolve_cutoff(
    cutoff, per_bump, n_rows: int, n_cols: int, rows_to_columns: Callable[[np.ndarray], np.ndarray]
) -> float | None:
    """The cutoff a builder uses: ``None`` (dense), a checked number, or for ``"auto"`` the
    median ``per_bump``-th nearest column distance of the sampled rows (module notes).

    ``rows_to_columns(positions)`` returns the dense ``(len(positions), n_cols)`` distances from
    the rows at those positions to every column (``inf`` for an unreachable pair).

    Raises
    ------
    ValueError
        If ``cutoff`` is a string other than ``"auto"``, ``per_bump`` is not an integer in
        ``[1, n_cols]``, or the sampled rows reach fewer than ``per_bump`` columns (the median
        is infinite).
    """
    if cutoff is None:
        return None
    if not isinstance(cutoff, str):
        return checked_cutoff(cutoff)
    if cutoff != "auto":
        raise ValueError(f"`cutoff` must be a number, None or 'auto', but got {cutoff!r}")
    if isinstance(per_bump, bool) or not isinstance(per_bump, int | np.integer):
        raise TypeError(f"`per_bump` must be an integer, but got {per_bump!r}")
    if not 1 <= per_bump <= n_cols:
        raise ValueError(
            f"`per_bump` must be between 1 and the number of columns ({n_cols}), but got {per_bump}"
        )
    positions = np.unique(np.linspace(0, n_rows - 1, min(n_rows, SAMPLED_ROWS)).astype(np.int64))
    distances = np.asarray(rows_to_columns(positions), dtype=float)
    kth = np.partition(distances, per_bump - 1, axis=1)[:, per_bump - 1]
    value = float(np.median(kth))
    if not np.isfinite(value):
        raise ValueError(
            f"cutoff='auto' needs rows that reach per_bump={per_bump} columns, but most of "
            f"{positions.size} sampled rows reach fewer (their distances are infinite)"
        )
    if value == 0.0:
        raise ValueError(
            f"cutoff='auto' found the per_bump={per_bump}-th nearest column at distance 0 for "
            "most rows (duplicate items?): give a larger per_bump or a numeric cutoff"
        )
    # distances below the cutoff are stored: the k-th nearest of the median row is kept
    return float(np.nextafter(value, np.inf))
