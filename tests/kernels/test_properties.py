"""Property-based tests (Hypothesis): PSD to rounding and finite gradients on adversarial
distances, for every inner kernel, scalar and per-landmark parameters, and every way of
computing the embedding distances (dense products; the run-time support with sparse or dense
kernels).

The graphs are SLE's own pieces -- ``bump`` -> squared embedding distances -> inner kernel --
compiled once per configuration with the distances and parameters as inputs, so each example
costs one evaluation, not a compilation (``test_cov``/``test_floating_point`` check that
``SLE`` assembles exactly these). A bounded number of examples runs by default; ``-m slow``
runs many more. Every run is derandomised (seeded), so a failure reproduces.
"""

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymc_sle import bump
from pymc_sle.kernels._bump_ops import bump_squared_distances
from pymc_sle.kernels._embedding_ops import dense_squared_distances
from pymc_sle.kernels._inner import kernel_of_squared_distance, resolve_inner

INNERS = ["matern12", "matern32", "matern52", "rbf"]
#: ``"dense"``: the dense products of the full bump; the others: the Op that finds the support at
#: run time, forced onto its sparse (``max_fill`` 1) or dense (``max_fill`` 0) branch.
PATHS = {"dense": None, "support-sparse": 1.0, "support-dense": 0.0}
DEFAULT = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
EXHAUSTIVE = settings(DEFAULT, max_examples=1000)


@functools.cache
def compiled(inner: str, path: str, per_landmark: bool):
    """``(D, radius, amplitude, shape, ls, weights) -> (K, dK-sum/d params)``."""
    D = pt.dmatrix("D")
    parameter = pt.dvector if per_landmark else pt.dscalar
    radius, amplitude, shape = parameter("radius"), parameter("amplitude"), parameter("shape")
    ls, weights = pt.dscalar("ls"), pt.dmatrix("weights")
    squared = (
        dense_squared_distances(bump(D, radius, amplitude, shape))
        if path == "dense"
        else bump_squared_distances(D, radius, amplitude, shape, PATHS[path])
    )
    K = kernel_of_squared_distance(resolve_inner(inner), squared, ls)
    grads = pt.grad((K * weights).sum(), [radius, amplitude, shape, ls])
    return pytensor.function([D, radius, amplitude, shape, ls, weights], [K, *grads])


def _symmetrised(block):
    return (block + block.T) / 2


def _copied(rng, n: int, n_distinct: int) -> np.ndarray:
    """Distances between ``n`` points that are copies of ``n_distinct`` random ones: equal rows
    and many exact zeros."""
    base = _symmetrised(rng.uniform(0.0, 2.0, (n_distinct, n_distinct)))
    np.fill_diagonal(base, 0.0)
    copies = rng.integers(0, n_distinct, n)
    return base[copies][:, copies]


@st.composite
def distance_blocks(draw):
    """Square ``(n, n)`` blocks (points = landmarks) of one adversarial family."""
    n = draw(st.integers(2, 10))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    family = draw(
        st.sampled_from(
            [
                "non-CND",
                "asymmetric",
                "ties",
                "zeros",
                "near-duplicates",
                "near-duplicate clusters",
                "dynamic range",
            ]
        )
    )
    if family == "non-CND":  # uniform random "distances": neither metric nor CND
        D = _symmetrised(rng.uniform(0.0, 2.0, (n, n)))
    elif family == "asymmetric":
        D = rng.uniform(0.0, 2.0, (n, n))
    elif family == "ties":
        D = _symmetrised(rng.choice([0.5, 1.0], size=(n, n)))
    elif family == "zeros":  # duplicated points: whole rows equal, many exact zeros
        D = _copied(rng, n, max(n // 2, 1))
    elif family == "near-duplicates":  # one tight cluster
        D = 0.3 + 1e-9 * _symmetrised(rng.uniform(size=(n, n)))
    elif family == "near-duplicate clusters":  # tight clusters far apart, far from the mean
        D = _copied(rng, n, max(n // 3, 1)) + 1e-9 * _symmetrised(rng.uniform(size=(n, n)))
    else:
        D = _symmetrised(10.0 ** rng.uniform(-8.0, 8.0, (n, n)))
    np.fill_diagonal(D, 0.0)
    return D, rng


def _parameters(D, rng, per_landmark: bool):
    """Radius on the scale of the distances (from one-hot to all-covering), amplitude and shape
    over decades, ls from 1e-4 to 1e4 of the typical embedding scale."""
    positive = D[D > 0]
    scale = np.median(positive) if positive.size else 1.0
    size = D.shape[1] if per_landmark else None

    def draw(low, high):
        value = 10.0 ** rng.uniform(np.log10(low), np.log10(high), size)
        return np.atleast_1d(value) if per_landmark else np.float64(value)

    return (
        draw(0.1 * scale, 10.0 * scale),
        draw(1e-3, 1e3),
        draw(0.1, 10.0),
        np.float64(10.0 ** rng.uniform(-4.0, 4.0)),
    )


def check_psd_and_finite_gradients(inner, path, per_landmark, case):
    D, rng = case
    radius, amplitude, shape, ls = _parameters(D, rng, per_landmark)
    weights = rng.normal(size=D.shape)
    K, *grads = compiled(inner, path, per_landmark)(D, radius, amplitude, shape, ls, weights)
    assert np.isfinite(K).all()
    # Rows are points, columns landmarks: even an asymmetric block gives the kernel of the rows'
    # embeddings, symmetric and PSD.
    np.testing.assert_array_equal(K, K.T)
    eigenvalues = np.linalg.eigvalsh(K)
    assert eigenvalues.min() >= -1e-12 * np.trace(K), (eigenvalues.min(), np.trace(K))
    for name, grad in zip(("radius", "amplitude", "shape", "ls"), grads, strict=True):
        assert np.isfinite(grad).all(), name


CONFIGURATIONS = [
    (inner, path, per_landmark)
    for inner in INNERS
    for path in PATHS
    for per_landmark in (False, True)
]


@pytest.mark.parametrize(("inner", "path", "per_landmark"), CONFIGURATIONS)
@DEFAULT
@given(case=distance_blocks())
def test_psd_and_finite_gradients(inner, path, per_landmark, case):
    check_psd_and_finite_gradients(inner, path, per_landmark, case)


@pytest.mark.slow
@pytest.mark.parametrize(("inner", "path", "per_landmark"), CONFIGURATIONS)
@EXHAUSTIVE
@given(case=distance_blocks())
def test_psd_and_finite_gradients_exhaustive(inner, path, per_landmark, case):
    check_psd_and_finite_gradients(inner, path, per_landmark, case)
