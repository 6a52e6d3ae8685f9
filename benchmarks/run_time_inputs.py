"""Cost of run-time input checks, feature mode and multi-output ``y`` (logp + gradient).

Index-mode SLE in :class:`pymc_sle.gp.Marginal` (Matérn-3/2, LogNormal radius, random ls, eta,
sigma), N points uniform in the unit square, Euclidean distances. Compared, in one run, as
interleaved rounds (fastest round: these machines are shared):

- ``constant``: ``X`` a numpy array, validated once when the graph is built;
- ``pm_data``: ``X`` a ``pm.Data`` container, whose indices ``CheckedRows`` validates every time
  the graph runs (issue 15: "at negligible cost"). The difference to ``constant`` also holds
  what PyTensor can no longer fold into constants (the gather of the distance rows), so the
  check itself is timed apart: ``check`` is a compiled function returning
  ``CheckedRows`` of N indices, ``cast`` the same function with a plain cast in its place;
  ``check - cast`` is what the check adds to every evaluation;
- ``features``: the same model in feature mode, ``X`` the (N, N) distances to the landmarks
  (a constant): what index mode costs over feature mode, whose gather it skips;
- ``two_outputs``: ``y`` of shape (2, N) against two separate (N,) likelihoods sharing the
  hyperparameters (``two_models``): one factorisation instead of two.

Writes benchmarks/results/run_time_inputs.{json,md}.

Run:  python -m benchmarks.run_time_inputs [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from threadpoolctl import threadpool_limits

import pymc_sle
from benchmarks._paths import RESULTS
from benchmarks._timing import interleaved_ms
from pymc_sle import SLE
from pymc_sle.kernels._inputs import CheckedRows

BACKENDS = {"C": "FAST_RUN", "NUMBA": "NUMBA"}


def problem(n: int):
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(n, 2))
    D = np.linalg.norm(points[:, None] - points[None], axis=-1)
    y = np.sin(6 * points[:, 0])[None, :] + 0.1 * rng.normal(size=(2, n))
    return D, y


def build(kind: str, D, y) -> pm.Model:
    n = D.shape[0]
    with pm.Model() as model:
        radius = pm.LogNormal("radius", np.log(0.3), 0.3)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 0.5)
        rows = np.arange(n, dtype=float)[:, None]
        X = pm.Data("X", rows) if kind == "pm_data" else rows
        kernel = SLE(D, radius=radius, ls=ls)
        if kind == "features":
            X, kernel = D, SLE(radius=radius, ls=ls, input_dim=n)
        gp = pymc_sle.gp.Marginal(cov_func=eta**2 * kernel)
        if kind == "two_outputs":
            gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
        elif kind == "two_models":
            for i in range(2):
                twin = pymc_sle.gp.Marginal(cov_func=eta**2 * SLE(D, radius=radius, ls=ls))
                twin.marginal_likelihood(f"y{i}", X=X, y=y[i], sigma=sigma)
        else:
            gp.marginal_likelihood("y", X=X, y=y[0], sigma=sigma)
    return model


def value_and_grad(model: pm.Model, mode: str):
    fn = model.compile_fn(
        [model.logp(), *pm.pytensorf.gradient(model.logp(), model.value_vars)], mode=mode
    )
    point = model.initial_point()
    return lambda: fn(point)


def check_and_cast(n: int, mode: str) -> dict:
    """Compiled ``CheckedRows`` of n indices and the same with a plain cast in its place."""
    values = pytensor.shared(np.arange(n, dtype=float))
    check = CheckedRows(n, "X", "rows of `distances`")(values)
    functions = {
        "check": pytensor.function([], check, mode=mode),
        "cast": pytensor.function([], pt.cast(values, "int64"), mode=mode),
    }
    return {name: (lambda fn=fn: fn()) for name, fn in functions.items()}


def measure(sizes, rounds: int) -> list[dict]:
    rows = []
    with threadpool_limits(1):
        for n in sizes:
            D, y = problem(n)
            for backend, mode in BACKENDS.items():
                fns = {
                    kind: value_and_grad(build(kind, D, y), mode)
                    for kind in ("constant", "pm_data", "features", "two_outputs", "two_models")
                }
                ms = interleaved_ms(fns, rounds, statistic=np.min)
                ms |= interleaved_ms(check_and_cast(n, mode), 20 * rounds, statistic=np.min)
                rows.append({
                    "N": n, "backend": backend, **ms,
                    "pm_data_ratio": ms["pm_data"] / ms["constant"],
                    "feature_ratio": ms["features"] / ms["constant"],
                    "check_share": max(ms["check"] - ms["cast"], 0.0) / ms["constant"],
                    "two_outputs_ratio": ms["two_outputs"] / ms["two_models"],
                })  # fmt: skip
                print(rows[-1], flush=True)
    return rows


def summary(rows: list[dict]) -> str:
    lines = [
        "# Run-time input checks, feature mode and multi-output `y`: what they cost",
        "",
        "Generated by `python -m benchmarks.run_time_inputs`: SLE log-likelihood + gradient in "
        "`pymc_sle.gp.Marginal`, ms per call, fastest of interleaved rounds, one BLAS thread. "
        "Models: see the script's docstring.",
        "",
        "| N | backend | constant X | pm.Data X | pm.Data / constant | the check alone "
        "(µs) | check / constant | feature mode | feature / index | y (2, N) | two (N,) "
        "likelihoods | (2, N) / two |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['N']} | {r['backend']} | {r['constant']:.2f} | {r['pm_data']:.2f} | "
            f"{r['pm_data_ratio']:.3f} | {1e3 * (r['check'] - r['cast']):.1f} | "
            f"{r['check_share']:.2%} | {r['features']:.2f} | {r['feature_ratio']:.3f} | "
            f"{r['two_outputs']:.2f} | {r['two_models']:.2f} | "
            f"{r['two_outputs_ratio']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, few rounds (CI)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes, rounds = ((30,), 3) if args.quick else ((200, 1000), 30)
    rows = measure(sizes, rounds)
    stem = "run_time_inputs_quick" if args.quick else "run_time_inputs"
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"rows": rows, "machine": {"cpus": os.cpu_count(), "platform": platform.platform()}}
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    (args.out / f"{stem}.md").write_text(summary(rows))
    print(summary(rows))


if __name__ == "__main__":
    main()
