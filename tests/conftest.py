"""The suite's fixtures, shared by every test folder, and the set-up of its workers."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest


def pytest_configure(config):
    """Import ArviZ once in the controller before the xdist workers start. On import, ArviZ
    writes a once-a-day stamp file (a temporary file renamed into place); on a fresh machine two
    workers importing it together race on that rename and one fails to collect.

    Give each xdist worker, and the processes its tests start, one BLAS thread: the workers
    already fill the cores, and OpenBLAS threads from two workers on two cores spin waiting for
    each other."""
    if hasattr(config, "workerinput"):
        from threadpoolctl import threadpool_limits

        for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
        threadpool_limits(limits=1, user_api="blas")  # numpy is loaded: set it in place too
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the refactor notice the stamp gates
            import arviz  # noqa: F401


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def graph_distances():
    from tests.support import perturbed_graph_distances

    return perturbed_graph_distances(40, seed=1)


@pytest.fixture
def line_distances():
    x = np.linspace(0.0, 1.0, 12)
    return np.abs(x[:, None] - x[None, :])


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


@pytest.fixture(scope="module")
def planar():
    """Euclidean distances between 40 random points of the unit square."""
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(40, 2))
    return np.linalg.norm(x[:, None] - x[None], axis=-1)
