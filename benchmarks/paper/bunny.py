"""Stanford bunny (stand-in for the paper's Dragon, Table 1): SLE vs the Riemannian Matern kernel.

The paper's 100,179-vertex Dragon cannot be obtained here; ``stanford-bunny.obj`` (34,834
connected vertices; ``--mesh``, default ``../shared/data/stanford-bunny.obj``) stands in. Truth:
the sine of the edge-graph geodesic distance from the ear tip (the highest vertex), three periods
between it and the farthest vertex (`pymc_sle.datasets.geodesic_sine_field`); noiseless, a 1e-5
nugget and zero mean, as in the paper. A fixed test set of 5,000 vertices; training draws from
the other 29,834. Geodesics are computed per trial from the training vertices (one Dijkstra
each), never the 34,834^2 matrix.

Models (all Matern-3/2, the paper's Appendix D.1 bounds where it gives them; flat on the log
scale): signal variance [0.01, 10] x Var(y_train); nugget 1e-5 fixed.
- ``SLE``: radius [smallest, largest] training geodesic, amplitude 1, ls [0.01, 100].
- ``Riemannian Matern (k)``: Matern-3/2 from k = 100, 500, 1000 Laplace--Beltrami eigenpairs
  (robust Laplacian), ls [1e-4, 10] mesh units (the bunny is ~0.15 units across), signal
  variance learned; and ``(k, unit amplitude)`` with the signal variance fixed at 1.
- ``Raw-distance embedding``: the paper's ablation.

Run:  `python -m benchmarks.paper.bunny [--quick] [--draws 30] [--jobs 2]`
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks._paths import SHARED_DATA
from benchmarks.paper.models import (
    Hyper,
    fixed,
    mesh_matern_spec,
    raw_embedding_spec,
    scaled_to_data,
    sle_spec,
)
from benchmarks.paper.problem import Problem
from benchmarks.paper.render import render
from benchmarks.paper.runner import parser, run, selected
from benchmarks.paper.summary import summarise
from pymc_sle.datasets import geodesic_sine_field
from pymc_sle.distances import geodesic
from pymc_sle.kernels import Eigenpairs, laplace_beltrami

TABLE_SIZES = (400, 600, 800)
N_TEST = 5000
EIGENPAIRS = (100, 500, 1000)
NUGGET = 1e-5


def eigenpairs(mesh, k: int, cache: Path) -> Eigenpairs:
    """The first ``k`` eigenpairs, cached (a 1,000-pair solve on the bunny takes minutes)."""
    path = cache / f"eigenpairs-{mesh.n_vertices}-{k}.npz"
    if path.exists():
        with np.load(path) as archive:
            return Eigenpairs(archive["eigenvalues"], archive["eigenvectors"])
    pairs = laplace_beltrami(mesh.vertices, mesh.faces, k)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, eigenvalues=pairs.eigenvalues, eigenvectors=pairs.eigenvectors)
    return pairs


def problem(mesh_path, n_test: int, n_eigenpairs: int, cache, seed: int = 11):
    field = geodesic_sine_field(mesh_path, oscillations=3.0)
    mesh = field.mesh
    rng = np.random.default_rng(seed)
    order = rng.permutation(mesh.n_vertices)
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])

    def distances(points, cols, kind):
        return geodesic(mesh.vertices, mesh.faces, rows=points, cols=cols).values

    extras = {"eigenpairs": eigenpairs(mesh, n_eigenpairs, cache), "f": field.f}
    return Problem("bunny", field.y, test, pool, distances, extras), field


def specs(eigenpair_counts) -> list:
    hyper = scaled_to_data((0.01, 10.0), NUGGET)
    unit = fixed(Hyper(None, NUGGET))
    out = [sle_spec("SLE", "geodesic", "matern32", hyper, ls=(0.01, 100.0))]
    for k in eigenpair_counts:
        out.append(mesh_matern_spec(f"Riemannian Matern ({k})", k, 1.5, hyper, ls=(1e-4, 10.0)))
    for k in eigenpair_counts:
        out.append(
            mesh_matern_spec(
                f"Riemannian Matern ({k}, unit amplitude)", k, 1.5, unit, ls=(1e-4, 10.0)
            )
        )
    out.append(raw_embedding_spec("Raw-distance embedding", "geodesic", "matern32", hyper))
    return out


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "stanford-bunny.obj")
    args = p.parse_args(argv)
    title = "Stanford bunny (Dragon stand-in): SLE vs Riemannian Matern (paper Table 1)"
    if args.quick:
        counts, sizes, draws, n_test = (20, 50), (40,), 1, 100
    else:
        counts, sizes, draws, n_test = EIGENPAIRS, TABLE_SIZES, args.draws, N_TEST
    prob, field = problem(args.mesh, n_test, max(counts), args.cache)
    models = [s.name for s in specs(counts)]
    if not args.summary_only:
        run_specs = selected(specs(counts), args.models)
        run(prob, run_specs, sizes=sizes, n_draws=draws, out_dir=args.out, jobs=args.jobs)
    csv_path = args.out / f"{prob.name}_trials.csv"
    summarise(csv_path, title=title, table_sizes=sizes, models=models, note=__doc__)
    if args.render:
        trial = prob.trials([sizes[-1]], 1, 0)[0]
        for spec in specs(counts)[:1] + specs(counts)[len(counts) : len(counts) + 1]:
            slug = spec.name.lower().replace(" ", "_").replace("(", "").replace(")", "")
            render(prob, spec, trial, field.mesh, args.out / f"bunny_{slug}.png", "Stanford bunny")


if __name__ == "__main__":
    main()
