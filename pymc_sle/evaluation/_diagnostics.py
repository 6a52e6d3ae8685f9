"""Reports on Gram matrices: positive semi-definiteness and conditioning."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PSDReport", "psd_report"]


@dataclass(frozen=True)
class PSDReport:
    """Spectrum summary of a symmetric matrix.

    Attributes
    ----------
    min_eigenvalue, max_eigenvalue : float
    n_negative : int
        Eigenvalues below ``-tol * max(|eigenvalues|)``.
    condition_number : float
        ``max / min`` eigenvalue; ``inf`` unless the matrix is positive definite.
    """

    min_eigenvalue: float
    max_eigenvalue: float
    n_negative: int
    condition_number: float

    @property
    def is_psd(self) -> bool:
        return self.n_negative == 0

    def __str__(self) -> str:
        verdict = "PSD" if self.is_psd else f"indefinite ({self.n_negative} negative eigenvalues)"
        return (
            f"{verdict}: eigenvalues in [{self.min_eigenvalue:.4g}, {self.max_eigenvalue:.4g}], "
            f"condition number {self.condition_number:.4g}"
        )


def psd_report(matrix, tol: float = 1e-10) -> PSDReport:
    """Eigenvalue report of a symmetric matrix, e.g. a kernel's Gram matrix.

    A kernel of a non-CND distance (geodesic, exact W2, edit) can give Gram matrices with
    negative eigenvalues; this says whether and how badly.

    Parameters
    ----------
    matrix : array_like of shape (n, n)
        Symmetric, finite (only the lower triangle is read).
    tol : float, default 1e-10
        Eigenvalues below ``-tol`` times the largest magnitude count as negative (rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import psd_report
    >>> psd_report(np.array([[1.0, 2.0], [2.0, 1.0]])).n_negative
    1
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"`matrix` must be square and non-empty, but has shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("`matrix` must be finite")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"`tol` must be >= 0, but got {tol!r}")
    eigenvalues = np.linalg.eigvalsh(matrix)
    scale = np.abs(eigenvalues).max()
    n_negative = int((eigenvalues < -tol * scale).sum())
    smallest, largest = float(eigenvalues[0]), float(eigenvalues[-1])
    condition = largest / smallest if smallest > 0 else np.inf
    return PSDReport(smallest, largest, n_negative, float(condition))
