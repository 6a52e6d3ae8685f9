"""
Quick start: a GP on a distance matrix with the SLE kernel, fitted with NUTS
============================================================================

Run: ``python examples/quickstart.py [--quick]``

The model sees nothing but a distance matrix and integer row indices, so exactly the same code
works for geodesic distances on a mesh, Wasserstein distances between images or edit distances
between strings: replace ``data.distances`` with your own matrix.
"""

import argparse

import arviz as az
import matplotlib
import numpy as np
import pymc as pm

import pymc_sle as sle
from pymc_sle.datasets import one_dimensional

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="short chains, for CI")
args = parser.parse_args()
draws, chains = (200, 2) if args.quick else (1000, 4)

# %%
# The data: a noisy function on [0, 1], and the distances from every point (train and test) to
# every point. The model's inputs are row indices into that matrix.
data = one_dimensional(n_train=40, n_test=100, seed=1)
X_train, X_test = data.train[:, None], data.test[:, None]

# %%
# The model: priors from data-adaptive bounds, the SLE kernel of the distances, and NUTS. The
# priors also find where the radius posterior's mass lies, start the chains there, and hand the
# radius and length scale to NUTS in coordinates where their posterior is nearly Gaussian (the
# model and its variables are unchanged: the coordinates are their transforms).
with pm.Model() as model:
    # Radius and length scale priors from data-adaptive bounds; HalfNormal signal and noise.
    # Every training point is a landmark, as in the paper: ``landmarks`` are column indices.
    priors = sle.sle_priors(
        data.distances, data.train, data.y_train, landmarks=data.train, inner="matern32"
    )
    # eta**2 * SLE(distances, landmarks, radius, ls, inner) as the priors were searched for, in
    # a drop-in for pm.gp.Marginal whose likelihood gradient costs one Cholesky, not several.
    gp = pm.gp.Marginal(cov_func=priors.covariance())
    gp.marginal_likelihood("y", X=X_train, y=data.y_train, sigma=priors["sigma"])

    # pm.sample when the radius posterior has one basin; otherwise every basin, pooled. Parallel
    # chains run with one BLAS thread each.
    idata = sle.sample_basins(
        priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=1
    )

    # Predictions at the test points, for every posterior draw.
    gp.conditional("y_test", Xnew=X_test, pred_noise=True)
    pm.sample_posterior_predictive(
        idata, var_names=["y_test"], extend_inferencedata=True, random_seed=2
    )

# %%
# Convergence diagnostics (r-hat near 1, effective sample sizes in the hundreds) and scores on
# the test points: RMSE, CRPS, the coverage of the 95 % predictive interval (PICP) and NLPD.
print(az.summary(idata, var_names=["radius", "ls", "eta", "sigma"]).to_string())
print(sle.evaluate(idata, data.y_test, "y_test"))

# %%
# Calibration without a test set: the exact leave-one-out predictive of every training point at
# every posterior draw (a GP's marginal likelihood has no pointwise form, so ``az.loo`` needs
# these). ``az.loo`` reads them from ``idata.log_likelihood``; the share of training points inside
# their 95 % LOO interval estimates the intervals' coverage (``exact_loo``'s notes).
loo = sle.exact_loo(idata, gp, var_name="y", model=model)
print(az.loo(idata))
print(f"LOO coverage of the 95 % intervals: {loo.coverage(0.95):.3f}")

# %%
# Every training point is one of the SLE's landmarks, a new point is not, and that makes the
# check above optimistic. ``own_landmark="drop"`` predicts each training point as a new one: its
# own landmark leaves the embedding, and the draws are reweighted to the model fitted without
# it. It factorises the covariance once per point and draw, so it reads every 10th draw.
new = sle.exact_loo(
    idata.sel(draw=slice(None, None, 10)), gp, var_name="y", model=model, own_landmark="drop"
)
print(f"LOO coverage, each point predicted as a new one: {new.coverage(0.95):.3f}")

# %%
# The same asymmetry at prediction time: ``gp.conditional`` predicts a test point without a
# landmark of its own. ``own_landmark_predictive`` predicts each test point by the SLE with that
# point added to the landmarks, as every training point is one, the draws reweighted to that
# model. It too factorises the covariance once per point and draw, so it reads every 10th draw.
predictive = sle.own_landmark_predictive(
    idata.sel(draw=slice(None, None, 10)), gp, X_test, model=model
)
lower, upper = predictive.interval(0.95)  # per test point, for plots and reports
print(f"mean width of the 95 % intervals: {(upper - lower).mean():.3f}")
print(f"test coverage, each test point its own landmark: {predictive.coverage(data.y_test):.3f}")
print(f"its NLPD: {-predictive.logpdf(data.y_test).mean():.3f}")

# %%
# Both predictives of the test points: ``gp.conditional``'s and each point's own landmark's.
x = data.coordinates[:, 0]
order = np.argsort(x[data.test])
conditional = idata.posterior_predictive["y_test"].stack(sample=("chain", "draw"))
bands = {
    "gp.conditional": conditional.quantile([0.025, 0.975], "sample").values,
    "own landmark": np.array(predictive.interval(0.95)),
}
fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
for (name, (low, high)), colour in zip(bands.items(), ("C0", "C1"), strict=True):
    label = f"95 % interval of y, {name}"
    ax.fill_between(
        x[data.test][order], low[order], high[order], alpha=0.3, color=colour, label=label
    )
ax.plot(x[data.train], data.y_train, "o", color="C3", ms=3.5, label="training data")
ax.plot(x[data.test][order], data.y_test[order], ".", color="k", ms=3, label="test data")
ax.set(xlabel="x", ylabel="y", title="SLE-Matérn-3/2 on 40 noisy points")
ax.legend(fontsize="small")
