"""Ablation: the bump embedding (SLE) vs the raw-distance embedding on two meshes (paper App. F).

Both kernels get the same inner Matern, the same bounds and the same multi-start bounded maximum
likelihood; only the embedding differs: phi(x)_j = b(d(x, x_j)) (SLE) or d(x, x_j) (raw, the
D2KE construction).

- **Teddy** (Matern-5/2): the reproduction's problem and models (`benchmarks/paper/teddy.py`).
  Its per-trial file ``benchmarks/results/paper/teddy_trials.csv`` already holds both models at
  50-800 training points, so this study reads and extends that file instead of refitting.
- **Bunny, several sources** (Matern-3/2, `benchmarks/paper/bunny.py`'s models): the paper's
  deconfounded Dragon target -- a sum of sines of the geodesic distances to three well-separated
  vertices with incommensurate periods (`pymc_sle.datasets.geodesic_sines_field`), noiseless
  with a 1e-5 nugget, a fixed test set of 2,000 vertices.

RMSE, CRPS and PICP (95 %) vs training size, mean ± standard error over the draws.

Run:  `python -m benchmarks.studies.ablation [--quick] [--draws 5] [--jobs 2] [--teddy-mesh P]`
(and ``--bunny-mesh P``; the meshes default to ``../shared/data/``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks._paths import RESULTS, SHARED_DATA
from benchmarks.paper.problem import Problem
from benchmarks.paper.results_csv import read_rows
from benchmarks.paper.runner import run, selected
from benchmarks.paper.summary import METRICS, NOMINAL, aggregate, draw_counts, markdown_table
from benchmarks.studies import common
from pymc_sle.datasets import geodesic_sines_field
from pymc_sle.distances import geodesic

MODELS = ("SLE", "Raw-distance embedding")
TEDDY_SIZES = (50, 100, 200, 300, 400, 600, 800)
BUNNY_SIZES = (100, 200, 400, 600, 800)
BUNNY_TEST = 2000


def bunny_problem(mesh_path, n_test: int, seed: int = 13) -> Problem:
    field = geodesic_sines_field(mesh_path)
    mesh = field.mesh
    order = np.random.default_rng(seed).permutation(mesh.n_vertices)
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])

    def distances(points, cols, kind):
        return geodesic(mesh.vertices, mesh.faces, rows=points, cols=cols).values

    return Problem("bunny_sines", field.y, test, pool, distances, {"f": field.f})


def experiments(args) -> list[tuple[str, Path, tuple[int, ...]]]:
    """Run what is missing; return (label, per-trial CSV, sizes) per mesh."""
    from benchmarks.paper import bunny, teddy

    if args.quick:
        teddy_problem, _ = teddy.problem(args.teddy_mesh, n_test=60)
        plan = [
            (teddy_problem, teddy.specs(), (30, 40), args.out),
            (bunny_problem(args.bunny_mesh, 100), bunny.specs(()), (30, 40), args.out),
        ]
        draws = 1
    else:
        teddy_problem, _ = teddy.problem(args.teddy_mesh)
        plan = [(teddy_problem, teddy.specs(), TEDDY_SIZES, RESULTS / "paper"),
                (bunny_problem(args.bunny_mesh, BUNNY_TEST), bunny.specs(()), BUNNY_SIZES,
                 args.out)]  # fmt: skip
        draws = args.draws
    out = []
    for problem, specs, sizes, out_dir in plan:
        chosen = selected(specs, MODELS)
        path = run(problem, chosen, sizes=sizes, n_draws=draws, out_dir=out_dir, jobs=args.jobs)
        label = {"teddy": "Teddy (Matern-5/2 draw)", "bunny_sines": "Bunny (three-source sines)"}
        out.append((label[problem.name], path, sizes))
    return out


def figure(results, path: Path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(len(results), 3, figsize=(13, 3.6 * len(results)), squeeze=False)
    for row, (label, csv_path, sizes) in enumerate(results):
        stats = aggregate(read_rows(csv_path))
        for ax, metric in zip(axes[row], METRICS, strict=True):
            for model in MODELS:
                points = [(s, *stats[(model, "map", s)][metric][:2]) for s in sizes
                          if metric in stats.get((model, "map", s), {})]  # fmt: skip
                if points:
                    s, mean, se = map(np.array, zip(*points, strict=True))
                    ax.errorbar(s, mean, yerr=np.nan_to_num(se), marker="o", ms=3, capsize=2,
                                label=model)  # fmt: skip
            if metric == "picp":
                ax.axhline(NOMINAL, color="k", lw=0.8, ls="--")
            ax.set_title(f"{label}: {metric.upper()}", fontsize=10)
            ax.set_xlabel("training size")
        axes[row][0].legend(fontsize=8)
    common.save_figure(fig, path, dpi=120)


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0], draws=5)
    p.add_argument("--teddy-mesh", type=Path, default=SHARED_DATA / "teddy.obj")
    p.add_argument("--bunny-mesh", type=Path, default=SHARED_DATA / "stanford-bunny.obj")
    args = p.parse_args(argv)
    results = experiments(args)
    lines = [__doc__.split("\n\n", 1)[1].split("Run:")[0].strip(), ""]
    for label, csv_path, sizes in results:
        rows = read_rows(csv_path)
        draws = draw_counts(rows, MODELS, "map", sizes)
        lines += [f"## {label} — draws per size: {draws}", "",
                  markdown_table(rows, "map", sizes, list(MODELS)), ""]  # fmt: skip
    common.write_markdown(args.out / "ablation.md", __doc__.splitlines()[0], lines)
    figure(results, args.out / "ablation.png")
    print((args.out / "ablation.md").read_text())


if __name__ == "__main__":
    main()
