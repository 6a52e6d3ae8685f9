"""sle_priors at scale: the search on a random subset against the full grid, and N = 20,000.

- ``compare``: on three random training sets of N = 1,000 bunny vertices (a geodesic sine field
  of 12 periods plus noise of sd 0.1; distances below a cutoff giving each bump about 32
  training points), the grid posterior given every observation (``grid_posterior`` on the
  distances filled in as a dense matrix) against the one ``sle_priors`` searches on sparse
  distances: the posterior given the observations of ``search_points`` random training points,
  every landmark kept (``TrainingData.subsample``), for 250 and 100 points. Same axes;
  reported: total variation between the radius marginals, the radius modes, and the shift of
  each log parameter's posterior mean and its posterior sd, in grid cells, and the time.
- ``scale``: ``sle_priors`` then ``sle.find_map`` on N = 20,000 bunny vertices, timed.

Writes ``benchmarks/results/subsample_search.{json,md}``.

    python -m benchmarks.subsample_search [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._paths import RESULTS, write_results
from benchmarks.scaling import BUNNY, _cutoff, _field

NAMES = ("radius", "ls", "eta", "sigma")
#: Periods of the field's sine: rough enough that the radius posterior falls off below the cutoff.
OSCILLATIONS = 12.0


def _data(mesh_name: str, n: int, per_bump: float, seed: int):
    from pymc_sle.distances import geodesic

    mesh, _, y, train, _ = _field(mesh_name, n, 1, seed=seed, oscillations=OSCILLATIONS)
    cutoff = _cutoff(mesh, train.size, per_bump)
    distances = geodesic(mesh.vertices, mesh.faces, rows=train, cols=train, cutoff=cutoff)
    return distances, y[train]


def _moments(grid) -> dict:
    out = {}
    for name in NAMES:
        p, log_axis = grid.marginal(name), np.log(getattr(grid, name))
        mean = float(p @ log_axis)
        out[name] = (mean, float(np.sqrt(max(p @ log_axis**2 - mean**2, 0.0))))
    return out


def _cell(grid, name: str) -> float:
    axis = getattr(grid, name)
    return float(np.log(axis[1] / axis[0]))


def compare(mesh_name: str, n: int, sizes, per_bump: float, seed: int, cells: int) -> dict:
    from pymc_sle.inference import grid_posterior
    from pymc_sle.inference._bounds import training_data

    distances, y = _data(mesh_name, n, per_bump, seed)
    began = time.perf_counter()
    dense = distances.to_dense(fill=distances.cutoff)
    full = grid_posterior(dense, np.arange(n), y, n_radius=cells, n_ls=cells, n_scale=16,
                          radius_max=distances.cutoff)  # fmt: skip
    full_s = time.perf_counter() - began
    axes = {name: getattr(full, name) for name in NAMES}
    reference, p_full = _moments(full), full.marginal("radius")
    full_sd = {k: reference[k][1] / _cell(full, k) for k in NAMES}
    row = {"seed": seed, "per_bump": per_bump, "n": n, "cutoff": distances.cutoff, "full_s": full_s,
           "full_radius_mode": full.mode()["radius"], "full_sd_cells": full_sd,
           "subsets": []}  # fmt: skip
    for size in sizes:
        began = time.perf_counter()
        data = training_data(distances, np.arange(n), y, sparse=True)
        sub = data.subsample(size, seed)
        grid = grid_posterior(sub.block, np.arange(size), sub.y, **axes,
                              radius_max=distances.cutoff)  # fmt: skip
        moments = _moments(grid)
        row["subsets"].append({
            "size": size,
            "seconds": time.perf_counter() - began,
            "tv_radius": float(0.5 * np.abs(grid.marginal("radius") - p_full).sum()),
            "radius_mode": grid.mode()["radius"],
            "shift_cells": {k: (moments[k][0] - reference[k][0]) / _cell(full, k) for k in NAMES},
            "sd_cells": {k: moments[k][1] / _cell(full, k) for k in NAMES},
        })  # fmt: skip
    return row


def at_scale(mesh_name: str, n: int, per_bump: float, search_points: int) -> dict:
    import pymc as pm

    import pymc_sle as sle

    began = time.perf_counter()
    distances, y = _data(mesh_name, n, per_bump, 0)
    distances_s = time.perf_counter() - began
    rows = np.arange(y.size)
    began = time.perf_counter()
    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priors = sle.sle_priors(distances, rows, y, search_points=search_points)
        gp = sle.gp.Marginal(cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=priors["sigma"])
    priors_s = time.perf_counter() - began
    began = time.perf_counter()
    with model:
        fit = sle.find_map(n_starts=2, n_optimize=1, seed=0)
    return {
        "n": int(y.size), "cutoff": distances.cutoff, "distances_s": distances_s,
        "priors_s": priors_s, "map_s": time.perf_counter() - began,
        "evaluations": fit.n_evaluations, "scales": priors.scales,
        "radius_cap": priors.radius_cap, "warnings": [str(w.message) for w in caught],
        "point": {k: float(fit.point[k]) for k in NAMES},
    }  # fmt: skip


def summary(result: dict) -> str:
    rows = result["compare"]
    lines = [
        "# sle_priors at scale: the search on a random subset",
        "",
        f"Machine: {result['machine']}. On sparse distances `sle_priors` searches the grid "
        "posterior given the observations of `search_points` random training points, the "
        "kernel unchanged (every landmark kept). Below, that posterior against the full grid's "
        f"on N = {rows[0]['n']:,} {result['mesh']} vertices (a geodesic sine field of "
        f"{result['oscillations']:g} periods plus noise of sd 0.1; the cutoff gives each bump "
        f"about as many training points as the first column says; {result['cells']} radii x "
        f"{result['cells']} length scales x 16 x 16, the same axes for both). TV: total "
        "variation between the radius marginals. Shift: the posterior mean of each log "
        "parameter minus the full grid's; sd: posterior sd; both in grid cells (full grid's sd "
        "in brackets).",
        "",
        "| points per bump | split | points searched | TV radius | radius mode (full) "
        "| shift radius | shift ls | shift eta | shift sigma | sd radius | sd ls "
        "| time / full grid |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        full_sd = row["full_sd_cells"]
        for v in row["subsets"]:
            s, d = v["shift_cells"], v["sd_cells"]
            lines.append(
                f"| {row['per_bump']:g} | {row['seed']} | {v['size']} | {v['tv_radius']:.2f} | "
                f"{v['radius_mode']:.4g} "
                f"({row['full_radius_mode']:.4g}) | {s['radius']:+.1f} | {s['ls']:+.1f} | "
                f"{s['eta']:+.1f} | {s['sigma']:+.1f} | "
                f"{d['radius']:.1f} ({full_sd['radius']:.1f}) | "
                f"{d['ls']:.1f} ({full_sd['ls']:.1f}) | {v['seconds'] / row['full_s']:.3f} |"
            )
    scale = result.get("scale")
    if scale:
        lines += [
            "",
            "## At N = {:,}".format(scale["n"]),
            "",
            f"`sle_priors(search_points={result['search_points']})` on sparse geodesic distances "
            f"(cutoff {scale['cutoff']:.4g}, {result['per_bump']:g} points per bump): "
            f"{scale['priors_s']:.0f} s (distances "
            f"{scale['distances_s']:.0f} s); then `sle.find_map(n_starts=2)` on the sparse "
            f"likelihood: {scale['map_s']:.0f} s, {scale['evaluations']} evaluations. "
            f"Scales: {scale['scales']}. MAP: "
            + ", ".join(f"{k} {v:.4g}" for k, v in scale["point"].items())
            + ". Warnings: "
            + ("; ".join(scale["warnings"]) or "none")
            + ".",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="an icosphere, small sizes")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--per-bump", type=float, nargs="+", default=[32.0, 128.0])
    args = parser.parse_args(argv)
    mesh = "bunny" if BUNNY.exists() else "icosphere-6"
    if args.quick:
        mesh, n, sizes, cells, seeds, scale = "icosphere-4", 300, (100,), 6, (0,), (600, 150)
    else:
        n, sizes, cells, seeds, scale = 1_000, (250, 100), 24, (0, 1, 2), (20_000, 500)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "mesh": mesh,
              "per_bump": args.per_bump[0], "cells": cells, "search_points": scale[1],
              "oscillations": OSCILLATIONS}  # fmt: skip
    result["compare"] = [
        compare(mesh, n, sizes, per_bump, seed, cells)
        for per_bump in (args.per_bump[:1] if args.quick else args.per_bump)
        for seed in seeds
    ]
    print(json.dumps(result["compare"], indent=1), flush=True)
    result["scale"] = at_scale(mesh, scale[0], args.per_bump[0], scale[1])
    write_results(args.out, "subsample_search", args.quick, result, summary(result))


if __name__ == "__main__":
    main()
