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

PyMC samples the label with a Gibbs-Metropolis step and the rest with NUTS (its
``CompoundStep``). NUTS never crosses a dip: within a basin :math:`v` is about standard normal.
Changing the label at a fixed :math:`v` moves the radius to the same standardised place in
another basin (and ``ls`` along its ridge, which follows the radius), and is accepted with
about the ratio of the basins' masses.

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

__all__ = ["BasinJump", "add_label", "frames"]


class BasinJump(Transform):
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
        self.label = None  # the label's random variable
        self._label_value = None

    def bind(self, label, label_value) -> None:
        """The label variable and its value variable, which the transform reads."""
        self.label, self._label_value = label, label_value

    def _frame(self, value):
        """The label's index: its value variable where ``value`` is the radius's (the model's
        density and trace), else the start basin's: PyMC's initial point maps the radius's
        start through ``forward`` and back, with no value of the label at hand."""
        return 0 if value.owner is not None else self._label_value

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


def frames(base: Transform, radius, marginal, basins) -> tuple[np.ndarray, ...]:
    """``(means, sds, lows, highs)`` of :class:`BasinJump` for ``basins`` (the start's first),
    from the grid's radius cells (``radius``, with probabilities ``marginal``) in ``base``'s
    sampled coordinate: the mean and standard deviation of the cells inside each basin, each
    cell's mass spread evenly over its width (hence never zero), and the intervals meeting
    halfway (geometrically) between neighbouring basins' outermost cells."""
    radius = np.asarray(radius, dtype=float)

    def coordinate(x):
        return np.asarray(base.forward(pt.as_tensor(np.asarray(x, dtype=float))).eval())

    u = coordinate(radius)
    width = np.abs(np.gradient(u))
    means, sds = [], []
    for basin in basins:
        inside = (radius >= basin.low) & (radius <= basin.high) & np.isfinite(u)
        p = marginal[inside] / marginal[inside].sum()
        mean = float(p @ u[inside])
        means.append(mean)
        sds.append(float(np.sqrt(p @ (u[inside] - mean) ** 2 + p @ width[inside] ** 2 / 12)))
    order = np.argsort([b.radius for b in basins])
    ranked = [basins[i] for i in order]
    cuts = coordinate([np.sqrt(left.high * right.low) for left, right in pairwise(ranked)])
    ends = np.concatenate([[-np.inf], np.sort(cuts), [np.inf]])
    increasing = np.all(np.diff(coordinate([b.radius for b in ranked])) > 0)
    place = np.empty(len(basins), dtype=int)  # each basin's rank along the coordinate
    place[order] = np.arange(len(basins)) if increasing else np.arange(len(basins))[::-1]
    return np.array(means), np.array(sds), ends[place], ends[place + 1]


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


def add_label(name: str, transform: BasinJump) -> pt.TensorVariable:
    """The label in the current model, uniform over ``transform``'s basins and starting at the
    start's, bound to ``transform`` (which may already be a variable's: it is read only when
    the model's density is built).

    The basins are numbered as ``transform``'s: the start's first."""
    k = transform.means.size
    label = pm.Categorical(name, p=np.full(k, 1.0 / k), initval=0, default_transform=_LISTED_LAST)
    transform.bind(label, pm.modelcontext(None).rvs_to_values[label])
    return label
