"""Figures for SLE models: 1-D posterior bands and the bump profile."""

from __future__ import annotations

import numpy as np

from pymc_sle.bump import bump

__all__ = ["plot_bump_profile", "plot_posterior_1d"]


def plot_posterior_1d(
    ax, x_test, draws, *, x_train=None, y_train=None, truth=None, level=0.95, title=None
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
