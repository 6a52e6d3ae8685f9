"""Problems and trials: what one experiment observes and how a trial draws its training set.

An experiment is a `Problem` (observations, a fixed test set, a training pool and a way to get
distances for one trial); `Problem.trials` draws R training sets per size with fixed seeds, and
`Problem.context` gives a model builder the distance blocks of one trial in local indices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pymc_sle import DistanceMatrix

__all__ = ["Context", "Problem", "Trial"]


@dataclass
class Trial:
    """One training draw: global indices of the training points."""

    size: int
    draw: int
    seed: int
    train: np.ndarray


@dataclass
class Context:
    """What a model builder sees for one trial, in local indices.

    Points are ``points = concat(train, test)`` (global indices): ``X_train = 0..n-1``,
    ``X_test = n..n+n_test-1``. ``landmark[kind]`` is the (n + n_test, n) block of distance
    ``kind`` to the training points (the SLE's landmarks); ``square[kind]`` the
    (n + n_test, n + n_test) block, for the models that need one.
    """

    trial: Trial
    points: np.ndarray
    y_train: np.ndarray
    landmark: dict[str, DistanceMatrix]
    square: dict[str, DistanceMatrix]
    extras: dict = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        return self.trial.size

    @property
    def X_train(self) -> np.ndarray:
        return np.arange(self.n_train)[:, None]

    @property
    def X_test(self) -> np.ndarray:
        return np.arange(self.n_train, self.points.size)[:, None]


@dataclass
class Problem:
    """Observations ``y`` on ``n_points`` points, a fixed ``test`` set and a training ``pool``.

    ``distances(points, cols, kind)`` returns the (len(points), len(cols)) block of the distance
    named ``kind`` (e.g. "geodesic", "W2") between global point indices.
    """

    name: str
    y: np.ndarray
    test: np.ndarray
    pool: np.ndarray
    distances: Callable[[np.ndarray, np.ndarray, str], np.ndarray]
    extras: dict = field(default_factory=dict)

    def trials(self, sizes, n_draws: int, seed: int) -> list[Trial]:
        """R draws per size; the seed of draw ``r`` at size ``n`` is fixed by (seed, n, r)."""
        out = []
        for size in sizes:
            if size > self.pool.size:
                raise ValueError(f"training size {size} exceeds the pool of {self.pool.size}")
            for draw in range(n_draws):
                trial_seed = int(np.random.SeedSequence([seed, size, draw]).generate_state(1)[0])
                rng = np.random.default_rng(trial_seed)
                train = np.sort(rng.choice(self.pool, size=size, replace=False))
                out.append(Trial(size, draw, trial_seed, train))
        return out

    def context(self, trial: Trial, kinds: set[str], square_kinds: set[str]) -> Context:
        points = np.concatenate([trial.train, self.test])
        return Context(
            trial,
            points,
            self.y[trial.train],
            landmark={k: DistanceMatrix(self.distances(points, trial.train, k)) for k in kinds},
            square={k: DistanceMatrix(self.distances(points, points, k)) for k in square_kinds},
            extras=self.extras,
        )
