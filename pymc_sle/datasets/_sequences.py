"""Sequences that evolve along a random tree, with a trait that evolves with them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SequenceData", "evolving_sequences"]

_ALPHABET = np.array(list("ACGT"))


@dataclass(frozen=True)
class SequenceData:
    """DNA-like strings with a continuous trait observed in noise.

    Attributes
    ----------
    sequences : list of str
        One string per item.
    y : numpy.ndarray
        Noisy trait values, ``f + noise``.
    f : numpy.ndarray
        Noise-free trait values (standardised to mean 0, standard deviation 1).
    parent : numpy.ndarray of int
        Index of each item's parent in the tree (``-1`` for the root).
    mutations : numpy.ndarray of int
        Number of mutations on the edge from each item's parent (0 for the root).
    noise_sd : float
        Standard deviation of the observation noise.
    """

    sequences: list[str]
    y: np.ndarray
    f: np.ndarray
    parent: np.ndarray
    mutations: np.ndarray
    noise_sd: float


def _mutate(letters: list[str], n_mutations: int, rng: np.random.Generator) -> list[str]:
    letters = list(letters)
    for _ in range(n_mutations):
        i = int(rng.integers(len(letters)))
        kind = int(rng.integers(3))
        if kind == 0:
            letters[i] = str(rng.choice(_ALPHABET))
        elif kind == 1:
            letters.insert(i, str(rng.choice(_ALPHABET)))
        elif len(letters) > 1:
            del letters[i]
    return letters


def evolving_sequences(
    n: int = 300,
    length: int = 40,
    mutation_rate: float = 3.0,
    noise_sd: float = 0.1,
    seed: int = 0,
) -> SequenceData:
    r"""Strings that evolve along a random tree, and a trait under Brownian motion on it.

    Item 0 is a random string of ``length`` letters from ``ACGT``. Item :math:`t \ge 1` copies a
    parent drawn uniformly from items :math:`0, \dots, t-1` (a random recursive tree) and
    applies :math:`k_t \sim \mathrm{Poisson}(\lambda)` mutations, each a substitution, insertion
    or deletion at a uniform position. The trait changes along the same edge by
    :math:`\sqrt{k_t}\,\varepsilon_t`, :math:`\varepsilon_t \sim \mathcal N(0, 1)`: Brownian motion
    in "mutation time", so two items' traits are correlated through their shared ancestry, which
    the edit distance between their strings measures approximately. ``f`` is the trait
    standardised to mean 0 and standard deviation 1, and ``y = f + noise_sd * N(0, 1)``.

    Edit distances between the strings (:func:`pymc_sle.distances.edit_distance`) are a metric
    that is not conditionally negative definite: a benchmark for kernels on strings.

    Parameters
    ----------
    n : int, default 300
        Number of items (at least 2).
    length : int, default 40
        Length of the root string (at least 1); descendants drift by insertions and deletions.
    mutation_rate : float, default 3.0
        Mean number of mutations per edge, :math:`\lambda > 0`.
    noise_sd : float, default 0.1
        Observation noise standard deviation (> 0), in units of the trait's standard deviation.
    seed : int
        Seed of the tree, the mutations, the trait and the noise.

    Examples
    --------
    >>> from pymc_sle.datasets import evolving_sequences
    >>> data = evolving_sequences(n=5, length=8, seed=1)
    >>> len(data.sequences), data.parent.tolist()[0], data.y.shape
    (5, -1, (5,))
    """
    if not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, but got {n!r}")
    if not isinstance(length, int | np.integer) or length < 1:
        raise ValueError(f"`length` must be an integer >= 1, but got {length!r}")
    for name, value in (("mutation_rate", mutation_rate), ("noise_sd", noise_sd)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"`{name}` must be finite and > 0, but got {value!r}")
    rng = np.random.default_rng(seed)
    letters = [list(rng.choice(_ALPHABET, size=length))]
    parent = np.full(n, -1, dtype=np.int64)
    mutations = np.zeros(n, dtype=np.int64)
    trait = np.zeros(n)
    for t in range(1, n):
        parent[t] = int(rng.integers(t))
        mutations[t] = int(rng.poisson(mutation_rate))
        letters.append(_mutate(letters[parent[t]], int(mutations[t]), rng))
        trait[t] = trait[parent[t]] + np.sqrt(mutations[t]) * rng.standard_normal()
    f = (trait - trait.mean()) / trait.std()
    return SequenceData(
        sequences=["".join(item) for item in letters],
        y=f + noise_sd * rng.standard_normal(n),
        f=f,
        parent=parent,
        mutations=mutations,
        noise_sd=float(noise_sd),
    )
