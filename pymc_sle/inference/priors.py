"""Data-adaptive hyperparameter bounds and priors for the SLE kernel.

The paper bounds the bump radius between the smallest and the largest non-zero distance among
the training points (Appendix D). A radius below the nearest-neighbour spacing makes every
embedding one-hot, so all distinct training points look equally (un)correlated; a radius above
the diameter makes every bump cover everything. :func:`sle_priors` turns such bounds into
LogNormal priors whose central ``mass`` lies between them, which keeps NUTS away from both
degenerate ends without hard walls (see :func:`lognormal_between` for why not InverseGamma).

Amplitude and length scale: with a scalar amplitude the embedding is linear in ``a``, so the kernel
depends on ``a / ls`` only. :func:`sle_priors` therefore puts a prior on ``ls`` and leaves the
amplitude at 1.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc_sle.inference._bounds import (
    SLEBounds,
    lognormal_between,
    radius_bounds,
    suggest_bounds,
    target_scale,
    training_block,
)
from pymc_sle.inference._subsample import subproblem
from pymc_sle.inference._transforms import CenteredLog, QuantileLog, Ridge, below_cutoff
from pymc_sle.inference.grid import GridPosterior, RadiusMode, grid_posterior, reused_spectra
from pymc_sle.sparse_distance_matrix import SparseDistanceMatrix

__all__ = [
    "Basin",
    "SLEBounds",
    "SLEPriors",
    "lognormal_between",
    "radius_bounds",
    "scale_priors",
    "sle_priors",
    "suggest_bounds",
]


#: The coarse grid ``start="mode"`` searches over the priors' ranges: 32 x 24 eigendecompositions
#: of the n x n Gram.
_START_GRID = {"n_radius": 32, "n_ls": 24, "n_scale": 16}
#: The fine grid over the coarse grid's mass: 32 radii x 40 length scales. The ridge needs the
#: length scales: with 16 of them (and the conditional mode as the ridge) NUTS diverged 11-25
#: times on the quick start, with 40 never.
_FINE_GRID = {"n_radius": 32, "n_ls": 40}
#: The fine grid spans all but this share of the coarse grid's mass in the basins holding at least
#: _UNREACHED_MASS (half either side). The transforms need the tails of those: with 1e-2 instead,
#: the quick start's chains diverged 15-28 times. Smaller basins are not sampled, and spanning them
#: would spread the fine radii too thin (on Teddy a 0.2 % basin at radius 50 left 4 fine cells
#: for the posterior's bulk near 22).
_FINE_TAIL = 1e-4
#: Cells of each of eta and sigma on the grid that weighs several basins, over the coarse grid's
#: mass range of each (where the noise reaches zero it keeps its 96 cells over the whole range).
#: Their posteriors are narrow, and the fine grid's 16 cells over [1e-3, 3] * std(y) are 0.53 wide
#: in the log: its sum over ``eta`` sees one or two cells. The strings' split 2 (sd of log eta
#: 0.16): the ridge basin holds 13.6 % with those 16 cells, 19.3 % with 64 over the same span,
#: 19.26 % with 48 over the mass range, 18.8 % with 128 radii x 128 length scales x 32 x 32.
#: SAXS split 0 (sd 0.11; 0.057 on the 16 cells): its shoulder holds 0.70 % with 16 cells,
#: 1.81 % with 48 over the mass range, 1.86 % with 128; split 2's light basin 1.97 % with 64 over
#: the span, 1.65 % with 48, 1.60 % with 128. One more pass of the fine grid, where
#: ``sample_basins`` samples more than one basin by default (``MIN_BASIN_MASS``); the maps are
#: read off it too. It reuses the fine pass's eigendecompositions (``reused_spectra``): only
#: the sums over the finer ``eta`` and ``sigma`` cells are new.
WEIGHING_SCALES = 48
#: The noise *reaches zero* when the coarse grid's marginal of ``sigma`` puts at least this much
#: mass below a tenth of its median: the GP can interpolate the data, the likelihood stays finite
#: as ``sigma`` goes to 0, and the marginal of ``log sigma`` has a tail that falls only like
#: ``sigma`` itself (SAXS: 1.1-4.8 % of the mass below a tenth of the median; Teddy n = 200:
#: 1.8 % and 0.9 % on two splits, 0.09 % on the third; the other benchmarks: none). On a log
#: scale that tail is many times longer than the bulk (SAXS split 1: 1 % of the draws 10
#: posterior sd below the median), chains explore it slowly, and NUTS sampled ``sigma`` with
#: r-hat 1.02 and bulk ESS 332 there. ``sle_priors`` then samples the
#: noise on its grid quantile scale, from a fine grid with ``_FINE_NOISE`` noise cells (SAXS's
#: three splits: r-hat <= 1.005, bulk ESS >= 963 over all variables, no divergences).
_NOISE_AT_ZERO = 0.005
#: Noise cells of the fine grid when the noise reaches zero, over the coarse grid's range
#: ``[1e-3, 3] * std(y)`` (0.084 wide in ``log sigma``). The quantile map needs cells narrower
#: than the marginal's bulk: from the 16 of the coarse grid (0.53 wide, wider than the bulk's
#: sd of 0.17 on SAXS split 1) the map left sigma's ESS at 346.
_FINE_NOISE = 96
#: Cells of the fine grid per posterior sd of ``log radius`` in the start's basin below which the
#: radius's quantile map is built from one more pass zoomed onto that basin (the mass range of it
#: and the lighter basins below it, as many radii as the fine grid). Between cell centres the
#: map's density is linear, so its log has kinks a cell apart; on a posterior one cell wide, with
#: a light shoulder in its tail, they left curvature 18 times the bulk's there (Teddy n = 400,
#: split 1: 1.1 cells per sd, 67 % of the mass in one cell, 10.4 leapfrog steps per draw).
#: Zoomed to 2.5 cells per sd it took 7.2 steps and doubled the ESS per gradient
#: (``docs/hyperposterior.md``). Of the benchmarks' 18 splits, 7 have fewer than 2 cells per sd
#: (0.4-1.9).
_MAP_CELLS = 2.0
#: Mass outside the start basin above which ``sle_priors`` warns.
_UNREACHED_MASS = 0.01
#: Dips of the radius marginal shallower than this (nats) do not separate basins: NUTS crosses
#: them (on the 1-D benchmark its chains reproduce a marginal with dips of about 1 nat). Across
#: deeper ones between basins that each hold ``_UNREACHED_MASS``, the quantile scale makes a
#: short, deep trench where leapfrog steps diverge: the maps are then not used.
BASIN_BARRIER = 3.0
#: A *shoulder*, a basin holding less than ``SHOULDER_MASS`` behind a dip deeper than
#: ``SHOULDER_BARRIER`` nats, is a basin of its own too: the main basin's chains visit it too
#: rarely. SAXS split 0's shoulder (0.72 % of the mass behind a 1.8-nat dip) got 0.35 % of their
#: draws on average, and they diverged 2-10 times per fit over four sampler seeds; sampled apart
#: (``sample_basins``' ``min_mass`` 0.005), 0 times with the same seeds. Heavier basins behind
#: such dips are crossed often enough: sampling the W2-image example's 29 % basin behind a
#: 1.5-3-nat dip apart took 2.8-3.6 times the wall time and gave 1 and 8 divergences (sampler
#: seeds 1, 2, r-hat up to 1.021) where one basin gave 0 and 0.
SHOULDER_BARRIER, SHOULDER_MASS = 1.5, 0.05
#: The smallest basin mass :func:`pymc_sle.inference.sample_basins` samples by default. It was
#: 0.01: SAXS split 0's shoulder (0.72 % of the grid's mass) was then left to the main basin's
#: chains, which under-visited it and diverged when they got there. Lighter basins above the
#: start's are cut off by the radius cap (``sle_priors``'s ``cap_radius``) when together they hold
#: less than this.
MIN_BASIN_MASS = 0.005


@dataclass(frozen=True)
class Basin:
    """A basin of the radius posterior that NUTS cannot leave, found by ``sle_priors``.

    Attributes
    ----------
    radius, low, high : float
        The basin's peak and its extent on the coarse grid.
    mass : float
        Its posterior probability on the grid.
    start : dict
        Where chains sampling this basin start: the grid's highest cell in the basin, keyed by
        the model's variable names (``pm.sample(initvals=...)``).
    """

    radius: float
    mass: float
    low: float
    high: float
    start: dict[str, float]


class SLEPriors(dict):
    """What :func:`~pymc_sle.inference.priors.sle_priors` returns: a dict ``{"radius", "ls", "eta",
    "sigma"}`` of the new random variables, with the radius ``basins`` its start search found
    (highest mass first; empty for ``start="prior"``). :func:`pymc_sle.inference.sample_basins`
    samples each.

    :meth:`covariance` builds the SLE covariance these priors were searched for (the same
    distances, landmarks and inner kernel), so the inner kernel is named once.

    ``scales`` records what the search decided: for each key, the scale NUTS samples it on --
    ``"log"`` (PyMC's default), ``"centred log"`` (a log scale centred at the grid's mode),
    ``"quantile"`` (the grid posterior's quantile scale; ``"capped quantile"`` with the radius
    capped at ``radius_cap``), or ``"ridge"`` / ``"floored ridge"`` (sampled as ``{name}_rel``, a
    ratio to the grid's ridge given the radius, on a centred log scale; ``"floored ridge,
    quantile"`` on its quantile scale)."""

    def __init__(
        self,
        variables: dict,
        basins: tuple[Basin, ...] = (),
        radius_cap: float | None = None,
        truncated_mass: float = 0.0,
        scales: dict[str, str] | None = None,
        kernel: dict | None = None,
    ):
        super().__init__(variables)
        self.basins = tuple(basins)
        #: The radius's upper bound in the sampled model (``None``: none), and the grid's
        #: posterior mass above it, which the model's posterior loses (``sle_priors``).
        self.radius_cap, self.truncated_mass = radius_cap, float(truncated_mass)
        scales = dict(scales or {})
        self.scales = scales | {name: "log" for name in self if name not in scales}
        #: What the search assumed of the kernel: ``distances``, ``landmarks`` (column indices),
        #: ``inner`` and ``inner_kwargs`` (``None`` when built by hand).
        self.kernel = None if kernel is None else dict(kernel)

    def covariance(self, *, feature_mode: bool = False, **sle_kwargs):
        """``eta**2 * SLE(...)`` with these priors' radius and length scale, on the distances,
        landmarks and inner kernel the priors were searched for.

        Parameters
        ----------
        feature_mode : bool, default False
            ``False``: index mode, ``X[:, 0]`` are row indices into the distance matrix given
            to :func:`sle_priors`. ``True``: feature mode, the ``len(landmarks)`` columns of
            ``X`` are each point's distances to the landmarks (no distance matrix).
        **sle_kwargs
            Other arguments of :class:`pymc_sle.SLE` (``amplitude``, ``shape``,
            ``radius_max``, ``embedding``, ``active_dims``).

        Returns
        -------
        pymc.gp.cov.Covariance

        Raises
        ------
        ValueError
            If the priors were not made by :func:`sle_priors`.
        TypeError
            If ``sle_kwargs`` sets what the priors fix (distances, landmarks, radius, ls, inner,
            inner_kwargs, input_dim).
        """
        from pymc_sle.kernels import SLE

        if self.kernel is None:
            raise ValueError(
                "`covariance()` needs priors made by sle_priors, which records the distances, "
                "landmarks and inner kernel; build SLE(...) yourself for these"
            )
        fixed = {"distances", "landmarks", "radius", "ls", "inner", "inner_kwargs", "input_dim"}
        clashing = sorted(fixed & set(sle_kwargs))
        if clashing:
            raise TypeError(
                f"`covariance()` takes {clashing} from the priors (what sle_priors searched "
                "for); build SLE(...) yourself to change them"
            )
        kernel = self.kernel
        where = (
            {"input_dim": len(kernel["landmarks"])}
            if feature_mode
            else {"distances": kernel["distances"], "landmarks": kernel["landmarks"]}
        )
        sle = SLE(
            **where,
            radius=self["radius"],
            ls=self["ls"],
            inner=kernel["inner"],
            inner_kwargs=kernel["inner_kwargs"],
            **sle_kwargs,
        )
        return self["eta"] ** 2 * sle

    def var_names(self, model: pm.Model, idata=None) -> list[str]:
        """What convergence diagnostics should cover: every free variable of ``model`` (what
        NUTS samples, ``ls_rel`` included) and the deterministic ``ls``.

        With ``idata``, only those in its posterior: ``gp.conditional`` adds free variables to
        the model that NUTS never sampled, e.g. ``az.summary(idata,
        var_names=priors.var_names(model, idata))`` after a prediction."""
        free = [rv.name for rv in model.free_RVs]
        names = free + [v.name for v in self.values() if v in model.deterministics]
        return names if idata is None else [n for n in names if n in idata.posterior]


@dataclass(frozen=True)
class _Search:
    """What ``sle_priors``' grid search found (:func:`_search`).

    Attributes
    ----------
    coarse, grid : GridPosterior
        The coarse grid posterior over the priors' ranges, and the fine one over where the coarse
        one puts all but ``_FINE_TAIL`` of the mass of its basins holding ``_UNREACHED_MASS``
        (with ``_FINE_NOISE`` noise cells when ``noise_at_zero``, and ``WEIGHING_SCALES`` cells
        of ``eta`` and ``sigma`` over their mass where more than one basin holds
        ``MIN_BASIN_MASS``).
    basins : list of RadiusMode
        The fine grid's radius basins and shoulders (:func:`_radius_basins`), highest mass first.
    on_quantiles : bool
        Whether the radius is sampled on its quantile scale (:func:`_uses_maps`).
    noise_at_zero : bool
        Whether the noise reaches zero (:func:`_noise_reaches_zero`).
    deep : list of RadiusMode
        The fine grid's radius basins behind dips deeper than ``BASIN_BARRIER`` nats, in radius
        order, whatever their mass.
    start : RadiusMode
        The one of ``deep`` holding the fine grid's mode, where chains start (:func:`_home`).
    zoom : GridPosterior or None
        Where the radius is on its quantile scale and the fine grid resolves the start's basin
        with fewer than ``_MAP_CELLS`` cells per sd (:func:`_cells_per_sd`): the fine grid
        again over the mass range of that basin and those below it (when narrower than the
        fine grid's span), whose radius marginal the capped map is built from.
    """

    coarse: GridPosterior
    grid: GridPosterior
    basins: list
    on_quantiles: bool
    noise_at_zero: bool
    deep: list
    start: RadiusMode
    zoom: GridPosterior | None = None


def _search(distances, rows, y, landmarks, mass, inner, inner_kwargs, zoom=True,
            **at_scale) -> _Search:  # fmt: skip
    """The grid search behind ``sle_priors`` (:class:`_Search`; ``zoom=False``: never zoom, for
    an uncapped map; ``at_scale``: ``radius_max`` of
    :func:`~pymc_sle.inference.grid.grid_posterior`, for the subproblem of sparse distances). A
    warning when basins other than the one holding the grid's mode hold more than
    ``_UNREACHED_MASS``."""
    common = dict(landmarks=landmarks, inner=inner, inner_kwargs=inner_kwargs, mass=mass,
                  **at_scale)  # fmt: skip
    coarse = grid_posterior(distances, rows, y, **common, **_START_GRID)
    sampled = coarse.radius_modes(min_mass=_UNREACHED_MASS, barrier=BASIN_BARRIER)

    def over_mass(name: str, cells: int) -> np.ndarray:
        """An axis of ``cells`` over the coarse grid's mass range of ``name`` in ``sampled``."""
        return np.geomspace(*coarse.mass_range(name, _FINE_TAIL, sampled), cells)

    axes = {name: over_mass(name, _FINE_GRID[f"n_{name}"]) for name in ("radius", "ls")}
    noise_at_zero = _noise_reaches_zero(coarse)
    if noise_at_zero:
        axes["sigma"] = np.geomspace(coarse.sigma[0], coarse.sigma[-1], _FINE_NOISE)
    with reused_spectra():  # the weighing pass reuses the fine pass's (radius, ls) cells
        grid = grid_posterior(distances, rows, y, **common, **axes, n_scale=_START_GRID["n_scale"])
        basins = _radius_basins(grid)
        if sum(b.mass >= MIN_BASIN_MASS for b in basins) > 1:  # they weigh sample_basins' pool
            scales = {name: over_mass(name, WEIGHING_SCALES) for name in ("eta", "sigma")}
            axes = scales | axes  # the noise's _FINE_NOISE cells stay where it reaches zero
            grid = grid_posterior(distances, rows, y, **common, **axes)
            basins = _radius_basins(grid)
    on_quantiles, zoomed = _uses_maps(grid), None
    deep = grid.radius_modes(min_mass=0.0, barrier=BASIN_BARRIER)
    start_basin = _home(grid, deep)
    # what the capped map covers: the start's basin and the lighter ones below it
    span = grid.mass_range("radius", _FINE_TAIL, [b for b in deep if b.high <= start_basin.high])
    narrower = span != (grid.radius[0], grid.radius[-1])
    if zoom and on_quantiles and narrower and _cells_per_sd(grid, start_basin) < _MAP_CELLS:
        zoom_axes = {**axes, "radius": np.geomspace(*span, _FINE_GRID["n_radius"])}
        zoomed = grid_posterior(distances, rows, y, **common, **zoom_axes,
                                n_scale=_START_GRID["n_scale"])  # fmt: skip
    home = _home(grid, basins)
    if 1.0 - home.mass > _UNREACHED_MASS:
        others = ", ".join(
            f"r = {b.radius:.3g} ({100 * b.mass:.1f} %)"
            for b in basins
            if b is not home and b.mass > _UNREACHED_MASS / 10
        )
        warnings.warn(
            f"The radius posterior has more than one basin: the chains start in the one at "
            f"r = {home.radius:.3g} ({100 * home.mass:.1f} % of the mass); {others} lie behind "
            "dips NUTS crosses too rarely to mix. Sample every basin with "
            "pymc_sle.inference.sample_basins(priors), which confines chains to each basin and "
            "pools them by their mass.",
            UserWarning,
            stacklevel=3,
        )
    return _Search(coarse, grid, _reported(basins), on_quantiles, noise_at_zero, deep, start_basin,
                   zoomed)  # fmt: skip


def _warn_at_cutoff(coarse: GridPosterior, cutoff: float) -> None:
    """On sparse distances: a warning when the coarse grid puts ``_UNREACHED_MASS`` or more of
    the radius posterior in its last cell, at the cutoff -- its mass beyond is then unknown."""
    last = float(coarse.marginal("radius")[-1])
    if last >= _UNREACHED_MASS:
        warnings.warn(
            f"The radius posterior reaches the distances' cutoff {cutoff:.4g}: the grid puts "
            f"{100 * last:.2g} % of it in its last cell there, and the model cannot see larger "
            "radii, because longer distances are not stored. Rebuild the distances with a "
            "larger cutoff (e.g. 1.5 times).",
            UserWarning,
            stacklevel=3,
        )


def _cells_per_sd(grid, basin: RadiusMode) -> float:
    """The posterior sd of ``log radius`` within ``basin``, in the grid's radius cells."""
    inside = (grid.radius >= basin.low) & (grid.radius <= basin.high)
    p = np.where(inside, grid.marginal("radius"), 0.0)
    p = p / p.sum()
    log_radius = np.log(grid.radius)
    sd = np.sqrt(max(float(p @ log_radius**2 - (p @ log_radius) ** 2), 0.0))
    return sd / float(log_radius[1] - log_radius[0])


def _home(grid, basins):
    """The basin holding the grid's mode, where every chain starts."""
    start = grid.mode()["radius"]
    return next(b for b in basins if b.low <= start <= b.high)


def _noise_reaches_zero(coarse) -> bool:
    """Whether the grid's marginal of ``sigma`` puts ``_NOISE_AT_ZERO`` of its mass or more below
    a tenth of its median."""
    marginal = coarse.marginal("sigma")
    median = coarse.sigma[np.searchsorted(np.cumsum(marginal), 0.5)]
    return float(marginal[coarse.sigma < median / 10].sum()) >= _NOISE_AT_ZERO


def _noise_map(grid, ridge: Ridge | None) -> QuantileLog:
    """The quantile map of ``log sigma`` (or, with the noise's ``ridge``, of ``log sigma_rel``)
    from the grid's marginal, its widening cut off above the marginal's bulk: there the noise
    exceeds the data's spread and the likelihood falls off a cliff. Widened there, the map's
    upper tail reached it, and trajectories diverged from ``u`` 2-3 (SAXS split 1: 9 of 9)."""
    if ridge is None:
        return QuantileLog.from_grid(np.log(grid.sigma), grid.marginal("sigma"), walls=("upper",))
    return QuantileLog.from_grid(*ridge.residual_marginal(), walls=("upper",))


def _radius_map(
    search: _Search, cap: bool, log_ceiling: float = np.inf
) -> tuple[QuantileLog, float | None, float]:
    """The radius's quantile map from the fine grid's marginal, the radius's bound it makes
    (``None``: none) and the grid's posterior mass above that bound.

    With ``cap``, the map is built over the fine grid's basin holding its mode (behind dips
    deeper than ``BASIN_BARRIER`` nats) and what lies below it, and capped at the cut halfway
    (geometrically) between that basin's and the next basin's outermost cells, or at the map's
    last knot when there is no basin above (``QuantileLog``). The mass above the bound is the
    fine grid's there, plus the coarse grid's beyond both (light basins the fine grid does not
    span). When that reaches ``MIN_BASIN_MASS``, the map is not capped. A capped map is built
    from the ``zoom`` grid's marginal when there is one (finer, over the start's basin and those
    below it). A finite ``log_ceiling`` (sparse distances: the log of their cutoff) caps every
    map at or below it."""
    coarse, grid, home = search.coarse, search.grid, search.start
    log_radius, marginal = np.log(grid.radius), grid.marginal("radius")
    if cap:
        above = [b for b in search.deep if b.low > home.high]
        log_cut = 0.5 * float(np.log(home.high * above[0].low)) if above else np.inf
        log_cut = min(log_cut, log_ceiling)
        mapped = grid if search.zoom is None else search.zoom
        capped = QuantileLog.from_grid(np.log(mapped.radius), mapped.marginal("radius"),
                                       log_cap=log_cut)  # fmt: skip
        bound = capped.bound
        beyond = float(coarse.marginal("radius")[coarse.radius > max(bound, grid.radius[-1])].sum())
        truncated = beyond + (1.0 - beyond) * float(marginal[grid.radius > bound].sum())
        if truncated < MIN_BASIN_MASS:
            return capped, bound, truncated
    if np.isfinite(log_ceiling):
        ceiled = QuantileLog.from_grid(log_radius, marginal, log_cap=log_ceiling)
        return ceiled, ceiled.bound, 0.0
    return QuantileLog.from_grid(log_radius, marginal), None, 0.0


def _radius_basins(grid) -> list[RadiusMode]:
    """The grid's radius basins behind dips deeper than ``BASIN_BARRIER`` nats, with their
    shoulders apart: the pieces behind dips deeper than ``SHOULDER_BARRIER`` holding less than
    ``SHOULDER_MASS``. The heavier pieces of a basin stay one basin, peaked at the heaviest
    (a basin whose light pieces are not all at its ends stays whole)."""
    pieces = grid.radius_modes(min_mass=0.0, barrier=SHOULDER_BARRIER)
    out = []
    for basin in grid.radius_modes(min_mass=0.0, barrier=BASIN_BARRIER):
        inside = [p for p in pieces if basin.low <= p.radius <= basin.high]
        heavy = [i for i, p in enumerate(inside) if p.mass >= SHOULDER_MASS]
        if len(heavy) in (0, len(inside)) or heavy != list(range(heavy[0], heavy[-1] + 1)):
            out.append(basin)
            continue
        core = inside[heavy[0] : heavy[-1] + 1]
        peak = max(core, key=lambda p: p.mass).radius
        out.append(RadiusMode(peak, sum(p.mass for p in core), core[0].low, core[-1].high))
        out.extend(p for p in inside if p.mass < SHOULDER_MASS)
    return out


def _uses_maps(grid) -> bool:
    """Whether at most one of the grid's radius basins (behind dips deeper than
    ``BASIN_BARRIER`` nats) holds ``_UNREACHED_MASS``: the quantile scale then has no trench."""
    return len(grid.radius_modes(min_mass=_UNREACHED_MASS, barrier=BASIN_BARRIER)) <= 1


def _reported(basins) -> list:
    """Basins by decreasing mass, down to a tenth of ``_UNREACHED_MASS``."""
    return [b for b in sorted(basins, key=lambda b: -b.mass) if b.mass >= _UNREACHED_MASS / 10]


#: The variables ``sle_priors`` can sample relative to their grid ridges: ``ls`` always, ``eta``
#: and ``sigma`` with ``scale_ridges=True`` where the radius is on its quantile scale.
_ON_RIDGES = Ridge.followed


def _sampled_start(point: dict[str, float], ridges: dict[str, Ridge]) -> dict[str, float]:
    """A grid point ``{"radius", "ls", "eta", "sigma"}`` in the sampled variables: each ``name``
    with a ridge is replaced by ``{name}_rel = value / exp(ridge(log radius))``."""
    out = dict(point)
    for name, ridge in ridges.items():
        out[f"{name}_rel"] = out.pop(name) / np.exp(ridge.numpy(np.log(point["radius"])))
    return out


def sle_priors(
    distances,
    rows,
    y,
    *,
    landmarks=None,
    mass: float = 0.95,
    names: dict[str, str] | None = None,
    inner="matern32",
    inner_kwargs: dict | None = None,
    start: str = "mode",
    scale_ridges: bool = True,
    cap_radius: bool = True,
    search_points: int = 500,
) -> SLEPriors:
    """Create priors for an SLE GP in the current PyMC model, and the coordinates NUTS samples.

    The model's priors:

    - ``radius ~ LogNormal`` with ``mass`` between the radius bounds of :func:`suggest_bounds`;
    - ``ls ~ LogNormal`` with ``mass`` between its embedding-distance bounds;
    - ``eta ~ HalfNormal(std(y))``, the signal standard deviation (the SLE is multiplied by
      ``eta**2``; :meth:`SLEPriors.covariance` builds ``eta**2 * SLE(...)``);
    - ``sigma ~ HalfNormal(std(y))``, the noise standard deviation.

    The amplitude is left at 1: with a scalar amplitude the kernel depends on
    ``amplitude / ls`` only (module notes).

    **What NUTS samples** (``start="mode"``). The radius posterior can be rough -- basins
    separated by dips -- and ``log ls`` follows ``log radius`` along a curved ridge. A grid
    posterior of the same model (:func:`~pymc_sle.inference.grid_posterior`, with the ``inner``
    kernel given here) finds where the mass is, and smooth changes of variable make it easy to
    sample, without changing the model (:doc:`/hyperposterior` explains each choice):

    - the radius on the grid's quantile scale (a standard normal mapped onto its marginal), or,
      when several basins behind deep dips hold mass, on a log scale centred at the grid's mode;
    - ``ls``, ``eta`` and ``sigma`` as ratios ``ls_rel``, ``eta_rel``, ``sigma_rel`` to their
      ridges given the radius (``priors["ls"]`` etc. are then deterministics with exactly the
      priors above); with ``scale_ridges=False``, ``eta`` and ``sigma`` on centred log scales;
    - the noise on its quantile scale when its posterior reaches down to zero;
    - every chain starting at the grid's mode, jittered.

    Basins of the radius posterior are listed in ``basins`` (peak, mass, extent, start) for
    :func:`pymc_sle.inference.sample_basins`, which samples each; a ``UserWarning`` names them
    when those outside the start's hold more than 1 % of the mass. The grid costs about 2,000
    eigendecompositions of the ``n x n`` training Gram matrix (README, "How large?"); on sparse
    distances, of a ``search_points x search_points`` one (``search_points`` below).
    ``start="prior"`` gives plain log scales and PyMC's default start, without the search.

    Parameters
    ----------
    distances, rows, y, landmarks
        As in :func:`suggest_bounds`: the distance matrix, the training rows, their
        observations and the landmark columns (default: every column).
    mass : float, default 0.95
        Prior probability between the bounds.
    names : dict, optional
        Renames variables, e.g. ``{"radius": "r"}``; keys are ``radius``, ``ls``, ``eta``,
        ``sigma``. The sampled ratios are named ``f"{names[key]}_rel"`` after them.
    inner, inner_kwargs
        The SLE's inner kernel, as for :class:`pymc_sle.SLE`: the grid searches that kernel's
        posterior, and :meth:`SLEPriors.covariance` uses it.
    start : {"mode", "prior"}, default "mode"
        Where NUTS chains start, and on which scales; see above.
    scale_ridges : bool, default True
        Sample ``eta`` and ``sigma`` relative to ridges of their own, as ``ls`` is (only where
        the radius is on its quantile scale). The ridges are floored: they follow the grid's
        conditional mean only where it rises above the posterior mean, where the GP gives way to
        noise.
    cap_radius : bool, default True
        Where the radius is on its quantile scale, cap it softly below the next basin up from
        the start's, provided the grid's mass above the cap is below ``MIN_BASIN_MASS`` (the
        smallest basin :func:`~pymc_sle.inference.sample_basins` samples). The sampled posterior
        is then the model's restricted to ``radius < radius_cap``, which loses
        ``truncated_mass`` of it (on the result; a warning from a tenth of ``MIN_BASIN_MASS``).
        Forward draws (``pm.sample_prior_predictive``) still come from the untruncated prior.
        ``False`` keeps every basin, uncapped.
    search_points : int, default 500
        On sparse distances (:class:`~pymc_sle.SparseDistanceMatrix`), the grid searches the
        posterior given the observations of this many random training points, the kernel
        unchanged (``pymc_sle.inference._subsample``): the grid's cost stays that of
        ``search_points`` points at any ``n``, and its posterior is wider than the full one.
        The radius prior is then truncated at the distances' cutoff, and every scale NUTS
        samples the radius on stays below it (``radius_cap``); a warning says when the grid's
        posterior has not fallen off by the cutoff. Dense distances ignore it (the grid uses
        every point).

    Returns
    -------
    SLEPriors
        A dict ``{"radius", "ls", "eta", "sigma"}`` of the new random variables, with
        ``basins``, ``radius_cap`` (``None``: none), ``truncated_mass``, ``scales`` (the scale
        each variable is sampled on) and ``kernel`` (what the search assumed:
        distances, landmarks, inner kernel).

    Raises
    ------
    ValueError
        If ``start`` is not ``"mode"`` or ``"prior"``, or the data are invalid (as for
        :func:`suggest_bounds`).
    TypeError
        If ``scale_ridges`` or ``cap_radius`` is not a bool.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_sle.inference.priors import sle_priors
    >>> x = np.linspace(0, 1, 20)
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> with pm.Model():
    ...     priors = sle_priors(D, rows=np.arange(20), y=np.sin(6 * x))
    >>> sorted(priors)
    ['eta', 'ls', 'radius', 'sigma']
    """
    if start not in ("mode", "prior"):
        raise ValueError(f"`start` must be 'mode' or 'prior', but got {start!r}")
    for name, value in (("scale_ridges", scale_ridges), ("cap_radius", cap_radius)):
        if not isinstance(value, bool | np.bool_):
            raise TypeError(f"`{name}` must be a bool, but got {value!r}")
    names = {"radius": "radius", "ls": "ls", "eta": "eta", "sigma": "sigma", **(names or {})}
    for name in _ON_RIDGES:
        names.setdefault(f"{name}_rel", f"{names[name]}_rel")
    at_scale = isinstance(distances, SparseDistanceMatrix)
    if at_scale:
        sub = subproblem(distances, rows, y, landmarks, search_points)
        searched = (sub.distances, np.arange(sub.positions.size), sub.y, None)
        grid_options = {"radius_max": sub.cutoff}
        matrix, landmark_columns = distances, sub.landmarks
    else:
        searched, grid_options = (distances, rows, y, landmarks), {}
        matrix, _, landmark_columns = training_block(distances, rows, landmarks)
    bounds = suggest_bounds(*searched[:3], landmarks=searched[3])
    kernel = {
        "distances": matrix,
        "landmarks": landmark_columns,
        "inner": inner,
        "inner_kwargs": inner_kwargs,
    }
    radius_prior = lognormal_between(*bounds.radius, mass)
    ls_prior = lognormal_between(*bounds.ls, mass)
    scale = target_scale(y)

    def radius_variable(**options) -> pt.TensorVariable:
        """The radius's LogNormal prior; on sparse distances truncated at their cutoff."""
        if not at_scale:
            return pm.LogNormal(names["radius"], **radius_prior, **options)
        prior = pm.LogNormal.dist(**radius_prior)
        return pm.Truncated(names["radius"], prior, upper=distances.cutoff, **options)

    if start == "prior":
        return SLEPriors(
            {
                "radius": radius_variable(),
                "ls": pm.LogNormal(names["ls"], **ls_prior),
                "eta": pm.HalfNormal(names["eta"], sigma=scale),
                "sigma": pm.HalfNormal(names["sigma"], sigma=scale),
            },
            kernel=kernel,
        )

    search = _search(*searched, mass, inner, inner_kwargs, zoom=cap_radius, **grid_options)
    if at_scale:
        _warn_at_cutoff(search.coarse, distances.cutoff)
    coarse, grid, found = search.coarse, search.grid, search.basins
    on_quantiles = search.on_quantiles
    # Across basins behind deep dips the quantile scale squeezes each dip into a short, deep
    # trench, where leapfrog steps diverge (strings, split 2: r-hat 1.61, 122 divergences).
    # sample_basins then samples each basin with the radius and the scales on log scales
    # centred at the coarse grid's mode (strings, split 2: r-hat 1.008 with nutpie; centring on
    # the fine grid instead gave r-hat 1.056), and ls on its ridge, which holds across basins:
    # on the strings' split 2 (nutpie, seed 1) that took the two basins' chains from 2
    # divergences to 0. A quantile scale per basin instead of the centred log gave 218. The
    # basins, their masses and starts come from the fine grid (with finer eta and sigma cells to
    # weigh them: WEIGHING_SCALES).
    followed = _ON_RIDGES if scale_ridges and on_quantiles else ("ls",)
    ridges = {name: Ridge(grid, name, floored=name != "ls") for name in followed}
    centre = grid if on_quantiles else coarse

    log_ceiling = float(np.log(distances.cutoff)) if at_scale else np.inf
    radius_map, cap, truncated = _radius_map(search, cap_radius and on_quantiles, log_ceiling)
    if cap is not None:
        found = [b for b in found if b.low < cap]
        if truncated >= _UNREACHED_MASS / 10:
            warnings.warn(
                f"The radius is capped at r = {cap:.3g}: the posterior above it "
                f"({100 * truncated:.2g} % of the grid's mass) lies behind a dip NUTS crosses too "
                "rarely to weigh it, and a map over it made chains diverge. Pass "
                "cap_radius=False to keep it in the model.",
                UserWarning,
                stacklevel=2,
            )
    if at_scale and not on_quantiles:
        cap = distances.cutoff  # the centred log scale gets an interval below it

    def sampled(point: dict[str, float]) -> dict[str, float]:
        """A grid point in the sampled variables, its radius moved below the cap if at it."""
        point = dict(point)
        if on_quantiles:
            point["radius"] = radius_map.inside(point["radius"])
        elif cap is not None:
            half_cell = float(np.sqrt(centre.radius[-2] / centre.radius[-1]))
            point["radius"] = min(point["radius"], cap * half_cell)
        return _sampled_start(point, ridges)

    at = sampled(centre.mode())

    def transformed(name: str, spread: float) -> dict:
        """Where variable ``name`` starts, and its scale: the noise's quantile map when the noise
        reaches zero, otherwise a log scale centred at the start in units of ``spread`` (half a
        grid cell at least)."""
        if search.noise_at_zero and name.removesuffix("_rel") == "sigma":
            return {"initval": at[name], "default_transform": _noise_map(grid, ridges.get("sigma"))}
        axis = getattr(centre, name.removesuffix("_rel"))
        half_step = 0.5 * float(np.log(axis[1] / axis[0]))
        return {
            "initval": at[name],
            "default_transform": CenteredLog(at[name], max(spread, half_step)),
        }

    # The scales not on ridges first: the variables in the order of the previous release.
    variables = {
        name: pm.HalfNormal(names[name], sigma=scale, **transformed(name, centre.log_spread(name)))
        for name in ("eta", "sigma")
        if name not in ridges
    }
    if on_quantiles:
        radius_transform = {"initval": at["radius"], "default_transform": radius_map}
    else:
        radius_transform = transformed("radius", 0.0)
        if at_scale:
            radius_transform["default_transform"] = below_cutoff(
                radius_transform["default_transform"], distances.cutoff
            )
    radius = radius_variable(**radius_transform)
    variables["radius"] = radius
    log_radius = np.log(grid.radius)

    def on_ridge(name: str, relative) -> pt.TensorVariable:
        """``name = exp(ridge(log radius)) * name_rel``, ``name_rel = relative(shift, ...)``
        with ``shift = ridge(log radius)``: its prior shifted (log scale) or rescaled."""
        ridge = ridges[name]
        shift = ridge(pt.log(radius))[0]
        spread = float(np.interp(np.log(at["radius"]), log_radius, ridge.spread))
        rel = relative(names[f"{name}_rel"], shift, **transformed(f"{name}_rel", spread))
        return pm.Deterministic(names[name], pt.exp(shift) * rel)

    # log ls = ridge(log radius) + log ls_rel, ls_rel | radius ~ LogNormal(mu - ridge, sigma):
    # ls ~ LogNormal(mu, sigma) independently of the radius, exactly the prior of "prior".
    variables["ls"] = on_ridge(
        "ls", lambda n, shift, **kw: pm.LogNormal(n, mu=ls_prior["mu"] - shift,
                                                  sigma=ls_prior["sigma"], **kw)
    )  # fmt: skip
    # HalfNormal is a scale family: eta_rel | radius ~ HalfNormal(scale * exp(-ridge)) makes
    # eta ~ HalfNormal(scale), independently of the radius; the same for sigma.
    for name in (n for n in ("eta", "sigma") if n in ridges):
        variables[name] = on_ridge(
            name, lambda n, shift, **kw: pm.HalfNormal(n, sigma=scale * pt.exp(-shift), **kw)
        )

    basins = tuple(
        Basin(b.radius, b.mass, b.low, b.high,
              {names[k]: v for k, v in sampled(grid.mode((b.low, b.high))).items()})
        for b in found
    )  # fmt: skip
    return SLEPriors(variables, basins, cap, truncated, _scales(search, ridges, cap), kernel)


def _scales(search: _Search, ridges: dict[str, Ridge], cap: float | None) -> dict[str, str]:
    """``SLEPriors.scales``: the scale NUTS samples each variable on."""
    if not search.on_quantiles:
        out = {"radius": "centred log" if cap is None else "centred log, below the cutoff"}
    else:
        out = {"radius": "quantile" if cap is None else "capped quantile"}
        if search.zoom is not None and cap is not None:
            out["radius"] += ", zoomed"
    for name in ("ls", "eta", "sigma"):
        own = "quantile" if name == "sigma" and search.noise_at_zero else None
        if name in ridges:
            ridge = "floored ridge" if ridges[name].floored else "ridge"
            out[name] = f"{ridge}, {own}" if own else ridge
        else:
            out[name] = own or "centred log"
    return out


def scale_priors(y, *, names: dict[str, str] | None = None) -> dict[str, pm.Distribution]:
    """Signal and noise standard deviation priors scaled to the data, for any GP.

    ``eta ~ HalfNormal(std(y))`` and ``sigma ~ HalfNormal(std(y))``: about 92 % of each prior lies
    in the paper's signal bounds ``[0.1, sqrt(10)] * std(y)``, and both shrink gently towards 0.

    Parameters
    ----------
    y : array_like
        Training targets (finite, not constant).
    names : dict, optional
        Renames ``eta`` and ``sigma``.
    """
    names = {"eta": "eta", "sigma": "sigma", **(names or {})}
    scale = target_scale(y)
    return {
        "eta": pm.HalfNormal(names["eta"], sigma=scale),
        "sigma": pm.HalfNormal(names["sigma"], sigma=scale),
    }
