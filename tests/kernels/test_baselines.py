"""Baselines: Matérn on a distance, the raw-distance embedding, the mesh (Riemannian) Matérn."""

import numpy as np
import pytest

from pymc_sle import psd_report
from pymc_sle.kernels import (
    DistanceCovariance,
    MeshMatern,
    RawLandmarkEmbedding,
    laplace_beltrami,
    matern_spectrum,
)


@pytest.fixture
def line():
    x = np.array([0.0, 0.3, 0.7, 1.5])
    return np.abs(x[:, None] - x[None, :])


@pytest.mark.parametrize(
    ("inner", "h"),
    [
        ("matern12", lambda s: np.exp(-s)),
        ("matern32", lambda s: (1 + np.sqrt(3) * s) * np.exp(-np.sqrt(3) * s)),
        ("rbf", lambda s: np.exp(-0.5 * s**2)),
    ],
)
def test_distance_covariance_applies_the_kernel_to_the_distance(line, inner, h):
    cov = DistanceCovariance(line, ls=0.4, inner=inner)
    rows, cols = np.array([[0], [2], [3]]), np.array([[1], [3]])
    np.testing.assert_allclose(cov(rows, cols).eval(), h(line[[0, 2, 3]][:, [1, 3]] / 0.4))
    np.testing.assert_allclose(cov(rows, diag=True).eval(), np.ones(3))
    np.testing.assert_allclose(np.diag(cov(rows).eval()), np.ones(3))


def test_distance_covariance_validates(line):
    with pytest.raises(ValueError, match="`distances` must be square"):
        DistanceCovariance(line[:, :3], ls=1.0)
    with pytest.raises(ValueError, match="`ls`"):
        DistanceCovariance(line, ls=-1.0)
    with pytest.raises(ValueError, match="`inner` must be one of"):
        DistanceCovariance(line, ls=1.0, inner="cosine")


# --- raw-distance landmark embedding ---------------------------------------------------------


def _indefinite_distance(n=30, seed=0):
    """A metric whose Gaussian kernel is not PSD: shortest paths on a random sparse graph."""
    from scipy.sparse.csgraph import shortest_path

    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 2.0, (n, n)) * (rng.uniform(size=(n, n)) < 0.15)
    weights = np.triu(weights, 1) + np.triu(weights, 1).T + np.diag(np.ones(n - 1), 1)
    weights = np.maximum(weights, weights.T)
    return shortest_path(weights, directed=False)


@pytest.mark.parametrize("inner", ["matern12", "matern52", "rbf"])
def test_raw_embedding_is_the_kernel_of_distance_vectors(inner):
    D = _indefinite_distance()
    landmarks = np.array([0, 4, 9, 17])
    cov = RawLandmarkEmbedding(D, landmarks, ls=3.0, inner=inner)
    phi = D[:, landmarks]
    E = np.sqrt(((phi[:, None, :] - phi[None, :, :]) ** 2).sum(-1))
    reference = {
        "matern12": np.exp(-E / 3.0),
        "matern52": (1 + np.sqrt(5) * E / 3 + 5 * E**2 / 27) * np.exp(-np.sqrt(5) * E / 3),
        "rbf": np.exp(-0.5 * (E / 3.0) ** 2),
    }[inner]
    X = np.arange(D.shape[0])[:, None]
    K = cov(X).eval()
    np.testing.assert_allclose(K, reference, atol=1e-12)
    np.testing.assert_allclose(cov(X[:5], X[3:9]).eval(), reference[:5, 3:9], atol=1e-12)
    np.testing.assert_allclose(cov(X, diag=True).eval(), np.diag(K))
    np.testing.assert_allclose(cov.embed(X).eval(), phi)


def test_raw_embedding_is_psd_where_the_distance_kernel_is_not():
    D = _indefinite_distance()
    X = np.arange(D.shape[0])[:, None]
    assert psd_report(np.exp(-((D / 2.0) ** 2))).n_negative > 0
    assert psd_report(RawLandmarkEmbedding(D, ls=2.0, inner="rbf")(X).eval()).is_psd


# --- mesh Matern ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bumpy_sphere():
    """An icosphere with random radial noise: no degenerate eigenvalues."""
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("robust_laplacian")
    mesh = trimesh.creation.icosphere(subdivisions=2)
    rng = np.random.default_rng(0)
    vertices = np.asarray(mesh.vertices) * (1 + 0.2 * rng.standard_normal((len(mesh.vertices), 1)))
    return vertices * [1.0, 1.3, 0.8], np.asarray(mesh.faces)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, np.inf])
def test_mesh_matern_is_the_weighted_eigen_expansion(bumpy_sphere, nu):
    pairs = laplace_beltrami(*bumpy_sphere, 40)
    cov = MeshMatern(pairs, ls=0.6, nu=nu)
    X = np.arange(pairs.eigenvectors.shape[0])[:, None]
    K = cov(X).eval()
    weights = matern_spectrum(pairs.eigenvalues, ls=0.6, nu=nu)
    np.testing.assert_allclose(K, pairs.eigenvectors @ np.diag(weights) @ pairs.eigenvectors.T)
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    np.testing.assert_allclose(cov(X, diag=True).eval(), np.diag(K), atol=1e-14)
    np.testing.assert_allclose(np.mean(np.diag(K)), 1.0)  # GeometricKernels' normalisation
    assert np.linalg.eigvalsh(K)[0] > -1e-12
    np.testing.assert_allclose(cov(X[:7], X[5:20]).eval(), K[:7, 5:20], atol=1e-14)


def test_mesh_matern_matches_geometric_kernels(bumpy_sphere):
    pytest.importorskip("geometric_kernels")
    from geometric_kernels.kernels import MaternKarhunenLoeveKernel
    from geometric_kernels.spaces import Mesh

    space = Mesh(*bumpy_sphere)
    X = np.arange(space.num_vertices)[:, None]
    for k in (30, space.num_vertices):
        reference = MaternKarhunenLoeveKernel(space, k)
        params = {"nu": np.array([2.5]), "lengthscale": np.array([0.7])}
        ours = MeshMatern(laplace_beltrami(*bumpy_sphere, k), ls=0.7, nu=2.5)(X).eval()
        np.testing.assert_allclose(ours, reference.K(params, X), atol=1e-10)


def test_mesh_matern_gradient_in_ls_matches_finite_differences(bumpy_sphere):
    import pytensor
    import pytensor.tensor as pt

    pairs = laplace_beltrami(*bumpy_sphere, 25)
    ls = pt.dscalar("ls")
    X = np.arange(20)[:, None]
    total = pt.sum(MeshMatern(pairs, ls=ls, nu=1.5)(X) * np.linspace(-1, 1, 400).reshape(20, 20))
    f = pytensor.function([ls], total)
    g = pytensor.function([ls], pytensor.grad(total, ls))
    h = 1e-6
    np.testing.assert_allclose(g(0.8), (f(0.8 + h) - f(0.8 - h)) / (2 * h), rtol=1e-6)


def test_mesh_matern_validates(bumpy_sphere):
    pairs = laplace_beltrami(*bumpy_sphere, 10)
    with pytest.raises(TypeError, match=r"`eigenpairs` must be a pymc_sle\.kernels\.Eigenpairs"):
        MeshMatern((pairs.eigenvalues, pairs.eigenvectors), ls=1.0)
    with pytest.raises(ValueError, match="`ls`"):
        MeshMatern(pairs, ls=0.0)
    with pytest.raises(ValueError, match="`nu` must be > 0"):
        MeshMatern(pairs, ls=1.0, nu=0.0)
    with pytest.raises(ValueError, match="`X`"):
        MeshMatern(pairs, ls=1.0)(np.array([[pairs.eigenvectors.shape[0]]]))
