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
from pymc.distributions.transforms import Transform

from pymc_sle.inference._bounds import (
    SLEBounds,
    lognormal_between,
    radius_bounds,
    suggest_bounds,
    target_scale,
)
from pymc_sle.inference.grid import grid_posterior

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


class _CenteredLog(Transform):
    r"""The log transform centred at ``centre``, in units of ``scale``:
    :math:`v = (\log x - \log c) / s`. PyMC samples and jitters :math:`v`; the prior on
    :math:`x` is unchanged."""

    name = "centered_log"

    def __init__(self, centre: float, scale: float):
        self.log_centre = float(np.log(centre))
        self.scale = float(scale)

    def forward(self, value, *inputs):
        return (pt.log(value) - self.log_centre) / self.scale

    def backward(self, value, *inputs):
        return pt.exp(self.log_centre + self.scale * value)

    def log_jac_det(self, value, *inputs):
        return np.log(self.scale) + self.log_centre + self.scale * value


#: The coarse grid ``start="mode"`` searches: 32 x 24 eigendecompositions of the n x n Gram.
_START_GRID = {"n_radius": 32, "n_ls": 24, "n_scale": 16}
#: Mass outside the start basin above which ``sle_priors`` warns.
_UNREACHED_MASS = 0.01
#: Dips of the radius marginal shallower than this (nats) do not separate basins: NUTS crosses
#: them (on the 1-D benchmark its chains reproduce a marginal with dips of about 1 nat).
_BARRIER = 3.0


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
    samples each."""

    def __init__(self, variables: dict, basins: tuple[Basin, ...] = ()):
        super().__init__(variables)
        self.basins = tuple(basins)


def _start_in_global_basin(distances, rows, y, landmarks, mass, inner, inner_kwargs, names):
    """Per variable, the ``initval`` and centred log transform of ``start="mode"``; and the
    radius basins behind dips of more than ``_BARRIER`` nats, highest mass first."""
    grid = grid_posterior(distances, rows, y, landmarks=landmarks, inner=inner,
                          inner_kwargs=inner_kwargs, mass=mass, **_START_GRID)  # fmt: skip
    start = grid.mode()
    basins = [
        Basin(
            b.radius,
            b.mass,
            b.low,
            b.high,
            {names[k]: v for k, v in grid.mode((b.low, b.high)).items()},
        )
        for b in grid.radius_modes(min_mass=0.0, barrier=_BARRIER)
    ]
    basins.sort(key=lambda b: -b.mass)
    home = next(b for b in basins if b.low <= start["radius"] <= b.high)
    unreached = 1.0 - home.mass
    if unreached > _UNREACHED_MASS:
        others = ", ".join(
            f"r = {b.radius:.3g} ({100 * b.mass:.1f} %)"
            for b in basins
            if b is not home and b.mass > _UNREACHED_MASS / 10
        )
        warnings.warn(
            f"The radius posterior has more than one basin: the chains start in the one at "
            f"r = {home.radius:.3g} ({100 * home.mass:.1f} % of the mass); {others} cannot be "
            "reached by NUTS from there. Sample every basin with "
            "pymc_sle.inference.sample_basins(priors), which pools them by their mass.",
            UserWarning,
            stacklevel=3,
        )
    out = {}
    for name, value in start.items():
        axis = getattr(grid, name)
        half_step = 0.5 * float(np.log(axis[1] / axis[0]))
        scale = max(grid.log_spread(name), half_step) if name != "radius" else half_step
        out[name] = {"initval": value, "default_transform": _CenteredLog(value, scale)}
    return out, tuple(b for b in basins if b.mass >= _UNREACHED_MASS / 10)


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
) -> SLEPriors:
    """Create sensible priors for an SLE GP in the current PyMC model, and a start for NUTS.

    - ``radius ~ LogNormal`` with ``mass`` between the radius bounds;
    - ``ls ~ LogNormal`` with ``mass`` between the embedding-distance bounds;
    - ``eta ~ HalfNormal(std(y))``: the signal standard deviation (multiply the SLE by ``eta**2``);
    - ``sigma ~ HalfNormal(std(y))``: the noise standard deviation.

    Bounds come from :func:`suggest_bounds`. The amplitude is left at 1 (see the module notes).

    **Where the chains start.** The radius's log likelihood is rough: besides the basin that
    holds the posterior mass it has local maxima tens of log units lower, and a NUTS chain started
    in one never leaves it (``docs/hyperposterior.md``). With ``start="mode"`` the four variables
    start at the highest cell of a coarse grid posterior
    (:func:`~pymc_sle.inference.grid_posterior`, ``inner`` as in the model) and are sampled
    on a log scale centred there, in units of about half a grid cell (radius) or their posterior
    spread (the others), so PyMC's default jitter keeps every chain in that basin. A warning says
    when basins behind dips deeper than 3 nats hold more than 1 % of the mass: then sample with
    :func:`pymc_sle.inference.sample_basins`, which samples each basin and pools them by their
    grid mass (it is ``pm.sample`` when there is one basin). The search costs 768
    eigendecompositions of the ``n x n`` training Gram matrix (seconds at n = 200, about half a
    minute at n = 400). ``start="prior"`` gives PyMC's default start (the prior medians,
    jittered), as the first release did.

    Parameters
    ----------
    distances, rows, y, landmarks
        As in :func:`suggest_bounds`.
    mass : float, default 0.95
        Prior probability between the bounds.
    names : dict, optional
        Renames variables, e.g. ``{"radius": "r"}``; keys are ``radius``, ``ls``, ``eta``,
        ``sigma``.
    inner, inner_kwargs
        The SLE's inner kernel, as for :class:`pymc_sle.SLE`: where the search looks.
    start : {"mode", "prior"}, default "mode"
        Where NUTS chains start; see above.

    Returns
    -------
    SLEPriors
        A dict ``{"radius", "ls", "eta", "sigma"}`` mapped to the new random variables, whose
        ``basins`` attribute lists the radius basins (peak, mass, extent, start) for
        :func:`pymc_sle.inference.sample_basins`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_sle.priors import sle_priors
    >>> x = np.linspace(0, 1, 20)
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> with pm.Model():
    ...     priors = sle_priors(D, rows=np.arange(20), y=np.sin(6 * x))
    >>> sorted(priors)
    ['eta', 'ls', 'radius', 'sigma']
    """
    if start not in ("mode", "prior"):
        raise ValueError(f"`start` must be 'mode' or 'prior', but got {start!r}")
    names = {"radius": "radius", "ls": "ls", "eta": "eta", "sigma": "sigma", **(names or {})}
    bounds = suggest_bounds(distances, rows, y, landmarks=landmarks)
    at, basins = {key: {} for key in names}, ()
    if start == "mode":
        at, basins = _start_in_global_basin(
            distances, rows, y, landmarks, mass, inner, inner_kwargs, names
        )
    scale = target_scale(y)
    variables = {
        "radius": pm.LogNormal(
            names["radius"], **lognormal_between(*bounds.radius, mass), **at["radius"]
        ),
        "ls": pm.LogNormal(names["ls"], **lognormal_between(*bounds.ls, mass), **at["ls"]),
        "eta": pm.HalfNormal(names["eta"], sigma=scale, **at["eta"]),
        "sigma": pm.HalfNormal(names["sigma"], sigma=scale, **at["sigma"]),
    }
    return SLEPriors(variables, basins)


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
