"""Distances between strings."""

from __future__ import annotations

__all__ = ["edit_distance"]


def edit_distance(a: str, b: str) -> float:
    """Levenshtein distance: the fewest insertions, deletions and substitutions from a to b.

    A metric on strings that is not conditionally negative definite, so kernels of it are not
    PSD in general; SLE kernels of it are. Dynamic programming in O(len(a) * len(b)).

    Examples
    --------
    >>> edit_distance("kitten", "sitting")
    3.0
    """
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError(
            f"edit_distance compares strings, but got {type(a).__name__} and {type(b).__name__}"
        )
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return float(previous[-1])
