"""Helpers the tests import: distances no kernel would trust, grids and search problems
built to order, the backends the fast paths run on, and running scripts as a user would."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import io
import json
import os
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytensor
from scipy.sparse.csgraph import shortest_path

from pymc_sle.inference import DEFAULT_POLICY
from pymc_sle.inference._search import (
    SearchProblem,
)


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
    from pymc_sle.inference import DEFAULT_POLICY
    from pymc_sle.inference._bounds import training_data
    from pymc_sle.inference._priors import _compose

    problem = SearchProblem.build(training_data(D, rows, y, sparse=True), inner=inner,
                                  inner_kwargs=None, mass=0.95, search_points=500)  # fmt: skip
    passes = Passes(problem, reshape)
    names = {"radius": "radius", "ls": "ls", "eta": "eta", "sigma": "sigma", **(names or {})}
    policy = DEFAULT_POLICY if policy is None else policy
    if reshape is not None:  # a grid made to order has the coarse pass's axes: never widened
        policy = dataclasses.replace(policy, widenings=0)
    return _compose(passes, policy, start, names, scale_ridges, cap_radius), passes


def synthetic_grid(log_marginal: np.ndarray, radius: np.ndarray):
    """A grid posterior whose radius marginal is ``exp(log_marginal)`` (up to the cells' widths)
    and flat in the other three parameters (two cells each)."""
    from pymc_sle.inference import GridPosterior

    shape = (radius.size, 2, 2, 2)
    log_density = np.broadcast_to(log_marginal[:, None, None, None], shape).copy()
    axis = np.array([1.0, 2.0])
    return GridPosterior(radius, axis, axis, axis, log_density, np.zeros(shape[:2]), 0.5)


#: The repository.
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pymc_sle"


def module_name(path: Path) -> str:
    """The dotted name of the package module at ``path``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run(command: list[str], cwd: Path | None) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@contextlib.contextmanager
def _as_main(argv: list[str], cwd: Path | None):
    """``sys.argv`` and the working directory of a script run in this process, restored after
    it, with what it prints captured (``.getvalue()``)."""
    saved_argv, saved_cwd, out = sys.argv, os.getcwd(), io.StringIO()
    sys.argv = argv
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            yield out
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)


def run_script(script: Path, *args, cwd: Path | None = None, subprocess_run: bool = False):
    """Run a script (an example) as ``python script args``: in this process (the default: the
    imports and compiled kernels it shares with the suite are not paid for again), or with
    ``subprocess_run`` in a new interpreter, as a user would. Returns what it printed as
    ``.stdout``; a failure fails the test."""
    argv = [str(script), *map(str, args)]
    if subprocess_run:
        return _run([sys.executable, *argv], cwd)
    with _as_main(argv, cwd) as out:
        runpy.run_path(str(script), run_name="__main__")
    return subprocess.CompletedProcess(argv, 0, out.getvalue(), "")


def run_module(module: str, *args, subprocess_run: bool = False):
    """Run a benchmark module as ``python -m module args`` from the repository root: its
    ``main(args)`` in this process (the default), or with ``subprocess_run`` in a new
    interpreter, as the README says to. Returns what it printed as ``.stdout``."""
    argv = [*map(str, args)]
    if subprocess_run:
        return _run([sys.executable, "-m", module, *argv], ROOT)
    with _as_main([module, *argv], ROOT) as out:
        importlib.import_module(module).main(argv)
    return subprocess.CompletedProcess([module, *argv], 0, out.getvalue(), "")


def run_quick(script: str, out: Path, *args, subprocess_run: bool = False) -> dict:
    """Run ``python -m benchmarks.<script> --quick --out out``; return its JSON result."""
    run_module(f"benchmarks.{script}", "--quick", "--out", out, *args,
               subprocess_run=subprocess_run)  # fmt: skip
    return json.loads((out / f"{script}_quick.json").read_text())


#: The PyTensor backends the fast paths are tested on.
MODES = ["FAST_RUN", "NUMBA"] + (["JAX"] if importlib.util.find_spec("jax") else [])


def backend_cases(cases: list[tuple], numba: list[tuple]) -> list[tuple]:
    """``(mode, *case)`` for every case on every backend of ``MODES`` but NUMBA, and on NUMBA for
    the cases in ``numba`` only. NUMBA compiles every graph anew (5 to 12 s each on a clean
    clone, whose cache is cold), and its implementation of an Op depends on the Op's
    configuration, not on the values: one case per configuration checks it."""
    missing = [case for case in numba if case not in cases]
    if missing:
        raise ValueError(f"`numba` cases {missing} are not among the cases")
    return [(mode, *case) for case in cases for mode in MODES if mode != "NUMBA" or case in numba]


def raised_by(mode):
    """What a failed check raises: a ValueError, or on JAX the runtime error carrying it (a traced
    program cannot raise; the host callback's ValueError aborts the computation)."""
    if mode == "JAX":
        import jax

        return (ValueError, jax.errors.JaxRuntimeError)
    return ValueError


def sine_on_a_line(n=16, seed=0):
    """``(D, y)``: the distances between ``n`` random points of [0, 1], and sin(6 x) at them."""
    x = np.sort(np.random.default_rng(seed).uniform(0.0, 1.0, n))
    return np.abs(x[:, None] - x[None, :]), np.sin(6 * x)


#: The noise never reaches zero (it would need more than all the mass), or always does.
NOISE_NEVER_AT_ZERO = dataclasses.replace(DEFAULT_POLICY, noise_at_zero=2.0)


NOISE_AT_ZERO = dataclasses.replace(DEFAULT_POLICY, noise_at_zero=0.0)


def search_problem(D, y, inner="matern32"):
    """The search problem of ``sle_priors(D, arange(n), y, inner=inner)``."""
    from pymc_sle.inference._bounds import training_data

    return SearchProblem.build(training_data(D, np.arange(y.size), y), inner=inner,
                               inner_kwargs=None, mass=0.95, search_points=500)  # fmt: skip


def compile_fn(inputs, outputs, mode):
    """A compiled function whose outputs are numpy arrays on every backend (JAX returns its own)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        fn = pytensor.function(inputs, outputs, mode=mode)

    def call(*args):
        out = fn(*args)
        return [np.asarray(o) for o in out] if isinstance(out, list) else np.asarray(out)

    call.maker = fn.maker
    return call


def planar_distances(n, m, seed):
    """Distances from ``n`` random points of the unit square to ``m`` others (the first
    ``min(n, m)`` shared: zeros)."""
    x = np.random.default_rng(seed).uniform(size=(max(n, m), 2))
    return np.linalg.norm(x[:n, None] - x[None, :m], axis=-1)
