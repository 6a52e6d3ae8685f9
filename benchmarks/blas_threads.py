"""Parallel NUTS chains with and without one BLAS thread per chain.

PyMC runs chains in separate processes; each process's OpenBLAS starts one thread per core, so
on a small machine the chains' BLAS pools oversubscribe the cores and busy-wait. This samples
the demo's SLE model (1-D data, 50 training points) twice with identical seeds -- once as is,
once inside ``threadpoolctl.threadpool_limits(1, "blas")`` -- and compares the wall time per
post-tuning leapfrog step. The step counts themselves differ between the runs: LAPACK rounds
differently with one and with several threads, so the two runs' NUTS trajectories drift apart
after a few hundred steps, and the total work differs by a few per cent. Time per step is the
comparison that rounding cannot change.

Writes benchmarks/results/blas_threads.json and .md.

Run:  python -m benchmarks.blas_threads [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from pathlib import Path

import pymc as pm
from threadpoolctl import threadpool_info, threadpool_limits

from pymc_sle.datasets import one_dimensional
from pymc_sle.demo import sle_model

HERE = Path(__file__).resolve().parent


def sample(limit_blas: bool, draws: int, chains: int, cores: int) -> dict:
    model, _, _ = sle_model(one_dimensional(50, 20, seed=0))
    context = threadpool_limits(1, user_api="blas") if limit_blas else contextlib.nullcontext()
    with model, context:
        start = time.perf_counter()
        idata = pm.sample(
            draws, tune=draws, chains=chains, cores=cores, random_seed=1, progressbar=False
        )
        seconds = time.perf_counter() - start
    steps = int(idata.sample_stats["n_steps"].sum())  # post-tuning steps only
    return {"seconds": seconds, "post_tuning_steps": steps, "ms_per_step": 1e3 * seconds / steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    draws, cores = (50, 2) if args.quick else (300, 2)
    sample(True, 10, 1, 1)  # warm-up: compile the model's C code once
    runs = {
        "default": sample(False, draws, 2, cores),
        "one_blas_thread": sample(True, draws, 2, cores),
    }
    ratio = runs["default"]["ms_per_step"] / runs["one_blas_thread"]["ms_per_step"]
    blas = [
        f"{p['internal_api']} {p['version']} ({p['num_threads']} threads)"
        for p in threadpool_info()
        if p["user_api"] == "blas"
    ]
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "blas": blas,
        "draws_and_tune_per_chain": draws,
        "chains": 2,
        "cores": cores,
        "runs": runs,
        "slowdown_per_step_without_limit": ratio,
    }
    lines = [
        "# Parallel chains and BLAS threads",
        "",
        f"Machine: {results['machine']}; BLAS: {', '.join(blas)}. One run; the ratio is within it.",
        f"SLE demo model, 2 chains on {cores} cores, {draws} tuning + {draws} draws per chain.",
        "",
        "| BLAS threads per chain | wall time (s) | post-tuning leapfrog steps | ms per step |",
        "|---|---|---|---|",
        *(
            f"| {label} | {run['seconds']:.1f} | {run['post_tuning_steps']} | "
            f"{run['ms_per_step']:.3f} |"
            for label, run in (
                ("default", runs["default"]),
                ("1 (threadpoolctl)", runs["one_blas_thread"]),
            )
        ),
        "",
        f"Slow-down per leapfrog step without the limit: **{ratio:.1f}x**. The step counts are not",
        "expected to be equal: LAPACK rounds differently with one and with several threads, so the",
        "trajectories drift apart; the time per step is the comparison rounding cannot change.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "blas_threads_quick" if args.quick else "blas_threads"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (args.out / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
