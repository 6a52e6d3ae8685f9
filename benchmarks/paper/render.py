"""Predictions of a MAP-fitted model drawn on every vertex of a mesh."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.paper.fitting import params_of
from benchmarks.paper.models import ModelSpec, build
from benchmarks.paper.problem import Problem, Trial
from pymc_sle import find_map, rmse
from pymc_sle.plotting import plot_mesh_field

__all__ = ["render"]


def render(
    problem: Problem, spec: ModelSpec, trial: Trial, mesh, path: Path, experiment: str
) -> dict:
    """Fit ``spec`` by MAP on ``trial`` and draw truth (with the training vertices), predictive
    mean, predictive sd and absolute error on every vertex of ``mesh`` (``problem.extras["f"]``
    is the truth); the figure is titled with ``experiment`` and the model's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    everywhere = dataclasses.replace(problem, test=np.arange(mesh.n_vertices))
    with threadpool_limits(1):
        ctx = everywhere.context(trial, set(spec.distance_kinds), set(spec.square_kinds))
        model, gp, _ = build(spec, ctx)
        point = find_map(model, seed=trial.seed).point
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=False)
    truth = problem.extras["f"]
    sd = np.sqrt(np.maximum(var, 0.0))
    panels = {
        f"truth, with the {trial.size} training vertices": truth,
        f"{spec.name} mean": mu,
        f"{spec.name} sd": sd,
        "|error|": np.abs(mu - truth),
    }
    fig = plt.figure(figsize=(11, 10))
    # Colour limits from the 1st-99th percentiles, shared by truth and mean.
    shared = tuple(np.percentile(truth, [1, 99]))
    for i, (label, values) in enumerate(panels.items()):
        ax = fig.add_subplot(2, 2, i + 1, projection="3d")
        limits, cmap = (shared, "viridis") if i < 2 else (None, "magma")
        marked = trial.train if i == 0 else None
        plot_mesh_field(
            ax, mesh.vertices, mesh.faces, values, limits=limits, cmap=cmap, marked=marked
        )
        ax.set_title(label, fontsize=11)
    fig.suptitle(f"{experiment}: {spec.name} (n = {trial.size}, draw {trial.draw}, MAP fit)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"params": params_of(model, point), "rmse_all_vertices": rmse(truth, mu)}
