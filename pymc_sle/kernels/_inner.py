"""The inner stationary kernels that landmark embeddings and distance kernels apply."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import ExpQuad, Matern12, Matern32, Matern52, Stationary

__all__ = ["INNER_KERNELS", "kernel_of_squared_distance", "resolve_inner"]

#: Names accepted by ``inner=...`` and the PyMC stationary kernel each stands for.
INNER_KERNELS: dict[str, type[Stationary]] = {
    "rbf": ExpQuad,
    "expquad": ExpQuad,
    "matern12": Matern12,
    "matern32": Matern32,
    "matern52": Matern52,
}


def resolve_inner(inner: str | type[Stationary], inner_kwargs: dict | None = None) -> Stationary:
    """The inner kernel ``h`` as a unit-length PyMC ``Stationary`` instance.

    ``inner`` is a name from `INNER_KERNELS` or a ``pm.gp.cov.Stationary`` subclass that
    implements ``full_from_distance``; the callers divide distances by their own ``ls`` first.
    """
    if isinstance(inner, str):
        key = inner.lower()
        if key not in INNER_KERNELS:
            raise ValueError(f"`inner` must be one of {sorted(INNER_KERNELS)}, but got {inner!r}")
        cls = INNER_KERNELS[key]
    elif isinstance(inner, type) and issubclass(inner, Stationary):
        if inner.full_from_distance is Stationary.full_from_distance:
            raise TypeError(
                f"`inner` must implement `full_from_distance`, but {inner.__name__} does not"
            )
        cls = inner
    else:
        raise TypeError(
            "`inner` must be a kernel name or a pm.gp.cov.Stationary subclass (the class, not an "
            f"instance), but got {inner!r}"
        )
    return cls(1, ls=1.0, **(inner_kwargs or {}))


def _safe_sqrt(x):
    """``sqrt(x)`` for ``x >= 0`` whose gradient is 0, not inf, where ``x == 0``."""
    positive = pt.gt(x, 0.0)
    return pt.switch(positive, pt.sqrt(pt.switch(positive, x, 1.0)), 0.0)


def kernel_of_squared_distance(inner: Stationary, squared, ls):
    r""":math:`h(\sqrt{\Delta} / \ell)` for squared distances :math:`\Delta \ge 0`, with a finite
    gradient at :math:`\Delta = 0` (equal inputs) and the decaying kernels' limit 0 at
    :math:`\Delta = \infty` (an overflowing embedding), where ``inf * exp(-inf)`` would be NaN."""
    finite = pt.lt(squared, np.inf)
    distance = _safe_sqrt(pt.switch(finite, squared, 0.0)) / ls
    value = inner.full_from_distance(distance, squared=False)
    return pt.switch(finite, value, 0.0)
