"""What the grid search means for the model: the scale NUTS samples each variable on.

:func:`plan` turns a ``SearchResult`` into a
:class:`ReparamPlan` -- plain numbers and transforms, no PyMC model -- that
:func:`~pymc_sle.sle_priors` then adds to the model in one step (:doc:`/hyperposterior`
explains each choice and links the measurement behind it):

- the radius on the grid's quantile scale (capped below the next basin up when the mass above
  is small enough), or, across basins behind deep dips, on a log scale centred at the coarse
  grid's mode, where the quantile scale would squeeze each dip into a trench;
- ``ls`` relative to its ridge given the radius (``OnRidge``);
  ``eta`` and ``sigma`` too where the radius is on its quantile scale and ``scale_ridges`` is
  set, on floored ridges;
- the noise on its quantile scale where it reaches zero; every other scale on a log scale
  centred at the start;
- chains start at the grid's mode (each basin at its own);
- where basins outside the start's hold mass, every variable in the frame of the basin a label
  names (``pymc_sle.inference._basins``), so that plain ``pm.sample`` reaches and weighs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_sle.inference._basins import Basin, framed, jumped_basins
from pymc_sle.inference._search import SearchPolicy, SearchProblem, SearchResult
from pymc_sle.inference._transforms import CenteredLog, OnRidge, QuantileLog, Ridge, below_cutoff

__all__ = ["ReparamPlan", "Scale", "plan"]

#: The variables that can be sampled relative to their grid ridges.
ON_RIDGES = Ridge.followed


@dataclass(frozen=True)
class Scale:
    """How NUTS samples one variable: its transform (PyMC's ``default_transform``) and its start
    (``initval``)."""

    transform: object
    initval: float


@dataclass(frozen=True)
class ReparamPlan:
    """The scales NUTS samples on, and what they cost.

    Attributes
    ----------
    ridges : dict
        ``{name: Ridge}`` of the variables sampled relative to their ridge given the radius
        (their transform an ``OnRidge``).
    scales : dict
        ``{name: Scale}`` for ``radius``, ``ls``, ``eta`` and ``sigma``.
    radius_cap : float or None
        The radius's upper bound in the sampled model (``None``: none).
    truncated_mass : float
        The grid's posterior mass above ``radius_cap``, which the sampled posterior loses.
    basins : tuple of Basin
        The radius basins, highest mass first, with where their chains start (unrenamed keys:
        ``radius``, ``ls``, ``eta``, ``sigma``).
    labels : dict
        ``{name: label}`` of the scale of ``radius``, ``ls``, ``eta`` and ``sigma``, as
        :attr:`SLEPriors.scales` reports them.
    warnings : tuple of str
        What the modeller must know: a capped radius, a radius posterior reaching the cutoff.
    framed : tuple
        The transforms that read a basin label (``pymc_sle.inference._basins``): the radius's
        ``BasinJump``, then the others'
        ``InBasin``; empty without basins to jump between.
    """

    ridges: dict
    scales: dict
    radius_cap: float | None
    truncated_mass: float
    basins: tuple
    labels: dict
    warnings: tuple
    framed: tuple = ()


def plan(
    problem: SearchProblem,
    found: SearchResult,
    policy: SearchPolicy,
    *,
    scale_ridges: bool,
    cap_radius: bool,
) -> ReparamPlan:
    """The :class:`ReparamPlan` of a search (module docstring)."""
    grid, on_quantiles = found.grid, found.on_quantiles
    followed = ON_RIDGES if scale_ridges and on_quantiles else ("ls",)
    ridges = {name: Ridge(grid, name, floored=name != "ls") for name in followed}
    centre = grid if on_quantiles else found.coarse
    log_ceiling = np.inf if problem.cutoff is None else float(np.log(problem.cutoff))
    radius_map, cap, truncated = _radius_map(
        found, policy, cap_radius and on_quantiles, log_ceiling
    )
    warnings = []
    at_cutoff = float(found.coarse.marginal("radius")[-1])
    if problem.cutoff is not None and at_cutoff >= policy.unreached_mass:
        warnings.append(
            f"The radius posterior reaches the distances' cutoff {problem.cutoff:.4g}: the grid "
            f"puts {100 * at_cutoff:.2g} % of it in its last cell there, and the model cannot "
            "see larger radii, because longer distances are not stored. Rebuild the distances "
            "with a larger cutoff (e.g. 1.5 times)."
        )
    basins = found.basins
    if cap is not None:
        basins = [b for b in basins if b.low < cap]
        if truncated >= policy.unreached_mass / 10:
            warnings.append(
                f"The radius is capped at r = {cap:.3g}: the posterior above it "
                f"({100 * truncated:.2g} % of the grid's mass) lies behind a dip NUTS crosses "
                "too rarely to weigh it, and a map over it made chains diverge. Pass "
                "cap_radius=False to keep it in the model."
            )
    if problem.cutoff is not None and not on_quantiles:
        cap = problem.cutoff  # the centred log scale gets an interval below it

    def start(point: dict[str, float]) -> dict[str, float]:
        """A grid point, its radius moved below the cap if at it."""
        point = dict(point)
        if on_quantiles:
            point["radius"] = radius_map.inside(point["radius"])
        elif cap is not None:
            half_cell = float(np.sqrt(centre.radius[-2] / centre.radius[-1]))
            point["radius"] = min(point["radius"], cap * half_cell)
        return point

    at = start(centre.mode())
    log_radius = np.log(at["radius"])

    def own_scale(name: str, centre_value: float, spread: float):
        """The noise's quantile map when it reaches zero; else a log scale centred at
        ``centre_value`` in units of ``spread`` (half a grid cell at least)."""
        if found.noise_at_zero and name == "sigma":
            return _noise_map(grid, ridges.get("sigma"))
        axis = getattr(centre, name)
        half_step = 0.5 * float(np.log(axis[1] / axis[0]))
        return CenteredLog(centre_value, max(spread, half_step))

    scales = {}
    for name in ("eta", "sigma", "ls"):
        ridge = ridges.get(name)
        if ridge is None:
            own = own_scale(name, at[name], centre.log_spread(name))
            scales[name] = Scale(own, at[name])
            continue
        relative = at[name] / np.exp(ridge.numpy(log_radius))
        spread = float(np.interp(log_radius, np.log(grid.radius), ridge.spread))
        scales[name] = Scale(OnRidge(ridge, own_scale(name, relative, spread)), at[name])
    if on_quantiles:
        scales["radius"] = Scale(radius_map, at["radius"])
    else:
        radius_scale = own_scale("radius", at["radius"], 0.0)
        if problem.cutoff is not None:
            radius_scale = below_cutoff(radius_scale, problem.cutoff)
        scales["radius"] = Scale(radius_scale, at["radius"])
    basins = tuple(
        Basin(b.radius, b.mass, b.low, b.high, start(grid.mode((b.low, b.high)))) for b in basins
    )
    labels = _labels(found, ridges, cap)
    reading = ()
    jumped = jumped_basins(found.home, basins, policy.unreached_mass, policy.min_basin_mass)
    if jumped:
        transforms, reading = framed(
            {name: scale.transform for name, scale in scales.items()}, ridges, grid, jumped
        )
        scales = {name: Scale(transforms[name], scales[name].initval) for name in scales}
        labels["radius"] += ", basin jumps"
    return ReparamPlan(ridges, scales, cap, truncated, basins, labels, tuple(warnings), reading)


def _noise_map(grid, ridge: Ridge | None) -> QuantileLog:
    """The quantile map of ``log sigma`` (or, with the noise's ``ridge``, of ``log sigma_rel``)
    from the grid's marginal, its widening cut off above the marginal's bulk: there the noise
    exceeds the data's spread and the likelihood falls off a cliff, where a widened map's upper
    tail sent trajectories."""
    if ridge is None:
        return QuantileLog.from_grid(np.log(grid.sigma), grid.marginal("sigma"), walls=("upper",))
    return QuantileLog.from_grid(*ridge.residual_marginal(), walls=("upper",))


def _radius_map(
    found: SearchResult, policy: SearchPolicy, cap: bool, log_ceiling: float = np.inf
) -> tuple[QuantileLog, float | None, float]:
    """The radius's quantile map from the fine grid's marginal, the radius's bound it makes
    (``None``: none) and the grid's posterior mass above that bound.

    With ``cap``, the map is built over the basin holding the grid's mode (behind dips deeper
    than ``basin_barrier`` nats) and what lies below it, and capped at the cut halfway
    (geometrically) between that basin's and the next basin's outermost cells, or at the map's
    last knot when there is no basin above (``QuantileLog``). The mass above the bound is the
    fine grid's there, plus the coarse grid's beyond both (light basins the fine grid does not
    span). When that reaches ``min_basin_mass``, the map is not capped. A capped map is built
    from the ``zoom`` grid's marginal when there is one. A finite ``log_ceiling`` (sparse
    distances: the log of their cutoff) caps every map at or below it."""
    coarse, grid, home = found.coarse, found.grid, found.start
    log_radius, marginal = np.log(grid.radius), grid.marginal("radius")
    if cap:
        above = [b for b in found.deep if b.low > home.high]
        log_cut = 0.5 * float(np.log(home.high * above[0].low)) if above else np.inf
        log_cut = min(log_cut, log_ceiling)
        mapped = grid if found.zoom is None else found.zoom
        capped = QuantileLog.from_grid(
            np.log(mapped.radius), mapped.marginal("radius"), log_cap=log_cut
        )
        bound = capped.bound
        beyond = float(coarse.marginal("radius")[coarse.radius > max(bound, grid.radius[-1])].sum())
        # a cell at the bound to rounding (a ceiling at the grid's last radius) is not cut off
        cut_off = grid.radius > bound * (1.0 + 1e-9)
        truncated = beyond + (1.0 - beyond) * float(marginal[cut_off].sum())
        if truncated < policy.min_basin_mass:
            return capped, bound, truncated
    if np.isfinite(log_ceiling):
        ceiled = QuantileLog.from_grid(log_radius, marginal, log_cap=log_ceiling)
        return ceiled, ceiled.bound, 0.0
    return QuantileLog.from_grid(log_radius, marginal), None, 0.0


def _labels(found: SearchResult, ridges: dict[str, Ridge], cap: float | None) -> dict[str, str]:
    """``SLEPriors.scales``: the scale NUTS samples each variable on."""
    if not found.on_quantiles:
        out = {"radius": "centred log" if cap is None else "centred log, below the cutoff"}
    else:
        out = {"radius": "quantile" if cap is None else "capped quantile"}
        if found.zoom is not None and cap is not None:
            out["radius"] += ", zoomed"
    for name in ("ls", "eta", "sigma"):
        own = "quantile" if name == "sigma" and found.noise_at_zero else None
        if name in ridges:
            ridge = "floored ridge" if ridges[name].floored else "ridge"
            out[name] = f"{ridge}, {own}" if own else ridge
        else:
            out[name] = own or "centred log"
    return out
