"""Timing shared by the benchmarks."""

from __future__ import annotations

import time

import numpy as np


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
