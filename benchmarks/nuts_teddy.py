"""Full posterior of an SLE GP on the Teddy mesh: PyMC NUTS, nutpie and fvgp's MCMC (issue 5, P4).

Data: ``n`` vertices of the Teddy mesh (1,598 vertices; ``--mesh``, default
``../shared/data/teddy.obj``) drawn at random; edge-graph geodesic distances between them. The
target is a stand-in until the paper-reproduction truth exists: two sinusoids of the geodesic
distance to two far-apart vertices (the highest vertex and the vertex farthest from it), wave
length a third of the mesh diameter, amplitude 30 -- a field with a standard deviation of tens, as
the paper's Teddy RMSEs imply -- plus Gaussian noise with standard deviation 3, then centred.

Model (the paper's Teddy setting, Appendix D): SLE with a Matérn-5/2 inner kernel, unit
amplitude and shape, all training points as landmarks, zero mean; hyperparameters with uniform
priors on the paper's bounds -- signal variance [1e2, 1e6], length scale [1e-3, 40], noise
variance [1e-6, 10] -- and the radius uniform between the median nearest-neighbour distance and
the largest training distance (:func:`pymc_sle.priors.radius_bounds`). Uniform priors are what
fvgp's MCMC assumes ("priors as bounds"), so all three samplers target the same posterior.

- ``pymc``: ``pm.sample`` (PyMC's NUTS), ``pymc_sle.gp.Marginal``, C backend.
- ``nutpie``: ``pm.sample(nuts_sampler="nutpie")`` on the same model (numba backend).
- ``fvgp``: ``fvgp.GP(...).train(method="mcmc")`` with the same kernel written in numpy, uniform
  priors on the same bounds, ``--fvgp-updates`` Metropolis updates per chain, the first half
  discarded. Optional: ``pip install fvgp``.

Every sampler runs 4 chains on 2 cores with one BLAS thread per chain. ``--samplers`` runs a
subset; runs merge into one result file. Reported: wall time
(compilation included), maximum r̂, minimum bulk and tail ESS over the hyperparameters, and
min-ESS/s = minimum bulk ESS / wall time. Writes benchmarks/results/nuts_teddy.{json,md}.

Run:  python -m benchmarks.nuts_teddy [--quick] [--samplers pymc nutpie fvgp]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import time
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

import pymc_sle
from pymc_sle import SLE, embedding_distances
from pymc_sle.distances import geodesic, load_mesh
from pymc_sle.inference.priors import radius_bounds

HERE = Path(__file__).resolve().parent
DEFAULT_MESH = HERE.parents[1] / "shared" / "data" / "teddy.obj"
BOUNDS = {"signal_var": (1e2, 1e6), "ls": (1e-3, 40.0), "noise_var": (1e-6, 10.0)}
NAMES = ["signal_var", "radius", "ls", "noise_var"]


def teddy_data(mesh_path: Path, n: int, seed: int = 0):
    mesh = load_mesh(mesh_path)
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(mesh.n_vertices, size=n, replace=False))
    top = int(np.argmax(mesh.vertices[:, 2]))
    from_top = geodesic(mesh.vertices, mesh.faces, cols=[top]).values[:, 0]
    far = int(np.argmax(from_top))
    sources = geodesic(mesh.vertices, mesh.faces, rows=train, cols=[top, far]).values
    wavelength = from_top.max() / 3.0
    f = 30.0 * np.sin(2 * np.pi * sources[:, 0] / wavelength)
    f += 30.0 * np.cos(2 * np.pi * sources[:, 1] / (0.7 * wavelength))
    y = f + rng.normal(scale=3.0, size=n)
    D = geodesic(mesh.vertices, mesh.faces, rows=train, cols=train).values
    return D, y - y.mean(), mesh.n_vertices


def pymc_model(D, y, r_bounds) -> pm.Model:
    with pm.Model() as model:
        signal_var = pm.Uniform("signal_var", *BOUNDS["signal_var"])
        radius = pm.Uniform("radius", *r_bounds)
        ls = pm.Uniform("ls", *BOUNDS["ls"])
        noise_var = pm.Uniform("noise_var", *BOUNDS["noise_var"])
        cov = signal_var * SLE(D, radius=radius, ls=ls, inner="matern52")
        gp = pymc_sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood(
            "y", X=np.arange(len(y))[:, None], y=y, sigma=pm.math.sqrt(noise_var)
        )
    return model


def diagnostics(idata, seconds: float) -> dict:
    summary = az.summary(idata, var_names=NAMES, round_to="none")
    ess = float(summary["ess_bulk"].min())
    return {
        "seconds": seconds,
        "r_hat_max": float(summary["r_hat"].max()),
        "ess_bulk_min": ess,
        "ess_tail_min": float(summary["ess_tail"].min()),
        "min_ess_per_second": ess / seconds,
        "posterior_means": {k: float(summary.loc[k, "mean"]) for k in NAMES},
    }


def run_pymc(D, y, r_bounds, sampler: str, draws: int, chains: int) -> dict:
    start = time.perf_counter()
    with pymc_model(D, y, r_bounds), threadpool_limits(1, user_api="blas"):
        idata = pm.sample(
            draws,
            tune=draws,
            chains=chains,
            cores=2,
            nuts_sampler=sampler,
            random_seed=11,
            progressbar=False,
        )
    seconds = time.perf_counter() - start
    result = diagnostics(idata, seconds)
    result["draws_per_chain"] = draws
    result["mean_leapfrog_steps"] = float(idata.sample_stats["n_steps"].mean())
    if "diverging" in idata.sample_stats:
        result["divergences"] = int(idata.sample_stats["diverging"].sum())
    return result


def _matern52(s):
    return (1.0 + np.sqrt(5.0) * s + 5.0 * s * s / 3.0) * np.exp(-np.sqrt(5.0) * s)


def _fvgp_chain(D, y, r_bounds, updates: int, seed: int) -> np.ndarray:
    from fvgp import GP

    def kernel(x1, x2, hps):
        rows, cols = D[x1[:, 0].astype(int)], D[x2[:, 0].astype(int)]
        return hps[0] * _matern52(embedding_distances(rows, cols, radius=hps[1]) / hps[2])

    bounds = np.array([BOUNDS["signal_var"], r_bounds, BOUNDS["ls"], BOUNDS["noise_var"]])
    rng = np.random.default_rng(seed)
    init = np.array([np.var(y), np.mean(r_bounds), 1.0, 1.0]) * rng.uniform(0.8, 1.2, size=4)
    with threadpool_limits(1, user_api="blas"):
        gp = GP(
            np.arange(len(y), dtype=float)[:, None],
            y,
            init_hyperparameters=init,
            kernel_function=kernel,
            noise_function=lambda x, hps: np.full(len(x), hps[3]),
            prior_mean_function=lambda x, hps: np.zeros(len(x)),
        )
        gp.train(
            hyperparameter_bounds=bounds,
            method="mcmc",
            max_iter=updates,
            mcmc_break_condition=None,
            mcmc_seed=seed,
        )
    chain = np.asarray(gp.mcmc_info["x"])
    return chain[len(chain) // 2 :]


def run_fvgp(D, y, r_bounds, updates: int, chains: int) -> dict:
    start = time.perf_counter()
    traces = Parallel(n_jobs=2)(
        delayed(_fvgp_chain)(D, y, r_bounds, updates, seed) for seed in range(chains)
    )
    seconds = time.perf_counter() - start
    stacked = np.stack(traces)  # (chain, draw, parameter)
    idata = az.from_dict(posterior={name: stacked[..., i] for i, name in enumerate(NAMES)})
    result = diagnostics(idata, seconds)
    result["draws_per_chain"] = updates // 2
    result["updates_per_chain"] = updates
    return result


def markdown(results: dict) -> str:
    lines = [
        "# Full posterior on the Teddy mesh: NUTS (PyMC, nutpie) vs fvgp's MCMC",
        "",
        f"Generated by `python -m benchmarks.nuts_teddy`; n = {results['n_train']} training "
        f"vertices of {results['n_vertices']}, {results['chains']} chains on 2 cores, one BLAS "
        "thread per chain; NUTS tunes for as many iterations as it draws. Wall time includes "
        "compilation. See the script's docstring.",
        "",
        "| sampler | draws per chain | wall (s) | r̂ max | min bulk ESS | min tail ESS | "
        "min-ESS/s | leapfrog steps per draw | divergences |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results["samplers"].items():
        lines.append(
            f"| {name} | {r['draws_per_chain']} | {r['seconds']:.1f} | {r['r_hat_max']:.3f} | "
            f"{r['ess_bulk_min']:.0f} | {r['ess_tail_min']:.0f} | "
            f"{r['min_ess_per_second']:.2f} | {r.get('mean_leapfrog_steps', float('nan')):.1f} | "
            f"{r.get('divergences', 'n/a')} |"
        )
    samplers = results["samplers"]
    if "fvgp" in samplers:
        lines += ["", "min-ESS/s relative to fvgp's MCMC:", ""]
        for name, r in samplers.items():
            if name != "fvgp":
                ratio = r["min_ess_per_second"] / samplers["fvgp"]["min_ess_per_second"]
                lines.append(f"- {name}: {ratio:.1f} times")
    lines += ["", "Posterior means:", ""]
    lines += ["| sampler | " + " | ".join(NAMES) + " |", "|---" * (len(NAMES) + 1) + "|"]
    for name, r in samplers.items():
        means = " | ".join(f"{r['posterior_means'][k]:.4g}" for k in NAMES)
        lines.append(f"| {name} | {means} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=Path, default=DEFAULT_MESH)
    parser.add_argument("--quick", action="store_true", help="n = 60, short chains (CI)")
    parser.add_argument("--samplers", nargs="+", default=["pymc", "nutpie", "fvgp"])
    parser.add_argument("--draws", type=int, default=1000, help="NUTS draws (and tuning) per chain")
    parser.add_argument("--fvgp-updates", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if not args.mesh.exists():
        parser.error(f"--mesh {args.mesh} does not exist; pass the path to teddy.obj")
    n, draws, chains = (60, 100, 2) if args.quick else (400, args.draws, 4)
    updates = 200 if args.quick else args.fvgp_updates
    D, y, n_vertices = teddy_data(args.mesh, n)
    r_bounds = radius_bounds(D, lower="nearest")
    stem = "nuts_teddy_quick" if args.quick else "nuts_teddy"
    results = {
        "n_train": n,
        "n_vertices": n_vertices,
        "chains": chains,
        "radius_bounds": list(r_bounds),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "samplers": {},
    }
    previous = args.out / f"{stem}.json"
    if previous.exists():  # samplers run in separate invocations share one result file
        earlier = json.loads(previous.read_text())
        if earlier["n_train"] == n and earlier["chains"] == chains:
            results["samplers"] = earlier["samplers"]
    for sampler in args.samplers:
        if sampler != "pymc" and importlib.util.find_spec(sampler) is None:
            print(f"skipping {sampler}: not installed")
            continue
        if sampler == "fvgp":
            results["samplers"][sampler] = run_fvgp(D, y, r_bounds, updates, chains)
        else:
            results["samplers"][sampler] = run_pymc(D, y, r_bounds, sampler, draws, chains)
        print(sampler, results["samplers"][sampler], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (args.out / f"{stem}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
