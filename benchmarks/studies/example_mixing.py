"""NUTS on the gallery's mesh and W2-image models: does the default mix, and where it diverges.

The models are ``examples/mesh_gp.py``'s and ``examples/images_w2.py``'s at their full sizes,
with the README recipe (``sle_priors`` with its default ``start="mode"``, sampled by
``sle.sample_basins``):

- ``mesh``: a Matérn-5/2 field (length scale 15 % of the mesh, sd 1, noise 0.1, seed 1) on the
  642-vertex icosphere, 200 training vertices, geodesic distances, ``inner="matern52"``;
- ``images``: 150 simulated SAXS patterns (seed 7) binned 4 x 4, exact W2, 112 training images,
  ``inner="matern32"`` and a learnable constant mean.

4 chains x (1000 tune + 1000 draws), one BLAS thread per chain, 2 cores, ``target_accept`` 0.9
(``sample_basins``'s default), sampler seeds 1 and 2.

Per fit: largest r-hat and smallest bulk and tail ESS over ``priors.var_names(model)``,
divergences, wall time, the noise posterior's 5 % quantile and median, and where the divergent
trajectories left from (PyMC's divergence records, not the draws they record): the share of them
with the radius's sampled coordinate ``u`` (its grid quantile scale) below -3 (the small-radius
wall) or above 3, against the share of all draws below -3. The figure shows seed 1's draws in
``u`` and ``log sigma``, and where its divergent trajectories left from.

Each fit records the scale ``sle_priors`` chose for each hyperparameter (``SLEPriors.scales``).
Fits already in the JSON file are kept (the run resumes; seed 1's draws wait in the distance
cache for the figure); ``--refit`` samples them again. Writes
benchmarks/results/studies/example_mixing.{json,md,png}.

Run:  python -m benchmarks.studies.example_mixing [--quick]
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks.studies import common
from pymc_sle.datasets import coarsen, matern_field, saxs_images
from pymc_sle.distances import geodesic, wasserstein
from pymc_sle.evaluation import convergence

EXAMPLES = ("mesh", "images")


def mesh_model(quick: bool):
    """``examples/mesh_gp.py``'s model on the icosphere (50 training vertices when quick)."""
    import trimesh

    icosphere = trimesh.creation.icosphere(subdivisions=3)
    mesh = sle.distances.Mesh(np.asarray(icosphere.vertices), np.asarray(icosphere.faces))
    size = float(np.ptp(mesh.vertices, axis=0).max())
    field = matern_field(mesh, ls=0.15 * size, nu=2.5, sd=1.0, noise_sd=0.1, seed=1)
    mesh = field.mesh
    rng = np.random.default_rng(0)
    train = np.sort(rng.choice(mesh.n_vertices, size=50 if quick else 200, replace=False))
    D = geodesic(mesh.vertices, mesh.faces, cols=train)
    y = field.y[train]
    with pm.Model() as model:
        priors = sle.sle_priors(D, train, y, inner="matern52")
        cov = priors["eta"] ** 2 * sle.SLE(
            D, radius=priors["radius"], ls=priors["ls"], inner="matern52"
        )
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=priors["sigma"])
    return model, priors


def images_model(quick: bool, cache, jobs: int):
    """``examples/images_w2.py``'s model (32 images when quick); W2 is cached in ``cache``."""
    n_images = 32 if quick else 150
    data = saxs_images(n_images=n_images, seed=7)
    path = cache / f"example_mixing_w2_{n_images}.npy"
    if path.exists():
        W2 = sle.DistanceMatrix(np.load(path))
    else:
        W2 = wasserstein(coarsen(data.images, 4), spacing=4.0, n_jobs=jobs, progress=False)
        np.save(path, W2.values)
    order = np.random.default_rng(0).permutation(n_images)
    train = np.sort(order[: 3 * n_images // 4])
    y = data.y[train]
    with pm.Model() as model:
        priors = sle.sle_priors(W2, train, y, landmarks=train)
        cov = priors["eta"] ** 2 * sle.SLE(
            W2, landmarks=train, radius=priors["radius"], ls=priors["ls"], inner="matern32"
        )
        mean = pm.gp.mean.Constant(pm.Normal("mean", y.mean(), 2.0 * y.std()))
        gp = sle.gp.Marginal(mean_func=mean, cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=priors["sigma"])
    return model, priors


def fit(
    model,
    priors,
    *,
    seed: int,
    target_accept: float,
    draws: int,
    chains: int,
):
    """One fit: its row of diagnostics and its draws in the sampled coordinates."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        begin = time.perf_counter()
        with threadpool_limits(limits=1, user_api="blas"):
            idata = sle.sample_basins(
                priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=seed,
                target_accept=target_accept, progressbar=False, compute_convergence_checks=False,
                keep_warning_stat=True,  # where each divergent trajectory left from
            )  # fmt: skip
        wall = time.perf_counter() - begin
    summary, worst = convergence(idata, priors.var_names(model))
    radius = idata.posterior["radius"].values.ravel()
    transform = model.rvs_to_transforms[priors["radius"]]
    quantile = hasattr(transform, "to_sampled")  # False when several basins use centred logs
    sigma = idata.posterior["sigma"].values.ravel()
    draws_out = {  # u: what NUTS samples, the quantile scale (well below its cap)
        "u": transform.to_sampled(radius) if quantile else np.log(radius),
        "u_name": "u (radius on the grid's quantile scale)" if quantile else "log radius",
        "log_sigma": np.log(sigma),
    }
    u = draws_out["u"]
    starts = common.radius_divergence_starts(idata, model, priors)
    starts = np.array([]) if starts is None else starts  # on the same axis as u
    draws_out["u_divergence_starts"] = starts
    row = {
        "seed": seed, "target_accept": target_accept, "wall_s": wall,
        "scales": "; ".join(f"{name}: {scale}" for name, scale in priors.scales.items()),
        **worst, "sigma_q05": float(np.quantile(sigma, 0.05)),
        "r_hat_worst": str(summary["r_hat"].idxmax()),
        "sigma_median": float(np.median(sigma)),
        "sampled_radius_as": "quantile u" if quantile else "log radius",
        "share_u_below_wall": float(np.mean(u < common.WALL_U)) if quantile else None,
        "divergence_starts_share_u_below_wall":
            float(np.mean(starts < common.WALL_U)) if quantile and starts.size else None,
        "divergence_starts_share_u_above_3":
            float(np.mean(starts > -common.WALL_U)) if quantile and starts.size else None,
    }  # fmt: skip
    return row, draws_out


def draws_file(stem: str, example: str, seed: int) -> str:
    """Where a fit's draws wait for the figure (in the cache)."""
    return f"{stem}_{example}_seed{seed}.npz"


def percent(share: float | None, digits: int) -> str:
    return "-" if share is None else f"{share:.{digits}%}"


def figure(draws: dict, path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(1, len(draws), figsize=(6.5 * len(draws), 4.6), squeeze=False)
    for ax, (example, d) in zip(axes[0], draws.items(), strict=True):
        ax.scatter(d["u"], d["log_sigma"], s=2, alpha=0.25, label="draws")
        starts = d["u_divergence_starts"]
        low = np.min(d["log_sigma"])
        ax.plot(starts, np.full(starts.size, low), "|", color="red", markersize=14,
                label=f"where divergent trajectories left from ({starts.size})")  # fmt: skip
        ax.axvline(common.WALL_U, color="k", lw=0.8, ls="--")
        ax.set(
            xlabel=str(d["u_name"]),
            ylabel="log sigma",
            title=f"{example}: sampler seed 1, target_accept 0.9",
        )
        ax.legend(loc="upper right", fontsize=8)
    common.save_figure(fig, path)


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--refit", action="store_true", help="sample the fits in the JSON again")
    args = p.parse_args(argv)
    if args.quick:
        draws, chains, seeds = 60, 2, (1,)
    else:
        draws, chains, seeds = 1000, 4, (1, 2)
    target_accept, stem = 0.9, "example_mixing"
    settings = {"draws": draws, "tune": draws, "chains": chains}
    path = args.out / f"{stem}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    same = {k: old.get("settings", {}).get(k) for k in settings} == settings
    rows = old.get("fits", []) if same and not args.refit else []
    first_draws = {}
    args.cache.mkdir(parents=True, exist_ok=True)
    for example in EXAMPLES:
        model, priors = (
            mesh_model(args.quick) if example == "mesh"
            else images_model(args.quick, args.cache, args.jobs)
        )  # fmt: skip
        for seed in seeds:
            if any((r["example"], r["seed"]) == (example, seed) for r in rows):
                continue
            row, sampled = fit(model, priors, seed=seed, target_accept=target_accept,
                               draws=draws, chains=chains)  # fmt: skip
            rows.append({"example": example, **row})
            common.write_json(path, {"settings": settings, "fits": rows})
            if seed == seeds[0]:
                np.savez(args.cache / draws_file(stem, example, seeds[0]), **sampled)
            print(f"{example} seed {seed}: r-hat {row['r_hat_max']:.3f}, bulk ESS "
                  f"{row['ess_bulk_min']:.0f}, {row['divergences']} divergences")  # fmt: skip
        with np.load(args.cache / draws_file(stem, example, seeds[0])) as saved:
            first_draws[example] = {k: saved[k] for k in saved.files}
    figure(first_draws, args.out / f"{stem}.png")
    table = common.markdown_rows(
        ["example", "seed", "scales", "basins", "r̂ max", "of", "bulk ESS min", "tail ESS min",
         "divergences", "sigma: 5 % quantile, median", "divergences starting at u < -3",
         "... at u > 3", "draws with u < -3", "wall (s)"],
        [[r["example"], r["seed"], r["scales"], r["basins"], round(r["r_hat_max"], 3),
          r["r_hat_worst"], round(r["ess_bulk_min"]), round(r["ess_tail_min"]),
          int(r["divergences"]), f"{r['sigma_q05']:.3f}, {r['sigma_median']:.3f}",
          percent(r["divergence_starts_share_u_below_wall"], 0),
          percent(r["divergence_starts_share_u_above_3"], 0),
          percent(r["share_u_below_wall"], 1), round(r["wall_s"])]
         for r in sorted(rows, key=lambda r: (r["example"], r["seed"]))],
    )  # fmt: skip
    common.write_markdown(
        args.out / f"{stem}.md",
        "NUTS on the gallery's mesh and W2-image models with the library's defaults",
        [
            f"Generated by `python -m benchmarks.studies.example_mixing`: the README recipe, "
            f"sampled by `sample_basins` ({chains} chains x ({draws} tune + {draws} draws), "
            f"`target_accept` {target_accept}, one BLAS thread per chain, 2 cores; sampler seeds "
            f"{', '.join(map(str, seeds))}). The radius is sampled on its grid quantile scale "
            "`u`; `scales` says what `sle_priors` chose for each hyperparameter; r̂ and ESS are "
            "the worst over `priors.var_names(model)` (`of`: the variable of the largest r̂). "
            "What the script does: see its docstring.",
            "",
            *table,
            "",
            "![Draws in u and log sigma; red ticks: where divergent trajectories left from]"
            "(example_mixing.png)",
        ],
    )


if __name__ == "__main__":
    main()
