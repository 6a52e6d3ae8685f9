"""``pm.gp.Marginal(cov_func=SLE(...))`` against ``sle.gp.Marginal``: log density and gradient.

The line a PyMC user writes takes the library's likelihood through a logprob rewrite
(``pymc_sle.gp._rewrite``). This benchmark checks that it costs what the library's own class
costs, on geodesic problems: random vertices of a mesh (the Stanford bunny from ``../shared/data``
when present, an icosphere otherwise), distances below ``cutoff="auto"`` (32 landmarks a bump),
every training point a landmark, ``eta**2 * SLE(radius, ls) + sigma**2 I`` with a uniform radius
prior below the cutoff. Dense rows fill the same distances into a dense matrix (the cutoff where
nothing is stored: the bump is 0 there), so both paths see one model.

Per problem: the two compiled log densities + gradients called alternately (median ms of each,
the median of their ratio call by call), the largest relative difference of the values and
gradients, and -- at the largest size, each class in a fresh process -- the peak memory.

Writes ``benchmarks/results/pymc_marginal.{json,md}``.

    python -m benchmarks.pymc_marginal [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import numpy as np

from benchmarks._paths import RESULTS
from benchmarks._timing import in_child, paired_ms, peak_mib
from benchmarks.performance import compile_value_and_grad
from benchmarks.scaling import BUNNY, mesh_named

#: (name, training points, inner kernel, dense?) of the full run; the targets' rows.
PROBLEMS = [
    ("dense", 400, "matern32", True),
    ("dense", 1_000, "matern32", True),
    ("sparse", 2_000, "rbf", False),
    ("sparse", 20_000, "rbf", False),
]
QUICK = [("dense", 200, "matern32", True), ("sparse", 400, "rbf", False)]
#: The targets: time ratio at these rows, seconds and memory at the largest, agreement.
RATIO_TARGET, SECONDS_TARGET, MEMORY_TARGET, AGREEMENT_TARGET = 1.1, 3.0, 1.1, 1e-10


def _distances(mesh_name: str, n: int, dense: bool):
    import pymc_sle as sle
    from pymc_sle.distances import geodesic

    mesh = mesh_named(mesh_name)
    rng = np.random.default_rng(0)
    train = np.sort(rng.choice(mesh.n_vertices, min(n, mesh.n_vertices), replace=False))
    D = geodesic(mesh.vertices, mesh.faces, rows=train, cols=train, cutoff="auto", n_jobs=2)
    y = np.sin(6.0 * mesh.vertices[train, 1] / np.ptp(mesh.vertices[:, 1]))
    y = y + 0.1 * rng.standard_normal(train.size)
    return (sle.DistanceMatrix(D.to_dense(fill=D.cutoff)) if dense else D), D.cutoff, y


def _model(D, cutoff, y, inner: str, pymc_class: bool):
    import pymc as pm

    import pymc_sle as sle

    with pm.Model() as model:
        radius = pm.Uniform("radius", cutoff / 4, cutoff)
        ls = pm.LogNormal("ls", np.log(2.0), 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        cov = eta**2 * sle.SLE(D, radius=radius, ls=ls, inner=inner)
        gp = (pm.gp.Marginal if pymc_class else sle.gp.Marginal)(cov_func=cov)
        gp.marginal_likelihood("y", X=np.arange(y.size)[:, None], y=y, sigma=sigma)
    return model


def measure(mesh_name: str, n: int, inner: str, dense: bool, reps: int) -> dict:
    """In this process: both classes' log density + gradient, alternately, and their agreement."""
    from threadpoolctl import threadpool_limits

    from pymc_sle.kernels import DenseFromSparseWarning

    D, cutoff, y = _distances(mesh_name, n, dense)
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("error", DenseFromSparseWarning)  # the benchmark fails if dense
        pymc_fn, sle_fn = (
            compile_value_and_grad(_model(D, cutoff, y, inner, cls), "FAST_RUN")
            for cls in (True, False)
        )
        pymc_ms, sle_ms, ratio = paired_ms(pymc_fn, sle_fn, reps)
        outputs = [np.concatenate([np.ravel(v) for v in fn()]) for fn in (pymc_fn, sle_fn)]
    scale = np.maximum(np.abs(outputs[1]), 1.0)
    return {
        "problem": "dense" if dense else "sparse",
        "n": int(y.size),
        "inner": inner,
        "stored_per_row": None if dense else D.nnz / y.size,
        "pymc_ms": pymc_ms,
        "sle_ms": sle_ms,
        "ratio": ratio,
        "max_relative_difference": float(np.max(np.abs(outputs[0] - outputs[1]) / scale)),
    }


def peak(mesh_name: str, n: int, inner: str, dense: bool, pymc_class: bool) -> dict:
    """In this process: one class's model built, compiled and evaluated; the peak memory."""
    from threadpoolctl import threadpool_limits

    D, cutoff, y = _distances(mesh_name, n, dense)
    with threadpool_limits(limits=1, user_api="blas"):
        compile_value_and_grad(_model(D, cutoff, y, inner, pymc_class), "FAST_RUN")()
    return {"peak_mib": peak_mib()}


def _summary(result: dict) -> str:
    rows = [
        "# `pm.gp.Marginal(cov_func=SLE(...))` against `sle.gp.Marginal`",
        "",
        f"Mesh: {result['mesh']}; {result['machine']}; one BLAS thread; medians of "
        f"{result['reps']} alternate calls (ratio: median call by call). Method: "
        "`benchmarks/pymc_marginal.py`.",
        "",
        "| distances | n | inner | stored a row | `pm.gp.Marginal` ms | `sle.gp.Marginal` ms "
        "| ratio | max rel. difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        stored = "—" if r["stored_per_row"] is None else f"{r['stored_per_row']:.0f}"
        rows.append(
            f"| {r['problem']} | {r['n']:,} | {r['inner']} | {stored} | {r['pymc_ms']:.1f} | "
            f"{r['sle_ms']:.1f} | {r['ratio']:.3f} | {r['max_relative_difference']:.1e} |"
        )
    rows += ["", "Targets:", ""]
    rows += [f"- {t['target']}: {t['measured']} — **{'met' if t['met'] else 'missed'}**"
             for t in result["targets"]]  # fmt: skip
    return "\n".join(rows) + "\n"


def _targets(result: dict) -> list[dict]:
    rows, largest = result["rows"], result["rows"][-1]
    checked = [r for r in rows if (r["problem"], r["n"]) in {("dense", 1_000), ("sparse", 2_000)}]
    out = [
        {"target": f"time ratio ≤ {RATIO_TARGET} ({r['problem']}, n = {r['n']:,})",
         "measured": f"{r['ratio']:.3f}", "met": r["ratio"] <= RATIO_TARGET}
        for r in checked
    ]  # fmt: skip
    worst = max(r["max_relative_difference"] for r in rows)
    out.append({"target": f"values and gradients equal to {AGREEMENT_TARGET:g}",
                "measured": f"{worst:.1e}", "met": worst <= AGREEMENT_TARGET})  # fmt: skip
    if "peak_mib" in result:
        seconds = largest["pymc_ms"] / 1e3
        memory = result["peak_mib"]["pymc"] / result["peak_mib"]["sle"]
        out += [
            {"target": f"≤ {SECONDS_TARGET:g} s at n = {largest['n']:,}",
             "measured": f"{seconds:.2f} s", "met": seconds <= SECONDS_TARGET},
            {"target": f"peak memory within {MEMORY_TARGET - 1:.0%} of sle.gp.Marginal's",
             "measured": f"{result['peak_mib']['pymc']:.0f} MiB against "
                         f"{result['peak_mib']['sle']:.0f} MiB ({memory:.3f} x)",
             "met": memory <= MEMORY_TARGET},
        ]  # fmt: skip
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problems on an icosphere")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)
    mesh = "icosphere-3" if args.quick else ("bunny" if BUNNY.exists() else "icosphere-6")
    problems, reps = (QUICK, 2) if args.quick else (PROBLEMS, 7)
    result = {"mesh": mesh, "machine": f"{os.cpu_count()} cores", "reps": reps}
    result["rows"] = [measure(mesh, n, inner, dense, reps) for _, n, inner, dense in problems]
    if not args.quick:  # each class alone in a fresh process, at the largest size
        _, n, inner, dense = problems[-1]
        result["peak_mib"] = {
            name: in_child("benchmarks.pymc_marginal", "peak", mesh, n, inner, dense, cls)[
                "peak_mib"
            ]
            for name, cls in (("pymc", True), ("sle", False))
        }
    result["targets"] = _targets(result)
    stem = "pymc_marginal_quick" if args.quick else "pymc_marginal"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    (out / f"{stem}.md").write_text(_summary(result))
    print(_summary(result))


if __name__ == "__main__":
    main()
