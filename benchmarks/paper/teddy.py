"""Teddy mesh (the paper's Table 2): SLE vs the Geometric Matern kernel on a Matern-5/2 GP draw.

Data: ``teddy.obj`` (1,598 vertices; ``--mesh``, default ``../shared/data/teddy.obj``). Truth:
one draw of a Matern-5/2 GP on the mesh (`pymc_sle.datasets.matern_field`: every
Laplace--Beltrami eigenpair, GeometricKernels' normalisation, length scale 6 mesh units, prior
sd 50, seed 7), observed with noise sd 1. A fixed test set of 400 vertices; training draws
from the other 1,198. Distances: edge-graph geodesics (the paper's choice).

Models (all Matern-5/2; hyperparameters flat on the log scale between bounds):
- ``SLE``: the paper's Appendix D.2 bounds -- signal variance [1e2, 1e6], radius [smallest,
  largest] training geodesic, amplitude [0.1, 50], ls [1e-3, 40], noise variance [1e-6, 10].
- ``Geometric Matern``: GeometricKernels' Matern on 1,000 eigenpairs (its default), signal
  variance, ls [1e-2, 100] mesh units and noise learned within the same bounds.
- ``Geometric Matern (unit amplitude)``: the same with signal variance fixed at 1 -- the
  published kernel's normalisation, which the paper's numbers suggest it ran.
- ``Raw-distance embedding``: the paper's ablation, raw geodesics as features.
- ``SLE (nearest-neighbour radius bound)``: the paper's bounds except the radius's lower
  bound, the median nearest-neighbour distance (`pymc_sle.radius_bounds`'s
  ``lower="nearest"``, the library default) instead of the smallest distance.
- ``Matern on geodesic``: Matern of the geodesic itself, with a PSD check at the fit.

Run:  `python -m benchmarks.paper.teddy [--quick] [--draws 30] [--nuts-draws 5] [--jobs 2]`
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks._paths import SHARED_DATA
from benchmarks.paper.fitting import PAPER_NUTS, QUICK_NUTS
from benchmarks.paper.models import (
    Hyper,
    distance_matern_spec,
    fixed,
    mesh_matern_spec,
    raw_embedding_spec,
    sle_spec,
)
from benchmarks.paper.problem import Problem
from benchmarks.paper.render import render
from benchmarks.paper.runner import parser, run, selected
from benchmarks.paper.summary import summarise
from pymc_sle.datasets import matern_field
from pymc_sle.distances import geodesic
from pymc_sle.kernels import laplace_beltrami

TABLE_SIZES = (200, 300, 400)
CURVE_SIZES = (50, 100, 600, 800)
N_TEST = 400
#: The generating field: a Matern GP draw on the mesh (`pymc_sle.datasets.matern_field`).
FIELD = {"ls": 6.0, "nu": 2.5, "sd": 50.0, "noise_sd": 1.0}
N_EIGENPAIRS = 1000
NUTS_MODELS = ("SLE", "Geometric Matern")


def problem(mesh_path, n_test: int = N_TEST, seed: int = 7) -> tuple[Problem, object]:
    field = matern_field(mesh_path, **FIELD, seed=seed)
    mesh = field.mesh
    D = geodesic(mesh.vertices, mesh.faces).values
    rng = np.random.default_rng(seed)
    order = rng.permutation(mesh.n_vertices)
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])
    pairs = laplace_beltrami(mesh.vertices, mesh.faces, min(N_EIGENPAIRS, mesh.n_vertices))

    def distances(points, cols, kind):
        return D[np.ix_(points, cols)]

    extras = {"eigenpairs": pairs, "f": field.f}
    return Problem("teddy", field.y, test, pool, distances, extras), field


def specs() -> list:
    bounds = Hyper(signal_var=(1e2, 1e6), noise_var=(1e-6, 10.0))
    unit = Hyper(signal_var=None, noise_var=(1e-6, 10.0))
    return [
        sle_spec(
            "SLE", "geodesic", "matern52", fixed(bounds), ls=(1e-3, 40.0), amplitude=(0.1, 50.0)
        ),
        mesh_matern_spec("Geometric Matern", N_EIGENPAIRS, 2.5, fixed(bounds), ls=(1e-2, 100.0)),
        mesh_matern_spec(
            "Geometric Matern (unit amplitude)", N_EIGENPAIRS, 2.5, fixed(unit), ls=(1e-2, 100.0)
        ),
        raw_embedding_spec("Raw-distance embedding", "geodesic", "matern52", fixed(bounds)),
        sle_spec(
            "SLE (nearest-neighbour radius bound)",
            "geodesic",
            "matern52",
            fixed(bounds),
            ls=(1e-3, 40.0),
            amplitude=(0.1, 50.0),
            radius_lower="nearest",
        ),
        distance_matern_spec(
            "Matern on geodesic", "geodesic", "matern52", fixed(bounds), ls=(1e-2, 100.0)
        ),
    ]


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj")
    p.add_argument("--curve-draws", type=int, default=10, help="draws at the curve-only sizes")
    args = p.parse_args(argv)
    models = [s.name for s in specs()]
    title = "Teddy mesh: SLE vs Geometric Matern (paper Table 2)"
    if args.quick:
        prob, field = problem(args.mesh, n_test=60)
        sizes, curve, draws, nuts_draws = (40,), (), 1, 1
        nuts = QUICK_NUTS
    else:
        prob, field = problem(args.mesh)
        sizes, curve, draws, nuts_draws = TABLE_SIZES, CURVE_SIZES, args.draws, args.nuts_draws
        nuts = PAPER_NUTS
    run_specs = selected(specs(), args.models)
    if not args.summary_only:
        run(
            prob, run_specs, sizes=sizes, n_draws=draws, out_dir=args.out, jobs=args.jobs,
            nuts_draws=nuts_draws, nuts_models=NUTS_MODELS, nuts=nuts,
        )  # fmt: skip
        if curve:
            run(
                prob,
                run_specs,
                sizes=curve,
                n_draws=args.curve_draws,
                out_dir=args.out,
                jobs=args.jobs,
            )
    csv_path = args.out / f"{prob.name}_trials.csv"
    summarise(csv_path, title=title, table_sizes=sizes, models=models, note=__doc__)
    if args.render:
        trial = prob.trials([sizes[-1]], 1, 0)[0]
        for spec in specs()[:2]:
            slug = spec.name.lower().replace(" ", "_")
            render(prob, spec, trial, field.mesh, args.out / f"teddy_{slug}.png", "Teddy mesh")


if __name__ == "__main__":
    main()
