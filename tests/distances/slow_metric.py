"""Deliberately slow metrics, importable by worker processes and by the kill-and-resume test's
subprocess."""

import os
import time

CALLS = []


def slow_absolute_difference(a: float, b: float) -> float:
    CALLS.append((a, b))
    time.sleep(0.02)
    return abs(a - b)


class InWorker:
    """``metric(a, b)``: 0 when evaluated in the process that created it, 1 in another (a
    worker); it sleeps ``a`` seconds, so the caller sets how long a job takes."""

    def __init__(self):
        self.parent = os.getpid()

    def __call__(self, a: float, b: float) -> float:
        time.sleep(a)
        return float(os.getpid() != self.parent)
