"""Warm starts of the Laplace mode and of EP's sites: the state found nearest the new inputs.

A sampler evaluates the approximation at a sequence of nearby hyperparameters, so the state
found at one point (Newton's ``a``, EP's site precisions and means) starts the next evaluation
close to its answer. Several chains may share a thread (nutpie runs four chains on two), so
the last state a thread found may be another chain's, far away. Each caller key therefore
keeps its last ``SIZE`` states, each with a *fingerprint* of the inputs it was found at
(at most ``SAMPLED`` evenly spaced entries of each input), and an evaluation starts from the
state whose fingerprint is nearest its own in Euclidean distance, the latest among equals.
The answer does not depend on the start, to the iteration's tolerance; only its cost does.
A key's states live until :func:`forget` drops them (the Op calls it when it is collected).
"""

from __future__ import annotations

import collections
import threading

import numpy as np

__all__ = ["SAMPLED", "SIZE", "WarmStart", "forget"]

#: States kept per caller key.
SIZE = 16
#: Entries of each input array that enter a fingerprint, at most.
SAMPLED = 1024

_STORES: dict = {}
_LOCK = threading.Lock()


class WarmStart:
    """Where an evaluation under ``key`` at ``inputs`` (arrays or scalars) starts: :meth:`get`
    the stored state nearest the inputs (``None`` when there is none), :meth:`put` the state
    found."""

    def __init__(self, key, inputs=()):
        self.key = key
        parts = [np.ravel(np.asarray(value, dtype=float)) for value in inputs]
        self.fingerprint = np.concatenate(
            [part[:: max(1, part.size // SAMPLED)] for part in parts] or [np.zeros(0)]
        )

    def get(self):
        with _LOCK:
            entries = list(_STORES.get(self.key, ()))
        best, nearest = None, np.inf
        for fingerprint, state in reversed(entries):  # the latest first, so it wins ties
            if fingerprint.shape == self.fingerprint.shape:
                distance = float(np.sum((fingerprint - self.fingerprint) ** 2))
                if distance < nearest or best is None:
                    best, nearest = state, distance
        return best

    def put(self, state) -> None:
        with _LOCK:
            store = _STORES.setdefault(self.key, collections.deque(maxlen=SIZE))
            store.append((self.fingerprint, state))


def forget(key) -> None:
    """Drop the states kept under ``key`` (none kept is fine)."""
    with _LOCK:
        _STORES.pop(key, None)
