"""The PyTensor backends the fast paths are tested on, and what a failed run-time check raises
on each."""

from __future__ import annotations

import importlib.util

MODES = ["FAST_RUN", "NUMBA"] + (["JAX"] if importlib.util.find_spec("jax") else [])


def raised_by(mode):
    """What a failed check raises: a ValueError, or on JAX the runtime error carrying it (a traced
    program cannot raise; the host callback's ValueError aborts the computation)."""
    if mode == "JAX":
        import jax

        return (ValueError, jax.errors.JaxRuntimeError)
    return ValueError
