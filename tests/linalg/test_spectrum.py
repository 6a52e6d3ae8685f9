"""Eigenvalues and one vector's eigen-coordinates without the eigenvectors: every spectral
function y^T f(C) y equals its direct evaluation, and the eigenvalues equal eigh's."""

import numpy as np
import pytest

from pymc_sle._linalg import _spectrum
from pymc_sle._linalg._spectrum import eigenvalues_and_coordinates


def _points(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3))


def _squared(x):
    return ((x[:, None] - x[None]) ** 2).sum(-1)


def _matrices():
    x = _points(60)
    d2 = _squared(x)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(60, 60))
    low_rank = rng.normal(size=(60, 3))
    return {
        "rbf": np.exp(-d2 / 2),
        "rbf, long length scale (spectrum below eps)": np.exp(-d2 / 50),
        "matern12": np.exp(-np.sqrt(d2)),
        "indefinite": a + a.T,
        "rank 3": low_rank @ low_rank.T,
        "all ones": np.ones((60, 60)),
        "identity": np.eye(60),
        "diagonal, repeated": np.diag(np.repeat([3.0, 1.0, 2.0], 20)),
        "already tridiagonal": np.diag(np.full(60, 2.0)) - np.eye(60, k=1) - np.eye(60, k=-1),
        "2 x 2": np.array([[2.0, 1.0], [1.0, 3.0]]),
    }


MATRICES = _matrices()


@pytest.mark.parametrize("name", MATRICES)
def test_eigenvalues_equal_eigh(name):
    C = MATRICES[name]
    y = np.random.default_rng(2).normal(size=C.shape[0])
    eigenvalues, _ = eigenvalues_and_coordinates(C, y)
    scale = np.abs(np.linalg.eigvalsh(C)).max()
    np.testing.assert_allclose(
        np.sort(eigenvalues), np.linalg.eigvalsh(C), rtol=0, atol=1e-12 * C.shape[0] * scale
    )


@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("shift", [0.01, 1.0, 100.0])
def test_spectral_functions_equal_their_direct_evaluation(name, shift):
    """The grid's two sums, y^T (C + s I)^{-1} y and log det(C + s I), for a shift s that makes
    C + s I positive definite (C is shifted by its smallest eigenvalue first)."""
    C = MATRICES[name]
    n = C.shape[0]
    C = C - min(np.linalg.eigvalsh(C).min(), 0.0) * np.eye(n)
    y = np.random.default_rng(3).normal(size=n)
    eigenvalues, z = eigenvalues_and_coordinates(C, y)
    shifted = C + shift * np.eye(n)
    assert np.sum(z**2) == pytest.approx(y @ y, rel=1e-12)
    assert np.sum(z**2 / (eigenvalues + shift)) == pytest.approx(
        y @ np.linalg.solve(shifted, y), rel=1e-9
    )
    assert np.sum(np.log(eigenvalues + shift)) == pytest.approx(
        np.linalg.slogdet(shifted)[1], rel=1e-10, abs=1e-9
    )


def test_coordinates_equal_eighs_for_distinct_eigenvalues():
    """Where eigenvalues are well separated, each coordinate is unique up to sign."""
    C = np.diag(np.arange(1.0, 9.0)) + 0.1 * np.ones((8, 8))
    y = np.linspace(-1.0, 2.0, 8)
    eigenvalues, z = eigenvalues_and_coordinates(C, y)
    reference, vectors = np.linalg.eigh(C)
    order = np.argsort(eigenvalues)
    np.testing.assert_allclose(eigenvalues[order], reference, atol=1e-13)
    np.testing.assert_allclose(np.abs(z[order]), np.abs(vectors.T @ y), atol=1e-13)


def test_only_the_lower_triangle_is_read():
    C = MATRICES["matern12"]
    y = np.ones(C.shape[0])
    garbage_above = np.tril(C) + np.triu(np.full_like(C, 7.0), 1)
    np.testing.assert_array_equal(
        eigenvalues_and_coordinates(garbage_above, y)[0], eigenvalues_and_coordinates(C, y)[0]
    )


def test_one_by_one():
    eigenvalues, z = eigenvalues_and_coordinates(np.array([[4.0]]), np.array([-2.0]))
    assert eigenvalues.tolist() == [4.0] and z.tolist() == [-2.0]


def test_falls_back_to_eigh_when_the_iteration_does_not_converge(monkeypatch):
    C = MATRICES["rbf"]
    y = np.random.default_rng(4).normal(size=C.shape[0])
    monkeypatch.setattr(_spectrum, "_MAX_SWEEPS", 0)
    eigenvalues, z = eigenvalues_and_coordinates(C, y)
    reference, vectors = np.linalg.eigh(C)
    np.testing.assert_array_equal(eigenvalues, reference)
    np.testing.assert_array_equal(z, vectors.T @ y)


def test_mismatched_shapes_are_named():
    with pytest.raises(ValueError, match=r"`matrix` must have shape \(3, 3\).*\(3, 4\)"):
        eigenvalues_and_coordinates(np.zeros((3, 4)), np.zeros(3))


@pytest.mark.parametrize("where", ["matrix", "vector"])
def test_non_finite_input_is_named(where):
    C, y = np.eye(3), np.ones(3)
    if where == "matrix":
        C[1, 2] = np.nan
    else:
        y[0] = np.inf
    with pytest.raises(ValueError, match="must be finite"):
        eigenvalues_and_coordinates(C, y)
