"""Shared fixtures and an independent numpy restatement of the paper's equations."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path


def pytest_configure(config):
    """Import ArviZ once in the controller before the xdist workers start. On import, ArviZ
    writes a once-a-day stamp file (a temporary file renamed into place); on a fresh machine two
    workers importing it together race on that rename and one fails to collect."""
    if not hasattr(config, "workerinput"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the refactor notice the stamp gates
            import arviz  # noqa: F401


def reference_bump(d: float, a: float, r: float, beta: float) -> float:
    """Paper Eq. (5), one scalar at a time with the math module."""
    if d >= r:
        return 0.0
    return a * math.exp(-beta / (1.0 - d * d / (r * r)) + beta)


REFERENCE_INNER = {
    "rbf": lambda s: math.exp(-0.5 * s * s),
    "expquad": lambda s: math.exp(-0.5 * s * s),
    "matern12": lambda s: math.exp(-s),
    "matern32": lambda s: (1.0 + math.sqrt(3.0) * s) * math.exp(-math.sqrt(3.0) * s),
    "matern52": lambda s: (
        (1.0 + math.sqrt(5.0) * s + 5.0 * s * s / 3.0) * math.exp(-math.sqrt(5.0) * s)
    ),
}


def reference_sle(
    D, rows, cols, landmarks, *, radius, ls, amplitude=1.0, shape=1.0, inner="matern32"
):
    """Paper Eqs. (5)-(7) with loops: phi by bumps, Euclidean norm, inner kernel of norm / ls."""
    m = len(landmarks)
    a, r, beta = (
        np.broadcast_to(np.asarray(p, dtype=float), (m,)) for p in (amplitude, radius, shape)
    )

    def phi(i):
        return np.array(
            [reference_bump(D[i, z], a[j], r[j], beta[j]) for j, z in enumerate(landmarks)]
        )

    h = REFERENCE_INNER[inner]
    K = np.empty((len(rows), len(cols)))
    for p, i in enumerate(rows):
        for q, j in enumerate(cols):
            K[p, q] = h(math.sqrt(float(np.sum((phi(i) - phi(j)) ** 2))) / ls)
    return K


def perturbed_graph_distances(n: int, seed: int) -> np.ndarray:
    """Shortest-path distances on a random geometric graph, symmetrically perturbed.

    Graph geodesics are not conditionally negative definite in general, and the perturbation
    breaks the triangle inequality as well: a distance no kernel would trust.
    """
    rng = np.random.default_rng(seed)
    points = rng.uniform(size=(n, 2))
    euclid = np.linalg.norm(points[:, None] - points[None], axis=-1)
    weights = np.where(euclid < 0.35, euclid, 0.0)
    D = shortest_path(weights, directed=False)
    noise = rng.uniform(0.9, 1.1, size=(n, n))
    D = D * (noise + noise.T) / 2
    np.fill_diagonal(D, 0.0)
    assert np.isfinite(D).all(), "test graph must be connected"
    return D


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def graph_distances():
    return perturbed_graph_distances(40, seed=1)


@pytest.fixture
def line_distances():
    x = np.linspace(0.0, 1.0, 12)
    return np.abs(x[:, None] - x[None, :])


def run_script(script: Path, *args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a project script (benchmark, study, example) with this interpreter, as a user would;
    fail the test with the end of its stderr when it exits non-zero."""
    result = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="session")
def icosphere_obj(tmp_path_factory):
    """Factory: the path of an icosphere ``.obj`` at a subdivision level, written once a session
    (3 gives 642 vertices), so script tests need no third-party mesh."""
    trimesh = pytest.importorskip("trimesh")
    folder = tmp_path_factory.mktemp("meshes")

    def make(subdivisions: int) -> str:
        path = folder / f"icosphere{subdivisions}.obj"
        if not path.exists():
            trimesh.creation.icosphere(subdivisions).export(path)
        return str(path)

    return make


@pytest.fixture(scope="session")
def distance_cache(tmp_path_factory) -> Path:
    """One ``--cache`` for every quick benchmark and study run, so the quick SAXS W2 matrix (the
    slowest shared input) is computed once a session."""
    return tmp_path_factory.mktemp("distance-cache")
