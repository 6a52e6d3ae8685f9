"""
Predict for images that arrive after the fit
============================================

The SLE embedding of a point depends only on its distances to the landmarks. In feature mode
(``sle.SLE(..., input_dim=m)`` without a distance matrix) those m distances *are* the GP's
inputs: the model is fitted once on the training images' distances to each other, and any number
of new images later needs only their distances to the training images -- one
``wasserstein(new_images, to=train_images)`` call -- passed in through ``pm.set_data``.

Run: ``python examples/new_data_after_fit.py [--quick]``"""

import argparse
import time

import matplotlib
import numpy as np
import pymc as pm

import pymc_sle as sle
from pymc_sle.datasets import coarsen, saxs_images
from pymc_sle.distances import wasserstein

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="few images, short chains, for CI")
args = parser.parse_args()
n_train, n_new = (60, 17) if args.quick else (120, 40)
# The full run samples as the docs recommend: 4 chains x (1000 tune + 1000 draws).
chains, draws = (2, 200) if args.quick else (4, 1000)

# %%
# Simulated SAXS patterns binned to 16 x 16 pixels; y is each film's modulus. The first n_train
# images are the training set; the rest arrive after the model is fitted.
data = saxs_images(n_images=n_train + n_new, seed=7)
images = coarsen(data.images, 4)
train_images, new_images = images[:n_train], images[n_train:]
y_train, y_new = data.y[:n_train], data.y[n_train:]

# %%
# Fit: the inputs are each training image's W2 distances to the landmarks (all of them).
started = time.perf_counter()
W_train = wasserstein(train_images, spacing=4.0, n_jobs=2, progress=False)
train_seconds = time.perf_counter() - started
landmarks = np.arange(n_train)
with pm.Model() as model:
    priors = sle.sle_priors(W_train, landmarks, y_train)
    cov = priors["eta"] ** 2 * sle.SLE(
        radius=priors["radius"],
        ls=priors["ls"],
        input_dim=n_train,  # feature mode
    )
    mean = pm.gp.mean.Constant(pm.Normal("mean", y_train.mean(), 2.0 * y_train.std()))
    gp = pm.gp.Marginal(mean_func=mean, cov_func=cov)
    gp.marginal_likelihood("y", X=W_train.values, y=y_train, sigma=priors["sigma"])
    idata = sle.sample_basins(  # one BLAS thread per parallel chain, by itself
        priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=1
    )
    # A placeholder for inputs to come: one row of the right width.
    X_new = pm.Data("X_new", W_train.values[:1])
    gp.conditional("y_new", Xnew=X_new, pred_noise=True)
names = priors.var_names(model, idata)
summary = pm.stats.summary(idata, var_names=names, kind="diagnostics", round_to=3)
print(summary[["ess_bulk", "ess_tail", "r_hat"]])
print("divergences:", int(idata.sample_stats["diverging"].sum()))

# %%
# Later: new images arrive. Only their distances to the landmark images are computed.
started = time.perf_counter()
W_new = wasserstein(new_images, to=train_images, spacing=4.0, n_jobs=2, progress=False)
new_seconds = time.perf_counter() - started
print(
    f"W2 block of the new images: {W_new.shape} in {new_seconds:.2f} s "
    f"(the training block {W_train.shape} took {train_seconds:.2f} s)"
)

# %%
# Predict: set the new inputs and draw from the posterior predictive.
with model:
    pm.set_data({"X_new": W_new.values})
    predictive = pm.sample_posterior_predictive(
        idata, var_names=["y_new"], random_seed=2, progressbar=False
    )
draws_new = predictive.posterior_predictive["y_new"]
print(f"posterior predictive draws for the new images: {draws_new.shape}")
scores = sle.evaluate(predictive, y_new, "y_new")
print("scores on the new images:", {k: round(float(v), 3) for k, v in scores.items()})
baseline = float(np.sqrt(np.mean((y_new - y_train.mean()) ** 2)))
print(f"predicting the training mean instead: RMSE {baseline:.3f}")

# %%
# Keep one matrix of every image's distances to the landmarks, for the next refit.
everything = W_train.append(W_new)
print(f"distances to the landmarks, training then new rows: {everything.shape}")

# %%
# Predicted against observed, with the 95 % predictive intervals.
fig, ax = plt.subplots(figsize=(5.5, 5), constrained_layout=True)
predicted = draws_new.stack(sample=("chain", "draw"))
lower, upper = predicted.quantile([0.025, 0.975], "sample").values
centre = predicted.mean("sample").values
ax.errorbar(y_new, centre, yerr=[centre - lower, upper - centre], fmt="o", ms=3, alpha=0.7)
ax.axline((y_new.min(), y_new.min()), slope=1, color="k", lw=1)
ax.set(
    xlabel="observed y",
    ylabel="predictive mean and 95 % interval",
    title="images that arrived after the fit",
)
