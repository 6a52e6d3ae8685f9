"""A validated, saveable matrix of distances: evaluation points (rows) to landmarks (columns)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from pymc_sle._validation import as_index_array, check_finite_nonnegative

__all__ = ["DistanceMatrix"]

_FORMAT_VERSION = 1
_DTYPES = {"float64": np.float64, "float32": np.float32}


def _validated(name: str, values, dtype: str) -> np.ndarray:
    """``values`` as a C-ordered ``dtype`` copy, after checking that it is a non-empty 2-D array
    of finite, non-negative reals; errors name ``name``."""
    raw = np.asarray(values)
    if raw.dtype == object or raw.dtype == bool or not np.issubdtype(raw.dtype, np.number):
        raise TypeError(f"`{name}` must be a real numeric array, but has dtype {raw.dtype}")
    if np.iscomplexobj(raw):
        raise TypeError(f"`{name}` must be real, but has complex dtype {raw.dtype}")
    if raw.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D array (n_points, n_columns), but has shape {raw.shape}"
        )
    if raw.size == 0:
        raise ValueError(f"`{name}` must not be empty, but has shape {raw.shape}")
    with np.errstate(over="ignore"):
        array = np.array(raw, dtype=_DTYPES[dtype], order="C", copy=True)
    if np.isfinite(raw).all() and not np.isfinite(array).all():
        raise ValueError(f"`{name}` overflow in {dtype}; use dtype='float64'")
    check_finite_nonnegative(name, array)
    return array


class DistanceMatrix:
    r"""Distances :math:`D_{ij} = d(x_i, z_j)` from every point a model evaluates to landmarks.

    Rows are every point the model will ever evaluate (training and test points); columns are
    landmark candidates. For the SLE kernel the landmarks are the training points, so a square
    all-points matrix works, and so does a rectangular ``(n_points, n_train)`` block, which is all
    the model needs.

    Parameters
    ----------
    values : array_like of shape (n_points, n_columns)
        Finite, non-negative real distances. ``d`` need not be symmetric, satisfy the triangle
        inequality or be conditionally negative definite: the SLE kernel is PSD for any ``d``.
    dtype : {"float64", "float32"}, default "float64"
        Storage precision. ``float32`` halves memory for large matrices; covariances are still
        computed in PyTensor's ``floatX``.
    metadata : dict, optional
        JSON-serialisable facts about how the distances were made (metric, parameters, source).
        Saved and loaded with the matrix.

    Raises
    ------
    TypeError
        If ``values`` is not real-valued or ``metadata`` is not JSON-serialisable.
    ValueError
        If ``values`` is not 2-D, is empty, or has non-finite or negative entries.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import DistanceMatrix
    >>> x = np.linspace(0.0, 1.0, 5)
    >>> D = DistanceMatrix(np.abs(x[:, None] - x[None, :]), metadata={"metric": "euclidean"})
    >>> D.shape
    (5, 5)
    >>> D.take(rows=[0, 4], cols=[1]).values
    array([[0.25],
           [0.75]])
    """

    def __init__(self, values, *, dtype: str = "float64", metadata: dict[str, Any] | None = None):
        if dtype not in _DTYPES:
            raise ValueError(f"`dtype` must be one of {sorted(_DTYPES)}, but got {dtype!r}")
        array = _validated("values", values, dtype)
        array.setflags(write=False)
        self._values = array
        self.metadata = dict(metadata or {})
        try:
            json.dumps(self.metadata)
        except TypeError as err:
            raise TypeError(f"`metadata` must be JSON-serialisable: {err}") from err

    @property
    def values(self) -> np.ndarray:
        """Read-only array of shape ``(n_points, n_columns)``."""
        return self._values

    @property
    def shape(self) -> tuple[int, int]:
        return self._values.shape

    @property
    def dtype(self) -> np.dtype:
        return self._values.dtype

    @property
    def n_points(self) -> int:
        """Number of rows: points the model can evaluate."""
        return self._values.shape[0]

    @property
    def n_columns(self) -> int:
        """Number of columns: landmark candidates."""
        return self._values.shape[1]

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._values, dtype=dtype)
        return np.asarray(self._values, dtype=dtype)

    def __repr__(self) -> str:
        return f"DistanceMatrix(shape={self.shape}, dtype={self.dtype}, metadata={self.metadata})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, DistanceMatrix):
            return NotImplemented
        return (
            self.shape == other.shape
            and self.dtype == other.dtype
            and self.metadata == other.metadata
            and bool(np.array_equal(self._values, other._values))
        )

    __hash__ = None

    def take(self, rows=None, cols=None) -> DistanceMatrix:
        """Return the sub-matrix ``D[rows][:, cols]`` as a new ``DistanceMatrix``.

        Parameters
        ----------
        rows, cols : array_like of int, optional
            Indices into the rows and columns; ``None`` keeps all.
        """
        values = self._values
        if rows is not None:
            values = values[as_index_array("rows", rows, self.n_points, axis_name="rows"), :]
        if cols is not None:
            values = values[:, as_index_array("cols", cols, self.n_columns, axis_name="columns")]
        return DistanceMatrix(values, dtype=self.dtype.name, metadata=self.metadata)

    def append(self, rows) -> DistanceMatrix:
        """Return a new ``DistanceMatrix`` with ``rows`` (distances from more points to the same
        columns) after the existing rows.

        For points that arrive after a fit: their distances to the landmark columns, e.g. from
        ``pairwise(new_items, metric, to=landmark_items)``. The result has this matrix's dtype
        and metadata, plus ``appended``: the number of rows added by each call so far.

        Parameters
        ----------
        rows : DistanceMatrix or array_like of shape (k, n_columns)
            Finite, non-negative distances. A ``DistanceMatrix`` whose metadata names another
            ``metric`` is refused: its distances would not be comparable.

        Examples
        --------
        >>> import numpy as np
        >>> from pymc_sle import DistanceMatrix
        >>> D = DistanceMatrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
        >>> D.append([[0.5, 0.5]]).values
        array([[0. , 1. ],
               [1. , 0. ],
               [0.5, 0.5]])
        """
        if isinstance(rows, DistanceMatrix):
            mine, theirs = self.metadata.get("metric"), rows.metadata.get("metric")
            if mine is not None and theirs is not None and mine != theirs:
                raise ValueError(
                    f"`rows` must hold distances of this matrix's metric {mine!r}, but holds "
                    f"{theirs!r}"
                )
            new = rows.values
        else:
            new = _validated("rows", rows, self.dtype.name)
        if new.shape[1] != self.n_columns:
            raise ValueError(
                f"`rows` must have one column per column of this matrix ({self.n_columns}), "
                f"but has shape {new.shape}"
            )
        metadata = dict(self.metadata)
        metadata["appended"] = [*metadata.get("appended", []), int(new.shape[0])]
        return DistanceMatrix(
            np.vstack([self._values, new]), dtype=self.dtype.name, metadata=metadata
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write the matrix without pickle.

        ``*.npz`` stores values and metadata in one compressed archive; ``*.npy`` stores the values
        and writes the metadata to a sidecar ``*.json`` next to it.

        Returns
        -------
        pathlib.Path
            The path of the values file.
        """
        path = Path(path)
        header = {
            "format_version": _FORMAT_VERSION,
            "shape": list(self.shape),
            "dtype": self.dtype.name,
            "metadata": self.metadata,
        }
        if path.suffix == ".npz":
            np.savez_compressed(path, values=self._values, header=np.array(json.dumps(header)))
        elif path.suffix == ".npy":
            np.save(path, self._values, allow_pickle=False)
            path.with_suffix(".json").write_text(json.dumps(header, indent=2))
        else:
            raise ValueError(f"`path` must end in '.npz' or '.npy', but got {path.name!r}")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> DistanceMatrix:
        """Read a matrix written by :meth:`save` (never unpickles)."""
        path = Path(path)
        if path.suffix not in (".npz", ".npy"):
            raise ValueError(f"`path` must end in '.npz' or '.npy', but got {path.name!r}")
        try:
            values, header = cls._read(path)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
            raise ValueError(
                f"{path} cannot be read as a DistanceMatrix ({type(err).__name__}: {err})"
            ) from err
        _check_header(path, header)
        version = header.get("format_version", _FORMAT_VERSION)
        if version > _FORMAT_VERSION:
            raise ValueError(
                f"{path} has format version {version}; this pymc_sle reads up to {_FORMAT_VERSION}"
            )
        if "shape" in header and tuple(header["shape"]) != values.shape:
            raise ValueError(
                f"{path} is inconsistent: header shape {tuple(header['shape'])} but values have "
                f"shape {values.shape}"
            )
        stored = values.dtype.name if values.dtype.name in _DTYPES else "float64"
        return cls(values, dtype=header.get("dtype", stored), metadata=header.get("metadata"))

    @staticmethod
    def _read(path: Path) -> tuple[np.ndarray, object]:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                missing = {"values", "header"} - set(archive.files)
                if missing:
                    raise ValueError(f"not a DistanceMatrix archive: missing {sorted(missing)}")
                return archive["values"], json.loads(str(archive["header"]))
        values = np.load(path, allow_pickle=False)
        sidecar = path.with_suffix(".json")
        return values, json.loads(sidecar.read_text()) if sidecar.exists() else {}


def _check_header(path: Path, header) -> None:
    """Reject a header that :meth:`DistanceMatrix.save` cannot have written, naming the file."""
    problem = None
    if not isinstance(header, dict):
        problem = f"must be a JSON object, but is {type(header).__name__}"
    elif not isinstance(header.get("format_version", 1), int):
        problem = f"'format_version' must be an integer, but is {header['format_version']!r}"
    elif "shape" in header and not (
        isinstance(header["shape"], list) and all(isinstance(v, int) for v in header["shape"])
    ):
        problem = f"'shape' must be a list of integers, but is {header['shape']!r}"
    elif not isinstance(header.get("metadata", {}), dict | None):
        problem = f"'metadata' must be an object, but is {type(header['metadata']).__name__}"
    elif not isinstance(header.get("dtype", "float64"), str):
        problem = f"'dtype' must be a string, but is {header['dtype']!r}"
    if problem:
        raise ValueError(f"{path} has an invalid header: {problem}")


def as_distance_matrix(distances) -> DistanceMatrix:
    """Return ``distances`` as a :class:`DistanceMatrix`, validating arrays on the way; a
    ``SparseDistanceMatrix`` is a ``TypeError`` saying where sparse distances go."""
    from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix

    if isinstance(distances, DistanceMatrix):
        return distances
    if isinstance(distances, SparseDistanceMatrix):
        raise TypeError(
            "`distances` must be a dense DistanceMatrix here, but got a SparseDistanceMatrix: "
            "sparse distances go to sle.SLE, sle.gp.Marginal and sle_priors (the large-data "
            "path, docs/how-to/large-data.md), or call .to_dense() for a small one"
        )
    return DistanceMatrix(distances)
