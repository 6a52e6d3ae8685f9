"""NUTS on the quick start's model: what the default's sampled variables change.

The model is ``examples/quickstart.py``'s, the README recipe: 40 training points of
``pymc_sle.datasets.one_dimensional(seed=1)``, ``sle_priors`` and
``eta**2 * SLE(D, radius=..., ls=..., inner="matern32")`` in ``sle.gp.Marginal``, sampled by
``sle.inference.sample_basins`` with its defaults (``target_accept`` 0.9), 4 chains x
(1000 tune + 1000 draws), one BLAS thread per chain, 2 cores. Two ways to hand the same model to
NUTS, each with sampler seeds 1, 2 and 3:

- ``start="prior"``: the first release. ``radius`` and ``ls`` are sampled on plain log scales,
  chains start at the prior medians, jittered.
- ``start="mode"`` (the default): the radius on the grid posterior's quantile scale ``u``, and
  ``ls`` as ``ls_rel``, its ratio to the grid's ridge at the current radius
  (``pymc_sle.inference._transforms``).

Per fit: largest r-hat and smallest bulk and tail ESS over ``radius``, ``ls``, ``eta`` and
``sigma`` (and ``ls_rel`` for the default), divergences and wall time. On seed 1's draws: the
correlation of ``log radius`` with ``log ls`` and, for the default, with ``log ls_rel``; and the
mean, standard deviation and Kolmogorov-Smirnov distance to N(0, 1) of ``u``. The figure shows
the draws in both coordinates.

Writes benchmarks/results/studies/quickstart_mixing.{json,md,png}.

Run:  python -m benchmarks.studies.quickstart_mixing [--quick]
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pymc as pm
from scipy import stats
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.datasets import one_dimensional
from pymc_sle.evaluation.holdout import convergence

STARTS = ("prior", "mode")


def fit(start: str, seed: int, draws: int, chains: int) -> dict:
    """The quick start's model with ``sle_priors(start=start)``, sampled once."""
    data = one_dimensional(n_train=40, n_test=100, seed=1)
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        priors = sle.priors.sle_priors(
            data.distances, data.train, data.y_train, landmarks=data.train, start=start
        )
        cov = priors["eta"] ** 2 * sle.SLE(
            data.distances, landmarks=data.train, radius=priors["radius"], ls=priors["ls"],
            inner="matern32",
        )  # fmt: skip
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=data.train[:, None], y=data.y_train, sigma=priors["sigma"])
        begin = time.perf_counter()
        with threadpool_limits(limits=1, user_api="blas"):
            idata = sle.inference.sample_basins(
                priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=seed,
                progressbar=False, compute_convergence_checks=False,
            )  # fmt: skip
        wall = time.perf_counter() - begin
    _, worst = convergence(idata, priors.var_names(model))
    posterior = idata.posterior
    log_radius = np.log(posterior["radius"].values.ravel())
    row = {
        "start": start, "seed": seed, "wall_s": wall, **worst,
        "corr_log_radius_log_ls": float(
            np.corrcoef(log_radius, np.log(posterior["ls"].values.ravel()))[0, 1]
        ),
    }  # fmt: skip
    draws_out = {"log_radius": log_radius, "log_ls": np.log(posterior["ls"].values.ravel())}
    if start == "mode":
        u = model.rvs_to_transforms[priors["radius"]].to_unit(posterior["radius"].values.ravel())
        log_ls_rel = np.log(posterior["ls_rel"].values.ravel())
        row.update({
            "corr_log_radius_log_ls_rel": float(np.corrcoef(log_radius, log_ls_rel)[0, 1]),
            "corr_u_log_ls_rel": float(np.corrcoef(u, log_ls_rel)[0, 1]),
            "u_mean": float(u.mean()), "u_sd": float(u.std()),
            "u_ks_to_normal": float(stats.kstest(u, "norm").statistic),
        })  # fmt: skip
        draws_out.update({"u": u, "log_ls_rel": log_ls_rel})
    return row, draws_out


def figure(draws: dict, path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    first, default = draws["prior"], draws["mode"]
    axes[0].scatter(first["log_radius"], first["log_ls"], s=2, alpha=0.3)
    axes[0].set(xlabel="log radius", ylabel="log ls",
                title="(a) first release: log radius, log ls")  # fmt: skip
    axes[1].scatter(default["log_radius"], default["log_ls"], s=2, alpha=0.3, color="tab:orange")
    axes[1].set(xlabel="log radius", ylabel="log ls",
                title="(b) default: the same posterior, seen as log radius, log ls")  # fmt: skip
    axes[2].scatter(default["u"], default["log_ls_rel"], s=2, alpha=0.3, color="tab:green")
    axes[2].set(xlabel="u (radius on the grid's quantile scale)", ylabel="log ls_rel",
                title="(c) default: what NUTS samples, u and log ls_rel")  # fmt: skip
    fig.suptitle("Quick start's hyperposterior, sampler seed 1: the curved radius-ls ridge (a, b) "
                 "is straight in the sampled variables (c)")  # fmt: skip
    save_figure(fig, path)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args(argv)
    draws, chains, seeds = (60, 2, (1,)) if args.quick else (1000, 4, (1, 2, 3))
    rows, first_draws = [], {}
    for start in STARTS:
        for seed in seeds:
            row, sampled = fit(start, seed, draws, chains)
            rows.append(row)
            first_draws.setdefault(start, sampled)
            print(f"start={start} seed {seed}: r-hat {row['r_hat_max']:.3f}, bulk ESS "
                  f"{row['ess_bulk_min']:.0f}, {row['divergences']} divergences")  # fmt: skip
    stem = "quickstart_mixing"
    settings = {"draws": draws, "tune": draws, "chains": chains, "seeds": list(seeds)}
    write_json(args.out / f"{stem}.json", {"settings": settings, "fits": rows})
    figure(first_draws, args.out / f"{stem}.png")
    table = markdown_rows(
        ["start", "seed", "r̂ max", "bulk ESS min", "tail ESS min", "divergences", "wall (s)",
         "corr(log r, log ls)", "corr(log r, log ls_rel)"],
        [[r["start"], r["seed"], round(r["r_hat_max"], 3), round(r["ess_bulk_min"]),
          round(r["ess_tail_min"]), int(r["divergences"]), round(r["wall_s"]),
          round(r["corr_log_radius_log_ls"], 2),
          round(r["corr_log_radius_log_ls_rel"], 2) if "corr_log_radius_log_ls_rel" in r else "-"]
         for r in rows],
    )  # fmt: skip
    mode = next(r for r in rows if r["start"] == "mode")
    write_markdown(
        args.out / f"{stem}.md",
        "NUTS on the quick start's model: the first release's sampled variables and the default's",
        [
            f"Generated by `python -m benchmarks.studies.quickstart_mixing`. {chains} chains x "
            f"({draws} tune + {draws} draws), `sample_basins`'s defaults (`target_accept` 0.9), "
            "one BLAS thread per chain, 2 cores; sampler seeds "
            f"{', '.join(map(str, seeds))}. What the script does: see its docstring.",
            "",
            *table,
            "",
            f"On seed {seeds[0]}'s draws of the default, the radius's sampled coordinate u has "
            f"mean {mode['u_mean']:.2f}, standard deviation {mode['u_sd']:.2f} and a "
            f"Kolmogorov-Smirnov distance of {mode['u_ks_to_normal']:.3f} to N(0, 1); "
            f"corr(u, log ls_rel) = {mode['corr_u_log_ls_rel']:.2f}.",
            "",
            f"![Draws in log radius and log ls, and in u and log ls_rel]({stem}.png)",
        ],
    )


if __name__ == "__main__":
    main()
