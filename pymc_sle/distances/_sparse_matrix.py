"""Distances below a cutoff only: the storage that large training sets need."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from pymc_sle._validation import as_index_array, check_finite_nonnegative

__all__ = ["SparseDistanceMatrix"]

_FORMAT = "pymc_sle.SparseDistanceMatrix"
_FORMAT_VERSION = 1


class SparseDistanceMatrix:
    r"""Distances :math:`D_{ij} = d(x_i, z_j)` stored only where :math:`D_{ij} <` ``cutoff``.

    The SLE embedding :math:`\phi(x)_j = b(D_{ij})` vanishes for :math:`D_{ij} \ge r`, so with a
    radius :math:`r \le` ``cutoff`` the stored entries are all the kernel reads: memory
    :math:`O(nk)` for :math:`k` entries per row instead of :math:`O(n^2)`, and ``sle.SLE`` on this
    matrix gives ``sle.gp.Marginal`` its sparse exact likelihood. An absent entry means
    "at least ``cutoff``"; a stored 0 is a distance of 0 (a point and itself).

    Rows and columns mean what they mean in :class:`~pymc_sle.DistanceMatrix`: every point a
    model evaluates, and the landmark candidates. Build one with a cutoff-aware builder
    (``pymc_sle.distances.geodesic(..., cutoff=...)``), :meth:`from_dense`, or from CSR arrays.

    Parameters
    ----------
    indptr, indices, values : array_like
        Compressed sparse rows: row ``i``'s columns are ``indices[indptr[i]:indptr[i+1]]``
        (strictly increasing) and its distances ``values[indptr[i]:indptr[i+1]]`` (finite,
        non-negative, below ``cutoff``).
    shape : tuple of int
        ``(n_points, n_columns)``.
    cutoff : float
        Positive and finite: every distance not stored is at least this large.
    metadata : dict, optional
        JSON-serialisable facts about how the distances were made.

    Raises
    ------
    TypeError
        If ``metadata`` is not JSON-serialisable.
    ValueError
        If the arrays are not a valid CSR structure of ``shape``, a distance is negative, not
        finite or not below ``cutoff``, or ``cutoff`` is not positive and finite.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import SparseDistanceMatrix
    >>> x = np.linspace(0.0, 1.0, 5)
    >>> D = SparseDistanceMatrix.from_dense(np.abs(x[:, None] - x[None, :]), cutoff=0.3)
    >>> D.shape, D.nnz
    ((5, 5), 13)
    >>> D.to_dense()[0]
    array([0.  , 0.25,  inf,  inf,  inf])
    """

    def __init__(self, indptr, indices, values, *, shape, cutoff, metadata=None):
        n_points, n_columns = _checked_shape(shape)
        cutoff = checked_cutoff(cutoff)
        indptr = _integer_array("indptr", indptr)
        indices = _integer_array("indices", indices)
        values = np.array(values, dtype=np.float64, copy=True).ravel()
        if indptr.shape != (n_points + 1,) or indptr[0] != 0 or (np.diff(indptr) < 0).any():
            raise ValueError(
                f"`indptr` must be a non-decreasing array of {n_points + 1} integers starting at "
                f"0 (one more than the {n_points} rows), but has shape {indptr.shape} and starts "
                f"at {indptr[:1].tolist()}"
            )
        if indices.size != indptr[-1] or values.size != indptr[-1]:
            raise ValueError(
                f"`indices` and `values` must each hold indptr[-1] = {indptr[-1]} entries, but "
                f"hold {indices.size} and {values.size}"
            )
        if indices.size and (indices.min() < 0 or indices.max() >= n_columns):
            raise ValueError(
                f"`indices` must be column numbers in [0, {n_columns}), but range over "
                f"[{indices.min()}, {indices.max()}]"
            )
        row_of = np.repeat(np.arange(n_points), np.diff(indptr))
        unsorted = (np.diff(indices) <= 0) & (row_of[1:] == row_of[:-1])
        if unsorted.any():
            row = int(row_of[1:][unsorted][0])
            raise ValueError(
                f"`indices` must be strictly increasing within each row, but row {row} is not"
            )
        check_finite_nonnegative("values", values)
        if values.size and values.max() >= cutoff:
            raise ValueError(
                f"`values` must be below `cutoff` = {cutoff:.6g} (larger distances are not "
                f"stored), but the largest is {values.max():.6g}"
            )
        for array in (indptr, indices, values):
            array.setflags(write=False)
        self._indptr, self._indices, self._values = indptr, indices, values
        self._shape = (n_points, n_columns)
        self.cutoff = cutoff
        self.metadata = dict(metadata or {})
        try:
            json.dumps(self.metadata)
        except TypeError as err:
            raise TypeError(f"`metadata` must be JSON-serialisable: {err}") from err

    @classmethod
    def from_dense(cls, values, cutoff: float, metadata=None) -> SparseDistanceMatrix:
        """The entries of a dense array (or ``DistanceMatrix``) below ``cutoff``."""
        dense = np.asarray(values, dtype=np.float64)
        if dense.ndim != 2:
            raise ValueError(f"`values` must be 2-D, but has shape {dense.shape}")
        check_finite_nonnegative("values", dense)
        cutoff = checked_cutoff(cutoff)
        keep = dense < cutoff
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        rows, cols = np.nonzero(keep)
        return cls(
            indptr, cols, dense[rows, cols], shape=dense.shape, cutoff=cutoff, metadata=metadata
        )

    @classmethod
    def from_triplets(
        cls, rows, cols, values, *, shape, cutoff: float, metadata=None
    ) -> SparseDistanceMatrix:
        """The matrix with ``D[rows[e], cols[e]] = values[e]`` (each entry once, any order)."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        order = np.lexsort((cols, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=int(shape[0])))])
        return cls(
            indptr,
            cols[order],
            np.asarray(values, dtype=np.float64)[order],
            shape=shape,
            cutoff=cutoff,
            metadata=metadata,
        )

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def n_points(self) -> int:
        return self._shape[0]

    @property
    def n_columns(self) -> int:
        return self._shape[1]

    @property
    def nnz(self) -> int:
        """Stored distances."""
        return int(self._values.size)

    @property
    def indptr(self) -> np.ndarray:
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        return self._indices

    @property
    def values(self) -> np.ndarray:
        """The stored distances, row after row (read-only)."""
        return self._values

    def __repr__(self) -> str:
        metric = self.metadata.get("metric")
        return (
            f"SparseDistanceMatrix(shape={self.shape}, nnz={self.nnz}, cutoff={self.cutoff:.6g}"
            + (f", metric={metric!r})" if metric else ")")
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, SparseDistanceMatrix):
            return NotImplemented
        return (
            self.shape == other.shape
            and self.cutoff == other.cutoff
            and self.metadata == other.metadata
            and all(
                np.array_equal(a, b)
                for a, b in zip(
                    (self._indptr, self._indices, self._values),
                    (other._indptr, other._indices, other._values),
                    strict=True,
                )
            )
        )

    __hash__ = None

    def to_dense(self, fill: float = np.inf) -> np.ndarray:
        """The ``(n_points, n_columns)`` array, ``fill`` where nothing is stored."""
        dense = np.full(self.shape, fill, dtype=np.float64)
        rows = np.repeat(np.arange(self.n_points), np.diff(self._indptr))
        dense[rows, self._indices] = self._values
        return dense

    def take(self, rows=None, cols=None) -> SparseDistanceMatrix:
        """The sub-matrix ``D[rows][:, cols]`` (indices as in :meth:`DistanceMatrix.take`)."""
        from scipy import sparse

        # Slice entry numbers (1-based, so that none is a zero scipy could drop), not values.
        numbers = np.arange(1, self.nnz + 1, dtype=np.float64)
        matrix = sparse.csr_matrix((numbers, self._indices, self._indptr), shape=self.shape)
        if rows is not None:
            matrix = matrix[as_index_array("rows", rows, self.n_points, axis_name="rows"), :]
        if cols is not None:
            matrix = matrix[:, as_index_array("cols", cols, self.n_columns, axis_name="columns")]
        matrix = sparse.csr_matrix(matrix)
        matrix.sort_indices()
        return SparseDistanceMatrix(
            matrix.indptr,
            matrix.indices,
            self._values[matrix.data.astype(np.int64) - 1],
            shape=matrix.shape,
            cutoff=self.cutoff,
            metadata=self.metadata,
        )

    def truncate(self, cutoff: float) -> SparseDistanceMatrix:
        """The distances below a smaller ``cutoff`` (at most this matrix's): an SLE with radius
        at most ``cutoff`` reads nothing else."""
        cutoff = checked_cutoff(cutoff)
        if cutoff > self.cutoff:
            raise ValueError(
                f"`cutoff` must be at most the matrix's cutoff {self.cutoff:.6g} (larger "
                f"distances are not stored), but is {cutoff:.6g}"
            )
        keep = self._values < cutoff
        row_of = np.repeat(np.arange(self.n_points), np.diff(self._indptr))[keep]
        return SparseDistanceMatrix(
            np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=self.n_points))]),
            self._indices[keep],
            self._values[keep],
            shape=self.shape,
            cutoff=cutoff,
            metadata=self.metadata,
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write the matrix to a ``*.npz`` archive without pickle; returns its path."""
        path = Path(path)
        if path.suffix != ".npz":
            raise ValueError(f"`path` must end in '.npz', but got {path.name!r}")
        header = {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "shape": list(self.shape),
            "cutoff": self.cutoff,
            "metadata": self.metadata,
        }
        np.savez_compressed(
            path,
            indptr=self._indptr,
            indices=self._indices,
            values=self._values,
            header=np.array(json.dumps(header)),
        )
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> SparseDistanceMatrix:
        """Read a matrix written by :meth:`save` (never unpickles)."""
        path = Path(path)
        if path.suffix != ".npz":
            raise ValueError(f"`path` must end in '.npz', but got {path.name!r}")
        try:
            with np.load(path, allow_pickle=False) as archive:
                missing = {"indptr", "indices", "values", "header"} - set(archive.files)
                if missing:
                    raise ValueError(f"missing {sorted(missing)}")
                arrays = {key: archive[key] for key in ("indptr", "indices", "values")}
                header = json.loads(str(archive["header"]))
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
            raise ValueError(
                f"{path} cannot be read as a SparseDistanceMatrix ({type(err).__name__}: {err})"
            ) from err
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            raise ValueError(f"{path} is not a SparseDistanceMatrix archive")
        if header.get("format_version", 0) > _FORMAT_VERSION:
            raise ValueError(
                f"{path} has format version {header['format_version']}; this pymc_sle reads up "
                f"to {_FORMAT_VERSION}"
            )
        return cls(
            **arrays,
            shape=tuple(header["shape"]),
            cutoff=header["cutoff"],
            metadata=header.get("metadata"),
        )


def _checked_shape(shape) -> tuple[int, int]:
    try:
        n_points, n_columns = (int(v) for v in shape)
    except (TypeError, ValueError) as err:
        raise ValueError(f"`shape` must be (n_points, n_columns), but got {shape!r}") from err
    if n_points < 1 or n_columns < 1:
        raise ValueError(f"`shape` must be positive, but got {(n_points, n_columns)}")
    return n_points, n_columns


def checked_cutoff(cutoff) -> float:
    """``cutoff`` as a positive, finite float; errors name ``cutoff``."""
    try:
        value = float(cutoff)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`cutoff` must be a number, but got {cutoff!r}") from err
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`cutoff` must be positive and finite, but got {value!r}")
    return value


def _integer_array(name: str, values) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise TypeError(
            f"`{name}` must be a 1-D integer array, but has dtype {array.dtype} "
            f"and shape {array.shape}"
        )
    return np.array(array, dtype=np.int64, copy=True)
