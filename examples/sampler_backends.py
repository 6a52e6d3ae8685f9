"""
Choose a NUTS implementation (PyMC, nutpie or NumPyro) for an SLE model
=======================================================================

The same PyMC model runs on PyMC's own NUTS (C backend), nutpie (Rust, numba-compiled model) and
NumPyro (JAX); ``pymc_sle`` registers numba and JAX versions of its operations, so nothing in the
model changes but ``nuts_sampler=``. This script samples one SLE GP with each installed backend
and prints wall time, effective samples per second and r-hat. ``sample_basins`` gives nutpie its
low-rank modified mass matrix, which follows the correlation of the amplitude with the length
scale (PyMC and NumPyro adapt a diagonal one). Which is fastest depends on the model size and
machine: measure on yours.

Run: ``python examples/sampler_backends.py [--quick] [--samplers pymc nutpie numpyro]``

Needs ``pip install 'pymc-sle[nutpie]'`` / ``'pymc-sle[jax]'`` for the optional backends.
"""

import argparse
import importlib.util
import time

import arviz as az
import matplotlib
import pymc as pm

import pymc_sle as sle
from pymc_sle.datasets import one_dimensional

matplotlib.use("Agg")
import matplotlib.pyplot as plt

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="short chains, for CI")
parser.add_argument("--samplers", nargs="+", default=["pymc", "nutpie", "numpyro"])
args = parser.parse_args()
draws = 60 if args.quick else 1000
data = one_dimensional(n_train=60, n_test=10, seed=1)

# %%
# One SLE GP with the library's default priors on 60 points of a noisy function.
with pm.Model() as model:
    priors = sle.sle_priors(data.distances, data.train, data.y_train, landmarks=data.train)
    cov = priors["eta"] ** 2 * sle.SLE(
        data.distances, landmarks=data.train, radius=priors["radius"], ls=priors["ls"]
    )
    gp = pm.gp.Marginal(cov_func=cov)
    gp.marginal_likelihood("y", X=data.train[:, None], y=data.y_train, sigma=priors["sigma"])

# %%
# The same model on each installed sampler: wall time includes compilation, as a user sees it.
print(f"{'sampler':10} {'wall (s)':>9} {'min ESS':>8} {'ESS/s':>7} {'max r-hat':>9}")
rates = {}
for sampler in args.samplers:
    if sampler != "pymc" and importlib.util.find_spec(sampler) is None:
        print(f"{sampler:10} not installed")
        continue
    start = time.perf_counter()
    with model:  # sample_basins runs parallel chains with one BLAS thread each
        idata = sle.sample_basins(
            priors,
            draws=draws,
            tune=draws,
            chains=2,
            cores=2,
            nuts_sampler=sampler,
            random_seed=1,
            progressbar=False,
        )
    wall = time.perf_counter() - start  # includes compilation, as a user experiences it
    summary = az.summary(idata, var_names=["radius", "ls", "eta", "sigma"], kind="diagnostics")
    ess = float(summary["ess_bulk"].min())
    print(f"{sampler:10} {wall:9.1f} {ess:8.0f} {ess / wall:7.1f} {summary['r_hat'].max():9.3f}")
    rates[sampler] = ess / wall

# %%
# Effective draws per second of wall time (compilation included), per sampler.
fig, ax = plt.subplots(figsize=(5.5, 3.5), constrained_layout=True)
ax.bar(list(rates), list(rates.values()), color="C0")
ax.set(ylabel="smallest bulk ESS per second", title="the same SLE model, three NUTS samplers")
