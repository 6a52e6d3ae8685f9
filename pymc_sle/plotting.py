"""Figures for SLE models: 1-D posterior bands, the bump profile and fields on meshes."""

from __future__ import annotations

import numpy as np

from pymc_sle.kernels._bump import bump

__all__ = ["plot_bump_profile", "plot_mesh_field", "plot_posterior_1d"]


def plot_posterior_1d(
    ax,
    x_test,
    draws,
    *,
    x_train=None,
    y_train=None,
    truth=None,
    level=0.95,
    title=None,
    ylabel="f(x)",
):
    """Posterior mean and central ``level`` band of draws over a 1-D test grid.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    x_test : array_like of shape (n,)
        Sorted test inputs.
    draws : array_like of shape (n_draws, n)
        Posterior (predictive) draws at ``x_test``.
    x_train, y_train : array_like, optional
        Observations, drawn as points.
    truth : array_like of shape (n,), optional
        The latent function at ``x_test``.
    level : float, default 0.95
        Probability of the central band.
    title, ylabel : str, optional
        The axes' title and y label.
    """
    draws = np.asarray(draws)
    lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    ax.fill_between(x_test, lower, upper, color="C0", alpha=0.25, label=f"{level:.0%} band of f")
    ax.plot(x_test, draws.mean(axis=0), color="C0", lw=2, label="posterior mean")
    if truth is not None:
        ax.plot(x_test, truth, color="k", lw=1.2, ls="--", label="latent function")
    if x_train is not None and y_train is not None:
        ax.plot(x_train, y_train, "o", color="C3", ms=3.5, label="training data")
    if title:
        ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel(ylabel)
    ax.legend(loc="lower left", fontsize="small")
    return ax


def plot_bump_profile(ax, radius_draws, *, amplitude=1.0, shape=1.0, d_max=None):
    """The bump ``b(d)`` at the posterior median radius, with the band of radius draws."""
    radius_draws = np.asarray(radius_draws).ravel()
    low, median, high = np.quantile(radius_draws, [0.025, 0.5, 0.975])
    d = np.linspace(0.0, d_max if d_max is not None else 1.2 * high, 400)
    ax.fill_between(
        d,
        bump(d, low, amplitude, shape),
        bump(d, high, amplitude, shape),
        color="C2",
        alpha=0.25,
        label="radius 95% interval",
    )
    ax.plot(
        d, bump(d, median, amplitude, shape), color="C2", lw=2, label=f"median r = {median:.3g}"
    )
    ax.axvline(median, color="C2", ls=":", lw=1)
    ax.set_xlabel("distance d")
    ax.set_ylabel("b(d)")
    ax.set_title("bump profile (posterior)")
    ax.legend(fontsize="small")
    return ax


def plot_mesh_field(
    ax, vertices, faces, values, *, limits=None, cmap="viridis", colorbar=True, marked=None
):
    """A per-vertex field on a triangle mesh, seen along the mesh's thinnest principal axis.

    Parameters
    ----------
    ax : mpl_toolkits.mplot3d.Axes3D
        A 3-D axes (``fig.add_subplot(..., projection="3d")``).
    vertices : array_like of shape (V, 3)
    faces : array_like of int of shape (F, 3)
    values : array_like of shape (V,)
        The field; each face is coloured by the mean of its vertices.
    limits : (float, float), optional
        Colour limits; default the 1st and 99th percentiles of ``values``.
    cmap : str, default "viridis"
    colorbar : bool, default True
    marked : array_like of int, optional
        Vertices drawn as black dots over the field, e.g. the training vertices.

    Returns
    -------
    ax
    """
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    vertices, faces = np.asarray(vertices, dtype=float), np.asarray(faces)
    values = np.asarray(values, dtype=float)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"`vertices` must have shape (V, 3), but got {vertices.shape}")
    if values.shape != (vertices.shape[0],):
        raise ValueError(
            f"`values` must have one entry per vertex ({vertices.shape[0]}), but got shape "
            f"{values.shape}"
        )
    centred = vertices - vertices.mean(axis=0)
    principal = np.linalg.svd(centred, full_matrices=False)[2]
    v2 = centred @ principal.T
    lo, hi = tuple(np.percentile(values, [1, 99])) if limits is None else limits
    colours = plt.get_cmap(cmap)
    face_values = np.clip((values[faces].mean(axis=1) - lo) / max(hi - lo, 1e-12), 0, 1)
    ax.add_collection3d(Poly3DCollection(v2[faces], facecolors=colours(face_values), linewidths=0))
    span = np.abs(v2).max()
    ax.set(xlim=(-span, span), ylim=(-span, span), zlim=(-span, span))
    ax.set_box_aspect(None, zoom=1.5)
    ax.view_init(elev=90, azim=-90)  # along the thinnest principal axis
    ax.set_axis_off()
    if marked is not None:
        dots = v2[np.asarray(marked, dtype=np.int64)]
        ax.scatter(*dots.T, s=3, c="k", depthshade=False)
    if colorbar:
        mappable = plt.cm.ScalarMappable(cmap=colours, norm=plt.Normalize(lo, hi))
        ax.figure.colorbar(mappable, ax=ax, shrink=0.6, pad=0.0)
    return ax
