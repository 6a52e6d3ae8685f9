"""The NUTS benchmark's data and model, shared by the studies that sample its splits again.

Six benchmarks (the paper reproduction's data and splits, ``Problem.trials(seed=0)``), each with
the inner kernel of its SLE model and the best baseline of the paper reproduction:

============  ==========================  ======  ==========  ===============================
name          data                        n       inner       baseline
============  ==========================  ======  ==========  ===============================
one_d         1-D function                50      Matern-3/2  Matern
teddy_200     Teddy mesh, geodesic        200     Matern-5/2  Geometric Matern
teddy_400     Teddy mesh, geodesic        400     Matern-5/2  Geometric Matern
saxs          SAXS images, exact W2       250     Matern-3/2  Matern on sliced W2
bunny         bunny geodesic sine         400     Matern-3/2  Raw-distance embedding
strings       evolving sequences, edit    200     Matern-3/2  Raw-distance embedding
============  ==========================  ======  ==========  ===============================

:func:`sle_model` is the README recipe on one split.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymc as pm

import pymc_sle as sle
from benchmarks._paths import RESULTS, SHARED_DATA
from benchmarks.paper.problem import Context, Problem
from benchmarks.paper.runner import selected

HERE = Path(__file__).resolve().parent
#: Training splits per benchmark.
N_SPLITS = 3


@dataclass
class Benchmark:
    """One benchmark: its problem, training size, distance, SLE inner kernel and baseline."""

    name: str
    label: str
    problem: Problem
    kind: str
    size: int
    inner: str
    baseline: object  # a benchmarks.paper.models.ModelSpec

    def contexts(self, n_splits: int) -> list[Context]:
        kinds = {self.kind, *self.baseline.distance_kinds}
        return [
            self.problem.context(trial, kinds, set(self.baseline.square_kinds))
            for trial in self.problem.trials([self.size], n_splits, seed=0)
        ]


def _one_d(quick: bool, args) -> Benchmark:
    from benchmarks.paper import one_d

    baseline = selected(one_d.specs(), ["Matern"])[0]
    size = 20 if quick else 50
    return Benchmark("one_d", "1-D", one_d.problem(), "euclidean", size, "matern32", baseline)


def teddy_benchmark(size: int, problem, quick: bool) -> Benchmark:
    """The Teddy benchmark with ``size`` training vertices on a built ``teddy.problem`` (30 with
    ``quick``): the sizes share one problem, its geodesics and eigenpairs."""
    from benchmarks.paper import teddy

    baseline = selected(teddy.specs(), ["Geometric Matern"])[0]
    n = 30 if quick else size
    return Benchmark(
        f"teddy_{size}", f"Teddy, n = {size}", problem, "geodesic", n, "matern52", baseline
    )


def _teddy(size: int) -> Callable:
    def make(quick: bool, args) -> Benchmark:
        from benchmarks.paper import teddy

        problem, _ = teddy.problem(args.mesh, n_test=60 if quick else teddy.N_TEST)
        return teddy_benchmark(size, problem, quick)

    return make


def _saxs(quick: bool, args) -> Benchmark:
    from benchmarks.paper import saxs

    baseline = selected(saxs.specs(), ["Matern - sliced W2"])[0]
    problem = saxs.problem(quick, args.cache)
    return Benchmark(
        "saxs", "SAXS (exact W2)", problem, "W2", 30 if quick else 250, "matern32", baseline
    )


def _bunny(quick: bool, args) -> Benchmark:
    from benchmarks.paper import bunny

    mesh = args.mesh if quick else args.bunny_mesh
    n_test, pairs = (60, 20) if quick else (bunny.N_TEST, 20)  # the baseline needs no pairs
    problem, _ = bunny.problem(mesh, n_test, pairs, args.cache)
    baseline = selected(bunny.specs([]), ["Raw-distance embedding"])[0]
    return Benchmark("bunny", "Bunny", problem, "geodesic", 30 if quick else 400, "matern32",
                     baseline)  # fmt: skip


def strings_problem(quick: bool, cache: Path) -> Problem:
    """Evolving sequences (``pymc_sle.datasets.evolving_sequences``): 400 items, 100 of them
    the test set; edit distances between all items, cached under ``cache``."""
    from pymc_sle.datasets import evolving_sequences
    from pymc_sle.distances import edit_distance, pairwise

    n, n_test = (80, 20) if quick else (400, 100)
    data = evolving_sequences(n=n, seed=3)
    path = cache / f"strings-{'quick' if quick else 'full'}-edit.npz"
    if path.exists():
        D = sle.DistanceMatrix.load(path).values
    else:
        D = pairwise(data.sequences, edit_distance, n_jobs=2, progress=not quick).values
        cache.mkdir(parents=True, exist_ok=True)
        sle.DistanceMatrix(D).save(path)
    order = np.random.default_rng(17).permutation(n)
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])
    return Problem("strings", data.y, test, pool, lambda p, c, kind: D[np.ix_(p, c)])


def _strings(quick: bool, args) -> Benchmark:
    from benchmarks.paper.models import raw_embedding_spec, scaled_to_data

    baseline = raw_embedding_spec(
        "Raw-distance embedding", "edit", "matern32", scaled_to_data((0.01, 10.0), (1e-6, 1.0))
    )
    problem = strings_problem(quick, args.cache)
    return Benchmark("strings", "Strings (edit distance)", problem, "edit",
                     30 if quick else 200, "matern32", baseline)  # fmt: skip


BENCHMARKS: dict[str, Callable] = {
    "one_d": _one_d,
    "strings": _strings,
    "teddy_200": _teddy(200),
    "saxs": _saxs,
    "teddy_400": _teddy(400),
    "bunny": _bunny,
}


#: The start of ``sle_priors``' warning about the radius cap (the radius posterior reaching
#: past it: several basins are jumped between, without a warning).
_PRIOR_WARNINGS = ("The radius is capped",)


def sle_model(bench: Benchmark, ctx: Context, offset: float, **prior_options):
    """The README recipe on one split (``prior_options`` for ``sle_priors``, e.g. ``start``):
    returns (model, gp, priors, the warning of the radius cap, or "")."""
    D = ctx.landmark[bench.kind]
    rows = np.arange(ctx.n_train)
    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        priors = sle.sle_priors(D, rows, ctx.y_train - offset, inner=bench.inner,
                                **prior_options)  # fmt: skip
        cov = priors["eta"] ** 2 * sle.SLE(
            D, radius=priors["radius"], ls=priors["ls"], inner=bench.inner
        )
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=ctx.X_train, y=ctx.y_train - offset, sigma=priors["sigma"])
    said = [str(w.message) for w in caught]
    return model, gp, priors, " ".join(m for m in said if m.startswith(_PRIOR_WARNINGS))


def add_data_arguments(p: argparse.ArgumentParser, benchmarks: list[str]) -> None:
    """The options of a script over these benchmarks' data: result directory, distance cache,
    meshes, and which benchmarks (default ``benchmarks``)."""
    p.add_argument("--out", type=Path, default=RESULTS, help="result directory")
    p.add_argument("--cache", type=Path, default=HERE / "paper" / "cache", help="distance cache")
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--bunny-mesh", type=Path, default=SHARED_DATA / "stanford-bunny.obj")
    p.add_argument("--benchmarks", nargs="+", choices=list(BENCHMARKS), default=benchmarks)
