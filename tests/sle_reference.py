"""An independent restatement of the paper's equations, one scalar at a time.

Written from the paper (Eqs. 5-7) with the ``math`` module and loops, sharing no code with
``pymc_sle``, so that a wrong factor in the library cannot also be in the reference.
"""

from __future__ import annotations

import math

import numpy as np


def reference_bump(d: float, a: float, r: float, beta: float) -> float:
    """Paper Eq. (5), one scalar at a time with the math module."""
    if d >= r:
        return 0.0
    return a * math.exp(-beta / (1.0 - d * d / (r * r)) + beta)


REFERENCE_INNER = {
    "rbf": lambda s: math.exp(-0.5 * s * s),
    "expquad": lambda s: math.exp(-0.5 * s * s),
    "matern12": lambda s: math.exp(-s),
    "matern32": lambda s: (1.0 + math.sqrt(3.0) * s) * math.exp(-math.sqrt(3.0) * s),
    "matern52": lambda s: (
        (1.0 + math.sqrt(5.0) * s + 5.0 * s * s / 3.0) * math.exp(-math.sqrt(5.0) * s)
    ),
}


def reference_sle(
    D, rows, cols, landmarks, *, radius, ls, amplitude=1.0, shape=1.0, inner="matern32"
):
    """Paper Eqs. (5)-(7) with loops: phi by bumps, Euclidean norm, inner kernel of norm / ls."""
    m = len(landmarks)
    a, r, beta = (
        np.broadcast_to(np.asarray(p, dtype=float), (m,)) for p in (amplitude, radius, shape)
    )

    def phi(i):
        return np.array(
            [reference_bump(D[i, z], a[j], r[j], beta[j]) for j, z in enumerate(landmarks)]
        )

    h = REFERENCE_INNER[inner]
    K = np.empty((len(rows), len(cols)))
    for p, i in enumerate(rows):
        for q, j in enumerate(cols):
            K[p, q] = h(math.sqrt(float(np.sum((phi(i) - phi(j)) ** 2))) / ls)
    return K
