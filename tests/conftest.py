"""Shared fixtures and helpers of the test suite."""

from __future__ import annotations

import dataclasses
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


def two_basins(grid, masses=(0.4, 0.6)):
    """``grid`` with its log density replaced by two narrow bumps in ``log radius`` behind a deep
    dip, ``masses`` (by default 40 % and 60 %) at a quarter and at three quarters of the radius
    axis, flat in the other variables: what ``sle_priors`` does across dips, without data that
    has them."""
    t = np.log(grid.radius)
    lo, hi = t[len(t) // 4], t[3 * len(t) // 4]
    bumps = np.logaddexp(-0.5 * ((t - lo) / 0.1) ** 2 + np.log(masses[0]),
                         -0.5 * ((t - hi) / 0.1) ** 2 + np.log(masses[1]))  # fmt: skip
    density = np.broadcast_to(bumps[:, None, None, None], grid.log_density.shape).copy()
    return dataclasses.replace(grid, log_density=density)


@dataclasses.dataclass
class Passes:
    """A search problem whose grid passes are recorded -- their axes, grids and how many
    ``(radius, ls)`` cells each decomposed, in order -- and optionally reshaped (e.g. by
    :func:`two_basins`): what ``search`` and ``plan`` see."""

    problem: object
    reshape: object = None
    calls: list = dataclasses.field(default_factory=list)
    grids: list = dataclasses.field(default_factory=list)
    decomposed: list = dataclasses.field(default_factory=list)

    def __getattr__(self, name):  # cutoff, kernel, bounds, ...: the problem's
        return getattr(self.problem, name)

    def grid(self, **axes):
        before = len(self.problem.spectra)
        grid = self.problem.grid(**axes)
        self.decomposed.append(len(self.problem.spectra) - before)
        self.calls.append(axes)
        self.grids.append(grid if self.reshape is None else self.reshape(grid))
        return self.grids[-1]


def searched_priors(D, rows, y, *, reshape=None, policy=None, names=None, start="mode",
                    inner="matern32", scale_ridges=True, cap_radius=True):  # fmt: skip
    """``sle_priors(D, rows, y, ...)`` in the current model, through its steps, with the grid
    passes recorded and optionally reshaped (:class:`Passes`): ``(priors, passes)``."""
    from pymc_sle.inference._search import DEFAULT_POLICY, SearchProblem
    from pymc_sle.inference.priors import _compose

    problem = SearchProblem.build(D, rows, y, landmarks=None, inner=inner, inner_kwargs=None,
                                  mass=0.95, search_points=500)  # fmt: skip
    passes = Passes(problem, reshape)
    names = {"radius": "radius", "ls": "ls", "eta": "eta", "sigma": "sigma", **(names or {})}
    policy = DEFAULT_POLICY if policy is None else policy
    return _compose(passes, policy, start, names, scale_ridges, cap_radius), passes


def synthetic_grid(log_marginal: np.ndarray, radius: np.ndarray):
    """A grid posterior whose radius marginal is ``exp(log_marginal)`` (up to the cells' widths)
    and flat in the other three parameters (two cells each)."""
    from pymc_sle.inference.grid import GridPosterior

    shape = (radius.size, 2, 2, 2)
    log_density = np.broadcast_to(log_marginal[:, None, None, None], shape).copy()
    axis = np.array([1.0, 2.0])
    return GridPosterior(radius, axis, axis, axis, log_density, np.zeros(shape[:2]), 0.5)


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


ROOT = Path(__file__).resolve().parents[1]


def _run(command: list[str], cwd: Path | None) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_script(script: Path, *args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a script (an example) with this interpreter, as a user would; fail the test with the
    end of its stderr when it exits non-zero."""
    return _run([sys.executable, str(script), *map(str, args)], cwd)


def run_module(module: str, *args) -> subprocess.CompletedProcess:
    """Run a benchmark module (``python -m benchmarks....``) from the repository root, as the
    README says to; fail the test with the end of its stderr when it exits non-zero."""
    return _run([sys.executable, "-m", module, *map(str, args)], ROOT)


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
