"""The 1-D benchmark (the paper's Figure 1 setting): SLE vs Matern vs the raw-distance embedding.

Data: the core demo's function (`pymc_sle.datasets.one_dimensional_truth`) on [0, 1], observed
with noise sd 0.1. A pool of 400 uniform inputs to draw training sets from and a fixed test
grid of 200 points; distances |x - x'|, which are Euclidean, so the Matern baseline is valid
and the well-specified reference.

Models (Matern-3/2; flat on the log scale between bounds): signal variance [0.01, 10] x
Var(y_train), noise variance [1e-6, 1], zero mean.
- ``SLE``: radius [smallest, largest] training distance, amplitude 1, ls [0.01, 100].
- ``Matern``: the stationary Matern of |x - x'|, ls [1e-3, 10].
- ``Raw-distance embedding``: the ablation.

Run:  `python -m benchmarks.paper.one_d [--quick] [--draws 30] [--nuts-draws 5] [--jobs 2]`
"""

from __future__ import annotations

import sys

import numpy as np

from benchmarks.paper.models import (
    distance_matern_spec,
    raw_embedding_spec,
    scaled_to_data,
    sle_spec,
)
from benchmarks.paper.problem import Problem
from benchmarks.paper.runner import experiment, parser
from pymc_sle.datasets import one_dimensional_truth

#: The title of the experiment's tables.
TITLE = "1-D benchmark (paper Figure 1 setting)"
TABLE_SIZES = (25, 50, 100)
NUTS_MODELS = ("SLE", "Matern")


def problem(n_pool: int = 400, n_test: int = 200, noise_sd: float = 0.1, seed: int = 5):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0.0, 1.0, n_pool), np.linspace(0.0, 1.0, n_test)])
    f = one_dimensional_truth(x)
    y = f + noise_sd * rng.standard_normal(x.size)
    D = np.abs(x[:, None] - x[None, :])

    def distances(points, cols, kind):
        return D[np.ix_(points, cols)]

    pool, test = np.arange(n_pool), np.arange(n_pool, n_pool + n_test)
    return Problem("one_d", y, test, pool, distances, {"f": f, "x": x})


def specs() -> list:
    hyper = scaled_to_data((0.01, 10.0), (1e-6, 1.0))
    return [
        sle_spec("SLE", "euclidean", "matern32", hyper, ls=(0.01, 100.0)),
        distance_matern_spec("Matern", "euclidean", "matern32", hyper, ls=(1e-3, 10.0)),
        raw_embedding_spec("Raw-distance embedding", "euclidean", "matern32", hyper),
    ]


def main(argv=None) -> None:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    prob = problem(n_pool=60, n_test=30) if args.quick else problem()
    experiment(args, prob, sys.modules[__name__], quick_size=20)


if __name__ == "__main__":
    main()
