"""Laplace--Beltrami eigenpairs and the manifold Matérn spectrum."""

import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_sle.kernels import Eigenpairs, laplace_beltrami, matern_spectrum

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("robust_laplacian")


@pytest.fixture(scope="module")
def sphere():
    mesh = trimesh.creation.icosphere(subdivisions=4)
    return np.asarray(mesh.vertices), np.asarray(mesh.faces)


def test_unit_sphere_spectrum_is_l_times_l_plus_one(sphere):
    pairs = laplace_beltrami(*sphere, 16)
    expected = np.repeat([0.0, 2.0, 6.0, 12.0], [1, 3, 5, 7])
    np.testing.assert_allclose(pairs.eigenvalues[0], 0.0, atol=1e-8)
    np.testing.assert_allclose(pairs.eigenvalues[1:], expected[1:], rtol=0.01)


def test_eigenvectors_are_orthogonal_with_unit_mean_square(sphere):
    pairs = laplace_beltrami(*sphere, 10)
    n = sphere[0].shape[0]
    np.testing.assert_allclose(
        pairs.eigenvectors.T @ pairs.eigenvectors / n, np.eye(10), atol=1e-10
    )
    assert np.all(np.diff(pairs.eigenvalues) >= 0) and pairs.eigenvalues.min() >= 0


def test_dense_path_for_every_pair():
    mesh = trimesh.creation.icosphere(subdivisions=1)
    pairs = laplace_beltrami(mesh.vertices, mesh.faces, len(mesh.vertices))
    assert pairs.n_eigenpairs == 42
    np.testing.assert_allclose(
        pairs.eigenvectors.T @ pairs.eigenvectors, 42 * np.eye(42), atol=1e-9
    )
    truncated = pairs.truncate(5)
    np.testing.assert_array_equal(truncated.eigenvalues, pairs.eigenvalues[:5])
    assert truncated.eigenvectors.shape == (42, 5)


def test_laplace_beltrami_validates(sphere):
    with pytest.raises(ValueError, match=r"`n_eigenpairs` must be an integer in \[1, 2562\]"):
        laplace_beltrami(*sphere, 0)
    with pytest.raises(ValueError, match="`n_eigenpairs`"):
        laplace_beltrami(*sphere, 2563)
    pairs = Eigenpairs(np.arange(3.0), np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"`k` must be an integer in \[1, 3\]"):
        pairs.truncate(4)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_spectrum_formula_and_normalisation(nu):
    lam = np.array([0.0, 2.0, 6.0, 12.0])
    raw = matern_spectrum(lam, ls=0.5, nu=nu, normalize=False)
    np.testing.assert_allclose(raw, (2 * nu / 0.25 + lam) ** (-nu - 1.0))
    weights = matern_spectrum(lam, ls=0.5, nu=nu)
    np.testing.assert_allclose(weights, raw / raw.sum())
    np.testing.assert_allclose(matern_spectrum(lam, ls=0.5, nu=nu, dimension=3, normalize=False),
                               (2 * nu / 0.25 + lam) ** (-nu - 1.5))  # fmt: skip


def test_matern_spectrum_heat_limit_and_tensors():
    lam = np.array([0.0, 2.0, 6.0])
    np.testing.assert_allclose(
        matern_spectrum(lam, ls=0.5, nu=np.inf, normalize=False), np.exp(-0.125 * lam)
    )
    ls = pt.dscalar("ls")
    for nu in (1.5, np.inf):
        symbolic = matern_spectrum(pt.constant(lam), ls=ls, nu=nu).eval({ls: 0.5})
        np.testing.assert_allclose(symbolic, matern_spectrum(lam, ls=0.5, nu=nu))
    # nu -> inf approaches the heat kernel
    np.testing.assert_allclose(
        matern_spectrum(lam, ls=0.5, nu=1e6), matern_spectrum(lam, ls=0.5, nu=np.inf), rtol=1e-4
    )


def test_matern_spectrum_validates():
    with pytest.raises(ValueError, match="`nu` must be > 0 or inf"):
        matern_spectrum(np.ones(2), ls=1.0, nu=-1.0)
    with pytest.raises(ValueError, match="`ls`"):
        matern_spectrum(np.ones(2), ls=0.0, nu=1.5)
