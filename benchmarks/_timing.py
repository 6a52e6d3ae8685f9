"""Timing, peak memory and fresh processes shared by the benchmarks."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from benchmarks._paths import ROOT


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


def paired_ms(first, second, reps: int) -> tuple[float, float, float]:
    """Median ms of ``first`` and of ``second``, called alternately, and the median of their
    ratio rep by rep: on a shared machine, a change of load hits both sides of each ratio."""
    first(), second()  # warm-up
    times = np.empty((reps, 2))
    for rep in range(reps):
        for k, fn in enumerate((first, second)):
            began = time.perf_counter()
            fn()
            times[rep, k] = time.perf_counter() - began
    medians = 1e3 * np.median(times, axis=0)
    return float(medians[0]), float(medians[1]), float(np.median(times[:, 0] / times[:, 1]))


def peak_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def with_pytensor_flags(setting: str) -> str:
    """This process's ``PYTENSOR_FLAGS`` with ``setting`` appended (later flags win)."""
    return ",".join(filter(None, (os.environ.get("PYTENSOR_FLAGS", ""), setting)))


def in_child(module: str, function: str, *args, env: dict | None = None) -> dict:
    """``module.function(*args)`` (a dict) in a fresh Python process: its peak memory, its
    environment (``env`` added to this one's) and its BLAS are its own."""
    code = (
        "import json\n"
        f"from {module} import {function}\n"
        f"print('RESULT', json.dumps({function}(*{args!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, **(env or {})})  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"{module}.{function}{args} failed:\n{out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))
