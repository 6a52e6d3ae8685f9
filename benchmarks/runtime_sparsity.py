"""Sparse work that follows the radius at run time: an unbounded (LogNormal) radius prior.

With a LogNormal radius no non-zero pattern is known when the model is built, so
``embedding="auto"`` finds the bump's support at every evaluation (from the distance block's
columns sorted once), evaluates the bump there only, and takes sparse products when at most
``SPARSE_FILL_THRESHOLD`` of it is non-zero. This compares the log-likelihood + gradient of that
model at ~4 % fill with:

- ``fast_matern``: a Matérn-3/2 on the distance in the same ``pymc_sle.gp.Marginal`` (the target:
  SLE at most 1.3x this, issue 14);
- ``sle_dense``: the same SLE model with ``embedding="dense"`` (what ``auto`` did before);
- ``sle_bounded``: the radius ~ Uniform(r/2, 3r/2), ``auto`` (the same run-time support, its
  candidates cut at the bound);
- ``sle_static``: the same bounded radius with ``embedding="sparse"``: the bump evaluated on
  every distance below the bound, the pattern fixed when the model is built.

And above the threshold, at ``DENSE_FILL`` (35 %) and ``DENSE_N`` = 400, where ``auto`` takes the
dense products (on Teddy at n = 400 the embedding is 30-75 % non-zero at the posterior's radii,
so every evaluation there takes them): ``sle_auto_dense_fill`` against ``sle_dense_dense_fill``,
what looking for a pattern costs when there is none to use (it should cost next to nothing).

Same data as ``benchmarks/performance.py`` (N uniform points in the unit square, Euclidean
distances). The radius is evaluated at the value that puts 4 % of the distances inside the
bump. All models are timed in interleaved rounds within one run, one BLAS thread, so the
ratios compare like with like on a shared machine.

Writes benchmarks/results/runtime_sparsity.{json,md}.

Run:  python -m benchmarks.runtime_sparsity [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

import pymc_sle
from benchmarks._paths import RESULTS
from benchmarks.performance import compile_value_and_grad, problem, radius_for_fill
from pymc_sle import SLE
from pymc_sle.baselines import DistanceCovariance
from pymc_sle.kernels import SPARSE_FILL_THRESHOLD

FILL = 0.04
DENSE_FILL = 0.35
DENSE_N = 400
TARGET = 1.3
KINDS = ("fast_matern", "sle_auto", "sle_dense", "sle_bounded", "sle_static")
#: ``(name, kind, fill)`` of the models timed above the sparse threshold.
DENSE_KINDS = (
    ("sle_auto_dense_fill", "sle_auto", DENSE_FILL),
    ("sle_dense_dense_fill", "sle_dense", DENSE_FILL),
)
BACKENDS = {"C": "FAST_RUN", "NUMBA": "NUMBA", "JAX": "JAX"}


def build_model(kind: str, D: np.ndarray, y: np.ndarray, fill: float = FILL) -> pm.Model:
    """``kind``'s model; every free variable's initial point is its prior median, so the SLE
    radius is evaluated at the value that puts ``fill`` of the distances inside the bump."""
    r_fill = radius_for_fill(D, fill)
    X = np.arange(len(y))[:, None]
    with pm.Model() as model:
        ls = pm.LogNormal("ls", 0.0, 1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        if kind == "fast_matern":
            cov = DistanceCovariance(D, ls=ls)
        elif kind in ("sle_bounded", "sle_static"):
            radius = pm.Uniform("radius", 0.5 * r_fill, 1.5 * r_fill, initval=r_fill)
            cov = SLE(
                D, radius=radius, ls=ls, embedding="auto" if kind == "sle_bounded" else "sparse"
            )
        else:
            radius = pm.LogNormal("radius", np.log(r_fill), 0.5)
            cov = SLE(D, radius=radius, ls=ls, embedding=kind.removeprefix("sle_"))
        pymc_sle.gp.Marginal(cov_func=eta**2 * cov).marginal_likelihood("y", X=X, y=y, sigma=sigma)
    return model


def interleaved_ms(functions: dict, rounds: int, statistic=np.median) -> dict[str, float]:
    """ms per call of each function (median over rounds by default), timed in rounds after one
    warm-up, each round in a new (seeded) random order: what runs just before a function
    changes its time (a model with large dense arrays leaves the allocator and the caches in
    another state), so no function may always follow the same one."""
    times = {name: [] for name in functions}
    for fn in functions.values():
        fn()
    names = list(functions)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for name in rng.permutation(names):
            start = time.perf_counter()
            functions[name]()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * float(statistic(t)) for name, t in times.items()}


def measure(n: int, dense_n: int, backends: dict, rounds: int) -> list[dict]:
    D, y = problem(n)
    D_dense, y_dense = problem(dense_n)
    rows = []
    for backend, mode in backends.items():
        models = {kind: build_model(kind, D, y) for kind in KINDS}
        models |= {
            name: build_model(kind, D_dense, y_dense, fill) for name, kind, fill in DENSE_KINDS
        }
        functions = {name: compile_value_and_grad(model, mode) for name, model in models.items()}
        ms = interleaved_ms(functions, rounds)
        rows.append({"N": n, "backend": backend, **ms,
                     **{f"{k}_ratio": ms[k] / ms["fast_matern"] for k in KINDS[1:]},
                     "auto_over_dense_dense_fill": ms["sle_auto_dense_fill"]
                     / ms["sle_dense_dense_fill"]})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def summary(rows: list[dict], n: int, dense_n: int) -> str:
    lines = [
        "# Sparse work that follows the radius at run time (LogNormal radius)",
        "",
        "Generated by `python -m benchmarks.runtime_sparsity`: log-likelihood + gradient, median "
        f"ms over interleaved rounds, one BLAS thread, N = {n}, radius at {FILL:.0%} fill. "
        "Ratios are to `fast_matern` (a Matérn on the distance in the same `pymc_sle.gp.Marginal`)."
        " Models: see the script's docstring.",
        "",
        "| backend | fast_matern | sle_auto (LogNormal) | sle_dense | sle_bounded (Uniform) "
        f"| sle_static | auto / matern | target ≤ {TARGET} | dense / matern | bounded / matern "
        "| static / matern |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        met = "met" if r["sle_auto_ratio"] <= TARGET else "missed"
        if r["backend"] == "JAX":
            met = "n/a (dense on JAX)"
        lines.append(
            f"| {r['backend']} | {r['fast_matern']:.1f} | {r['sle_auto']:.1f} | "
            f"{r['sle_dense']:.1f} | {r['sle_bounded']:.1f} | {r['sle_static']:.1f} | "
            f"{r['sle_auto_ratio']:.2f} | {met} | {r['sle_dense_ratio']:.2f} | "
            f"{r['sle_bounded_ratio']:.2f} | {r['sle_static_ratio']:.2f} |"
        )
    lines += [
        "",
        f"Above the sparse threshold ({DENSE_FILL:.0%} fill, N = {dense_n}), where `auto` takes "
        "the dense products: what looking for a pattern costs when there is none to use.",
        "",
        "| backend | sle_auto (ms) | sle_dense (ms) | auto / dense |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['backend']} | {r['sle_auto_dense_fill']:.1f} | {r['sle_dense_dense_fill']:.1f} "
        f"| {r['auto_over_dense_dense_fill']:.2f} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, few rounds (CI)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n, dense_n, rounds = (150, 150, 2) if args.quick else (1000, DENSE_N, 25)
    backends = {
        name: mode
        for name, mode in BACKENDS.items()
        if (name == "C" or not args.quick)
        and (name != "JAX" or importlib.util.find_spec("jax") is not None)
    }
    with threadpool_limits(1, user_api="blas"):
        rows = measure(n, dense_n, backends, rounds)
    stem = "runtime_sparsity_quick" if args.quick else "runtime_sparsity"
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "N": n,
        "fill": FILL,
        "dense_fill": DENSE_FILL,
        "dense_N": dense_n,
        "rounds": rounds,
        "sparse_fill_threshold": SPARSE_FILL_THRESHOLD,
    }
    (args.out / f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    (args.out / f"{stem}.md").write_text(summary(rows, n, dense_n))
    print(summary(rows, n, dense_n))


if __name__ == "__main__":
    main()
