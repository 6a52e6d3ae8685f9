import numpy as np
import pytest

from pymc_sle.distances import Mesh, geodesic, load_mesh

trimesh = pytest.importorskip("trimesh")


def flat_grid(k: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """A k x k grid of unit squares in the plane z = 0, each split along one diagonal."""
    xs, ys = np.meshgrid(np.arange(k, dtype=float), np.arange(k, dtype=float), indexing="ij")
    vertices = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(k * k)])
    index = np.arange(k * k).reshape(k, k)
    a, b = index[:-1, :-1].ravel(), index[1:, :-1].ravel()
    c, d = index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    faces = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    return vertices, faces


def euclidean(vertices, rows, cols):
    return np.linalg.norm(vertices[rows][:, None] - vertices[cols][None], axis=-1)


def test_exact_geodesics_on_a_flat_grid_are_euclidean():
    vertices, faces = flat_grid()
    cols = [0, 40, 80, 13]
    D = geodesic(vertices, faces, cols=cols, method="exact")
    np.testing.assert_allclose(D.values, euclidean(vertices, np.arange(81), cols), atol=1e-9)


def test_graph_geodesics_on_a_flat_grid_are_within_the_known_overestimates():
    vertices, faces = flat_grid()
    D = geodesic(vertices, faces).values
    offsets = vertices[None, :, :2] - vertices[:, None, :2]
    E = np.linalg.norm(offsets, axis=-1)
    off = E > 0
    ratio = np.where(off, D / np.where(off, E, 1.0), 1.0)
    # The diagonals all run along (1, 1). Offsets with same-sign components follow the axes and
    # that diagonal: worst ratio max_t cos t + (sqrt 2 - 1) sin t = sqrt(4 - 2 sqrt 2) ~ 1.0824.
    # Opposite-sign offsets have no diagonal to use: Manhattan paths, worst ratio sqrt 2.
    same_sign = offsets[..., 0] * offsets[..., 1] >= 0
    assert ratio[off].min() >= 1.0 - 1e-12
    assert ratio[same_sign & off].max() <= np.sqrt(4 - 2 * np.sqrt(2)) + 1e-12
    assert ratio[~same_sign].max() == pytest.approx(np.sqrt(2), rel=1e-12)  # the (1, -1) direction


def test_heat_sphere_geodesics_approach_great_circles_as_the_mesh_refines():
    errors = []
    for subdivisions in (1, 2, 3):
        sphere = trimesh.creation.icosphere(subdivisions)
        V = np.asarray(sphere.vertices)
        D = geodesic(V, sphere.faces, cols=[0, 7], method="heat").values
        errors.append(np.abs(D - np.arccos(np.clip(V @ V[[0, 7]].T, -1, 1))).max())
    # The heat method's error is O(mesh spacing): it roughly halves with each subdivision.
    assert errors[0] > 1.5 * errors[1] > 2.25 * errors[2]
    assert errors[2] < 0.06


def test_exact_sphere_geodesics_approach_great_circles_as_the_mesh_refines():
    errors = []
    for subdivisions in (1, 2, 3):
        sphere = trimesh.creation.icosphere(subdivisions)
        V = np.asarray(sphere.vertices)
        cols = [0, 7]
        D = geodesic(V, sphere.faces, cols=cols, method="exact").values
        great_circle = np.arccos(np.clip(V @ V[cols].T, -1, 1))
        errors.append(np.abs(D - great_circle).max())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


@pytest.mark.parametrize("method", ["graph", "heat", "exact"])
def test_rows_and_cols_subset_is_block_of_full_matrix(method):
    sphere = trimesh.creation.icosphere(2)
    full = geodesic(sphere.vertices, sphere.faces, method=method).values
    rows, cols = [5, 0, 100, 5], [3, 150, 41]
    D = geodesic(sphere.vertices, sphere.faces, rows, cols, method=method, n_jobs=2)
    np.testing.assert_allclose(D.values, full[np.ix_(rows, cols)], rtol=1e-12)
    assert D.metadata["metric"] == f"geodesic-{method}"


def test_load_mesh_merges_duplicated_vertices(tmp_path):
    sphere = trimesh.creation.icosphere(1)
    # One vertex per face corner, as OBJ files with per-face normals store them.
    corners = sphere.vertices[sphere.faces.ravel()]
    split = np.arange(corners.shape[0]).reshape(-1, 3)
    path = tmp_path / "split.obj"
    path.write_text(
        "".join(f"v {x} {y} {z}\n" for x, y, z in corners)
        + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in split)
    )
    mesh = load_mesh(path)
    assert mesh.n_vertices == len(sphere.vertices) and mesh.n_components == 1


def test_load_mesh_warns_about_several_components(tmp_path):
    path = tmp_path / "two.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 5 0 0\nv 6 0 0\nv 5 1 0\nf 1 2 3\nf 4 5 6\n")
    with pytest.warns(UserWarning, match=r"has 2 connected components of \[3, 3\] vertices"):
        mesh = load_mesh(path)
    assert mesh.n_components == 2


def test_disconnected_mesh_is_reported_and_rejected():
    vertices = np.array(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 0, 0], [6, 0, 0], [5, 1, 0], [6, 1, 0]], float
    )
    faces = np.array([[0, 1, 2], [3, 4, 5], [4, 6, 5]])
    mesh = Mesh(vertices, faces)
    assert mesh.n_components == 2
    largest, kept = mesh.largest_component()
    assert largest.n_vertices == 4 and kept.tolist() == [3, 4, 5, 6]
    with pytest.raises(
        ValueError, match="vertex 0 cannot reach vertex 3: the mesh has 2 connected components"
    ):
        geodesic(vertices, faces, rows=[0, 1], cols=[3])
    with pytest.raises(ValueError, match="vertex 4 cannot reach vertex 1"):
        geodesic(vertices, faces, rows=[4, 0], cols=[5, 1])
    with pytest.raises(ValueError, match="vertex 5 cannot reach vertex 2"):
        geodesic(vertices, faces, rows=[5, 4], cols=[3, 2])
    # with a cutoff, another component is simply beyond it
    sparse = geodesic(vertices, faces, rows=[0, 3], cols=[1, 4], cutoff=10.0)
    np.testing.assert_array_equal(sparse.to_dense(), [[1.0, np.inf], [np.inf, 1.0]])


def test_rejects_unknown_method():
    vertices, faces = flat_grid(3)
    with pytest.raises(
        ValueError, match=r"`method` must be one of \('graph', 'heat', 'exact'\), but got 'fmm'"
    ):
        geodesic(vertices, faces, method="fmm")


def test_rejects_faces_indexing_missing_vertices():
    vertices, faces = flat_grid(3)
    with pytest.raises(
        ValueError, match=r"`faces` must index the 9 vertices \(0 to 8\), but contains 9"
    ):
        Mesh(vertices, np.vstack([faces, [[0, 1, 9]]]))


def test_rejects_two_dimensional_vertices():
    with pytest.raises(
        ValueError, match=r"`vertices` must have shape \(n >= 3, 3\), but has \(4, 2\)"
    ):
        Mesh(np.zeros((4, 2)), [[0, 1, 2]])


def test_rejects_non_finite_vertices():
    vertices, faces = flat_grid(3)
    vertices[0, 0] = np.nan
    with pytest.raises(ValueError, match="`vertices` must be finite"):
        Mesh(vertices, faces)


def test_rejects_two_dimensional_cols():
    vertices, faces = flat_grid(3)
    with pytest.raises(
        ValueError, match=r"`cols` must be a non-empty 1-D array of indices, but has shape \(1, 2\)"
    ):
        geodesic(vertices, faces, cols=[[0, 1]])
