"""
Why the SLE amplitude and length scale should not both get priors
=================================================================

With one (scalar) amplitude a, the embedding is a * phi_1(x), so the kernel depends on a / ls
only. Given priors on both, the posterior of (a, ls) is a ridge along a / ls = const. This script
samples that model and the recommended one (a = 1) and saves a pair plot of each.

Run: ``python examples/amplitude_identifiability.py [--quick] [--out DIR]``
"""

import argparse
import warnings
from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from pymc_sle.datasets import one_dimensional

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="short chains, for CI")
parser.add_argument("--out", default=".", help="where to save amplitude_ls_pairs.png")
args = parser.parse_args()
draws = 200 if args.quick else 1000
data = one_dimensional(n_train=30, n_test=10, seed=2)


# %%
# One model, fitted twice: with a LogNormal prior on the amplitude, and with the amplitude fixed
# at 1 (what :func:`pymc_sle.sle_priors` recommends).
def fit(free_amplitude: bool):
    with pm.Model():
        priors = sle.sle_priors(data.distances, data.train, data.y_train, landmarks=data.train)
        amplitude = pm.LogNormal("amplitude", 0.0, 1.0) if free_amplitude else 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the warning this script illustrates
            cov = priors["eta"] ** 2 * sle.SLE(
                data.distances,
                data.train,
                radius=priors["radius"],
                ls=priors["ls"],
                amplitude=amplitude,
            )
        gp = pm.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=data.train[:, None], y=data.y_train, sigma=priors["sigma"])
        with threadpool_limits(limits=1, user_api="blas"):
            return pm.sample(draws, tune=draws, chains=2, cores=2, random_seed=3, progressbar=False)


# %%
# Both posteriors, side by side: with the amplitude random, the chains wander along a ridge of
# constant amplitude / ls; the quantity the data identify has the same posterior in both models.
free, fixed = fit(True), fit(False)
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
a = free.posterior["amplitude"].values.ravel()
ls_free = free.posterior["ls"].values.ravel()
axes[0].loglog(a, ls_free, ".", alpha=0.3)
axes[0].set(xlabel="amplitude", ylabel="ls", title="amplitude and ls both random: a ridge")
ratio = a / ls_free
axes[1].hist(np.log(ratio), bins=40, alpha=0.6, density=True, label="log(a / ls), both random")
axes[1].hist(
    np.log(1.0 / fixed.posterior["ls"].values.ravel()),
    bins=40,
    alpha=0.6,
    density=True,
    label="log(1 / ls), amplitude = 1",
)
axes[1].set(title="the identified quantity is the same", xlabel="log(amplitude / ls)")
axes[1].legend()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
fig.savefig(out / "amplitude_ls_pairs.png", dpi=110)
for name, idata in (("both random", free), ("amplitude = 1", fixed)):
    ess = az.ess(idata, var_names=["ls"])["ls"].item()
    print(f"{name}: min ESS of ls = {ess:.0f} from {idata.posterior.sizes['draw'] * 2} draws")
print("saved amplitude_ls_pairs.png into the --out folder")
