"""Geodesic distances on triangle meshes: one single-source search per landmark."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from functools import cached_property

import joblib
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from pymc_sle._validation import as_index_array, indices_or_all
from pymc_sle.distances._cutoff import resolve_cutoff
from pymc_sle.distances._matrix import DistanceMatrix
from pymc_sle.distances._methods import GEODESIC_METHODS
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix

__all__ = ["Mesh", "geodesic", "load_mesh"]


@dataclass(frozen=True, eq=False)
class Mesh:
    """A triangle mesh: ``vertices`` of shape (n, 3) and integer ``faces`` of shape (f, 3).

    Raises
    ------
    ValueError
        If the arrays have the wrong shape, vertices are not finite, or faces index missing
        vertices.
    """

    vertices: np.ndarray
    faces: np.ndarray

    def __post_init__(self):
        vertices = np.ascontiguousarray(self.vertices, dtype=float)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or vertices.shape[0] < 3:
            raise ValueError(f"`vertices` must have shape (n >= 3, 3), but has {vertices.shape}")
        if not np.isfinite(vertices).all():
            raise ValueError("`vertices` must be finite")
        faces = np.asarray(self.faces)
        if faces.ndim != 2 or faces.shape[1] != 3 or faces.shape[0] == 0:
            raise ValueError(f"`faces` must have shape (f >= 1, 3), but has {faces.shape}")
        faces = as_index_array("faces", faces, vertices.shape[0], axis_name="vertices")
        object.__setattr__(self, "vertices", vertices)
        object.__setattr__(self, "faces", np.ascontiguousarray(faces))

    @property
    def n_vertices(self) -> int:
        return self.vertices.shape[0]

    @cached_property
    def edge_graph(self) -> sparse.csr_matrix:
        """Sparse symmetric (n, n) matrix of edge lengths."""
        edges = np.concatenate(
            [self.faces[:, [0, 1]], self.faces[:, [1, 2]], self.faces[:, [2, 0]]]
        )
        edges = np.unique(np.sort(edges, axis=1), axis=0)
        edges = edges[edges[:, 0] != edges[:, 1]]
        lengths = np.linalg.norm(self.vertices[edges[:, 0]] - self.vertices[edges[:, 1]], axis=1)
        # csgraph reads a stored 0 as "no edge"; a zero-length edge (an unmerged duplicate
        # vertex) must still connect, so it gets the smallest positive length instead.
        lengths = np.maximum(lengths, np.finfo(float).tiny)
        n = self.n_vertices
        graph = sparse.coo_matrix((lengths, (edges[:, 0], edges[:, 1])), shape=(n, n))
        return (graph + graph.T).tocsr()

    @cached_property
    def component_labels(self) -> np.ndarray:
        """Connected-component label of every vertex (edge connectivity)."""
        return csgraph.connected_components(self.edge_graph, directed=False)[1]

    @property
    def n_components(self) -> int:
        """Number of connected components of the mesh's edge graph."""
        return int(self.component_labels.max()) + 1

    def largest_component(self) -> tuple[Mesh, np.ndarray]:
        """The largest connected component as a mesh, and its vertices' indices in this mesh."""
        labels = self.component_labels
        keep = np.flatnonzero(labels == np.bincount(labels).argmax())
        new_index = np.full(self.n_vertices, -1)
        new_index[keep] = np.arange(keep.size)
        faces = new_index[self.faces]
        return Mesh(self.vertices[keep], faces[(faces >= 0).all(axis=1)]), keep


def load_mesh(path: str | os.PathLike) -> Mesh:
    """Read a triangle mesh (OBJ, PLY, STL, OFF, ...) with trimesh, merging duplicate vertices.

    Files that repeat a vertex once per normal or texture coordinate (common in OBJ) become one
    vertex per position. Check :attr:`~pymc_sle.distances.Mesh.n_components`: geodesics between
    components do not exist, and :meth:`~pymc_sle.distances.Mesh.largest_component` extracts the
    main piece.
    """
    try:
        import trimesh
    except ImportError as err:
        raise ImportError("load_mesh needs trimesh: pip install 'pymc-sle[mesh]'") from err
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"`path` must be a mesh file, but {os.fspath(path)!r} does not exist"
        )
    try:
        loaded = trimesh.load(os.fspath(path), process=True, force="mesh")
        loaded.merge_vertices(merge_tex=True, merge_norm=True)
        vertices, faces = np.asarray(loaded.vertices), np.asarray(loaded.faces)
    except Exception as err:  # trimesh raises many kinds on unreadable files
        raise ValueError(
            f"`path` {os.fspath(path)!r} is not a readable triangle mesh "
            f"({type(err).__name__}: {err})"
        ) from err
    if faces.ndim != 2 or faces.shape[0] == 0:
        raise ValueError(f"`path` {os.fspath(path)!r} holds no triangles")
    mesh = Mesh(vertices, faces)
    if mesh.n_components > 1:
        sizes = np.sort(np.bincount(mesh.component_labels))[::-1]
        warnings.warn(
            f"{os.fspath(path)} has {mesh.n_components} connected components of "
            f"{sizes[:5].tolist()}{'...' if sizes.size > 5 else ''} vertices; geodesics between "
            "components do not exist. Use mesh.largest_component().",
            UserWarning,
            stacklevel=2,
        )
    return mesh


def _sources_graph(mesh: Mesh, sources: np.ndarray) -> np.ndarray:
    return csgraph.dijkstra(mesh.edge_graph, directed=False, indices=sources)


def _sources_heat(mesh: Mesh, sources: np.ndarray) -> np.ndarray:
    import potpourri3d

    solver = potpourri3d.MeshHeatMethodDistanceSolver(mesh.vertices, mesh.faces)
    return np.stack([solver.compute_distance(int(s)) for s in sources])


def _sources_exact(mesh: Mesh, sources: np.ndarray) -> np.ndarray:
    from pygeodesic import geodesic as exact

    algorithm = exact.PyGeodesicAlgorithmExact(mesh.vertices, mesh.faces.astype(np.int32))
    return np.stack([algorithm.geodesicDistances(np.array([s]), None)[0] for s in sources])


def _solve(method: str, mesh: Mesh, sources: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Distances from ``sources`` to ``rows`` (all vertices if None), shape (sources, rows)."""
    distances = _SOLVERS[method](mesh, sources)
    return distances if rows is None else distances[:, rows]


_SOLVERS = {"graph": _sources_graph, "heat": _sources_heat, "exact": _sources_exact}
_EXTRA = {"heat": "potpourri3d", "exact": "pygeodesic"}
#: Sources per truncated search block: a block holds a (sources, V) array while it runs.
_TRUNCATED_BLOCK = 256


def _first_unreachable(row_labels: np.ndarray, col_labels: np.ndarray) -> tuple[int, int] | None:
    """The first (row, col) pair, in row-major order, whose vertices lie in different components
    -- without forming the rows x cols comparison."""
    if np.any(col_labels != col_labels[0]):
        return 0, int(np.flatnonzero(col_labels != row_labels[0])[0])
    rows = np.flatnonzero(row_labels != col_labels[0])
    return (int(rows[0]), 0) if rows.size else None


def _truncated(mesh: Mesh, sources: np.ndarray, row_of: np.ndarray, cutoff: float):
    """Distances below ``cutoff`` from ``sources`` along mesh edges: Dijkstra searches that stop
    at ``cutoff``. Returns ``(row, source_position, distance)`` triplets, rows as numbered by
    ``row_of`` (-1: not a row)."""
    distances = csgraph.dijkstra(mesh.edge_graph, directed=False, indices=sources, limit=cutoff)
    source_position, vertex = np.nonzero(distances < cutoff)
    rows = row_of[vertex]
    keep = rows >= 0
    return rows[keep], source_position[keep], distances[source_position[keep], vertex[keep]]


def geodesic(
    vertices,
    faces,
    rows=None,
    cols=None,
    *,
    method: str = "graph",
    cutoff: float | str | None = None,
    per_bump: int = 32,
    n_jobs: int = 1,
    progress: bool = False,
) -> DistanceMatrix | SparseDistanceMatrix:
    r"""Geodesic distances on a triangle mesh from ``rows`` vertices to ``cols`` vertices.

    One single-source search runs per column (landmark), so the cost is
    :math:`O(|\text{cols}| \cdot V \log V)`, not the :math:`O(V^2 \log V)` of the full matrix.

    Parameters
    ----------
    vertices : array_like of shape (V, 3)
    faces : array_like of int of shape (F, 3)
    rows, cols : array_like of int, optional
        Vertex indices; ``None`` means all vertices.
    method : {"graph", "heat", "exact"}, default "graph"
        ``"graph"``: shortest paths along mesh edges (scipy Dijkstra). It over-estimates the
        surface distance: on a regular triangulated grid by up to :math:`\sqrt2` across the
        diagonals and :math:`\sqrt{4 - 2\sqrt2} \approx 1.082` along them.
        ``"heat"``: the heat method (potpourri3d), smooth, converging with refinement.
        ``"exact"``: exact polyhedral geodesics (MMP algorithm, pygeodesic). The last two need
        ``pip install 'pymc-sle[mesh]'``.
    cutoff : float, optional
        Keep only the distances below ``cutoff`` and return a
        :class:`~pymc_sle.SparseDistanceMatrix`: each search stops at ``cutoff``, so the cost
        follows the number of vertices within it, not ``V``. For large training sets; the SLE
        radius must then stay at or below ``cutoff``. ``method="graph"`` only. Vertices in
        different connected components are beyond any cutoff (not stored, not an error).
        ``"auto"``: the cutoff at which a typical row reaches ``per_bump`` columns (the median
        ``per_bump``-th nearest column of up to 256 rows searched in full; see
        ``pymc_sle.distances._cutoff``).
    per_bump : int, default 32
        With ``cutoff="auto"``: the number of columns (landmarks) a row's bump should reach.
    n_jobs : int, default 1
        Processes over which the columns are split (-1: all cores).
    progress : bool, default False
        Show a progress bar over column blocks.

    Returns
    -------
    DistanceMatrix, or SparseDistanceMatrix with ``cutoff``, of shape (len(rows), len(cols))

    Raises
    ------
    ValueError
        If a row vertex cannot reach a column vertex (different connected components).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle.distances import geodesic
    >>> square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    >>> geodesic(square, [[0, 1, 2], [0, 2, 3]], cols=[0]).values.ravel().round(4)
    array([0.    , 1.    , 1.4142, 1.    ])
    """
    if method not in _SOLVERS:
        raise ValueError(f"`method` must be one of {GEODESIC_METHODS}, but got {method!r}")
    if cutoff is not None and method != "graph":
        raise ValueError(f"`cutoff` needs method='graph', but method is {method!r}")
    if method in _EXTRA:
        try:
            __import__(_EXTRA[method])
        except ImportError as err:
            raise ImportError(
                f"method={method!r} needs {_EXTRA[method]}: pip install 'pymc-sle[mesh]'"
            ) from err
    mesh = Mesh(vertices, faces)
    n = mesh.n_vertices
    row_ids = indices_or_all("rows", rows, n, axis_name="vertices")
    col_ids = indices_or_all("cols", cols, n, axis_name="vertices")
    labels = mesh.component_labels  # also builds the edge graph once, before workers get the mesh
    automatic = cutoff == "auto"
    cutoff = resolve_cutoff(
        cutoff, per_bump, row_ids.size, col_ids.size,
        lambda positions: csgraph.dijkstra(mesh.edge_graph, directed=False,
                                           indices=row_ids[positions])[:, col_ids],
    )  # fmt: skip
    unreachable = _first_unreachable(labels[row_ids], labels[col_ids])
    if unreachable is not None and cutoff is None:  # with a cutoff: simply not stored
        i, j = unreachable
        raise ValueError(
            f"vertex {row_ids[i]} cannot reach vertex {col_ids[j]}: the mesh has "
            f"{mesh.n_components} connected components and `rows`/`cols` span several. Use "
            "Mesh.largest_component(), or rows and cols from one component."
        )

    from tqdm.auto import tqdm

    n_workers = joblib.cpu_count() if n_jobs == -1 else max(1, int(n_jobs))
    metadata = {
        "metric": f"geodesic-{method}",
        "n_vertices": n,
        "rows": row_ids.tolist() if rows is not None else None,
        "cols": col_ids.tolist() if cols is not None else None,
    }
    if automatic:
        metadata["per_bump"] = per_bump
    if cutoff is not None:
        row_of = np.full(n, -1, dtype=np.int64)
        row_of[row_ids] = np.arange(row_ids.size)
        blocks = [
            np.arange(start, min(start + _TRUNCATED_BLOCK, col_ids.size))
            for start in range(0, col_ids.size, _TRUNCATED_BLOCK)
        ]
        results = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(
            joblib.delayed(_truncated)(mesh, col_ids[block], row_of, cutoff) for block in blocks
        )
        parts = [
            (r, block[c], d)
            for block, (r, c, d) in zip(
                blocks, tqdm(results, total=len(blocks), disable=not progress), strict=True
            )
        ]
        row, col, value = (np.concatenate(part) for part in zip(*parts, strict=True))
        return SparseDistanceMatrix.from_triplets(
            row, col, value, shape=(row_ids.size, col_ids.size), cutoff=cutoff, metadata=metadata
        )
    sources, position = np.unique(col_ids, return_inverse=True)
    blocks = np.array_split(np.arange(sources.size), min(sources.size, 4 * n_workers))
    results = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(
        joblib.delayed(_solve)(method, mesh, sources[block], None if rows is None else row_ids)
        for block in blocks
    )
    by_source = np.empty((sources.size, row_ids.size))
    for block, result in zip(
        blocks, tqdm(results, total=len(blocks), disable=not progress), strict=True
    ):
        by_source[block] = result
    return DistanceMatrix(by_source[position].T, metadata=metadata)
