r"""The grid search behind :func:`~pymc_sle.sle_priors`: a problem, a policy, a result.

- :class:`SearchProblem` -- what the grid sees, fixed once: the training block, ``y``, the
  inner kernel, the bounds, and the cache of eigendecompositions its passes share. On sparse
  distances it is the posterior given the observations :math:`y_S` of ``search_points`` random
  training points :math:`S`, with the kernel unchanged (every landmark kept, so
  :math:`k(x_i, x_j)` for :math:`i, j \in S` is exactly the full model's) and the radius axis
  ending at the cutoff: exact for that subset, it approximates the full posterior, which
  conditions on more data (:doc:`/hyperposterior`, "What it approximates").
- :class:`SearchPolicy` -- every constant of the search.
- :func:`search` -- a coarse pass over the priors' ranges, a fine pass over its mass, and, where
  needed, a pass that weighs several basins and one that zooms onto the start's basin; returns
  a :class:`SearchResult` of plain grids and basins.

What the result becomes in the model is decided by ``pymc_sle.inference._scales``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.inference._basins import Basin, find_basins
from pymc_sle.inference._bounds import SLEBounds, TrainingData
from pymc_sle.inference._grid import GridAxes, GridPosterior, grid_on_block

__all__ = [
    "DEFAULT_POLICY",
    "SearchPolicy",
    "SearchProblem",
    "SearchResult",
    "search",
]


@dataclass(frozen=True)
class SearchPolicy:
    """The constants of the search and of the scales NUTS samples on. The benchmarks validated
    the defaults together: change one only to study it. :doc:`/hyperposterior` ("The search's
    constants") gives the measurement behind each.

    Attributes
    ----------
    start_grid : dict
        The coarse pass over the priors' ranges: cells of the radius, the length scale and each
        of ``eta`` and ``sigma``.
    fine_grid : dict
        The fine pass over the coarse pass's mass: cells of the radius and the length scale.
    fine_tail : float
        The fine pass spans all but this share (half either side) of the coarse pass's mass in
        the basins holding ``unreached_mass``.
    weighing_scales : int
        Cells of each of ``eta`` and ``sigma``, over the coarse pass's mass range, of the pass
        that weighs several basins (when more than one holds ``min_basin_mass``); it reuses the
        fine pass's eigendecompositions.
    noise_at_zero : float
        The noise *reaches zero* when the coarse marginal of ``sigma`` puts at least this much
        mass below a tenth of its median: the noise is then sampled on its quantile scale.
    fine_noise : int
        Noise cells of the fine pass, over the coarse range, where the noise reaches zero.
    map_cells : float
        Below this many fine cells per posterior sd of ``log radius`` in the start's basin, one
        more pass zooms onto that basin.
    unreached_mass : float
        Mass outside the start's basin above which basins are weighed and jumped between; the
        basins the fine pass spans hold at least this much.
    basin_barrier : float
        Dips of the radius marginal shallower than this (nats) do not separate basins: NUTS
        crosses them. Across deeper ones between basins holding ``unreached_mass`` the quantile
        maps are not used.
    shoulder_barrier, shoulder_mass : float
        A *shoulder*, a basin holding less than ``shoulder_mass`` behind a dip deeper than
        ``shoulder_barrier`` nats, is a basin of its own.
    min_basin_mass : float
        The smallest basin :func:`~pymc_sle.sample_basins` samples by default; lighter basins
        above the start's are cut off by the radius cap when together they hold less.
    edge_mass : float
        The coarse pass holds the posterior: an axis whose end cell holds more than this share
        of its marginal is widened beyond that end, by a quarter of its cells at its own
        spacing, and the pass repeated, up to ``widenings`` times (the radius never beyond the
        distances' cutoff).
    widenings : int
        The most times the coarse pass is widened.
    """

    start_grid: dict = field(default_factory=lambda: {"n_radius": 32, "n_ls": 24, "n_scale": 16})
    fine_grid: dict = field(default_factory=lambda: {"n_radius": 32, "n_ls": 40})
    fine_tail: float = 1e-4
    weighing_scales: int = 48
    noise_at_zero: float = 0.005
    fine_noise: int = 96
    map_cells: float = 2.0
    unreached_mass: float = 0.01
    basin_barrier: float = 3.0
    shoulder_barrier: float = 1.5
    shoulder_mass: float = 0.05
    min_basin_mass: float = 0.005
    edge_mass: float = 1e-3
    widenings: int = 6

    def basins(self, grid: GridPosterior) -> list[Basin]:
        """The grid's radius basins and shoulders (``find_basins``
        with this policy's barriers)."""
        return find_basins(grid, self.basin_barrier, self.shoulder_barrier, self.shoulder_mass)

    def deep_basins(self, grid: GridPosterior, min_mass: float = 0.0) -> list[Basin]:
        """The radius basins behind dips deeper than ``basin_barrier``, in radius order."""
        return grid.radius_modes(min_mass=min_mass, barrier=self.basin_barrier)


#: The policy ``sle_priors`` searches with unless told otherwise.
DEFAULT_POLICY = SearchPolicy()


@dataclass(frozen=True, eq=False)
class SearchProblem:
    """What the grid passes see, fixed once.

    Attributes
    ----------
    block : ndarray
        The searched training points' distances to the landmarks, ``(n, m)``.
    y : ndarray
        Their observations.
    bounds : SLEBounds
        The bounds of :func:`~pymc_sle.suggest_bounds` on them.
    inner, inner_kwargs, mass
        The inner kernel and the priors' mass between their bounds.
    kernel : dict
        What the model's SLE reads: ``distances`` (the whole matrix), ``landmarks`` (its
        columns), ``inner``, ``inner_kwargs``.
    y_scale : float
        The scale of all the observations (``target_scale``):
        the scale of the HalfNormal priors of ``eta`` and ``sigma``.
    cutoff : float or None
        Sparse distances' cutoff: the radius axis ends there, and so does the radius prior.
    spectra : dict
        Each ``(radius, ls)`` cell's eigenvalues and coordinates of ``y``, shared by the passes.
    """

    block: np.ndarray
    y: np.ndarray
    bounds: SLEBounds
    inner: object
    inner_kwargs: dict | None
    mass: float
    kernel: dict
    y_scale: float
    cutoff: float | None = None
    spectra: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls, data: TrainingData, *, inner, inner_kwargs, mass: float, search_points: int
    ) -> SearchProblem:
        """The problem of validated training data: every training point on dense distances; on
        a :class:`~pymc_sle.SparseDistanceMatrix`, ``search_points`` of them at random."""
        kernel = {"inner": inner, "inner_kwargs": inner_kwargs, "distances": data.distances,
                  "landmarks": data.landmarks}  # fmt: skip
        block, y, bounds = data.searched(search_points)
        sparse = isinstance(data.distances, SparseDistanceMatrix)
        cutoff = data.distances.cutoff if sparse else None
        return cls(block, y, bounds, inner, inner_kwargs, mass, kernel, data.y_scale, cutoff)

    def grid(self, **axes) -> GridPosterior:
        """One grid pass (axes as for :func:`~pymc_sle.inference.grid_posterior`)."""
        return grid_on_block(
            self.block,
            self.y,
            self.bounds,
            GridAxes(**axes, radius_max=self.cutoff),
            inner=self.inner,
            inner_kwargs=self.inner_kwargs,
            mass=self.mass,
            spectra=self.spectra,
        )


@dataclass(frozen=True)
class SearchResult:
    """What the search found.

    Attributes
    ----------
    coarse, grid : GridPosterior
        The coarse pass over the priors' ranges, and the fine one over its mass (or the
        weighing pass, when more than one basin holds ``min_basin_mass``).
    basins : list of Basin
        The fine grid's basins and shoulders, highest mass first, down to a tenth of
        ``unreached_mass``.
    deep : list of Basin
        The fine grid's basins behind dips deeper than ``basin_barrier``, in radius order.
    start : Basin
        The one of ``deep`` holding the fine grid's mode, where chains start.
    on_quantiles : bool
        Whether at most one deep basin holds ``unreached_mass``: the radius is then sampled on
        its quantile scale, which has no trench.
    noise_at_zero : bool
        Whether the noise reaches zero (``SearchPolicy.noise_at_zero``).
    zoom : GridPosterior or None
        The fine grid again over the start's basin and those below it, where the radius is on
        its quantile scale and the fine grid has fewer than ``map_cells`` cells per sd there.
    home : Basin
        The one of the fine grid's basins and shoulders holding its mode: its mass is what
        chains started there reach.
    """

    coarse: GridPosterior
    grid: GridPosterior
    basins: list
    deep: list
    start: Basin
    on_quantiles: bool
    noise_at_zero: bool
    zoom: GridPosterior | None
    home: Basin


def search(
    problem: SearchProblem, policy: SearchPolicy = DEFAULT_POLICY, *, zoom: bool = True
) -> SearchResult:
    """The passes of the grid search (module docstring); ``zoom=False`` never zooms (an
    uncapped map needs the whole fine grid)."""
    coarse, scales = _covering_pass(problem, policy)  # scales: eta and sigma where widened
    sampled = coarse.radius_modes(min_mass=policy.unreached_mass, barrier=policy.basin_barrier)

    def over_mass(name: str, cells: int) -> np.ndarray:
        """An axis of ``cells`` over the coarse pass's mass range of ``name`` in ``sampled``."""
        return np.geomspace(*coarse.mass_range(name, policy.fine_tail, sampled), cells)

    axes = {name: over_mass(name, policy.fine_grid[f"n_{name}"]) for name in ("radius", "ls")}
    noise_at_zero = _noise_reaches_zero(coarse, policy)
    if noise_at_zero:
        axes["sigma"] = np.geomspace(coarse.sigma[0], coarse.sigma[-1], policy.fine_noise)
    grid = problem.grid(**(scales | axes), n_scale=policy.start_grid["n_scale"])
    basins = policy.basins(grid)
    if sum(b.mass >= policy.min_basin_mass for b in basins) > 1:  # they weigh the pooled draws
        scales = {name: over_mass(name, policy.weighing_scales) for name in ("eta", "sigma")}
        axes = scales | axes  # the noise's fine_noise cells stay where it reaches zero
        grid = problem.grid(**axes)  # the same (radius, ls) cells: no new eigendecomposition
        basins = policy.basins(grid)
    on_quantiles = _on_quantiles(grid, policy)
    deep = policy.deep_basins(grid)
    start = _holding_mode(grid, deep)
    # what the capped map covers: the start's basin and the lighter ones below it
    span = grid.mass_range("radius", policy.fine_tail, [b for b in deep if b.high <= start.high])
    narrower = span != (grid.radius[0], grid.radius[-1])
    zoomed = None
    if zoom and on_quantiles and narrower and _cells_per_sd(grid, start) < policy.map_cells:
        zoom_axes = {**scales, **axes, "radius": np.geomspace(*span, policy.fine_grid["n_radius"])}
        zoomed = problem.grid(**zoom_axes, n_scale=policy.start_grid["n_scale"])
    reported = [
        b for b in sorted(basins, key=lambda b: -b.mass) if b.mass >= policy.unreached_mass / 10
    ]
    home = _holding_mode(grid, basins)
    return SearchResult(
        coarse, grid, reported, deep, start, on_quantiles, noise_at_zero, zoomed, home
    )


def _on_quantiles(grid: GridPosterior, policy: SearchPolicy) -> bool:
    """Whether at most one deep basin holds ``unreached_mass``: the radius's quantile scale then
    has no trench."""
    return len(policy.deep_basins(grid, policy.unreached_mass)) <= 1


def _noise_reaches_zero(grid: GridPosterior, policy: SearchPolicy) -> bool:
    """Whether the marginal of ``sigma`` puts ``noise_at_zero`` of its mass or more below a tenth
    of its median."""
    marginal = grid.marginal("sigma")
    median = grid.sigma[np.searchsorted(np.cumsum(marginal), 0.5)]
    return float(marginal[grid.sigma < median / 10].sum()) >= policy.noise_at_zero


def _covering_pass(problem: SearchProblem, policy: SearchPolicy) -> tuple[GridPosterior, dict]:
    """The coarse pass over the priors' ranges, each axis widened beyond an end whose cell holds
    more than ``edge_mass`` of its marginal (``SearchPolicy.edge_mass``): the passes after it
    look only where it found mass, so it must hold the posterior. Cells keep their spacing in
    the log; the radius stops at the distances' cutoff. Returns the grid and its ``eta`` and
    ``sigma`` axes where they were widened (the later passes' default axes otherwise)."""
    grid = problem.grid(**policy.start_grid)
    scales = {}
    for _ in range(policy.widenings):
        axes, widened = {}, False
        for name in ("radius", "ls", "eta", "sigma"):
            axis, marginal = getattr(grid, name), grid.marginal(name)
            step = float(np.log(axis[1] / axis[0]))
            extra = max(axis.size // 4, 1)
            low = extra if marginal[0] > policy.edge_mass else 0
            high = extra if marginal[-1] > policy.edge_mass else 0
            if name == "radius" and problem.cutoff is not None:
                room = np.log(problem.cutoff / axis[-1]) / step
                high = min(high, int(np.floor(room + 1e-9)))
            below = axis[0] * np.exp(-step * np.arange(low, 0, -1))
            above = axis[-1] * np.exp(step * np.arange(1, high + 1))
            axes[name] = np.concatenate([below, axis, above])  # its cells' spectra are kept
            if low or high:
                widened = True
                if name in ("eta", "sigma"):
                    scales[name] = axes[name]
        if not widened:
            break
        grid = problem.grid(**axes)
    return grid, scales


def _holding_mode(grid: GridPosterior, basins: list[Basin]) -> Basin:
    """The basin holding the grid's mode, where every chain starts."""
    at = grid.mode()["radius"]
    return next(b for b in basins if b.low <= at <= b.high)


def _cells_per_sd(grid: GridPosterior, basin: Basin) -> float:
    """The posterior sd of ``log radius`` within ``basin``, in the grid's radius cells."""
    inside = (grid.radius >= basin.low) & (grid.radius <= basin.high)
    p = np.where(inside, grid.marginal("radius"), 0.0)
    p = p / p.sum()
    log_radius = np.log(grid.radius)
    sd = np.sqrt(max(float(p @ log_radius**2 - (p @ log_radius) ** 2), 0.0))
    return sd / float(log_radius[1] - log_radius[0])
