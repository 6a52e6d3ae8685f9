"""Where SLE's 95 % intervals miss on Teddy: coverage by distance to the nearest training vertex.

The NUTS benchmark (``benchmarks/nuts_convergence.py``) finds SLE's 95 % PICP at 0.91-0.925 on
Teddy at n = 200, with chains that agree, while the Geometric Matérn baseline covers 0.935. This
study asks where the misses are. On the benchmark's Teddy splits (n = 200, 400 test vertices,
the README recipe ``sle_priors`` + ``SLE(inner="matern52")``) it fits, by multi-start MAP
(``pymc_sle.find_map``; plug-in predictions, the noise included):

- ``SLE, landmarks = training points``: the recipe as the benchmark runs it (the paper's choice);
- ``SLE, landmarks = other vertices``: the same with as many landmarks drawn from the vertices that
  are neither training nor test points. A training point's own coordinate ``phi_i(x_i) = a`` has
  no counterpart for a test point, so the embedding treats the two differently; with landmarks
  apart from both it treats them alike. If that asymmetry caused the misses, this would cover;
- ``Geometric Matérn``: the benchmark's baseline, its priors and model.

Test vertices are grouped into quartiles of their geodesic distance to the nearest training vertex
(pooled over splits). Per model and group: PICP of the 95 % interval and the standard deviation of
``z = (y - mu) / sd`` (1 when the predictive spread is right); overall also the excess kurtosis
of ``z``. For the recipe's embedding at its MAP radius, per group: how many bumps reach a test
vertex (non-zero coordinates of ``phi``), its embedding distance to the nearest training vertex
in length scales, and the Spearman correlation of that distance with the geodesic one (how well
the embedding tells a far test vertex from a near one); and the recipe's PICP and ``sd(z)`` on
the group's *contracted* half (embedding distance / geodesic distance to the nearest training
vertex below the group's median: the embedding puts them nearer the data than they are) and on
the other half. Each split's MAP radius is recorded.
Writes benchmarks/results/studies/coverage.{json,md,png}.

Run:  python -m benchmarks.studies.coverage [--quick] [--mesh PATH]
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks import nuts_data
from benchmarks._paths import SHARED_DATA
from benchmarks.paper.models import build
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.inference import find_map

MODELS = (
    "SLE, landmarks = training points",
    "SLE, landmarks = other vertices",
    "Geometric Matérn",
)
N_GROUPS = 4


def plug_in(model, gp, ctx, offset: float, starts: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Predictive mean and standard deviation (noise included) at the model's MAP, and the MAP."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = find_map(n_starts=starts, seed=ctx.trial.seed).point
        mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=True)
    return mu + offset, np.sqrt(var), point


def embedding_geometry(distances: np.ndarray, n_train: int, point: dict) -> dict[str, np.ndarray]:
    """Per test vertex (the rows after ``n_train``): the bumps reaching it and its embedding
    distance to the nearest training vertex over the length scale, at ``point``'s radius."""
    radius, ls = float(point["radius"]), float(point["ls"])
    embedded = sle.embedding_distances(distances[n_train:], distances[:n_train], radius=radius)
    return {
        "bumps": (distances[n_train:] < radius).sum(axis=1),
        "embedding_nearest": embedded.min(axis=1) / ls,
    }


def split_predictions(bench, ctx, starts: int) -> tuple[dict, dict]:
    """Each model's plug-in predictions (mean, sd) on one split, and the recipe's embedding
    geometry at its MAP (:func:`embedding_geometry`, with the MAP ``radius``)."""
    problem = bench.problem
    train = ctx.points[: ctx.n_train]
    offset = float(ctx.y_train.mean())
    others = np.setdiff1d(problem.pool, train)
    landmarks = np.sort(
        np.random.default_rng(ctx.trial.seed).choice(others, size=ctx.n_train, replace=False)
    )
    moved = dataclasses.replace(
        ctx,
        landmark={
            bench.kind: sle.DistanceMatrix(problem.distances(ctx.points, landmarks, bench.kind))
        },
    )
    out, points = {}, {}
    for name, context in zip(MODELS[:2], (ctx, moved), strict=True):
        model, gp, _, _ = nuts_data.sle_model(bench, context, offset)
        *out[name], points[name] = plug_in(model, gp, ctx, offset, starts)
    model, gp, _ = build(bench.baseline, ctx)
    *out[MODELS[2]], _ = plug_in(model, gp, ctx, 0.0, starts)
    recipe = points[MODELS[0]]
    geometry = embedding_geometry(ctx.landmark[bench.kind].values, ctx.n_train, recipe)
    return out, {**geometry, "radius": float(recipe["radius"])}


def scores(z: np.ndarray) -> dict[str, float]:
    return {"n": int(z.size), "picp": float(np.mean(np.abs(z) < stats.norm.ppf(0.975))),
            "sd_z": float(np.std(z))}  # fmt: skip


def figure(groups: list[dict], results: dict, path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.3))
    x = np.arange(len(groups))
    labels = [f"{g['low']:.2f}-{g['high']:.2f}" for g in groups]
    for name in MODELS:
        per_group = results[name]["groups"]
        axes[0].plot(x, [g["picp"] for g in per_group], "o-", label=name)
        axes[1].plot(x, [g["sd_z"] for g in per_group], "o-", label=name)
    axes[0].axhline(0.95, color="k", lw=0.8, ls="--", label="nominal 0.95")
    axes[1].axhline(1.0, color="k", lw=0.8, ls="--", label="calibrated: 1")
    for ax, ylabel in zip(axes, ("95 % PICP", "sd of (y - mu) / sd"), strict=True):
        ax.set_xticks(x, labels)
        ax.set(xlabel="geodesic distance to the nearest training vertex (quartiles)",
               ylabel=ylabel)  # fmt: skip
        ax.legend(fontsize=8)
    save_figure(fig, path)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mesh", default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    args = p.parse_args(argv)
    bench = nuts_data.BENCHMARKS["teddy_200"](args.quick, args)
    n_splits, starts = (1, 4) if args.quick else (nuts_data.N_SPLITS, 16)
    errors = {name: [] for name in MODELS}
    nearest, bumps, embedding_nearest, radii = [], [], [], []
    with threadpool_limits(limits=1, user_api="blas"):
        for ctx in bench.contexts(n_splits):
            y_test = bench.problem.y[bench.problem.test]
            predictions, geometry = split_predictions(bench, ctx, starts)
            for name, (mu, sd) in predictions.items():
                errors[name].append((y_test - mu) / sd)
            nearest.append(ctx.landmark[bench.kind].values[ctx.n_train :].min(axis=1))
            bumps.append(geometry["bumps"])
            embedding_nearest.append(geometry["embedding_nearest"])
            radii.append(geometry["radius"])
            print(f"split {ctx.trial.draw}: " + ", ".join(
                f"{name} PICP {scores(errors[name][-1])['picp']:.3f}" for name in MODELS
            ), flush=True)  # fmt: skip
    nearest, bumps = np.concatenate(nearest), np.concatenate(bumps)
    embedding_nearest = np.concatenate(embedding_nearest)
    edges = np.quantile(nearest, np.linspace(0.0, 1.0, N_GROUPS + 1))
    group_of = np.clip(np.searchsorted(edges, nearest, side="right") - 1, 0, N_GROUPS - 1)
    recipe_z = np.concatenate(errors[MODELS[0]])
    contraction = embedding_nearest / nearest
    groups = []
    for g in range(N_GROUPS):
        member = group_of == g
        contracted = contraction < np.median(contraction[member])
        groups.append({
            "low": float(edges[g]), "high": float(edges[g + 1]),
            "bumps_median": float(np.median(bumps[member])),
            "embedding_nearest_median": float(np.median(embedding_nearest[member])),
            "spearman_geodesic_embedding": float(
                stats.spearmanr(nearest[member], embedding_nearest[member])[0]
            ),
            "contracted": scores(recipe_z[member & contracted]),
            "not_contracted": scores(recipe_z[member & ~contracted]),
        })  # fmt: skip
    results = {}
    for name in MODELS:
        z = np.concatenate(errors[name])
        results[name] = {
            **scores(z),
            "excess_kurtosis_z": float(stats.kurtosis(z)),
            "groups": [scores(z[group_of == g]) for g in range(N_GROUPS)],
        }
    settings = {"benchmark": bench.name, "n_train": bench.size, "splits": n_splits,
                "map_radius": radii}  # fmt: skip
    write_json(args.out / "coverage.json", {"settings": settings, "groups": groups, **results})
    figure(groups, results, args.out / "coverage.png")
    table = markdown_rows(
        ["model", "all: PICP", "all: sd(z)", "all: excess kurtosis of z",
         *[f"{g['low']:.2f}-{g['high']:.2f}: PICP, sd(z)" for g in groups]],
        [[name, f"{r['picp']:.3f}", f"{r['sd_z']:.2f}", f"{r['excess_kurtosis_z']:.1f}",
          *[f"{g['picp']:.3f}, {g['sd_z']:.2f}" for g in r["groups"]]]
         for name, r in results.items()],
    )  # fmt: skip
    geometry = markdown_rows(
        ["test vertices by distance", "bumps reaching one (median)",
         "embedding distance to the nearest training vertex / ls (median)",
         "Spearman: geodesic vs embedding distance to the nearest training vertex",
         "contracted half: PICP, sd(z)", "other half: PICP, sd(z)"],
        [[f"{g['low']:.2f}-{g['high']:.2f}", f"{g['bumps_median']:.0f}",
          f"{g['embedding_nearest_median']:.2f}", f"{g['spearman_geodesic_embedding']:.2f}",
          *[f"{g[k]['picp']:.3f}, {g[k]['sd_z']:.2f}" for k in ("contracted", "not_contracted")]]
         for g in groups],
    )  # fmt: skip
    write_markdown(
        args.out / "coverage.md",
        "Coverage by distance to the nearest training vertex (Teddy)",
        [
            "Generated by `python -m benchmarks.studies.coverage`. Teddy mesh, "
            f"n = {bench.size}, {n_splits} split(s) of the NUTS benchmark, plug-in "
            "predictions at each model's multi-start MAP. Columns after the third: test "
            "vertices grouped by quartile of their geodesic distance to the nearest training "
            "vertex. What the script does: see its docstring.",
            "",
            *table,
            "",
            "![PICP and sd(z) by distance to the training vertices](coverage.png)",
            "",
            "The recipe's embedding at its MAP (radius "
            + ", ".join(f"{r:.1f}" for r in radii)
            + f" on the splits; {bench.size} bumps, one per training vertex):",
            "",
            *geometry,
        ],
    )


if __name__ == "__main__":
    main()
