"""What the README recipe costs on your own matrix, per number of training points n, and what
PyTensor's missing BLAS link costs.

Every n runs in a fresh process (its peak memory is its own), with the default BLAS threads, as
a user's script would: N points uniform in the unit square, Euclidean distances (the cost does
not depend on the metric), a noisy sine, every training point a landmark. Per n:

- ``priors_s``: :func:`pymc_sle.sle_priors` (the grid search of its start and scales);
- ``grad_ms``: one log density + gradient of the model (C backend, median of repeats);
- ``draw_s``: one NUTS draw after tuning, of :func:`pymc_sle.sample_basins` (every
  basin's model it samples), from one chain per basin of 150 tuning + 150 draws (PyMC's
  per-iteration ``perf_counter_diff``, without compilation); ``nuts_min`` extrapolates to the
  recipe's 4 chains x (1000 + 1000) on 2 cores: the 150 tuning iterations as measured, the
  other 1,850 at ``draw_s``, two chains one after the other on each core;
- ``peak_mib``: the process's peak resident memory.

The BLAS table times the log density + gradient in the C backend, in three rounds that alternate
two settings, each setting in a fresh process that times both likelihoods (the linked setting with
a compile folder of its own): as pip installs PyTensor (``blas__ldflags=""``: PyTensor's own C code
cannot call a BLAS and its dot products go through NumPy) and linked to a system OpenBLAS where
one is installed (Debian: ``libopenblas-dev``); for the recipe's SLE model and for PyMC's own GP,
``pm.gp.Marginal`` of a Matérn 3/2 of the same distances (the dense Cholesky PyTensor builds
itself). Every process keeps its default BLAS threads.

Writes benchmarks/results/size_limits.{json,md}.

Run:  python -m benchmarks.size_limits [--quick]
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import platform
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._paths import write_results
from benchmarks._timing import in_child, with_pytensor_flags

HERE = Path(__file__).resolve().parent


#: The likelihoods the BLAS table compares: the recipe's SLE model, and PyMC's own GP.
GPS = {"sle": "SLE, `pm.gp.Marginal`", "matern32": "Matérn 3/2 of the distance, PyMC's own"}


def _model(n: int, start: str = "mode"):
    """The README recipe at n training points: ``sle_priors``, then ``pm.gp.Marginal``."""
    import pymc as pm

    import pymc_sle as sle
    from benchmarks.performance import problem

    D, y = problem(n)
    train = np.arange(n)
    with pm.Model() as model:
        began = time.perf_counter()
        priors = sle.sle_priors(D, train, y, landmarks=train, start=start)
        seconds = time.perf_counter() - began
        gp = pm.gp.Marginal(cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=priors["sigma"])
    return model, priors, seconds


def _gradient_ms(model, reps: int) -> float:
    from benchmarks.performance import compile_value_and_grad, median_ms

    return median_ms(compile_value_and_grad(model, "FAST_RUN"), reps)


def measure_size(n: int, iterations: int, reps: int) -> dict:
    """In this process: the recipe's steps at n training points."""
    import pymc as pm

    import pymc_sle as sle

    model, priors, priors_s = _model(n)
    grad_ms = _gradient_ms(model, reps)
    tuning = drawing = 0.0  # what sample_basins samples: one chain per basin, per phase
    for _, basin_model in sle.basin_models(priors, model=model):
        idata = pm.sample(draws=iterations, tune=iterations, chains=1, cores=1, random_seed=1,
                          model=basin_model, progressbar=False, compute_convergence_checks=False,
                          discard_tuned_samples=False)  # fmt: skip
        tuning += float(idata.warmup_sample_stats["perf_counter_diff"].sum())
        drawing += float(idata.sample_stats["perf_counter_diff"].sum())
    draw_s = drawing / iterations
    chain_s = tuning + (2000 - iterations) * draw_s  # one chain of 1000 tuning + 1000 draws
    return {
        "n": n,
        "priors_s": priors_s,
        "grad_ms": grad_ms,
        "draw_s": draw_s,
        "nuts_min": 2 * chain_s / 60,  # 4 chains on 2 cores: 2 chains one after the other
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_blas(n: int, gps: list, reps: int) -> dict:
    """In this process (its PYTENSOR_FLAGS set by the caller): log density + gradient of each
    likelihood in ``gps`` (keys of :data:`GPS`), as ``{"rows": [...]}``."""
    import pytensor

    from benchmarks.performance import build_model, problem

    rows = []
    for gp in gps:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the no-BLAS warning is what is being measured
            if gp == "sle":
                model = _model(n, start="prior")[0]  # the search is not timed here
            else:
                model = build_model("pymc_matern", *problem(n))
            ms = _gradient_ms(model, reps)
        rows.append({"n": n, "gp": gp, "ldflags": pytensor.config.blas__ldflags, "grad_ms": ms})
    return {"rows": rows}


def _child(function: str, *args, env: dict | None = None) -> dict:
    return in_child("benchmarks.size_limits", function, *args, env=env)


def blas_rows(sizes, gps, reps: int, rounds: int, linked_too: bool = True) -> list[dict]:
    """Each (n, BLAS) in ``rounds`` fresh processes, each timing every likelihood in ``gps``, the
    two BLAS settings alternating (the linked one only with ``linked_too`` and a system OpenBLAS);
    ``grad_ms`` is the median over the rounds of each process's median. The linked setting
    compiles into a folder of its own (PyTensor's default folder holds what pip's PyTensor
    compiled without a BLAS, and is reused for that setting)."""
    library = ctypes.util.find_library("openblas") if linked_too else None
    flags = {"none (pip)": ""} | ({"OpenBLAS": "-lopenblas"} if library else {})
    times: dict[tuple, list] = {}
    with tempfile.TemporaryDirectory() as linked:
        for _ in range(rounds):
            for n in sizes:
                for label, ldflags in flags.items():
                    linked_dir = f",compiledir={linked}" if ldflags else ""
                    setting = f"blas__ldflags={ldflags}{linked_dir}"
                    env = {"PYTENSOR_FLAGS": with_pytensor_flags(setting)}
                    for row in _child("measure_blas", n, list(gps), reps, env=env)["rows"]:
                        key = (n, row["gp"], label, row["ldflags"])
                        times.setdefault(key, []).append(row["grad_ms"])
    return [{"n": n, "gp": gp, "blas": label, "ldflags": ldflags,
             "grad_ms": float(np.median(ms)), "rounds_ms": ms}
            for (n, gp, label, ldflags), ms in times.items()]  # fmt: skip


def summary(result: dict) -> str:
    lines = [
        "# What the recipe costs per training set size, and PyTensor's BLAS link",
        "",
        f"Machine: {result['machine']}. One run; each n in a fresh process with its default "
        "BLAS threads. The README recipe (`sle_priors`, `priors.covariance()` in "
        "`pm.gp.Marginal`, `sample_basins`) on n points uniform in the unit square, every one "
        "a training point and a landmark. The NUTS column extrapolates one chain per basin of "
        "150 tuning iterations and 150 draws (PyMC's per-iteration timings, compilation "
        "excluded) to 4 chains x (1000 + 1000) on 2 cores.",
        "",
        "| n | sle_priors (s) | log density + gradient (ms) | NUTS draw (ms) "
        "| 4 x (1000 + 1000) on 2 cores (min, extrapolated) | peak memory (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["sizes"]:
        lines.append(
            f"| {r['n']} | {r['priors_s']:.1f} | {r['grad_ms']:.1f} | {1e3 * r['draw_s']:.1f} "
            f"| {r['nuts_min']:.1f} | {r['peak_mib']:.0f} |"
        )
    lines += [
        "",
        "PyTensor's C backend with and without a linked BLAS (log density + gradient, ms; median "
        "of three rounds, each in a fresh process, the two settings alternating):",
        "",
        "| n | likelihood | no BLAS (pip) | OpenBLAS | no BLAS / OpenBLAS |",
        "|---|---|---|---|---|",
    ]
    by_key = {(r["n"], r["gp"], r["blas"]): r["grad_ms"] for r in result["blas"]}
    for n, gp in dict.fromkeys((r["n"], r["gp"]) for r in result["blas"]):
        plain, linked = by_key[(n, gp, "none (pip)")], by_key.get((n, gp, "OpenBLAS"))
        name = GPS[gp]
        if linked is None:
            lines.append(f"| {n} | {name} | {plain:.2f} | not measured | |")
        else:
            lines.append(f"| {n} | {name} | {plain:.2f} | {linked:.2f} | {plain / linked:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    sizes, blas_sizes, iterations, reps, rounds = (
        ((30,), (40,), 5, 2, 1) if args.quick else ((100, 200, 400, 800), (400, 800), 150, 20, 3)
    )
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "sizes": [],
        # a process per row; --quick builds each likelihood, and skips the compilation a linked
        # BLAS needs into an empty folder
        "blas": blas_rows(blas_sizes, tuple(GPS), reps, rounds, linked_too=not args.quick),
    }
    for n in sizes:  # --quick: in this process (its peak memory means nothing there)
        row = (
            measure_size(n, iterations, reps)
            if args.quick
            else _child("measure_size", n, iterations, reps)
        )
        result["sizes"].append(row)
        print(result["sizes"][-1], flush=True)
    write_results(args.out, "size_limits", args.quick, result, summary(result))


if __name__ == "__main__":
    main()
