r"""Changes of variable under which NUTS samples the SLE hyperposterior well.

The coarse grid posterior of :func:`~pymc_sle.sle_priors` shows two
obstacles for NUTS (``docs/hyperposterior.md``):

- the radius marginal is rough: basins separated by dips of a few nats, which a chain crosses
  rarely;
- ``log ls`` follows ``log radius`` along a curved ridge: flat while bumps reach few neighbours,
  falling like :math:`-2 \log r` once they cover everything (embedding distances shrink like
  :math:`1/r^2`). ``log eta`` and ``log sigma`` bend with it near the small-radius wall: as
  bumps lose their nearest neighbours, the noise and the signal grow, and at fixed ``eta`` and
  ``sigma`` the log density falls steeply there (``sle_priors``'s ``scale_ridges``;
  :doc:`/hyperposterior` has the measurements).

Neither is fixed by a mass matrix, which is linear. Both are undone by maps read off the grid,
each a smooth bijection, so the prior and the posterior are exactly those of the model:

- :class:`QuantileLog` samples the radius as :math:`u` with :math:`\log r = g(u)`, where
  :math:`g` pushes a standard normal onto (a widened copy of) the grid's marginal of
  :math:`\log r`. In :math:`u` the marginal is close to :math:`N(0, 1)`: its dips are squeezed
  into short intervals.
- :class:`Ridge` is the grid's conditional mean :math:`m(\log r) = E[\log \theta \mid \log r]`;
  ``sle_priors`` samples :math:`\log \theta - m(\log r)` instead of :math:`\log \theta` for
  ``ls``, and with ``scale_ridges=True`` also for ``eta`` and ``sigma`` (floored: see
  :class:`Ridge`).

Both maps are piecewise-cubic Hermite interpolants (PCHIP) with continuous first derivatives,
so the log density and its gradient are continuous, as leapfrog integration needs.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.transforms import Interval, Transform
from pymc.logprob.transforms import ChainedTransform
from scipy import interpolate, special, stats

from pymc_sle._data_numbers import data_number

__all__ = ["CenteredLog", "OnRidge", "QuantileLog", "Ridge", "below_cutoff"]


class CenteredLog(Transform):
    r"""The log transform centred at ``centre``, in units of ``scale``:
    :math:`v = (\log x - \log c) / s`. PyMC samples and jitters :math:`v`; the prior on
    :math:`x` is unchanged."""

    name = "centeredlog"  # no underscore: PyMC strips the last three "_"-separated parts

    def __init__(self, centre: float, scale: float):
        self.log_centre = float(np.log(centre))
        self.scale = float(scale)
        self._log_centre, self._scale = data_number(self.log_centre), data_number(self.scale)

    def forward(self, value, *inputs):
        return (pt.log(value) - self._log_centre) / self._scale

    def backward(self, value, *inputs):
        return pt.exp(self._log_centre + self._scale * value)

    def log_jac_det(self, value, *inputs):
        return pt.log(self._scale) + self._log_centre + self._scale * value


class Hermite:
    r"""A monotone-preserving cubic through ``(start + k * step, values[k])`` (SciPy's PCHIP
    slopes), continued by straight lines with the end slopes: continuous with a continuous first
    derivative everywhere. Calling it on a tensor gives the value and the derivative.
    ``end_slopes`` replaces the slopes at the first and last knot (and so of the lines).

    Each piece is a polynomial :math:`c_0 + c_1 s + (c_2 + c_3 t)\, t^2` with
    :math:`p` the position ``(x - start) / step``, :math:`K` the last knot's index,
    :math:`k = \min(\max(\lfloor p \rfloor, -1), K)`, :math:`s = p - k` and
    :math:`t = \min(\max(s, 0), 1)`: the cubics for :math:`0 \le k < K` (where :math:`t = s`),
    and the lines for :math:`k = -1` and :math:`k = K`, whose :math:`c_2 = c_3 = 0` (so an
    infinite ``x`` gives an infinite value). With :math:`y` the values and :math:`m` the slopes
    times ``step``, the cubic from knot :math:`k` has :math:`c_0 = y_k`, :math:`c_1 = m_k`,
    :math:`c_2 = 3 (y_{k+1} - y_k) - 2 m_k - m_{k+1}` and
    :math:`c_3 = 2 (y_k - y_{k+1}) + m_k + m_{k+1}` (the Hermite basis expanded); it reaches
    :math:`y_{k+1}` to rounding. The graph is a lookup and a few products, with no branch
    (:doc:`/performance`, section 5, compares the forms tried)."""

    def __init__(self, start: float, step: float, values, end_slopes=None):
        self.start, self.step = float(start), float(step)
        self.values = np.asarray(values, dtype=float)
        knots = self.start + self.step * np.arange(self.values.size)
        self.slopes = interpolate.PchipInterpolator(knots, self.values).derivative()(knots)
        if end_slopes is not None:
            self.slopes[[0, -1]] = end_slopes
        y, m = self.values, self.step * self.slopes
        y0, y1, m0, m1 = y[:-1], y[1:], m[:-1], m[1:]
        #: ``(4, K + 2)``: :math:`c_0, \dots, c_3` of each piece, the line below the knots
        #: first (its :math:`s` is :math:`p + 1`).
        self.coefficients = np.stack(
            [
                np.concatenate([[y[0] - m[0]], y0, [y[-1]]]),
                np.concatenate([[m[0]], m0, [m[-1]]]),
                np.concatenate([[0.0], 3 * (y1 - y0) - 2 * m0 - m1, [0.0]]),
                np.concatenate([[0.0], 2 * (y0 - y1) + m0 + m1, [0.0]]),
            ]
        )
        self._graph_numbers = tuple(
            data_number(x) for x in (self.start, self.step, *self.coefficients)
        )

    @staticmethod
    def _evaluate(x, numbers, math):
        """The value and the derivative at ``x`` from ``numbers`` (start, step and the four
        coefficient rows), with ``math`` ``pt`` or ``np``."""
        start, h, c0, c1, c2, c3 = numbers
        position = (x - start) / h
        k = math.clip(math.floor(position), -1, c0.shape[0] - 2).astype("int64")
        s = position - k
        t = math.clip(s, 0.0, 1.0)
        piece = k + 1  # the line below the knots is piece 0
        a0, a1, a2, a3 = c0[piece], c1[piece], c2[piece], c3[piece]
        return a0 + s * a1 + t * t * (a2 + t * a3), (a1 + t * (2 * a2 + 3 * t * a3)) / h

    def __call__(self, x):
        return self._evaluate(x, self._graph_numbers, pt)

    def numpy(self, x):
        """The same function at floats or an array of them."""
        x = np.asarray(x, dtype=float)
        numbers = (self.start, self.step, *self.coefficients)
        return np.asarray(self._evaluate(x, numbers, np)[0])[()]


class QuantileLog(Transform):
    r"""Sample a positive variable :math:`x` as :math:`u` with :math:`\log x = g(u)`, where
    :math:`g = F^{-1} \circ \Phi` maps a standard normal onto a target density :math:`q` of
    :math:`\log x` with distribution function :math:`F`.

    :meth:`from_grid` takes :math:`q = (1 - \epsilon)\, p + \epsilon\, w`: the grid's
    marginal :math:`p` (linear between grid points), widened by a density :math:`w` so that
    :math:`q` is positive everywhere and :math:`g` has linear tails. :math:`w` is a normal with
    the marginal's mean :math:`\mu` and twice its standard deviation :math:`s`, cut off below
    the marginal's :attr:`wall_quantile` quantile :math:`x_w` by a Gaussian factor one grid cell
    :math:`h` wide:

    .. math::

        w(x) \propto N(x; \mu, (2 s)^2)\,
        \exp\!\Big(-\tfrac12 \big(\min(x - x_w, 0) / h\big)^2\Big).

    The cut is the small-radius wall: below the nearest-neighbour spacing the likelihood falls
    by hundreds of nats per unit of :math:`\log r`, and a map whose lower tail reached there
    sent trajectories into it (divergences that start at :math:`u < -3`). With the cut, below
    the wall one unit of :math:`u` moves :math:`\log x` by about one grid cell. Above the grid
    the likelihood flattens (bumps cover every landmark) and the full normal tail stays, so the
    map reaches the prior's large radii. ``walls=("upper",)`` cuts the other end instead, above
    the marginal's ``1 - wall_quantile`` quantile: the noise's wall, which cannot exceed the
    data's spread, while its tail towards 0 is long. If the posterior marginal equalled :math:`q`,
    :math:`u` would be exactly standard normal. The prior of :math:`x` is untouched:
    ``log_jac_det`` is :math:`\log g'(u) + g(u)`.

    :math:`g` and its inverse are :class:`Hermite` interpolants of the tabulated quantile
    function, on evenly spaced :math:`u` and (eight times finer) :math:`\log x` respectively;
    they agree at the knots (the inverse is used only to place initial values).

    **Cap.** ``from_grid(..., log_cap=c)`` builds :math:`q` from the grid's cells at or below
    :math:`c` only and bounds :math:`x` by :attr:`bound`, :math:`e^{g(u_c)}`: NUTS samples
    :math:`v` with :math:`u = u_c - \tau \log(1 + e^{(u_c - v) / \tau})`,
    :math:`u_c = \min(g^{-1}(c), 6)`, :math:`\tau` = :attr:`cap_width`, so :math:`u \approx v`
    well below :math:`u_c` and :math:`u < u_c` (in floating point, :math:`u` rounds to
    :math:`u_c` and :math:`x` to the bound far above the cap); ``log_jac_det`` adds
    :math:`\log(du/dv) = -\log(1 + e^{(v - u_c)/\tau})`. The density is unchanged below the
    cap: the posterior sampled is the model's, truncated to :math:`x <` :attr:`bound`.
    :math:`u_c` is at most 6, the last knot of :math:`g`: beyond it :math:`g` is a straight line
    the grid does not inform; ``log_cap=numpy.inf`` caps there only. ``sle_priors`` cuts light
    radius basins off behind deep dips this way (a map over them squeezes the dip before them
    into a trench where leapfrog steps diverge, and a chain visits them too rarely to weigh them
    anyway), and caps the far tail where there are none.
    """

    name = "quantilelog"

    #: Weight of the widening density in the target density.
    widening = 0.02
    #: The grid marginal's quantile below which the widening decays within one grid cell.
    wall_quantile = 0.005
    #: The knots of g span u in [-_U_MAX, _U_MAX].
    _U_MAX = 6.0
    #: Width (in u) over which a capped map bends from u = v to the cap.
    cap_width = 0.5

    def __init__(self, backward: Hermite, forward: Hermite, u_cap: float | None = None):
        self._g, self._g_inverse = backward, forward
        #: The cap on u (``None``: no cap).
        self.u_cap = u_cap
        self._u_cap = None if u_cap is None else data_number(u_cap)
        #: The bound on x the cap makes (``inf`` without one).
        self.bound = np.inf if u_cap is None else float(np.exp(backward.numpy(u_cap)))

    @classmethod
    def from_grid(
        cls,
        log_axis,
        probabilities,
        n_knots: int = 49,
        *,
        log_cap: float | None = None,
        walls: tuple[str, ...] = ("lower",),
    ) -> QuantileLog:
        """The map for a marginal given as probabilities of cells centred at the evenly spaced
        ``log_axis``; with ``log_cap``, built from the cells at or below it and capped there, or
        at the last knot if that comes first; the widening cut off beyond the ``walls``
        (``"lower"``, ``"upper"``; class notes)."""
        if not set(walls) <= {"lower", "upper"}:
            raise ValueError(f"`walls` must hold only 'lower' and 'upper', but got {walls!r}")
        log_axis = np.asarray(log_axis, dtype=float)
        p = np.asarray(probabilities, dtype=float)
        if log_cap is not None:
            if not log_axis[0] < log_cap:
                raise ValueError(f"`log_cap` must lie above the grid's first point "
                                 f"{log_axis[0]:.4g}, but got {log_cap!r}")  # fmt: skip
            p = np.where(log_axis <= log_cap, p, 0.0)
            p = p / p.sum()
        step = float(log_axis[1] - log_axis[0])
        mean = float(p @ log_axis)
        spread = max(2.0 * float(np.sqrt(p @ (log_axis - mean) ** 2)), step)
        # 100 points per grid cell at least: the cut tail changes u by about 1 per cell.
        low, high = log_axis[0] - 10 * spread, log_axis[-1] + 10 * spread
        x = np.linspace(low, high, max(8001, int(np.ceil(100 * (high - low) / step)) + 1))
        # The grid's density, linear between its points and down to 0 one cell beyond its ends.
        ends = np.concatenate([[log_axis[0] - step], log_axis, [log_axis[-1] + step]])
        grid_cdf = _cumulative(x, np.interp(x, ends, np.pad(p / step, 1), left=0.0, right=0.0))
        grid_cdf /= grid_cdf[-1]
        beyond = np.zeros_like(x)  # grid cells beyond the walls
        if "lower" in walls:
            beyond += np.minimum(x - x[np.searchsorted(grid_cdf, cls.wall_quantile)], 0.0) / step
        if "upper" in walls:
            wall = x[np.searchsorted(grid_cdf, 1.0 - cls.wall_quantile)]
            beyond += np.maximum(x - wall, 0.0) / step
        wide_cdf = _cumulative(x, stats.norm.pdf(x, mean, spread) * np.exp(-0.5 * beyond**2))
        cdf = (1 - cls.widening) * grid_cdf + cls.widening * wide_cdf / wide_cdf[-1]
        u = special.ndtri(np.clip(cdf, 1e-300, 1.0))
        keep = np.isfinite(u) & (np.abs(u) < cls._U_MAX + 1.0)
        x, u = x[keep], u[keep]
        u_knots = np.linspace(-cls._U_MAX, cls._U_MAX, n_knots)
        values, h = np.interp(u_knots, u, x), u_knots[1] - u_knots[0]
        # End lines along the end intervals' secants: PCHIP's end slopes can be 0 where the map
        # bends sharply (at the wall), which would make g flat beyond its knots.
        secants = np.diff(values)[[0, -1]] / h
        backward = Hermite(u_knots[0], h, values, end_slopes=secants)
        # Finer knots for the inverse: below the wall, log x changes little over many units of u.
        # Its lines beyond the ends are exactly the inverses of g's.
        x_knots = np.linspace(backward.values[0], backward.values[-1], 8 * n_knots - 1)
        forward = Hermite(x_knots[0], x_knots[1] - x_knots[0], np.interp(x_knots, x, u),
                          end_slopes=1.0 / backward.slopes[[0, -1]])  # fmt: skip
        u_cap = None
        if log_cap is not None:
            u_cap = _below(backward, log_cap, min(float(forward.numpy(log_cap)), cls._U_MAX))
        return cls(backward, forward, u_cap)

    def _uncapped(self, v):
        r""":math:`u` of the sampled value :math:`v` and :math:`\log(du/dv)`."""
        if self.u_cap is None:
            return v, 0.0
        u_cap = self._u_cap
        below = (u_cap - v) / self.cap_width
        return u_cap - self.cap_width * pt.softplus(below), -pt.softplus(-below)

    def _capped(self, u, math=pt):
        """The sampled value :math:`v` of :math:`u` (below the cap), with ``math`` ``pt`` or
        ``np``."""
        if self.u_cap is None:
            return u
        u_cap = self._u_cap if math is pt else self.u_cap
        return u_cap - self.cap_width * math.log(math.expm1((u_cap - u) / self.cap_width))

    def forward(self, value, *inputs):
        return self._capped(self._g_inverse(pt.log(value))[0])

    def backward(self, value, *inputs):
        return pt.exp(self._g(self._uncapped(value)[0])[0])

    def log_jac_det(self, value, *inputs):
        u, log_du = self._uncapped(value)
        log_x, slope = self._g(u)
        return pt.log(slope) + log_x + log_du

    def to_unit(self, x):
        """:math:`u` (before the cap: the quantile scale) for floats :math:`x` (where a chain
        starts, or posterior draws)."""
        return self._g_inverse.numpy(np.log(x))

    def inside(self, x: float) -> float:
        """``x``, or the value ``cap_width`` below the cap in :math:`u` where ``x`` is not below
        it (a start for chains)."""
        if self.u_cap is None or float(self.to_unit(x)) < self.u_cap - self.cap_width:
            return float(x)
        return float(np.exp(self._g.numpy(self.u_cap - self.cap_width)))

    def to_sampled(self, x):
        """The sampled value :math:`v` for floats :math:`x` below the cap."""
        u = self.to_unit(x)
        if self.u_cap is not None and np.any(u >= self.u_cap):
            raise ValueError(
                f"`x` must lie below the cap {self.bound:.4g}, but got {np.max(x):.4g}"
            )
        return self._capped(u, np)


def _below(g: Hermite, level: float, u: float) -> float:
    """The largest ``u' <= u`` with ``g(u') <= level`` (``g`` increasing): ``g`` and its inverse
    are separate interpolants, so the inverse's ``u`` can put ``g`` a hair above ``level``."""
    if g.numpy(u) <= level:
        return u
    low, high = u - 1.0, u
    while g.numpy(low) > level:
        low -= 1.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if g.numpy(middle) <= level else (low, middle)
    return low


def _cumulative(x, density):
    """The trapezoidal integral of ``density`` from ``x[0]`` to each ``x``."""
    return np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(x))])


class Ridge(Hermite):
    r"""The ridge :math:`m(\log r) = E[\log \theta \mid \log r]` of a grid posterior, for
    :math:`\theta` one of ``ls``, ``eta`` and ``sigma`` (``name``), as a :class:`Hermite`
    function of :math:`\log r`; :attr:`spread` is the conditional standard deviation of
    :math:`\log \theta` at each grid radius.

    The conditional mean, not the mode: where the conditional of :math:`\log ls` has two modes
    whose weights trade places within the radius posterior, a ridge following the higher one
    jumps between them. The mean moves continuously. The grid's cells of
    :math:`\theta` must be narrower than the conditional spread, or the mean snaps from cell to
    cell.

    With ``floored=True`` the ridge follows :math:`m` only where it rises above its level
    :math:`\ell = E[\log \theta]` (the grid posterior's mean), and stays at the level
    elsewhere, through a softplus :attr:`floor_width` wide:

    .. math::

        m_+(\log r) = \ell + w \log\!\big(1 + e^{(m(\log r) - \ell) / w}\big).

    For the noise and the signal scale: where they rise, the GP gives way to noise (bumps that
    lose their neighbours at the small-radius wall, or cover everything at large radii), a
    corner NUTS reaches along the ridge; where the noise falls, the GP interpolates and the
    noise's conditional spread widens, which a shift does not follow
    (``docs/benchmarks/sampling-studies.md``).
    """

    #: The variables a ridge can follow: the grid's axes 1, 2 and 3 (axis 0 is the radius).
    followed = ("ls", "eta", "sigma")
    #: Width (in log units) of the softplus that floors a ridge at its level.
    floor_width = 0.05

    def __init__(self, grid, name: str = "ls", *, floored: bool = False):
        if name not in self.followed:
            raise ValueError(f"`name` must be one of {self.followed}, but got {name!r}")
        others = tuple(a for a in (1, 2, 3) if a != 1 + self.followed.index(name))
        log_joint = special.logsumexp(grid.log_density, axis=others)  # (radius, theta) cells
        weights = special.softmax(log_joint, axis=1)
        log_theta = np.log(getattr(grid, name))
        self._joint, self._log_theta = special.softmax(log_joint), log_theta
        mean = weights @ log_theta
        self.spread = np.sqrt(np.maximum(weights @ log_theta**2 - mean**2, 0.0))
        #: The grid posterior's mean of log theta, the floor of a floored ridge.
        self.level = float(grid.marginal("radius") @ mean)
        #: Whether the ridge is floored at :attr:`level`.
        self.floored = floored
        if floored:
            w = self.floor_width
            mean = self.level + w * np.logaddexp(0.0, (mean - self.level) / w)
        log_radius = np.log(grid.radius)
        super().__init__(log_radius[0], log_radius[1] - log_radius[0], mean)

    def residual_marginal(self) -> tuple[np.ndarray, np.ndarray]:
        r"""The grid posterior's marginal of :math:`\log \theta - m(\log r)`, what ``sle_priors``
        samples as ``log(theta_rel)``: cell centres evenly spaced by the grid's step in
        :math:`\log \theta`, and their probabilities (for :meth:`QuantileLog.from_grid`). Each
        grid cell's mass is shared linearly between the two centres its residual falls
        between."""
        residual = self._log_theta[None, :] - self.values[:, None]
        step = float(self._log_theta[1] - self._log_theta[0])
        position = (residual - residual.min()) / step
        left = np.floor(position).astype(int)
        share = position - left
        probabilities = np.zeros(int(left.max()) + 2)
        np.add.at(probabilities, left, (1.0 - share) * self._joint)
        np.add.at(probabilities, left + 1, share * self._joint)
        return residual.min() + step * np.arange(probabilities.size), probabilities


class OnRidge(Transform):
    r"""A scale :math:`\theta` sampled relative to its ridge given the radius:
    :math:`\theta = e^{m(\log r)}\, \theta_\mathrm{rel}` with :math:`\theta_\mathrm{rel}` =
    ``inner.backward(v)`` of the sampled coordinate :math:`v` (a :class:`CenteredLog` or
    :class:`QuantileLog` of :math:`\theta_\mathrm{rel}`).

    The model keeps :math:`\theta` and its prior: the radius reaches the transform as an input
    of :math:`\theta`'s distribution (which does not depend on it), so no helper variable
    appears in the model or its trace. The Jacobian is triangular (the radius's coordinate does
    not depend on :math:`v`): :math:`\log|\partial\theta/\partial v| = m(\log r) +
    \log|\partial\theta_\mathrm{rel}/\partial v|`. Call :meth:`bind` with the radius
    before creating the variable.
    """

    name = "ridge"

    def __init__(self, ridge: Ridge, inner: Transform):
        self.ridge, self.inner = ridge, inner
        self._radius, self._position = None, None

    def bind(self, radius) -> None:
        """The radius variable the variable's distribution will take as an input."""
        self._radius, self._position = radius, None

    def with_inner(self, inner: Transform) -> OnRidge:
        """The same ridge and radius input, with another ``inner`` transform."""
        other = OnRidge(self.ridge, inner)
        other._radius, other._position = self._radius, self._position
        return other

    def _shift(self, inputs):
        if self._position is None:  # the first call, at the variable's creation, finds it
            self._position = next(i for i, x in enumerate(inputs) if x is self._radius)
        return self.ridge(pt.log(inputs[self._position]))[0]

    def forward(self, value, *inputs):
        return self.inner.forward(value * pt.exp(-self._shift(inputs)))

    def backward(self, value, *inputs):
        return pt.exp(self._shift(inputs)) * self.inner.backward(value)

    def log_jac_det(self, value, *inputs):
        return self._shift(inputs) + self.inner.log_jac_det(value)


def below_cutoff(log_scale: CenteredLog, cutoff: float) -> ChainedTransform:
    """``log_scale`` followed by an interval onto its image of ``(0, cutoff)``: the radius's
    centred log scale on sparse distances, whose model cannot take a radius above the cutoff."""
    top = (float(np.log(cutoff)) - log_scale.log_centre) / log_scale.scale
    top = data_number(top)
    return ChainedTransform([log_scale, Interval(bounds_fn=lambda *_: (None, top))])
