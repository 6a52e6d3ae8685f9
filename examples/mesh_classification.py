"""
Classification and counts on a whole mesh: the Laplace latent GP
================================================================

Binary labels and event counts on the vertices of a mesh, with the geodesic distance as the
only structure. ``sle.gp.Laplace`` integrates the latent field out with the Laplace
approximation, through the same sparse factorisation as the Gaussian path: the
hyperparameters are fitted (or sampled by NUTS) on every vertex, with no ``n x n`` matrix.
The script classifies the Stanford bunny (34,834 vertices, 86 % of them labelled), scores the
held-out vertices (accuracy, log loss, a reliability curve), and fits a Poisson model to
counts on the same mesh.

Run: ``python examples/mesh_classification.py [--mesh ../shared/data/stanford-bunny.obj]
[--quick] [--out DIR]``

Without ``--mesh`` it uses the bunny from ``../shared/data`` when it is there, an icosphere of
40,962 vertices otherwise (needs ``trimesh``: ``pip install 'pymc-sle[mesh]'``).
"""

import argparse
import time
from pathlib import Path

import matplotlib
import numpy as np
import pymc as pm

import pymc_sle as sle
from pymc_sle.datasets import geodesic_sine_field
from pymc_sle.distances import geodesic, load_mesh
from pymc_sle.plotting import plot_mesh_field

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# sphinx-gallery runs the script from examples/ without a __file__
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
BUNNY = HERE.parents[1] / "shared" / "data" / "stanford-bunny.obj"
parser = argparse.ArgumentParser()
parser.add_argument("--mesh", type=Path, help="an .obj/.ply/.off mesh (default: the bunny)")
parser.add_argument("--quick", action="store_true", help="a small icosphere, for CI")
parser.add_argument("--out", type=Path, default=Path("."), help="where to save the figure")
args = parser.parse_args()
began = time.perf_counter()

# %%
# The mesh and a latent field on it: three times the sine of the geodesic distance from the
# top vertex. Labels are Bernoulli draws of its logistic; 86 % of the vertices are labelled.
if args.quick or (args.mesh is None and not BUNNY.exists()):
    import trimesh

    icosphere = trimesh.creation.icosphere(subdivisions=3 if args.quick else 6)
    mesh = sle.distances.Mesh(np.asarray(icosphere.vertices), np.asarray(icosphere.faces))
else:
    mesh = load_mesh(args.mesh or BUNNY).largest_component()[0]
latent = 3.0 * geodesic_sine_field(mesh).f
rng = np.random.default_rng(0)
labels = (rng.uniform(size=mesh.n_vertices) < 1 / (1 + np.exp(-latent))).astype(float)
order = rng.permutation(mesh.n_vertices)
n_train = int(0.86 * mesh.n_vertices)
train, test = np.sort(order[:n_train]), np.sort(order[n_train:])
D = geodesic(mesh.vertices, mesh.faces, cols=train, cutoff="auto", per_bump=32, n_jobs=2)
print(f"{mesh.n_vertices:,} vertices, {n_train:,} labelled; {D!r}")

# %%
# The classifier: a latent GP with an SLE covariance and a Bernoulli (logit) likelihood. The
# observed variable's density is the Laplace approximation of the labels' marginal
# likelihood; the hyperparameters are the model's only free variables. ``sle_priors`` with
# the likelihood gives their priors: the radius and length scale from the distances, the
# signal on the logit's scale and a constant offset at the logit of the labels' mean.
bernoulli = sle.gp.Bernoulli()
with pm.Model() as model:
    priors = sle.sle_priors(D, train, labels[train], likelihood=bernoulli)
    gp = sle.gp.Laplace(mean_func=priors.mean_func(), cov_func=priors.covariance())
    gp.marginal_likelihood("y", X=train[:, None], y=labels[train], likelihood=bernoulli)
    point = sle.find_map(seed=0).point  # L-BFGS from the best of 16 starts
print("MAP:", {k: round(float(point[k]), 5) for k in priors})

# %%
# Held-out probabilities: the latent mean and variance at each new vertex (one sparse solve
# per vertex), then the probability averaged over the latent's Gaussian.
with model:
    f_mean, f_var = gp.predict(test[:, None], point=point)
probability = bernoulli.mean(f_mean, f_var)
clipped = np.clip(probability, 1e-12, 1 - 1e-12)
truth = labels[test]
accuracy = float(np.mean((probability > 0.5) == truth))
log_loss = float(-np.mean(truth * np.log(clipped) + (1 - truth) * np.log(1 - clipped)))
best = 1 / (1 + np.exp(-latent[test]))  # what the true field would predict
best_accuracy = float(np.mean((best > 0.5) == truth))
print(
    f"held-out accuracy {accuracy:.3f} (the true field: {best_accuracy:.3f}), "
    f"log loss {log_loss:.3f}"
)
edges = np.linspace(0, 1, 11)
bins = np.clip(np.digitize(probability, edges) - 1, 0, 9)
reliability = [
    (probability[bins == b].mean(), truth[bins == b].mean()) for b in range(10) if np.any(bins == b)
]

# %%
# Counts on the same mesh: Poisson observations of ``exp(1 + latent / 3)`` at the labelled
# vertices, the same kind of priors (the signal on the scale of the log counts, the offset at
# the log of their mean), fitted the same way.
counts = rng.poisson(np.exp(1.0 + latent / 3.0))
poisson = sle.gp.Poisson()
with pm.Model() as count_model:
    count_priors = sle.sle_priors(D, train, counts[train], likelihood=poisson)
    count_gp = sle.gp.Laplace(
        mean_func=count_priors.mean_func(), cov_func=count_priors.covariance()
    )
    count_gp.marginal_likelihood("y", X=train[:, None], y=counts[train], likelihood=poisson)
    count_point = sle.find_map(seed=0).point
    rate_mean, rate_var = count_gp.predict(test[:, None], point=count_point)
rate = poisson.mean(rate_mean, rate_var)
true_rate = np.exp(1.0 + latent[test] / 3.0)
print(
    f"Poisson: held-out rate error {np.sqrt(np.mean((rate - true_rate) ** 2)):.3f} "
    f"(rates {true_rate.min():.2f} to {true_rate.max():.2f})"
)
print(f"distances to predictions: {time.perf_counter() - began:.0f} s")

fig = plt.figure(figsize=(13, 4.5))
ax = fig.add_subplot(1, 3, 1, projection="3d")
plot_mesh_field(ax, mesh.vertices, mesh.faces, 1 / (1 + np.exp(-latent)), limits=(0, 1))
ax.set_title("true probability")
with model:
    everywhere = gp.predict(np.arange(mesh.n_vertices)[:, None], point=point)
ax = fig.add_subplot(1, 3, 2, projection="3d")
plot_mesh_field(ax, mesh.vertices, mesh.faces, bernoulli.mean(*everywhere), limits=(0, 1))
ax.set_title("predicted probability")
ax = fig.add_subplot(1, 3, 3)
ax.plot([0, 1], [0, 1], color="grey", lw=1)
ax.plot(*np.array(reliability).T, "o-")
ax.set(
    xlabel="predicted probability",
    ylabel="observed frequency",
    title="reliability, held-out vertices",
)
fig.tight_layout()
args.out.mkdir(parents=True, exist_ok=True)
fig.savefig(args.out / "mesh_classification.png", dpi=110)
print("saved mesh_classification.png into the --out folder")
