"""Parallel NUTS chains with and without one BLAS thread per chain.

PyMC runs chains in separate processes; each process's OpenBLAS starts one thread per core, so
on a small machine the chains' BLAS pools oversubscribe the cores and busy-wait. PyMC's own
limit (``blas_cores``) is not applied when the chains start by ``fork``, Linux's default, so
the library's Ops take one BLAS thread in a worker process themselves
(``pymc_sle._blas_threads``). This samples the demo's SLE model (1-D data, 50 training points)
three times with identical seeds -- a plain ``pm.sample``; the same with the library's limit
switched off, as it was before; and inside ``threadpoolctl.threadpool_limits(1, "blas")``, the
advice before -- and compares the wall time per post-tuning leapfrog step. The step counts
themselves differ between the runs: LAPACK rounds differently with one and with several
threads, so the runs' NUTS trajectories drift apart after a few hundred steps, and the total
work differs by a few per cent. Time per step is the comparison that rounding cannot change.

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

from pymc_sle import _blas_threads
from pymc_sle.datasets import one_dimensional
from pymc_sle.demo import sle_model

HERE = Path(__file__).resolve().parent


def sample(run: str, draws: int, chains: int, cores: int) -> dict:
    """``run``: ``"plain"``, ``"library_limit_off"`` or ``"threadpool_limits"``."""
    model, _, _ = sle_model(one_dimensional(50, 20, seed=0))
    context = threadpool_limits(1, user_api="blas") if run == "threadpool_limits" else None
    if run == "library_limit_off":
        # The forked chains inherit this module state: the Ops' limit does nothing there.
        context = _without_library_limit()
    with model, context or contextlib.nullcontext():
        start = time.perf_counter()
        idata = pm.sample(
            draws, tune=draws, chains=chains, cores=cores, random_seed=1, progressbar=False
        )
        seconds = time.perf_counter() - start
    steps = int(idata.sample_stats["n_steps"].sum())  # post-tuning steps only
    return {"seconds": seconds, "post_tuning_steps": steps, "ms_per_step": 1e3 * seconds / steps}


@contextlib.contextmanager
def _without_library_limit():
    saved = _blas_threads.worker_blas_limit
    _blas_threads.worker_blas_limit = contextlib.nullcontext
    try:
        yield
    finally:
        _blas_threads.worker_blas_limit = saved


RUNS = {
    "plain": "plain `pm.sample` (the library's limit)",
    "library_limit_off": "plain `pm.sample`, the library's limit off (as before)",
    "threadpool_limits": "`threadpool_limits(1)` around `pm.sample`",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    draws, cores = (50, 2) if args.quick else (300, 2)
    sample("threadpool_limits", 10, 1, 1)  # warm-up: compile the model's C code once
    runs = {run: sample(run, draws, 2, cores) for run in RUNS}
    ratio = runs["library_limit_off"]["ms_per_step"] / runs["plain"]["ms_per_step"]
    plain_vs_wrapped = runs["plain"]["ms_per_step"] / runs["threadpool_limits"]["ms_per_step"]
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
        "plain_over_threadpool_limits": plain_vs_wrapped,
    }
    lines = [
        "# Parallel chains and BLAS threads",
        "",
        f"Machine: {results['machine']}; BLAS: {', '.join(blas)}. One run; the ratio is within it.",
        f"SLE demo model, 2 chains on {cores} cores, {draws} tuning + {draws} draws per chain.",
        "",
        "| run | wall time (s) | post-tuning leapfrog steps | ms per step |",
        "|---|---|---|---|",
        *(
            f"| {label} | {runs[run]['seconds']:.1f} | {runs[run]['post_tuning_steps']} | "
            f"{runs[run]['ms_per_step']:.3f} |"
            for run, label in RUNS.items()
        ),
        "",
        f"Without the library's limit each leapfrog step is **{ratio:.1f}x** slower; a plain",
        f"`pm.sample` takes {plain_vs_wrapped:.2f}x the time per step of one wrapped in",
        "`threadpool_limits`. The step counts are not expected to be equal: LAPACK rounds",
        "differently with one and with several threads, so the trajectories drift apart; the time",
        "per step is the comparison rounding cannot change.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "blas_threads_quick" if args.quick else "blas_threads"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (args.out / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
