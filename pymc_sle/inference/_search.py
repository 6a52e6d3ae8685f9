"""The grid search behind :func:`~pymc_sle.inference.priors.sle_priors`: a problem, a policy, a
result.

- :class:`SearchProblem` -- what the grid sees, fixed once: the training block, ``y``, the
  inner kernel, the bounds, and the cache of eigendecompositions its passes share. On sparse
  distances it is the random subset of ``search_points`` training points
  (``pymc_sle.inference._subsample``), with the radius axis ending at the cutoff.
- :class:`SearchPolicy` -- every constant of the search, with the measurement behind it.
- :func:`search` -- a coarse pass over the priors' ranges, a fine pass over its mass, and, where
  needed, a pass that weighs several basins and one that zooms onto the start's basin; returns
  a :class:`SearchResult` of plain grids and basins.

What the result becomes in the model is decided by ``pymc_sle.inference._plan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymc_sle.inference._bounds import SLEBounds, suggest_bounds, target_scale, training_block
from pymc_sle.inference._subsample import subproblem
from pymc_sle.inference.grid import Basin, GridAxes, GridPosterior, grid_on_block
from pymc_sle.sparse_distance_matrix import SparseDistanceMatrix

__all__ = ["DEFAULT_POLICY", "SearchPolicy", "SearchProblem", "SearchResult", "search"]


@dataclass(frozen=True)
class SearchPolicy:
    """The constants of the search and of the scales NUTS samples on, with their reasons.

    The benchmarks (``benchmarks/nuts_convergence.py``) validated these values together; change
    one only to study it.

    Attributes
    ----------
    start_grid : dict
        The coarse pass over the priors' ranges: 32 radii x 24 length scales x 16 cells of each
        of ``eta`` and ``sigma``.
    fine_grid : dict
        The fine pass over the coarse pass's mass: 32 radii x 40 length scales. The ridge needs
        the length scales: with 16 of them NUTS diverged 11-25 times on the quick start, with 40
        never.
    fine_tail : float
        The fine pass spans all but this share (half either side) of the coarse pass's mass in
        the basins holding ``unreached_mass``. The transforms need the tails: with 1e-2 the quick
        start's chains diverged 15-28 times. Lighter basins are not spanned: they would spread
        the fine radii too thin (Teddy: a 0.2 % basin at radius 50 left 4 fine cells for the
        bulk near 22).
    weighing_scales : int
        Cells of each of ``eta`` and ``sigma``, over the coarse pass's mass range, of the pass
        that weighs several basins (when more than one holds ``min_basin_mass``). Their
        posteriors are narrow, and 16 cells over ``[1e-3, 3] * std(y)`` are 0.53 wide in the
        log: the strings' split 2 ridge basin held 13.6 % with 16 cells, 19.26 % with 48 over
        the mass range, 18.8 % with 128 radii x 128 length scales x 32 x 32; SAXS split 0's
        shoulder 0.70 %, 1.81 % and 1.86 %. The pass reuses the fine pass's eigendecompositions.
    noise_at_zero : float
        The noise *reaches zero* when the coarse marginal of ``sigma`` puts at least this much
        mass below a tenth of its median: the GP can interpolate, and the marginal of ``log
        sigma`` has a tail many times longer than its bulk (SAXS: 1.1-4.8 %; Teddy n = 200:
        0.09-1.8 %; other benchmarks: none). NUTS explored it slowly on a log scale (r-hat 1.02,
        bulk ESS 332); on its grid quantile scale r-hat <= 1.005, ESS >= 963.
    fine_noise : int
        Noise cells of the fine pass where the noise reaches zero, over the coarse range (0.084
        wide in ``log sigma``): the quantile map needs cells narrower than the bulk; from the
        coarse pass's 16 the map left sigma's ESS at 346.
    map_cells : float
        Below this many fine cells per posterior sd of ``log radius`` in the start's basin, one
        more pass zooms onto that basin: between knots the map's log density has kinks a cell
        apart, and on a posterior one cell wide they left curvature 18 times the bulk's (Teddy
        n = 400 split 1: 10.4 leapfrog steps per draw; zoomed to 2.5 cells per sd, 7.2 and
        twice the ESS per gradient). 7 of the benchmarks' 18 splits have fewer than 2.
    unreached_mass : float
        Mass outside the start's basin above which ``sle_priors`` warns; the basins the fine
        pass spans hold at least this much.
    basin_barrier : float
        Dips of the radius marginal shallower than this (nats) do not separate basins: NUTS
        crosses them (the 1-D benchmark's chains reproduce dips of about 1 nat). Across deeper
        ones between basins holding ``unreached_mass``, the quantile scale makes a short, deep
        trench where leapfrog steps diverge: the maps are then not used.
    shoulder_barrier, shoulder_mass : float
        A *shoulder*, a basin holding less than ``shoulder_mass`` behind a dip deeper than
        ``shoulder_barrier`` nats, is a basin of its own: the main basin's chains visit it too
        rarely (SAXS split 0: 0.72 % of the mass got 0.35 % of the draws, with 2-10 divergences
        per fit; sampled apart, 0). Heavier basins behind such dips are crossed often enough:
        sampling the W2-image example's 29 % basin behind a 1.5-3-nat dip apart took 2.8-3.6
        times the wall time and gave 1 and 8 divergences where one basin gave 0 and 0.
    min_basin_mass : float
        The smallest basin :func:`~pymc_sle.inference.sample_basins` samples by default (at
        0.01, SAXS split 0's shoulder was left to the main basin's chains, which diverged
        there). Lighter basins above the start's are cut off by the radius cap when together
        they hold less.
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

    def basins(self, grid: GridPosterior) -> list[Basin]:
        """The grid's radius basins behind dips deeper than ``basin_barrier`` nats, with their
        shoulders apart. The heavier pieces of a basin stay one basin, peaked at the heaviest
        (a basin whose light pieces are not all at its ends stays whole)."""
        pieces = grid.radius_modes(min_mass=0.0, barrier=self.shoulder_barrier)
        out = []
        for basin in self.deep_basins(grid):
            inside = [p for p in pieces if basin.low <= p.radius <= basin.high]
            heavy = [i for i, p in enumerate(inside) if p.mass >= self.shoulder_mass]
            if len(heavy) in (0, len(inside)) or heavy != list(range(heavy[0], heavy[-1] + 1)):
                out.append(basin)
                continue
            core = inside[heavy[0] : heavy[-1] + 1]
            peak = max(core, key=lambda p: p.mass).radius
            out.append(Basin(peak, sum(p.mass for p in core), core[0].low, core[-1].high))
            out.extend(p for p in inside if p.mass < self.shoulder_mass)
        return out

    def deep_basins(self, grid: GridPosterior, min_mass: float = 0.0) -> list[Basin]:
        """The radius basins behind dips deeper than ``basin_barrier``, in radius order."""
        return grid.radius_modes(min_mass=min_mass, barrier=self.basin_barrier)

    def on_quantiles(self, grid: GridPosterior) -> bool:
        """Whether at most one deep basin holds ``unreached_mass``: the radius's quantile scale
        then has no trench."""
        return len(self.deep_basins(grid, self.unreached_mass)) <= 1

    def noise_reaches_zero(self, grid: GridPosterior) -> bool:
        """Whether the marginal of ``sigma`` puts ``noise_at_zero`` of its mass or more below a
        tenth of its median."""
        marginal = grid.marginal("sigma")
        median = grid.sigma[np.searchsorted(np.cumsum(marginal), 0.5)]
        return float(marginal[grid.sigma < median / 10].sum()) >= self.noise_at_zero


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
        The bounds of :func:`~pymc_sle.inference.priors.suggest_bounds` on them.
    inner, inner_kwargs, mass
        The inner kernel and the priors' mass between their bounds.
    kernel : dict
        What the model's SLE reads: ``distances`` (the whole matrix), ``landmarks`` (its
        columns), ``inner``, ``inner_kwargs``.
    y_scale : float
        The scale of all the observations (:func:`~pymc_sle.inference._bounds.target_scale`):
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
        cls, distances, rows, y, *, landmarks, inner, inner_kwargs, mass, search_points
    ) -> SearchProblem:
        """The problem of ``sle_priors``' arguments: every training point on dense distances;
        on a :class:`~pymc_sle.SparseDistanceMatrix`, ``search_points`` of them at random."""
        kernel = {"inner": inner, "inner_kwargs": inner_kwargs}
        if isinstance(distances, SparseDistanceMatrix):
            sub = subproblem(distances, rows, y, landmarks, search_points)
            searched = (sub.distances, np.arange(sub.positions.size), sub.y, None)
            kernel.update(distances=distances, landmarks=sub.landmarks)
            cutoff = sub.cutoff
        else:
            searched, cutoff = (distances, rows, y, landmarks), None
        bounds = suggest_bounds(*searched[:3], landmarks=searched[3])
        matrix, train, columns = training_block(*searched[:2], searched[3])
        if cutoff is None:
            kernel.update(distances=matrix, landmarks=columns)
        block = matrix.values[np.ix_(train, columns)]
        observed = np.asarray(searched[2], dtype=float)
        return cls(
            block, observed, bounds, inner, inner_kwargs, mass, kernel, target_scale(y), cutoff
        )

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
        Whether the noise reaches zero (:meth:`SearchPolicy.noise_reaches_zero`).
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
    coarse = problem.grid(**policy.start_grid)
    sampled = coarse.radius_modes(min_mass=policy.unreached_mass, barrier=policy.basin_barrier)

    def over_mass(name: str, cells: int) -> np.ndarray:
        """An axis of ``cells`` over the coarse pass's mass range of ``name`` in ``sampled``."""
        return np.geomspace(*coarse.mass_range(name, policy.fine_tail, sampled), cells)

    axes = {name: over_mass(name, policy.fine_grid[f"n_{name}"]) for name in ("radius", "ls")}
    noise_at_zero = policy.noise_reaches_zero(coarse)
    if noise_at_zero:
        axes["sigma"] = np.geomspace(coarse.sigma[0], coarse.sigma[-1], policy.fine_noise)
    grid = problem.grid(**axes, n_scale=policy.start_grid["n_scale"])
    basins = policy.basins(grid)
    if sum(b.mass >= policy.min_basin_mass for b in basins) > 1:  # they weigh the pooled draws
        scales = {name: over_mass(name, policy.weighing_scales) for name in ("eta", "sigma")}
        axes = scales | axes  # the noise's fine_noise cells stay where it reaches zero
        grid = problem.grid(**axes)  # the same (radius, ls) cells: no new eigendecomposition
        basins = policy.basins(grid)
    on_quantiles = policy.on_quantiles(grid)
    deep = policy.deep_basins(grid)
    start = _holding_mode(grid, deep)
    # what the capped map covers: the start's basin and the lighter ones below it
    span = grid.mass_range("radius", policy.fine_tail, [b for b in deep if b.high <= start.high])
    narrower = span != (grid.radius[0], grid.radius[-1])
    zoomed = None
    if zoom and on_quantiles and narrower and _cells_per_sd(grid, start) < policy.map_cells:
        zoom_axes = {**axes, "radius": np.geomspace(*span, policy.fine_grid["n_radius"])}
        zoomed = problem.grid(**zoom_axes, n_scale=policy.start_grid["n_scale"])
    reported = [
        b for b in sorted(basins, key=lambda b: -b.mass) if b.mass >= policy.unreached_mass / 10
    ]
    home = _holding_mode(grid, basins)
    return SearchResult(
        coarse, grid, reported, deep, start, on_quantiles, noise_at_zero, zoomed, home
    )


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
