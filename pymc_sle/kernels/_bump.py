"""The compactly supported bump function of the SLE embedding (paper Eq. 5)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from pymc_sle._validation import constant_value

__all__ = ["bump", "bump_formula"]


def _check_concrete_positive(name: str, value) -> None:
    concrete = constant_value(value)
    if concrete is None:
        return
    concrete = np.asarray(concrete, dtype=float)
    if not np.isfinite(concrete).all() or (concrete <= 0).any():
        raise ValueError(f"`{name}` must be finite and > 0, but got {concrete.min():.6g}")


def bump(d, radius, amplitude=1.0, shape=1.0):
    r"""Evaluate the compactly supported bump function of the SLE embedding.

    .. math::

        b(d;\, a, r, \beta) =
        \begin{cases}
            a \exp\!\left(\beta - \dfrac{\beta}{1 - d^2 / r^2}\right) & d < r, \\
            0 & d \ge r,
        \end{cases}

    with amplitude :math:`a > 0`, radius :math:`r > 0` and shape :math:`\beta > 0`. The bump
    equals :math:`a` at :math:`d = 0`, decreases strictly on :math:`[0, r)` and vanishes with all
    its derivatives at :math:`d = r`. Larger :math:`\beta` concentrates it near the centre.

    Parameters
    ----------
    d : array_like or TensorVariable
        Non-negative distances, any shape.
    radius, amplitude, shape : float, array_like or TensorVariable
        Parameters, broadcast against ``d`` with numpy rules; a vector of length ``m`` applies
        one value per column of an ``(n, m)`` distance block (the non-stationary SLE).

    Returns
    -------
    numpy.ndarray or TensorVariable
        Same shape as the broadcast inputs: a numpy array when every input is numeric, a PyTensor
        tensor when any input is symbolic.

    Notes
    -----
    In the symbolic version the untaken branch is evaluated at a safe point, so gradients with
    respect to ``d``, ``radius``, ``amplitude`` and ``shape`` are finite for every ``d >= 0`` and
    ``radius > 0``, including ``d >= r``, ``d -> r^-`` and ``d = 0``.

    References
    ----------
    Noack, Alghalayini and Risser, "A General Kernel Framework for Non-CND Distance Measures
    Using \|D\|-Dimensional Sparse Landmark Embeddings", Eq. (5).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import bump
    >>> bump(np.array([0.0, 0.5, 1.0, 2.0]), radius=1.0).round(4)
    array([1.    , 0.7165, 0.    , 0.    ])
    """
    _check_concrete_positive("radius", radius)
    _check_concrete_positive("amplitude", amplitude)
    _check_concrete_positive("shape", shape)
    if any(isinstance(v, Variable) for v in (d, radius, amplitude, shape)):
        return bump_formula(pt, *(pt.as_tensor_variable(v) for v in (d, radius, amplitude, shape)))
    return bump_formula(np, *(np.asarray(v, dtype=float) for v in (d, radius, amplitude, shape)))


def bump_formula(xp, d, radius, amplitude, shape):
    """Eq. (5) written once for ``xp`` = numpy or pytensor.tensor (both have where/square/exp).

    Outside the support the exponent would be evaluated at 1 - u <= 0, and the gradient of the
    untaken branch is multiplied by zero: 0 * inf = nan. Substituting u = 0 there keeps every
    intermediate finite. Inside, 1 - u >= 2**-53, so the exponent's derivative stays finite and
    multiplies an exponential that has already underflowed to exactly 0 near the boundary.
    """
    u = xp.square(d / radius)
    inside = u < 1.0
    u_safe = xp.where(inside, u, 0.0)
    return xp.where(inside, amplitude * xp.exp(shape - shape / (1.0 - u_safe)), 0.0)
