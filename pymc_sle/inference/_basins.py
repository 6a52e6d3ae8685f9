r"""Radius basins: what they are, where the grid finds them, and the frames that let plain
``pm.sample`` jump between them.

A **basin** (:class:`Basin`) is a stretch of the radius's marginal posterior between two of its
local minima (:func:`radius_modes`); neighbours whose dividing dip is shallower than a barrier
(in nats) are one basin, since NUTS crosses such dips. :func:`find_basins` applies the search's
two barriers -- deep dips separate basins, and behind a shallower one a light *shoulder* is a
basin of its own -- and :func:`jumped_basins` decides whether a label is needed at all.
Neighbouring basins meet at :func:`cuts`, halfway (geometrically) between their outermost grid
cells, where the grid's cell masses split.

**Jumps.** Where basins outside the start's hold mass, the radius is sampled as a pair
:math:`(k, v)`: a discrete label :math:`k` naming one of :math:`K` basins, and a coordinate
:math:`v` inside it,

.. math::

    r = T_k(v) = B\big(\mu_k + s_k\, h_k(v)\big),

where :math:`B` is the radius's transform without basins (sampled value to radius),
:math:`\mu_k` and :math:`s_k` are the mean and standard deviation of :math:`B^{-1}(r)` over
basin :math:`k` of the grid posterior, and :math:`h_k` maps the line onto basin :math:`k`'s
interval of :math:`(B^{-1}(r) - \mu_k) / s_k` with :math:`h_k(0) = 0` and :math:`h_k'(0) = 1`
(a shifted logistic between two cuts; :math:`c\,(1 - e^{-v/c})` for an outer basin, open on
one side). The intervals meet at the :func:`cuts` and partition the radius's support, so every
radius has exactly one :math:`(k, v)`. The density of :math:`(k, v)` is the model's,
:math:`p(T_k(v), \ldots \mid y)\, |T_k'(v)|` (times the label's constant prior :math:`1/K`):
the label changes the coordinates, never the posterior, and its posterior is each basin's mass,
estimated by the chains rather than by the grid (:class:`BasinJump`). ``ls``, ``eta`` and
``sigma`` are framed too (:class:`InBasin`): each sampled as its own coordinate standardised by
its grid posterior within the label's basin, an affine bijection of the line for every label.

PyMC samples the label with a Gibbs-Metropolis step and the rest with NUTS (its
``CompoundStep``): within a basin the coordinates are about standard normal, and a change of
label at fixed coordinates moves every variable to the same standardised place in another
basin, accepted with about the ratio of the basins' masses (:doc:`/hyperposterior` has the
measurements). The label, ``<radius>_basin`` (:func:`add_label`), comes after the four
hyperparameters in the model and in traces, each draw's label the basin its radius is in (0
the start's, then by mass). Its value enters the transforms directly, not as an input of the
radius's distribution, so ``pm.sample_posterior_predictive`` keeps the sampled
hyperparameters on draws without it. :func:`at_start` fixes it at the start's basin (what
:func:`~pymc_sle.sample_basins` samples, one basin at a time, for any NUTS sampler).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Transform
from scipy import special

from pymc_sle._data_numbers import data_number
from pymc_sle._pymc_compat import value_variable
from pymc_sle.inference._transforms import OnRidge

__all__ = [
    "Basin",
    "BasinJump",
    "InBasin",
    "add_label",
    "at_start",
    "coordinates",
    "cuts",
    "find_basins",
    "framed",
    "jumped_basins",
    "radius_frames",
    "radius_modes",
    "scale_frames",
]


@dataclass(frozen=True)
class Basin:
    """A basin of the radius's marginal posterior: its peak, its probability mass and its extent
    on the grid (:meth:`pymc_sle.inference.GridPosterior.radius_modes`).

    Attributes
    ----------
    radius, low, high : float
        The basin's peak and its first and last grid radius.
    mass : float
        Its posterior probability on the grid.
    start : dict
        Where chains sampling this basin start, keyed by the model's variable names
        (``pm.sample(initvals=...)``); filled in by :func:`~pymc_sle.sle_priors`, empty on a
        basin straight from a grid.
    """

    radius: float
    mass: float
    low: float
    high: float
    start: dict[str, float] = field(default_factory=dict, compare=False)


def radius_modes(grid, min_mass: float = 0.01, barrier: float = 0.0) -> list[Basin]:
    """The basins of ``grid``'s radius marginal holding at least ``min_mass``, in radius order.

    A basin runs between two local minima of the marginal density; its mode is its highest
    cell. Neighbouring basins whose dividing minimum lies less than ``barrier`` nats below
    the lower of their two peaks are merged (``barrier=0`` keeps every dip).
    """
    p = grid.marginal("radius")
    density = p / np.gradient(np.log(grid.radius))
    interior = np.flatnonzero((density[1:-1] < density[:-2]) & (density[1:-1] <= density[2:]))
    edges = [0, *(interior + 1).tolist(), p.size]
    basins = [[start, stop] for start, stop in itertools.pairwise(edges)]
    merged = True
    while merged and len(basins) > 1:
        merged = False
        for k in range(len(basins) - 1):
            (a0, a1), (b0, b1) = basins[k], basins[k + 1]
            lower_peak = min(density[a0:a1].max(), density[b0:b1].max())
            if np.log(lower_peak) - np.log(max(density[b0], 1e-300)) < barrier:
                basins[k : k + 2] = [[a0, b1]]
                merged = True
                break
    modes = []
    for start, stop in basins:
        mass = float(p[start:stop].sum())
        if mass >= min_mass:
            peak = start + int(np.argmax(density[start:stop]))
            modes.append(
                Basin(
                    float(grid.radius[peak]),
                    mass,
                    float(grid.radius[start]),
                    float(grid.radius[stop - 1]),
                )
            )
    return modes


def find_basins(grid, barrier: float, shoulder_barrier: float, shoulder_mass: float) -> list[Basin]:
    """The basins of ``grid`` behind dips deeper than ``barrier`` nats, with their *shoulders*
    apart: the pieces holding less than ``shoulder_mass`` behind dips deeper than
    ``shoulder_barrier``. The heavier pieces of a basin stay one basin, peaked at the heaviest
    (a basin whose light pieces are not all at its ends stays whole)."""
    pieces = radius_modes(grid, min_mass=0.0, barrier=shoulder_barrier)
    out = []
    for basin in radius_modes(grid, min_mass=0.0, barrier=barrier):
        inside = [p for p in pieces if basin.low <= p.radius <= basin.high]
        heavy = [i for i, p in enumerate(inside) if p.mass >= shoulder_mass]
        if len(heavy) in (0, len(inside)) or heavy != list(range(heavy[0], heavy[-1] + 1)):
            out.append(basin)
            continue
        core = inside[heavy[0] : heavy[-1] + 1]
        peak = max(core, key=lambda p: p.mass).radius
        out.append(Basin(peak, sum(p.mass for p in core), core[0].low, core[-1].high))
        out.extend(p for p in inside if p.mass < shoulder_mass)
    return out


def jumped_basins(home: Basin, basins: tuple, unreached_mass: float, min_mass: float) -> list:
    """The basins a label jumps between, the start's first: none unless those outside ``home``
    (the basin holding the grid's mode) hold more than ``unreached_mass``; then every basin
    holding ``min_mass``."""
    if 1.0 - home.mass <= unreached_mass:
        return []
    start = next(b for b in basins if b.low <= home.radius <= b.high)
    others = [b for b in basins if b is not start and b.mass >= min_mass]
    return [start, *others] if others else []


def cuts(basins: list[Basin]) -> list[float]:
    """The radii where the intervals of neighbouring ``basins`` (sorted by radius) meet: the
    geometric midpoint of the outermost grid cells between them, where the grid's cell masses
    split."""
    return [float(np.sqrt(left.high * right.low)) for left, right in itertools.pairwise(basins)]


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
        # the graph's copies, as data numbers (pymc_sle._data_numbers)
        names = ("means", "sds", "two_sided", "c", "a", "width", "alpha", "beta")
        self._graph = {name: data_number(getattr(self, name)) for name in names}

    def _in_base(self, value):
        """The base coordinate of the sampled ``value`` in its basin's frame, and the log of
        its derivative."""
        k = self._frame(value)
        at = {name: x[k] for name, x in self._graph.items()}
        two, c, width = at["two_sided"], at["c"], at["width"]
        z = at["alpha"] * value + at["beta"]
        w = pt.switch(two, at["a"] + width * pt.sigmoid(z), c * -pt.expm1(-value / c))
        log_slope = pt.switch(
            two, pt.log(width * at["alpha"]) - pt.softplus(z) - pt.softplus(-z), -value / c
        )
        return at["means"] + at["sds"] * w, log_slope + pt.log(at["sds"])

    def forward(self, value, *inputs):
        first = {name: x[0] for name, x in self._graph.items()}
        w = (self.base.forward(value, *inputs) - first["means"]) / first["sds"]
        if self.two_sided[0]:
            share = (w - first["a"]) / first["width"]
            return (pt.log(share) - pt.log1p(-share) - first["beta"]) / first["alpha"]
        return -first["c"] * pt.log1p(-w / first["c"])

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
    every basin). Across basins the noise can differ by several of its posterior sds, and a jump
    that kept it would be refused.

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
        # the graph's copies, as data numbers (pymc_sle._data_numbers)
        self._means, self._ratios = data_number(self.means), data_number(self.sds / self.sds[0])

    def _in_inner(self, value):
        k = self._frame(value)
        ratio = self._ratios[k]
        return self._means[k] + ratio * (value - self._means[0]), pt.log(ratio)

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


def coordinates(transform: Transform | None, *values) -> tuple[np.ndarray, ...]:
    """``transform``'s sampled coordinate of each of ``values`` (floats or arrays of them, each
    returned in its shape), from one evaluation; ``None`` is the identity."""
    arrays = [np.asarray(x, dtype=float) for x in values]
    flat = np.concatenate([x.ravel() for x in arrays])
    if transform is not None:
        flat = np.asarray(transform.forward(data_number(flat)).eval())
    parts = np.split(flat, np.cumsum([x.size for x in arrays])[:-1])
    return tuple(part.reshape(x.shape) for part, x in zip(parts, arrays, strict=True))


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
    order = np.argsort([b.radius for b in basins])
    ranked = [basins[i] for i in order]
    u, cut, peaks = coordinates(base, grid.radius, cuts(ranked), [b.radius for b in ranked])
    u = u[:, None]
    means, sds = _moments(u, grid.marginal("radius")[:, None], _widths(u, 0), grid.radius, basins)
    ends = np.concatenate([[-np.inf], np.sort(cut), [np.inf]])
    increasing = np.all(np.diff(peaks) > 0)
    place = np.empty(len(basins), dtype=int)  # each basin's rank along the coordinate
    place[order] = np.arange(len(basins)) if increasing else np.arange(len(basins))[::-1]
    return means, sds, ends[place], ends[place + 1]


def scale_frames(grid, basins, name: str, inner: Transform, ridge=None):
    """``(means, sds)`` of :class:`InBasin` for ``name`` (``ls``, ``eta``, ``sigma``) and
    ``basins`` (the start's first): the moments, in ``inner``'s coordinate, of the grid's
    ``(radius, name)`` cells in each basin, relative to ``ridge`` (a
    ``Ridge``) if given."""
    log_theta = np.log(getattr(grid, name))[None, :]
    if ridge is not None:
        log_theta = log_theta - ridge.numpy(np.log(grid.radius))[:, None]
    (u,) = coordinates(inner, np.exp(log_theta))
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
    value = value_variable(pm.modelcontext(None), label)
    for transform in framed:
        transform.bind(label, value)
    return label


def framed(transforms: dict, ridges: dict, grid, basins: list) -> tuple[dict, tuple]:
    """``transforms`` (``{name: transform}`` of ``radius``, ``ls``, ``eta``, ``sigma``) with
    every variable sampled in the frame of the basin a label names, and the transforms that read
    the label (the radius's :class:`BasinJump` first). ``ridges`` holds the variables sampled
    relative to their ridge (their transform an :class:`OnRidge`), framed inside it."""
    radius = transforms["radius"]
    jump = BasinJump(radius, *radius_frames(radius, grid, basins))
    out, reading = {"radius": jump}, [jump]
    for name in ("ls", "eta", "sigma"):
        transform, ridge = transforms[name], ridges.get(name)
        inner = transform.inner if ridge is not None else transform
        in_basin = InBasin(inner, *scale_frames(grid, basins, name, inner, ridge))
        reading.append(in_basin)
        out[name] = OnRidge(ridge, in_basin) if ridge is not None else in_basin
    return out, tuple(reading)
