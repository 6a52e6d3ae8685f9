"""
Regression on images with the exact Wasserstein-2 distance
==========================================================

Images (or histograms) compared by optimal transport keep their geometry: two patterns that are
shifted or rotated copies are close in W2, far in any pixel-wise norm. But W2 is not a Hilbertian
distance, so a Matérn kernel of W2 can be indefinite. This script simulates small-angle X-ray
scattering (SAXS) patterns, computes exact W2 between them (POT's network simplex, in parallel),
shows that a Matérn kernel of W2 is indefinite where SLE is not, and fits an SLE GP with a
learnable constant mean to predict each film's modulus from its pattern.

Run: ``python examples/images_w2.py [--quick] [--n-images 150]``"""

import argparse

import matplotlib
import numpy as np
import pymc as pm

import pymc_sle as sle
from pymc_sle import psd_report
from pymc_sle.datasets import coarsen, saxs_images
from pymc_sle.distances import wasserstein
from pymc_sle.kernels import DistanceCovariance

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="few images, short chains, for CI")
parser.add_argument("--n-images", type=int, default=150)
args = parser.parse_args()
n_images, draws, chains = (60, 150, 2) if args.quick else (args.n_images, 1000, 4)

# %%
# Simulated 64 x 64 patterns, binned 4 x 4 on the detector (exact W2 on 16 x 16 pixels costs
# milliseconds per pair; ``coarsen`` bounds the error this adds). y: modulus in GPa.
data = saxs_images(n_images=n_images, seed=7)
images = coarsen(data.images, 4)

# %%
# Exact W2 between every pair of images, in fine-pixel units (the binned pixel is 4 wide).
W2 = wasserstein(images, spacing=4.0, n_jobs=2, progress=False)

# %%
# A kernel of W2 itself need not be a covariance; SLE's always is. The Gaussian kernel of W2
# turns indefinite at long length scales once there are enough images (150 images: at 3 x the
# median distance; the 60 of --quick may all pass), a failure that grows with the data.
every = np.arange(n_images)[:, None]
median = float(np.median(W2.values[np.triu_indices(n_images, 1)]))
for factor in (1.0, 3.0, 5.0):
    gaussian = DistanceCovariance(W2, ls=factor * median, inner="rbf")
    print(f"Gaussian of W2, ls = {factor:g} x median:", psd_report(gaussian(every).eval()))
print("SLE of W2:", psd_report(sle.SLE(W2, radius=3.0 * median, ls=1.0)(every).eval()))

# %%
# Train on 3/4 of the images, predict the rest. Landmarks: the training images.
rng = np.random.default_rng(0)
order = rng.permutation(n_images)
train, test = np.sort(order[: 3 * n_images // 4]), np.sort(order[3 * n_images // 4 :])
y_train, y_test = data.y[train], data.y[test]
with pm.Model() as model:
    priors = sle.sle_priors(W2, train, y_train, landmarks=train)
    cov = priors["eta"] ** 2 * sle.SLE(
        W2, landmarks=train, radius=priors["radius"], ls=priors["ls"], inner="matern32"
    )
    mean = pm.gp.mean.Constant(pm.Normal("mean", y_train.mean(), 2.0 * y_train.std()))
    gp = pm.gp.Marginal(mean_func=mean, cov_func=cov)
    gp.marginal_likelihood("y", X=train[:, None], y=y_train, sigma=priors["sigma"])
    idata = sle.sample_basins(  # pm.sample when the radius has one basin
        priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=1
    )
    gp.conditional("y_test", Xnew=test[:, None], pred_noise=True)
    pm.sample_posterior_predictive(
        idata, var_names=["y_test"], extend_inferencedata=True, random_seed=2
    )

# Diagnostics of the model's hyperparameters, not of y_test.
print(pm.stats.summary(idata, var_names=priors.var_names(model, idata)))
scores = sle.evaluate(idata, y_test, "y_test")
print({k: round(float(v), 3) for k, v in scores.items()})
baseline = float(np.sqrt(np.mean((y_test - y_train.mean()) ** 2)))
print(f"predicting the training mean instead: RMSE {baseline:.3f}")

# %%
# Predicted against observed, with the 95 % predictive intervals.
fig, ax = plt.subplots(figsize=(5.5, 5), constrained_layout=True)
predicted = idata.posterior_predictive["y_test"].stack(sample=("chain", "draw"))
lower, upper = predicted.quantile([0.025, 0.975], "sample").values
centre = predicted.mean("sample").values
ax.errorbar(y_test, centre, yerr=[centre - lower, upper - centre], fmt="o", ms=3, alpha=0.7)
ax.axline((y_test.min(), y_test.min()), slope=1, color="k", lw=1)
ax.set(xlabel="observed y", ylabel="predictive mean and 95 % interval", title="held-out images")
