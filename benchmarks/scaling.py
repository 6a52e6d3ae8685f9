"""Exact SLE Gaussian processes at large N: sparse distances and the sparse likelihood.

Three sections, each in fresh processes (``--section`` runs one and keeps the others' results):

- ``sizes``: for each training set size N (random vertices of a mesh, every one a landmark):
  geodesic distances with a cutoff (truncated Dijkstra), the symbolic analysis, the SLE-RBF log
  density and its gradient through ``sle.gp.Marginal`` (the sparse path), the factorisation
  alone, and -- up to ``--dense-max`` -- the same model on dense distances (the dense path). The
  cutoff gives every bump about ``--per-bump`` training points; the radius sits at the cutoff
  (the pattern's full extent).
- ``map``: distances, model, MAP (``sle.find_map``) and sparse prediction on the Stanford bunny's
  geodesic sine field with noise, whole bunny (30,000 training vertices) against 1,000, scored
  on the same held-out vertices.
- ``nuts``: the README recipe at N = 5,000 -- ``sle_priors`` on the sparse distances, then
  ``sle.sample_basins`` (4 chains x (500 + 500) per basin, 2 cores, nutpie by
  default, ``--sampler``) -- on a geodesic sine of ``NUTS_OSCILLATIONS`` periods (the MAP
  field's radius posterior reaches the cutoff).

Writes ``benchmarks/results/scaling.{json,md,png}``.

    python -m benchmarks.scaling [--quick] [--section sizes|map|nuts]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np

from benchmarks._paths import RESULTS, SHARED_DATA
from benchmarks._scaling_report import NUTS_TARGET_RUN, figure, summary, targets
from benchmarks._timing import in_child, paired_ms, peak_mib

BUNNY = SHARED_DATA / "stanford-bunny.obj"
#: The NUTS section's field: periods of the geodesic sine. With the sizes' 3 periods the radius
#: posterior reaches the cutoff (``sle_priors`` warns and asks for longer distances).
NUTS_OSCILLATIONS = 24.0


def mesh_named(name: str):
    """The named mesh's largest component: the Stanford bunny (when ``../shared/data`` has it)
    or an icosphere with ``2 + 10 * 4**k`` vertices (``icosphere-k``)."""
    from pymc_sle.distances import Mesh, load_mesh

    if name == "bunny":
        return load_mesh(BUNNY).largest_component()[0]
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=int(name.split("-")[1]))
    return Mesh(sphere.vertices, sphere.faces)


def _cutoff(mesh, n: int, per_bump: float) -> float:
    """The distance cutoff whose disc holds about ``per_bump`` of ``n`` points spread evenly
    over the mesh's surface."""
    a, b, c = (mesh.vertices[mesh.faces[:, k]] for k in range(3))
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()
    return float(np.sqrt(per_bump * area / (np.pi * n)))


def _model(distances, train, y, radius, landmarks=None, inner="rbf"):
    """The benchmark's model: ``eta**2 * SLE(..., inner=inner)`` plus noise; ``radius`` a number
    or a ``(low, high)`` uniform prior. Returns the model and its GP."""
    import pymc as pm

    import pymc_sle as sle

    with pm.Model() as model:
        if isinstance(radius, tuple):
            radius = pm.Uniform("radius", *radius)
        ls = pm.LogNormal("ls", np.log(2.0), 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        cov = eta**2 * sle.SLE(distances, landmarks, radius=radius, ls=ls, inner=inner)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=sigma)
    return model, gp


def _field(mesh_name: str, n_train: int, n_test: int, seed: int = 0, oscillations: float = 3.0):
    """The mesh's geodesic sine field plus noise of sd 0.1: training and held-out vertices (the
    held-out set does not depend on ``n_train``)."""
    from pymc_sle.datasets import geodesic_sine_field

    mesh = mesh_named(mesh_name)
    field = geodesic_sine_field(mesh, oscillations=oscillations)
    rng = np.random.default_rng(seed)
    order = rng.permutation(mesh.n_vertices)
    test, rest = np.sort(order[:n_test]), order[n_test:]
    train = np.sort(rest[: min(n_train, rest.size)])
    y = field.f + 0.1 * rng.standard_normal(mesh.n_vertices)
    return mesh, field.f, y, train, test


def _fit(mesh_name: str, n_train: int, n_test: int, per_bump: float) -> tuple:
    """Distances (rows: training then held-out vertices; columns: training vertices) and the
    model with a radius prior uniform between a quarter of the cutoff and the cutoff."""
    from pymc_sle.distances import geodesic

    mesh, f, y, train, test = _field(mesh_name, n_train, n_test)
    cutoff = _cutoff(mesh, train.size, per_bump)
    began = time.perf_counter()
    rows = np.concatenate([train, test])
    distances = geodesic(mesh.vertices, mesh.faces, rows=rows, cols=train, cutoff=cutoff, n_jobs=2)
    distances_s = time.perf_counter() - began
    local = np.arange(train.size)
    model, gp = _model(distances, local, y[train], (cutoff / 4, cutoff))
    return model, gp, distances_s, cutoff, f[test], y[test], train.size + np.arange(test.size)


def measure_map(mesh_name: str, n_train: int, n_test: int, per_bump: float) -> dict:
    """In this process: distances, model, MAP and prediction, each timed, and the scores."""
    from scipy import stats

    import pymc_sle as sle

    began = time.perf_counter()
    model, gp, distances_s, cutoff, f_test, y_test, test_rows = _fit(
        mesh_name, n_train, n_test, per_bump
    )
    build_s = time.perf_counter() - began - distances_s
    began = time.perf_counter()
    with model:
        fit = sle.find_map(n_starts=4, n_optimize=1, seed=0)
    map_s = time.perf_counter() - began
    began = time.perf_counter()
    with model:
        mean, variance = gp.predict(test_rows[:, None], point=fit.point, diag=True, pred_noise=True)
    predict_s = time.perf_counter() - began
    half = stats.norm.ppf(0.975) * np.sqrt(variance)
    return {
        "mesh": mesh_name,
        "n_train": int(test_rows[0]),
        "n_test": int(test_rows.size),
        "cutoff": cutoff,
        "distances_s": distances_s,
        "build_s": build_s,
        "map_s": map_s,
        "evaluations": fit.n_evaluations,
        "predict_s": predict_s,
        "predict_ms_per_point": 1e3 * predict_s / test_rows.size,
        "total_s": distances_s + build_s + map_s + predict_s,
        "point": {k: float(fit.point[k]) for k in ("radius", "ls", "eta", "sigma")},
        "rmse_latent": float(sle.rmse(f_test, mean)),
        "picp_95": float(sle.picp(y_test, mean - half, mean + half)),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_nuts(
    mesh_name: str, n_train: int, per_bump: float, draws: int, tune: int, chains: int, sampler: str
) -> dict:
    """In this process: the README recipe at N = ``n_train``, as a user types it -- distances
    with a cutoff, ``sle_priors`` (its search on a random subset), ``eta**2 * SLE(..., 'rbf')``
    in ``sle.gp.Marginal``, ``sle.sample_basins`` on 2 cores -- on a field of
    ``NUTS_OSCILLATIONS`` periods, whose radius posterior the cutoff holds."""
    import arviz as az
    import pymc as pm

    import pymc_sle as sle
    from pymc_sle.distances import geodesic

    mesh, _, y, train, _ = _field(mesh_name, n_train, 1, oscillations=NUTS_OSCILLATIONS)
    cutoff = _cutoff(mesh, train.size, per_bump)
    began = time.perf_counter()
    distances = geodesic(mesh.vertices, mesh.faces, rows=train, cols=train, cutoff=cutoff, n_jobs=2)
    local = np.arange(train.size)
    with pm.Model() as model:
        priors = sle.sle_priors(distances, local, y[train], landmarks=local, inner="rbf")
        gp = sle.gp.Marginal(cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=local[:, None], y=y[train], sigma=priors["sigma"])
    priors_s = time.perf_counter() - began
    began = time.perf_counter()
    with model:
        idata = sle.sample_basins(
            priors, draws=draws, tune=tune, chains=chains, cores=2, random_seed=1,
            progressbar=False, nuts_sampler=sampler,
        )  # fmt: skip
    wall_s = time.perf_counter() - began
    table = az.summary(idata, var_names=priors.var_names(model), round_to="none")
    stats = idata.sample_stats
    return {
        "mesh": mesh_name,
        "n_train": n_train,
        "oscillations": NUTS_OSCILLATIONS,
        "sampler": sampler,
        "chains": chains,
        "draws": draws,
        "tune": tune,
        "basins": len(priors.basins),
        "priors_min": priors_s / 60,
        "wall_min": wall_s / 60,
        "r_hat_max": float(table["r_hat"].max()),
        "ess_bulk_min": float(table["ess_bulk"].min()),
        "ess_tail_min": float(table["ess_tail"].min()),
        "divergences": int(stats["diverging"].sum()),
        "steps_per_draw": float(stats["n_steps"].mean()),
        "summary": table.reset_index().to_dict(orient="records"),
    }


def _problem_data(mesh_name: str, n: int, per_bump: float):
    """The training vertices, their distances below the cutoff, the cutoff and ``y``."""
    from pymc_sle.distances import geodesic

    mesh = mesh_named(mesh_name)
    rng = np.random.default_rng(0)
    n = min(n, mesh.n_vertices)
    train = np.sort(rng.choice(mesh.n_vertices, n, replace=False))
    cutoff = _cutoff(mesh, n, per_bump)
    began = time.perf_counter()
    distances = geodesic(mesh.vertices, mesh.faces, rows=train, cols=train, cutoff=cutoff, n_jobs=2)
    distances_s = time.perf_counter() - began
    y = np.sin(6.0 * mesh.vertices[train, 1] / np.ptp(mesh.vertices[:, 1]))
    return distances, distances_s, cutoff, y + 0.1 * rng.standard_normal(n)


def measure(mesh_name: str, n: int, per_bump: float, reps: int) -> dict:
    """In this process: one row of the table, sparse path."""
    from benchmarks.performance import compile_value_and_grad, median_ms
    from pymc_sle._linalg._supernodal import factorize, selected_inverse

    distances, distances_s, cutoff, y = _problem_data(mesh_name, n, per_bump)
    n = distances.n_points
    local = np.arange(n)
    began = time.perf_counter()
    model, _ = _model(distances, local, y, radius=cutoff)
    build_s = time.perf_counter() - began
    value_and_grad = compile_value_and_grad(model, "FAST_RUN")
    problem = _sparse_op(model).problem
    symbolic = problem.symbolic

    def factor_only():
        values = np.zeros(symbolic.n_values)
        values[symbolic.entry_index] = np.where(problem.pair_i == problem.pair_j, 2.0, 1e-3)
        factorize(symbolic, values)
        return values

    sparse_ms, factor_ms, gradient_ratio = paired_ms(value_and_grad, factor_only, reps)
    factor = factor_only()
    selinv_ms = median_ms(lambda: selected_inverse(symbolic, factor), reps)
    del model, value_and_grad
    matern_model, _ = _model(distances, local, y, radius=cutoff, inner="matern32")
    _sparse_op(matern_model)  # the Matérn model takes the sparse path too
    matern_ms = median_ms(compile_value_and_grad(matern_model, "FAST_RUN"), reps)
    return {
        "mesh": mesh_name,
        "n": n,
        "cutoff": cutoff,
        "distances_per_row": distances.nnz / n,
        "distances_s": distances_s,
        "build_s": build_s,
        "pairs_per_row": 2 * problem.n_pairs / n - 1,
        "factor_entries": symbolic.n_values,
        "factor_gflop": symbolic.flops / 1e9,
        "sparse_ms": sparse_ms,
        "factor_ms": factor_ms,
        "gradient_ratio": gradient_ratio,
        "selinv_ms": selinv_ms,
        "matern_ms": matern_ms,
        "peak_mib": peak_mib(),
    }


def measure_dense(mesh_name: str, n: int, per_bump: float, reps: int) -> dict:
    """In this process: the same model on the same distances, filled in as a dense matrix."""
    from benchmarks.performance import compile_value_and_grad, median_ms

    distances, _, cutoff, y = _problem_data(mesh_name, n, per_bump)
    dense = distances.to_dense(fill=cutoff)  # the bump is 0 from the cutoff on
    del distances
    model, _ = _model(dense, np.arange(dense.shape[0]), y, radius=cutoff)
    dense_ms = median_ms(compile_value_and_grad(model, "FAST_RUN"), max(1, reps // 2))
    return {"dense_ms": dense_ms, "dense_peak_mib": peak_mib()}


def _sparse_op(model):
    """The model's sparse likelihood Op (the benchmark fails if the dense path ran)."""
    from pytensor.graph.traversal import ancestors

    for variable in ancestors([model.logp()]):
        if variable.owner is not None and type(variable.owner.op).__name__ == "SparseSLELogDensity":
            return variable.owner.op
    raise RuntimeError("the model did not take the sparse likelihood")


def _child(function: str, *args) -> dict:
    """``function(*args)`` in a fresh process, so that each row's peak memory is its own."""
    return in_child("benchmarks.scaling", function, *args)


def _here(function: str, *args) -> dict:
    """``function(*args)`` in this process."""
    return globals()[function](*args)


SECTIONS = ("sizes", "map", "nuts")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes on an icosphere")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--section", choices=SECTIONS, action="append")
    parser.add_argument("--per-bump", type=float, default=32.0)
    parser.add_argument("--dense-max", type=int, default=10_000)
    parser.add_argument(
        "--nuts-run",
        type=int,
        nargs=3,
        default=[NUTS_TARGET_RUN[2], NUTS_TARGET_RUN[1], NUTS_TARGET_RUN[0]],
        metavar=("DRAWS", "TUNE", "CHAINS"),
        help="the nuts section's run (default: the target's 4 chains x (500 + 500))",
    )
    parser.add_argument(
        "--sampler",
        choices=("nutpie", "pymc"),
        default="nutpie",
        help="the nuts section's sampler (--quick: PyMC's, which compiles nothing with numba)",
    )
    args = parser.parse_args(argv)
    stem = "scaling_quick" if args.quick else "scaling"
    path = args.out / f"{stem}.json"
    sections = args.section or SECTIONS
    result = json.loads(path.read_text()) if path.exists() and args.section else {}
    result.update(machine=f"{platform.machine()}, {os.cpu_count()} cores", per_bump=args.per_bump)
    mesh = "bunny" if BUNNY.exists() else "icosphere-6"
    # --quick runs in this process: its peak memory means nothing, and each child costs ~15 s
    run = _here if args.quick else _child
    if args.quick:
        sizes, reps, dense_max = [("icosphere-3", 300), ("icosphere-3", 600)], 2, 300
        fits = [("icosphere-3", 300, 100)]
        nuts = ("icosphere-3", 100, args.per_bump, 20, 20, 2, "pymc")
    else:
        sizes = [(mesh, n) for n in (1_000, 2_000, 5_000, 10_000, 20_000, 34_834)]
        sizes.append(("icosphere-7", 100_000))
        reps, dense_max = 5, args.dense_max
        fits = [(mesh, 1_000, 4_834), (mesh, 30_000, 4_834)]
        nuts = (mesh, 5_000, args.per_bump, *args.nuts_run, args.sampler)
    if "sizes" in sections:
        result["reps"] = reps
        result["sizes"] = []
        for mesh_name, n in sizes:
            row = run("measure", mesh_name, n, args.per_bump, reps)
            row.update(dense_ms=None, dense_peak_mib=None)
            if n <= dense_max:
                row.update(run("measure_dense", mesh_name, n, args.per_bump, reps))
            result["sizes"].append(row)
            print(row, flush=True)
    if "map" in sections:
        result["map"] = []
        for mesh_name, n_train, n_test in fits:
            result["map"].append(run("measure_map", mesh_name, n_train, n_test, args.per_bump))
            print(result["map"][-1], flush=True)
    if "nuts" in sections:
        result["nuts"] = run("measure_nuts", *nuts)
        print(result["nuts"], flush=True)
    result["targets"] = targets(result)
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    (args.out / f"{stem}.md").write_text(summary(result))
    if result.get("sizes"):
        figure(result["sizes"], args.out / f"{stem}.png")
    print(summary(result))


if __name__ == "__main__":
    main()
