"""A deliberately slow metric, importable by the kill-and-resume test's subprocess."""

import time

CALLS = []


def slow_absolute_difference(a: float, b: float) -> float:
    CALLS.append((a, b))
    time.sleep(0.02)
    return abs(a - b)
