"""
A Gaussian process on a curved surface (geodesic distances on a triangle mesh)
==============================================================================

A Matérn kernel of the geodesic distance is not positive definite on a curved mesh; the SLE
kernel of the same distance is. This script draws a smooth random field on a mesh, observes it
at a few vertices, fits an SLE GP with NUTS and predicts the field -- with uncertainty -- on every
vertex, then draws truth, prediction and predictive sd.

Run: ``python examples/mesh_gp.py [--mesh ../shared/data/teddy.obj] [--quick] [--out DIR]``

Without ``--mesh`` it uses an icosphere (needs ``trimesh``: ``pip install 'pymc-sle[mesh]'``).
"""

import argparse
from pathlib import Path

import matplotlib
import numpy as np
import pymc as pm

import pymc_sle as sle
from pymc_sle.datasets import matern_field
from pymc_sle.distances import geodesic, load_mesh
from pymc_sle.plotting import plot_mesh_field

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--mesh", type=Path, help="an .obj/.ply/.off mesh (default: an icosphere)")
parser.add_argument("--quick", action="store_true", help="short chains, for CI")
parser.add_argument("--out", type=Path, default=Path("."), help="where to save mesh_gp.png")
args = parser.parse_args()
draws, chains, n_train = (150, 2, 80) if args.quick else (1000, 4, 200)

# %%
# The mesh and a smooth field on it (a Matérn-5/2 GP draw; length scale 15 % of its size).
if args.mesh is None:
    import trimesh

    icosphere = trimesh.creation.icosphere(subdivisions=3)
    mesh = sle.distances.Mesh(np.asarray(icosphere.vertices), np.asarray(icosphere.faces))
else:
    mesh = load_mesh(args.mesh)
size = float(np.ptp(mesh.vertices, axis=0).max())
field = matern_field(mesh, ls=0.15 * size, nu=2.5, sd=1.0, noise_sd=0.1, seed=1)
mesh = field.mesh  # the largest connected component

# %%
# Training vertices and geodesic distances from every vertex to them: (V, n_train).
rng = np.random.default_rng(0)
train = np.sort(rng.choice(mesh.n_vertices, size=n_train, replace=False))
test = np.setdiff1d(np.arange(mesh.n_vertices), train)
D = geodesic(mesh.vertices, mesh.faces, cols=train)  # one Dijkstra per training vertex
y_train = field.y[train]

# %%
# The model: inputs are vertex indices (rows of D); the landmarks are D's columns.
with pm.Model() as model:
    priors = sle.sle_priors(D, train, y_train, inner="matern52")
    cov = priors["eta"] ** 2 * sle.SLE(
        D, radius=priors["radius"], ls=priors["ls"], inner="matern52"
    )
    gp = pm.gp.Marginal(cov_func=cov)
    gp.marginal_likelihood("y", X=train[:, None], y=y_train, sigma=priors["sigma"])
    # Every radius basin, its chains confined to it, pooled by mass (pm.sample when there is one),
    # with target_accept 0.9 (sample_basins's default).
    # Parallel chains run with one BLAS thread each.
    idata = sle.sample_basins(
        priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=2
    )

# %%
# Predict the latent field on every vertex, averaging over the posterior draws.
with model:
    gp.conditional("f_all", Xnew=np.arange(mesh.n_vertices)[:, None])
    thinned = idata.sel(draw=slice(None, None, 10))
    pm.sample_posterior_predictive(
        thinned, var_names=["f_all"], extend_inferencedata=True, random_seed=3
    )
f_draws = thinned.posterior_predictive["f_all"].stack(s=("chain", "draw")).values.T
mean, sd = f_draws.mean(axis=0), f_draws.std(axis=0)

rmse = float(np.sqrt(np.mean((mean[test] - field.f[test]) ** 2)))
inside = np.abs(field.f[test] - mean[test]) <= 1.96 * sd[test]
print(f"{mesh.n_vertices} vertices, {n_train} observed")
print(f"RMSE on unobserved vertices: {rmse:.3f} (field sd {field.f.std():.3f})")
print(f"95 % band covers the truth at {inside.mean():.1%} of unobserved vertices")
# Diagnostics of the model's hyperparameters, not of f_all.
print(pm.stats.summary(idata, var_names=priors.var_names(model, idata), kind="diagnostics"))

fig = plt.figure(figsize=(13, 4.5))
for i, (title, values) in enumerate(
    [("truth", field.f), ("posterior mean", mean), ("posterior sd", sd)]
):
    ax = fig.add_subplot(1, 3, i + 1, projection="3d")
    limits = tuple(np.percentile(field.f, [1, 99])) if i < 2 else None
    cmap = "viridis" if i < 2 else "magma"
    plot_mesh_field(ax, mesh.vertices, mesh.faces, values, limits=limits, cmap=cmap)
    ax.set_title(title)
fig.tight_layout()
args.out.mkdir(parents=True, exist_ok=True)
fig.savefig(args.out / "mesh_gp.png", dpi=110)
print("saved mesh_gp.png into the --out folder")
