r"""The posterior of an SLE GP's hyperparameters on a grid: exact up to the grid's resolution.

For the model that :func:`pymc_sle.sle_priors` builds,

.. math::

    y \sim \mathcal N\bigl(0,\ \eta^2 C_{r,\ell} + \sigma^2 I\bigr), \qquad
    (C_{r,\ell})_{ij} = h\bigl(\lVert \phi_r(x_i) - \phi_r(x_j) \rVert / \ell\bigr),

with LogNormal priors on :math:`r` and :math:`\ell` and HalfNormal priors on :math:`\eta` and
:math:`\sigma`, one eigendecomposition :math:`C_{r,\ell} = U \operatorname{diag}(\lambda) U^\top`
per :math:`(r, \ell)` gives the log likelihood at every :math:`(\eta, \sigma)` in
:math:`O(n)` (only :math:`\lambda` and :math:`z` are computed, never :math:`U`, in about half
the time of ``numpy.linalg.eigh``):

.. math::

    \log p(y \mid r, \ell, \eta, \sigma) = -\tfrac12 \sum_i \Bigl(\frac{z_i^2}{\eta^2\lambda_i +
    \sigma^2} + \log(\eta^2 \lambda_i + \sigma^2)\Bigr) - \tfrac n2 \log 2\pi, \qquad z = U^\top y.

So the joint posterior of all four hyperparameters is evaluated on a full grid in the log
parameters (with the Jacobians of the log transform) in seconds for a few hundred training
points. Its marginals are the reference a sampler must reproduce: how many radius modes there
are and how much mass each holds (:meth:`GridPosterior.radius_modes`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy import special

from pymc_sle._linalg._spectrum import eigenvalues_and_coordinates
from pymc_sle.inference._basins import Basin, radius_modes
from pymc_sle.inference._bounds import SLEBounds, bounds_of_block, lognormal_between, training_data
from pymc_sle.kernels._embedding import embedding_distances
from pymc_sle.kernels._inner import kernel_of_squared_distance, resolve_inner

__all__ = ["GridAxes", "GridPosterior", "grid_on_block", "grid_posterior"]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Added to the covariance's diagonal, as ``pm.gp.Marginal`` does.
_JITTER = 1e-6


@dataclass(frozen=True)
class GridPosterior:
    """The joint posterior of ``(radius, ls, eta, sigma)`` on a grid in the log parameters.

    Attributes
    ----------
    radius, ls, eta, sigma : ndarray
        The grid axes (geometrically spaced).
    log_density : ndarray of shape (len(radius), len(ls), len(eta), len(sigma))
        Unnormalised log posterior density of the *log* parameters at the grid points.
    profile_log_likelihood : ndarray of shape (len(radius), len(ls))
        The log marginal likelihood maximised over ``eta`` and ``sigma`` on the grid.
    nearest_neighbour : float
        The smallest distance from a training point to another: below this radius every
        embedding is one-hot.
    """

    radius: np.ndarray
    ls: np.ndarray
    eta: np.ndarray
    sigma: np.ndarray
    log_density: np.ndarray
    profile_log_likelihood: np.ndarray
    nearest_neighbour: float

    def _weights(self) -> np.ndarray:
        """Posterior probability of each cell: density times the cell's width in each log
        parameter (axes need not be evenly spaced)."""
        widths = [
            np.log(np.gradient(np.log(a))) for a in (self.radius, self.ls, self.eta, self.sigma)
        ]
        log_mass = (
            self.log_density
            + widths[0][:, None, None, None]
            + widths[1][None, :, None, None]
            + widths[2][None, None, :, None]
            + widths[3][None, None, None, :]
        )
        return np.exp(log_mass - special.logsumexp(log_mass))

    def marginal(self, name: str) -> np.ndarray:
        """Posterior probabilities of the grid cells along axis ``name`` (they sum to 1)."""
        axes = ("radius", "ls", "eta", "sigma")
        if name not in axes:
            raise ValueError(f"`name` must be one of {axes}, but got {name!r}")
        keep = axes.index(name)
        return self._weights().sum(axis=tuple(i for i in range(4) if i != keep))

    def joint_with_radius(self, name: str = "ls") -> np.ndarray:
        """Posterior probabilities of the ``(radius, name)`` cells, shape ``(len(radius),
        len(name))``, for ``name`` one of ``ls``, ``eta``, ``sigma``."""
        axes = ("ls", "eta", "sigma")
        if name not in axes:
            raise ValueError(f"`name` must be one of {axes}, but got {name!r}")
        keep = 1 + axes.index(name)
        return self._weights().sum(axis=tuple(i for i in (1, 2, 3) if i != keep))

    def mode(self, radius_range: tuple[float, float] | None = None) -> dict[str, float]:
        """The grid point of highest posterior density, ``{"radius", "ls", "eta", "sigma"}``;
        with ``radius_range=(low, high)``, the highest among radii in ``[low, high]`` (e.g. a
        :class:`~pymc_sle.inference.Basin`)."""
        density = self.log_density
        if radius_range is not None:
            inside = (self.radius >= radius_range[0]) & (self.radius <= radius_range[1])
            if not inside.any():
                raise ValueError(
                    f"`radius_range` {radius_range} holds no radius of the grid "
                    f"[{self.radius[0]:.4g}, {self.radius[-1]:.4g}]"
                )
            density = np.where(inside[:, None, None, None], density, -np.inf)
        cell = np.unravel_index(np.argmax(density), density.shape)
        axes = {"radius": self.radius, "ls": self.ls, "eta": self.eta, "sigma": self.sigma}
        return {name: float(axis[i]) for (name, axis), i in zip(axes.items(), cell, strict=True)}

    def mass_range(
        self, name: str, tail: float = 1e-4, basins: list[Basin] | None = None
    ) -> tuple[float, float]:
        """The range of axis ``name`` holding all but ``tail`` of the marginal's mass (half of it
        either side), widened by one grid cell either side: where a finer grid should look. With
        ``basins``, of the posterior restricted to radii inside them."""
        axis = getattr(self, name)
        weights = self._weights()
        if basins is not None:
            inside = np.zeros(self.radius.size, dtype=bool)
            for basin in basins:
                inside |= (self.radius >= basin.low) & (self.radius <= basin.high)
            weights = weights * inside[:, None, None, None]
        keep = ("radius", "ls", "eta", "sigma").index(name)
        marginal = weights.sum(axis=tuple(i for i in range(4) if i != keep))
        cdf = np.cumsum(marginal) / marginal.sum()
        low = max(int(np.searchsorted(cdf, tail / 2)) - 1, 0)
        high = min(int(np.searchsorted(cdf, 1 - tail / 2)) + 1, axis.size - 1)
        return float(axis[low]), float(axis[high])

    def log_spread(self, name: str) -> float:
        """Posterior standard deviation of ``log(name)`` on the grid."""
        axis = getattr(self, name)
        p = self.marginal(name)
        log_axis = np.log(axis)
        mean = float(p @ log_axis)
        return float(np.sqrt(max(p @ (log_axis - mean) ** 2, 0.0)))

    def radius_modes(self, min_mass: float = 0.01, barrier: float = 0.0) -> list[Basin]:
        """The basins of the radius's marginal posterior holding at least ``min_mass``, in
        radius order (``radius_modes``).

        A basin runs between two local minima of the marginal density; its mode is its highest
        cell. Neighbouring basins whose dividing minimum lies less than ``barrier`` nats below
        the lower of their two peaks are merged: a sampler crosses such dips (``barrier=0``
        keeps every dip).
        """
        return radius_modes(self, min_mass, barrier)


def _compile_kernel(inner, inner_kwargs):
    squared = pt.matrix("squared")
    ls = pt.scalar("ls")
    K = kernel_of_squared_distance(resolve_inner(inner, inner_kwargs), squared, ls)
    return pytensor.function([squared, ls], K)


@functools.lru_cache(maxsize=16)
def _cached_kernel(inner, frozen_kwargs: tuple):
    return _compile_kernel(inner, dict(frozen_kwargs))


def _kernel_function(inner, inner_kwargs):
    """The compiled inner kernel of squared distances; compiled once per process for hashable
    ``inner`` and ``inner_kwargs`` (``sle_priors`` evaluates two grids)."""
    try:
        return _cached_kernel(inner, tuple(sorted((inner_kwargs or {}).items())))
    except TypeError:  # unhashable: compile this once
        return _compile_kernel(inner, inner_kwargs)


@dataclass(frozen=True)
class GridAxes:
    """The axes of a grid posterior: sizes of the default ones, or explicit ones
    (:func:`grid_posterior` documents each field). Validated once, here.

    ``resolve(radius_prior, ls_prior, scale)`` gives the four axes: the radius and length-scale
    axes span ``width`` prior standard deviations either side of their LogNormal priors'
    medians, ending at ``radius_max`` if given; ``eta`` and ``sigma`` span ``[1e-3, 3] *
    scale``.
    """

    n_radius: int = 40
    n_ls: int = 40
    n_scale: int = 32
    width: float = 3.3
    radius: object = None
    ls: object = None
    eta: object = None
    sigma: object = None
    radius_max: float | None = None

    def __post_init__(self):
        for name in ("n_radius", "n_ls", "n_scale"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < 2:
                raise ValueError(f"`{name}` must be an integer >= 2, but got {value!r}")
        if not (np.isfinite(self.width) and self.width > 0):
            raise ValueError(f"`width` must be a positive number, but got {self.width!r}")

    def resolve(self, radius_prior: dict, ls_prior: dict, scale: float) -> tuple[np.ndarray, ...]:
        """``(radius, ls, eta, sigma)`` for the LogNormal ``radius_prior`` and ``ls_prior``
        (``mu``, ``sigma``) and data of standard deviation ``scale``."""
        if self.radius is None:
            radius = _log_normal_axis(radius_prior, self.n_radius, self.width)
        else:
            radius = _explicit_axis("radius", self.radius)
        cap = self.radius_max
        if cap is not None and radius[-1] > cap * (1.0 + 1e-12):
            if self.radius is not None or radius[0] >= cap:
                raise ValueError(
                    f"the radius axis must lie within `radius_max` = {cap:.6g}, but spans "
                    f"[{radius[0]:.6g}, {radius[-1]:.6g}]"
                )
            radius = np.geomspace(radius[0], cap, radius.size)
        ls = (
            _log_normal_axis(ls_prior, self.n_ls, self.width)
            if self.ls is None
            else _explicit_axis("ls", self.ls)
        )
        eta, sigma = (
            np.geomspace(1e-3 * scale, 3.0 * scale, self.n_scale)
            if axis is None
            else _explicit_axis(name, axis)
            for name, axis in (("eta", self.eta), ("sigma", self.sigma))
        )
        return radius, ls, eta, sigma


def _log_normal_axis(params: dict[str, float], size: int, width: float) -> np.ndarray:
    centre, spread = params["mu"], params["sigma"]
    return np.exp(np.linspace(centre - width * spread, centre + width * spread, size))


def _explicit_axis(name: str, values) -> np.ndarray:
    axis = np.asarray(values, dtype=float)
    if axis.ndim != 1 or axis.size < 2 or not np.all(np.isfinite(axis)) or axis[0] <= 0:
        raise ValueError(
            f"`{name}` must be a 1-D array of at least 2 positive finite values, but got "
            f"shape {axis.shape}"
        )
    if np.any(np.diff(axis) <= 0):
        raise ValueError(f"`{name}` must be strictly increasing")
    return axis


def grid_posterior(
    distances,
    rows,
    y,
    *,
    landmarks=None,
    inner="matern32",
    inner_kwargs: dict | None = None,
    mass: float = 0.95,
    n_radius: int = 40,
    n_ls: int = 40,
    n_scale: int = 32,
    width: float = 3.3,
    radius=None,
    ls=None,
    eta=None,
    sigma=None,
    radius_max: float | None = None,
) -> GridPosterior:
    r"""The posterior of the :func:`~pymc_sle.sle_priors` SLE model on a grid.

    The model is ``eta**2 * SLE(distances, landmarks, radius=radius, ls=ls, inner=inner)`` with
    a zero mean and noise ``sigma``, and the priors ``sle_priors(distances, rows, y,
    landmarks=landmarks, mass=mass)`` creates. The radius and length-scale axes span ``width``
    prior standard deviations either side of the LogNormal priors' medians (3.3: all but 0.1 %
    of the prior); ``eta`` and ``sigma`` span ``[1e-3, 3] * std(y)``.

    Parameters
    ----------
    distances, rows, y, landmarks
        As for :func:`pymc_sle.sle_priors`: ``rows`` are the training points.
    inner, inner_kwargs
        The inner kernel, as for :class:`pymc_sle.SLE`.
    mass : float, default 0.95
        The priors' mass between their bounds, as for :func:`~pymc_sle.sle_priors`.
    n_radius, n_ls, n_scale : int
        Grid sizes of the radius, the length scale, and each of ``eta`` and ``sigma``.
    width : float, default 3.3
        Half-width of the radius and length-scale axes in prior standard deviations.
    radius, ls, eta, sigma : array_like of float, optional
        Explicit, increasing, positive axes instead of the default ones (e.g. a finer grid
        around the posterior mass a coarse pass found); ``n_radius`` / ``n_ls`` are then
        ignored, and ``n_scale`` sizes whichever of ``eta`` and ``sigma`` is not given.
        Marginals weigh cells by their widths; the ridges and quantile maps ``sle_priors`` reads
        off a grid need axes evenly spaced in the log, as the default ones are. The default
        scale axes are ``n_scale`` cells over a span of 3,000, so cells are wide (0.53 in the log
        for 16): where a posterior of ``eta`` or ``sigma`` is narrower than a cell, its
        marginals sum over one or two cells, and finer explicit axes over its mass
        (:meth:`GridPosterior.mass_range`) resolve it.
    radius_max : float, optional
        The largest radius the model allows (sparse distances' cutoff): the default radius axis
        ends there, and an explicit one must.

    Returns
    -------
    GridPosterior

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle.inference import grid_posterior
    >>> x = np.linspace(0.0, 1.0, 15)
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> grid = grid_posterior(D, np.arange(15), np.sin(6 * x), n_radius=6, n_ls=6, n_scale=6)
    >>> grid.log_density.shape, round(float(grid.marginal("radius").sum()), 12)
    ((6, 6, 6, 6), 1.0)
    """
    axes = GridAxes(n_radius, n_ls, n_scale, width, radius, ls, eta, sigma, radius_max)
    data = training_data(distances, rows, y, landmarks)
    block = data.block
    bounds = bounds_of_block(block, data.y_scale)
    return grid_on_block(block, data.y, bounds, axes, inner=inner, inner_kwargs=inner_kwargs,
                         mass=mass)  # fmt: skip


def grid_on_block(
    block: np.ndarray,
    y: np.ndarray,
    bounds: SLEBounds,
    axes: GridAxes,
    *,
    inner,
    inner_kwargs,
    mass: float,
    spectra: dict | None = None,
) -> GridPosterior:
    """:func:`grid_posterior` on the training points' distances to the landmarks, ``block``,
    with the bounds already computed. ``spectra``, if given, maps each ``(radius, ls)`` cell's
    values to its eigenvalues and coordinates of ``y``, and is filled in: a later pass over
    cells of the same values decomposes nothing again. Its owner keeps it to one ``block``,
    ``y`` and inner kernel (``pymc_sle.inference._search.SearchProblem``)."""
    scale = float(np.std(y))
    radius_prior = lognormal_between(*bounds.radius, mass)
    ls_prior = lognormal_between(*bounds.ls, mass)
    radius, ls, eta, sigma = axes.resolve(radius_prior, ls_prior, scale)

    def log_normal_of_log(values, params):  # density of log(value): Normal(mu, sigma)
        z = (np.log(values) - params["mu"]) / params["sigma"]
        return -0.5 * z * z

    def half_normal_of_log(values):  # HalfNormal(scale) density times the Jacobian `value`
        return -0.5 * (values / scale) ** 2 + np.log(values)

    log_prior_scales = half_normal_of_log(eta)[:, None] + half_normal_of_log(sigma)[None, :]
    eta2, sigma2 = eta[:, None, None] ** 2, sigma[None, :, None] ** 2 + _JITTER
    kernel = _kernel_function(inner, inner_kwargs)
    n = y.size
    log_density = np.empty((radius.size, ls.size, eta.size, sigma.size))
    for i, r in enumerate(radius):
        squared = None
        for j, length in enumerate(ls):
            key = (float(r), float(length))
            spectrum = None if spectra is None else spectra.get(key)
            if spectrum is None:
                if squared is None:
                    squared = embedding_distances(block, radius=r, squared=True)
                spectrum = eigenvalues_and_coordinates(kernel(squared, length), y)
                if spectra is not None:
                    spectra[key] = spectrum
            eigenvalues, coordinates = spectrum
            z2 = coordinates**2
            variance = eta2 * np.maximum(eigenvalues, 0.0) + sigma2
            log_density[i, j] = -0.5 * (
                np.sum(z2 / variance, axis=-1) + np.sum(np.log(variance), axis=-1) + n * _LOG_2PI
            )
    profile = log_density.max(axis=(2, 3))
    log_density += (
        log_normal_of_log(radius, radius_prior)[:, None, None, None]
        + log_normal_of_log(ls, ls_prior)[None, :, None, None]
        + log_prior_scales[None, None]
    )
    nearest = np.where(block > 0, block, np.inf).min()
    return GridPosterior(radius, ls, eta, sigma, log_density, profile, float(nearest))
