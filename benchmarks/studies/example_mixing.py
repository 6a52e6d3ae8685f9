"""NUTS on the gallery's mesh and W2-image models: does the default mix, and where it diverges.

The models are ``examples/mesh_gp.py``'s and ``examples/images_w2.py``'s at their full sizes,
with the README recipe (``sle_priors`` with its default ``start="mode"``, sampled by
``sle.inference.sample_basins``):

- ``mesh``: a Matérn-5/2 field (length scale 15 % of the mesh, sd 1, noise 0.1, seed 1) on the
  642-vertex icosphere, 200 training vertices, geodesic distances, ``inner="matern52"``;
- ``images``: 150 simulated SAXS patterns (seed 7) binned 4 x 4, exact W2, 112 training images,
  ``inner="matern32"`` and a learnable constant mean.

The gallery pages run 2 chains x (500 + 500) once, too short to tell a regression from chance.
Here: 4 chains x (1000 tune + 1000 draws), one BLAS thread per chain, 2 cores, ``target_accept``
0.8 (PyMC's default, the examples' setting) and 0.9 (the benchmarks'), sampler seeds 1 and 2.

Per fit: largest r-hat and smallest bulk and tail ESS over ``priors.var_names(model)``,
divergences, wall time, and the radius's sampled coordinate ``u`` (its grid quantile scale)
at the draws of transitions that diverged: the share below ``u = -3`` (the small-radius
wall), against the share of all draws. The figure shows seed 1's draws at ``target_accept``
0.8 in the sampled coordinates, divergent ones in red.

Fits already in the JSON file are kept (the run resumes; seed 1's draws at 0.8 wait in the
distance cache for the figure). Writes
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
from benchmarks.studies.common import markdown_rows, parser, pyplot, write_json, write_markdown
from pymc_sle.datasets import coarsen, matern_field, saxs_images
from pymc_sle.distances import geodesic, wasserstein
from pymc_sle.evaluation.holdout import convergence

EXAMPLES = ("mesh", "images")
WALL_U = -3.0


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
        priors = sle.priors.sle_priors(D, train, y, inner="matern52")
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
        priors = sle.priors.sle_priors(W2, train, y, landmarks=train)
        cov = priors["eta"] ** 2 * sle.SLE(
            W2, landmarks=train, radius=priors["radius"], ls=priors["ls"], inner="matern32"
        )
        mean = pm.gp.mean.Constant(pm.Normal("mean", y.mean(), 2.0 * y.std()))
        gp = sle.gp.Marginal(mean_func=mean, cov_func=cov)
        gp.marginal_likelihood("y", X=train[:, None], y=y, sigma=priors["sigma"])
    return model, priors


def fit(model, priors, *, seed: int, target_accept: float, draws: int, chains: int):
    """One fit: its row of diagnostics and its draws in the sampled coordinates."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        begin = time.perf_counter()
        with threadpool_limits(limits=1, user_api="blas"):
            idata = sle.inference.sample_basins(
                priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=seed,
                target_accept=target_accept, progressbar=False, compute_convergence_checks=False,
            )  # fmt: skip
        wall = time.perf_counter() - begin
    _, worst = convergence(idata, priors.var_names(model))
    radius = idata.posterior["radius"].values.ravel()
    transform = model.rvs_to_transforms[priors["radius"]]
    ls_name = "ls_rel" if "ls_rel" in idata.posterior else "ls"  # what NUTS samples
    diverging = idata.sample_stats["diverging"].values.ravel()
    quantile = hasattr(transform, "to_unit")  # False when several basins use centred logs
    draws_out = {
        "u": transform.to_unit(radius) if quantile else np.log(radius),
        "u_name": "u (radius on the grid's quantile scale)" if quantile else "log radius",
        "log_ls": np.log(idata.posterior[ls_name].values.ravel()),
        "diverging": diverging,
        "ls_name": ls_name,
    }
    u = draws_out["u"]
    row = {
        "seed": seed, "target_accept": target_accept, "wall_s": wall, **worst,
        "sampled_radius_as": "quantile u" if quantile else "log radius",
        "share_u_below_wall": float(np.mean(u < WALL_U)) if quantile else None,
        "divergent_share_u_below_wall":
            float(np.mean(u[diverging] < WALL_U)) if quantile and diverging.any() else None,
    }  # fmt: skip
    return row, draws_out


def percent(share: float | None, digits: int) -> str:
    return "-" if share is None else f"{share:.{digits}%}"


def figure(draws: dict, path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(draws), figsize=(6.5 * len(draws), 4.6), squeeze=False)
    for ax, (example, d) in zip(axes[0], draws.items(), strict=True):
        ok = ~d["diverging"]
        ax.scatter(d["u"][ok], d["log_ls"][ok], s=2, alpha=0.25, label="draws")
        ax.scatter(d["u"][~ok], d["log_ls"][~ok], s=14, color="red",
                   label=f"transitions that diverged ({int((~ok).sum())})")  # fmt: skip
        ax.set(xlabel=str(d["u_name"]), ylabel=f"log {d['ls_name']}",
               title=f"{example}: sampler seed 1, target_accept 0.8")  # fmt: skip
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args(argv)
    if args.quick:
        draws, chains, seeds, accepts = 60, 2, (1,), (0.8,)
    else:
        draws, chains, seeds, accepts = 1000, 4, (1, 2), (0.8, 0.9)
    stem = "example_mixing"
    settings = {"draws": draws, "tune": draws, "chains": chains, "seeds": list(seeds),
                "target_accept": list(accepts)}  # fmt: skip
    path = args.out / f"{stem}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    rows = old.get("fits", []) if old.get("settings") == settings else []
    first_draws = {}
    args.cache.mkdir(parents=True, exist_ok=True)
    for example in EXAMPLES:
        model, priors = (
            mesh_model(args.quick) if example == "mesh"
            else images_model(args.quick, args.cache, args.jobs)
        )  # fmt: skip
        for target_accept in accepts:
            for seed in seeds:
                key = (example, seed, target_accept)
                if any((r["example"], r["seed"], r["target_accept"]) == key for r in rows):
                    continue
                row, sampled = fit(model, priors, seed=seed, target_accept=target_accept,
                                   draws=draws, chains=chains)  # fmt: skip
                rows.append({"example": example, **row})
                write_json(path, {"settings": settings, "fits": rows})
                if (seed, target_accept) == (seeds[0], accepts[0]):
                    np.savez(args.cache / f"{stem}_{example}_draws.npz", **sampled)
                print(f"{example} target_accept {target_accept} seed {seed}: r-hat "
                      f"{row['r_hat_max']:.3f}, bulk ESS {row['ess_bulk_min']:.0f}, "
                      f"{row['divergences']} divergences")  # fmt: skip
        with np.load(args.cache / f"{stem}_{example}_draws.npz") as saved:
            first_draws[example] = {k: saved[k] for k in saved.files}
    figure(first_draws, args.out / f"{stem}.png")
    table = markdown_rows(
        ["example", "target_accept", "seed", "radius sampled as", "r̂ max", "bulk ESS min",
         "tail ESS min", "divergences", "divergent draws with u < -3", "draws with u < -3",
         "wall (s)"],
        [[r["example"], r["target_accept"], r["seed"], r["sampled_radius_as"],
          round(r["r_hat_max"], 3), round(r["ess_bulk_min"]), round(r["ess_tail_min"]),
          int(r["divergences"]),
          percent(r["divergent_share_u_below_wall"], 0), percent(r["share_u_below_wall"], 1),
          round(r["wall_s"])]
         for r in rows],
    )  # fmt: skip
    write_markdown(
        args.out / f"{stem}.md",
        "NUTS on the gallery's mesh and W2-image models with the default sampled variables",
        [
            f"Generated by `python -m benchmarks.studies.example_mixing`. {chains} chains x "
            f"({draws} tune + {draws} draws), one BLAS thread per chain, 2 cores; sampler seeds "
            f"{', '.join(map(str, seeds))}. What the script does: see its docstring.",
            "",
            *table,
            "",
            "![Draws in the sampled coordinates, divergent ones in red](example_mixing.png)",
        ],
    )


if __name__ == "__main__":
    main()
