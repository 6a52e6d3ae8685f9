r"""Jumps between radius basins for plain ``pm.sample``: a basin label that moves the radius.

NUTS crosses the deep dips of a multi-basin radius posterior too rarely to weigh the basins
(:doc:`/hyperposterior`). Where the basins outside the start's hold mass,
:func:`~pymc_sle.inference.priors.sle_priors` therefore samples the radius as a pair
:math:`(k, v)`: a discrete label :math:`k` naming one of :math:`K` basins, and a coordinate
:math:`v` inside it,

.. math::

    r = T_k(v) = B\big(\mu_k + s_k\, h_k(v)\big),

where :math:`B` is the radius's transform without basins (sampled value to radius),
:math:`\mu_k` and :math:`s_k` are the mean and standard deviation of :math:`B^{-1}(r)` over
basin :math:`k` of the grid posterior, and :math:`h_k` maps the line onto basin :math:`k`'s
interval of :math:`(B^{-1}(r) - \mu_k) / s_k` with :math:`h_k(0) = 0` and :math:`h_k'(0) = 1`
(a shifted logistic between two cuts; :math:`c\,(1 - e^{-v/c})` for an outer basin, open on
one side). The intervals meet halfway (geometrically) between neighbouring basins' outermost
grid cells, as in :func:`~pymc_sle.inference.sample_basins`, and partition the radius's
support, so every radius has exactly one :math:`(k, v)`. The density of :math:`(k, v)` is the
model's, :math:`p(T_k(v), \ldots \mid y)\, |T_k'(v)|` (times the label's constant prior
:math:`1/K`): the label changes the coordinates, never the posterior, and its posterior is each
basin's mass, estimated by the chains rather than by the grid.

``ls``, ``eta`` and ``sigma`` get frames too (:class:`InBasin`): each is sampled as its own
coordinate standardised by its grid posterior's mean and sd within the label's basin (``ls``
relative to its ridge), an affine bijection of the line for every label, so their support and
densities are unchanged.

PyMC samples the label with a Gibbs-Metropolis step and the rest with NUTS (its
``CompoundStep``). NUTS never crosses a dip: within a basin the coordinates are about standard
normal. Changing the label at fixed coordinates moves every variable to the same standardised
place in another basin, and is accepted with about the ratio of the basins' masses. The
frames of ``eta`` and ``sigma`` matter: on the strings benchmark's split 2 the noise's
``log sigma`` is -1.38 in one basin and -2.66 in the other (sds 0.22 and 0.37); with the
radius and ``ls`` framed alone, 2 chains x 300 draws switched basins 4-5 times each (about 1.5 %
of proposals accepted, r-hat of the label 1.24); with every variable framed, 72-85 times (22 %
and 83 % accepted from the two basins, r-hat 1.00).

The label, ``<radius>_basin``, comes after the four hyperparameters in the model and in
traces: a draw's label is the basin its radius is in (0 the start's, then by mass), so its mean
in ``az.summary`` is a weighted basin index and its r-hat says whether the chains agree on the
basins' weights. (PyMC hides only variables named like transformed values, ``..._name__``, and
``pm.sample_prior_predictive`` rejects a random variable so named.) Its value enters the
transform directly, not as an input of the radius's distribution: in the generative graph the
radius does not depend on it, as in the model, so ``pm.sample_posterior_predictive`` keeps the
sampled hyperparameters even on draws without the label (``sample_basins``' pooled ones).
:func:`~pymc_sle.inference.sample_basins` fixes it (one basin at a time, for any NUTS
sampler); nutpie and numpyro cannot sample a discrete variable.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Transform
from scipy import special

from pymc_sle.inference._transforms import OnRidge

__all__ = ["BasinJump", "InBasin", "add_label", "at_start", "radius_frames", "scale_frames"]


class _Framed(Transform):
    """A transform that reads the basin label: the index of the frame a value is sampled in."""

    def bind(self, label, label_value) -> None:
        """The label variable and its value variable, which the transform reads."""
        self.label, self._label_value = label, label_value

    def _frame(self, value):
        """The label's index: its value variable where ``value`` is the sampled variable's own
        (the model's density and trace), else the start basin's: PyMC's initial point maps a
        start through ``forward`` and back, with no value of the label at hand."""
        return 0 if value.owner is not None else self._label_value


class BasinJump(_Framed):
    """The radius sampled in the coordinates of the basin its label names (module notes).

    Parameters
    ----------
    base : Transform
        The radius's transform without basins.
    means, sds : sequence of float
        :math:`\\mu_k` and :math:`s_k` of each basin in ``base``'s sampled coordinate, the start
        basin first.
    lows, highs : sequence of float
        Each basin's interval in that coordinate (``-inf`` / ``inf``: open); together they
        partition the line.
    """

    name = "basinjump"

    def __init__(self, base: Transform, means, sds, lows, highs):
        self.base = base
        self.means, self.sds = (np.asarray(x, dtype=float) for x in (means, sds))
        a = (np.asarray(lows, dtype=float) - self.means) / self.sds
        b = (np.asarray(highs, dtype=float) - self.means) / self.sds
        if not (self.means.size >= 2 and np.all(self.sds > 0) and np.all(a < 0) and np.all(b > 0)):
            raise ValueError("`means`, `sds`, `lows` and `highs` must describe two basins or "
                             "more, each mean inside its interval, every sd positive")  # fmt: skip
        self.two_sided = np.isfinite(a) & np.isfinite(b)
        # one-sided: w = c (1 - exp(-v / c)), c the finite bound
        self.c = np.where(self.two_sided, 1e300, np.where(np.isfinite(a), a, b))
        # two-sided: w = a + (b - a) sigmoid(alpha v + beta), with w(0) = 0 and w'(0) = 1
        a, b = np.where(self.two_sided, a, -1.0), np.where(self.two_sided, b, 1.0)
        self.a, self.width = a, b - a
        self.beta = np.log(-a / b)
        self.alpha = 1.0 / (self.width * special.expit(self.beta) * special.expit(-self.beta))
        self.label, self._label_value = None, None

    def _in_base(self, value):
        """The base coordinate of the sampled ``value`` in its basin's frame, and the log of
        its derivative."""
        k = self._frame(value)
        two, c = pt.as_tensor(self.two_sided)[k], pt.as_tensor(self.c)[k]
        z = pt.as_tensor(self.alpha)[k] * value + pt.as_tensor(self.beta)[k]
        width = pt.as_tensor(self.width)[k]
        w = pt.switch(two, pt.as_tensor(self.a)[k] + width * pt.sigmoid(z),
                      c * -pt.expm1(-value / c))  # fmt: skip
        log_slope = pt.switch(
            two,
            pt.log(width * pt.as_tensor(self.alpha)[k]) - pt.softplus(z) - pt.softplus(-z),
            -value / c,
        )
        sd = pt.as_tensor(self.sds)[k]
        return pt.as_tensor(self.means)[k] + sd * w, log_slope + pt.log(sd)

    def forward(self, value, *inputs):
        w = (self.base.forward(value, *inputs) - self.means[0]) / self.sds[0]
        if self.two_sided[0]:
            share = (w - self.a[0]) / self.width[0]
            return (pt.log(share) - pt.log1p(-share) - self.beta[0]) / self.alpha[0]
        return -self.c[0] * pt.log1p(-w / self.c[0])

    def backward(self, value, *inputs):
        return self.base.backward(self._in_base(value)[0], *inputs)

    def log_jac_det(self, value, *inputs):
        base_value, log_slope = self._in_base(value)
        return self.base.log_jac_det(base_value, *inputs) + log_slope


class InBasin(_Framed):
    """``ls``, ``eta`` or ``sigma`` in the frame of the radius basin the label names: the
    sampled :math:`v` is ``inner``'s coordinate :math:`\\mu_k + (s_k / s_0)(v - \\mu_0)`, with
    :math:`\\mu_k`, :math:`s_k` its grid posterior's mean and standard deviation within basin
    :math:`k` (a bijection of the line for every label: the variable's support is the same in
    every basin). Across basins the noise can differ by several of its posterior sds (strings
    split 2: ``log sigma`` -1.39 and -2.72, sds 0.23 and 0.33), and a jump that kept it would
    be refused.

    Parameters
    ----------
    inner : Transform
        The variable's transform in the start basin (inside its :class:`OnRidge`, if any).
    means, sds : sequence of float
        :math:`\\mu_k` and :math:`s_k` in ``inner``'s coordinate, the start basin first.
    """

    name = "basin"

    def __init__(self, inner: Transform, means, sds):
        self.inner = inner
        self.means, self.sds = (np.asarray(x, dtype=float) for x in (means, sds))
        if self.means.shape != self.sds.shape or not np.all(self.sds > 0):
            raise ValueError(f"`means` and `sds` must match and the sds be positive, but got "
                             f"{list(means)!r} and {list(sds)!r}")  # fmt: skip
        self.label, self._label_value = None, None

    def _in_inner(self, value):
        k = self._frame(value)
        ratio = pt.as_tensor(self.sds / self.sds[0])[k]
        return pt.as_tensor(self.means)[k] + ratio * (value - self.means[0]), pt.log(ratio)

    def forward(self, value, *inputs):
        return self.inner.forward(value, *inputs)

    def backward(self, value, *inputs):
        return self.inner.backward(self._in_inner(value)[0], *inputs)

    def log_jac_det(self, value, *inputs):
        inner_value, log_ratio = self._in_inner(value)
        return self.inner.log_jac_det(inner_value, *inputs) + log_ratio


def at_start(transform: Transform) -> Transform:
    """``transform`` with its label fixed at the start's basin (where the transforms are the
    ones without basins): itself if it reads no label."""
    if isinstance(transform, BasinJump):
        return transform.base
    if isinstance(transform, InBasin):
        return transform.inner
    if isinstance(transform, OnRidge) and isinstance(transform.inner, InBasin):
        return transform.with_inner(transform.inner.inner)
    return transform


def _coordinate(transform: Transform, x) -> np.ndarray:
    """``transform``'s sampled coordinate of the floats ``x``."""
    return np.asarray(transform.forward(pt.as_tensor(np.asarray(x, dtype=float))).eval())


def _moments(u, weights, width, radius, basins) -> tuple[np.ndarray, np.ndarray]:
    """The mean and standard deviation of the coordinate ``u`` (cells ``(radius, ...)``, with
    probabilities ``weights`` and widths ``width``) over the radius cells of each basin, each
    cell's mass spread evenly over its width (so never zero)."""
    means, sds = [], []
    for basin in basins:
        inside = ((radius >= basin.low) & (radius <= basin.high))[:, None] & np.isfinite(u)
        p = np.where(inside, weights, 0.0)
        p = p / p.sum()
        v, w = np.where(inside, u, 0.0), np.where(inside, width, 0.0)
        mean = float(np.sum(p * v))
        means.append(mean)
        sds.append(float(np.sqrt(np.sum(p * ((v - mean) ** 2 + w**2 / 12)))))
    return np.array(means), np.array(sds)


def _widths(u, axis: int) -> np.ndarray:
    """Each cell's width in ``u`` along ``axis``, from its finite neighbours."""
    width = np.full(u.shape, np.nan)
    for index in np.ndindex(*np.delete(u.shape, axis)):
        line = list(index)
        line.insert(axis, slice(None))
        values = u[tuple(line)]
        finite = np.isfinite(values)
        if finite.sum() >= 2:
            out = np.full(values.shape, np.nan)
            out[finite] = np.abs(np.gradient(values[finite]))
            width[tuple(line)] = out
    return width


def radius_frames(base: Transform, grid, basins) -> tuple[np.ndarray, ...]:
    """``(means, sds, lows, highs)`` of :class:`BasinJump` for ``basins`` (the start's first),
    from ``grid``'s radius marginal in ``base``'s sampled coordinate: the moments of each basin's
    cells (radii above a capped ``base``'s bound left out), and intervals meeting halfway
    (geometrically) between neighbouring basins' outermost cells."""
    u = _coordinate(base, grid.radius)[:, None]
    means, sds = _moments(u, grid.marginal("radius")[:, None], _widths(u, 0), grid.radius, basins)
    order = np.argsort([b.radius for b in basins])
    ranked = [basins[i] for i in order]
    cuts = _coordinate(base, [np.sqrt(left.high * right.low) for left, right in pairwise(ranked)])
    ends = np.concatenate([[-np.inf], np.sort(cuts), [np.inf]])
    increasing = np.all(np.diff(_coordinate(base, [b.radius for b in ranked])) > 0)
    place = np.empty(len(basins), dtype=int)  # each basin's rank along the coordinate
    place[order] = np.arange(len(basins)) if increasing else np.arange(len(basins))[::-1]
    return means, sds, ends[place], ends[place + 1]


def scale_frames(grid, basins, name: str, inner: Transform, ridge=None):
    """``(means, sds)`` of :class:`InBasin` for ``name`` (``ls``, ``eta``, ``sigma``) and
    ``basins`` (the start's first): the moments, in ``inner``'s coordinate, of the grid's
    ``(radius, name)`` cells in each basin, relative to ``ridge`` (a
    :class:`~pymc_sle.inference._transforms.Ridge`) if given."""
    log_theta = np.log(getattr(grid, name))[None, :]
    if ridge is not None:
        log_theta = log_theta - ridge.numpy(np.log(grid.radius))[:, None]
    u = _coordinate(inner, np.exp(log_theta))
    return _moments(u, grid.joint_with_radius(name), _widths(u, 1), grid.radius, basins)


class _Identity(Transform):
    """The identity: PyMC lists a variable's value in traces after every transformed
    variable's, so the label, given it, comes after the four hyperparameters. (A copy: PyMC
    names what ``backward`` returns after the variable.)"""

    name = "index"

    def forward(self, value, *inputs):
        return value.copy()

    def backward(self, value, *inputs):
        return value.copy()

    def log_jac_det(self, value, *inputs):
        return pt.zeros_like(value, dtype="float64")


_LISTED_LAST = _Identity()


def add_label(name: str, framed) -> pt.TensorVariable:
    """The label in the current model, uniform over the basins and starting at the start's,
    bound to each of the ``framed`` transforms (:class:`BasinJump` first, then any
    :class:`InBasin`; they may already be variables': they are read only when the model's
    density is built). The basins are numbered as the transforms': the start's first."""
    k = framed[0].means.size
    label = pm.Categorical(name, p=np.full(k, 1.0 / k), initval=0, default_transform=_LISTED_LAST)
    value = pm.modelcontext(None).rvs_to_values[label]
    for transform in framed:
        transform.bind(label, value)
    return label
