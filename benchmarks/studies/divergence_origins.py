"""Where the NUTS benchmark's divergences start, and whether every chain reaches the radius tails.

The NUTS benchmark (``benchmarks/nuts_convergence.py``) still reports a few divergences with the
library's defaults (``sle_priors``'s quantile-scale radius and mean-ridge ``ls``, sampled by
``sample_basins`` with nutpie's low-rank mass matrix). This study re-samples chosen splits of it
exactly as the benchmark does (its ``sle_model``, 4 chains x (1000 tune + 1000 draws), one BLAS
thread per chain, 2 cores, ``sample_basins``'s target acceptance -- 0.9 with one basin, 0.95 with
several since the committed fits ran, all at 0.9 -- the benchmark's sampler seed) with nutpie's
``store_divergences=True``, which records where each divergent trajectory left from in the
sampled (unconstrained) coordinates.

Per fit:

- the divergences and, for each, the radius's sampled coordinate ``u`` (its grid quantile
  scale: ``u`` is standard normal if the posterior's radius marginal equals the grid's) where
  the trajectory left from, and the share of them with ``|u| > 3``;
- each chain's share of draws with ``u`` above the standard normal's 99 % quantile (2.326) and
  below its 1 % quantile: about 1 % each when a chain visits the radius tails the grid posterior
  holds. A chain that never goes there has missed posterior mass its r-hat need not show;
- r-hat, bulk ESS and leapfrog steps per draw, as in the benchmark.

The committed fits (``benchmarks/results/studies/divergence_origins.json``) ran under the earlier
basin rule, ``benchmarks.nuts_convergence.PREVIOUS_BASIN_RULE``: SAXS split 0's radius shoulder was
then sampled by its main basin's chains; it is sampled apart now, and its benchmark fit had no
divergences. The ``basins`` column counts the radius basins ``sle_priors`` reports (down to 0.1 % of
the mass). Splits with several basins each holding at least 1 % are sampled on centred log scales
(no quantile scale): their ``u`` columns are empty. The run resumes: fits already in the JSON file
are kept (a ``--quick`` run starts afresh over full fits, and the other way round).
Writes benchmarks/results/studies/divergence_origins.{json,md,png}.

Run:  python -m benchmarks.studies.divergence_origins [--quick] [--fits saxs:0 strings:0 ...]
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from benchmarks import nuts_convergence as nc
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    radius_divergence_starts,
    read_saved_fits,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.inference import sample_basins

#: The splits of the NUTS benchmark with the most divergences under the current defaults.
FITS = ("saxs:0", "strings:0", "teddy_400:1", "teddy_200:2")
QUICK_FITS = ("one_d:0",)
#: The standard normal's 99 % quantile: each tail beyond it holds 1 % of a standard normal.
TAIL_U = float(stats.norm.ppf(0.99))


def _sample(name: str, split: int, quick: bool, args) -> dict:
    """One benchmark split sampled as the NUTS benchmark does, divergences stored."""
    settings = nc.QUICK_NUTS if quick else nc.FULL_NUTS
    bench = nc.BENCHMARKS[name](quick, args)  # reads args.cache, args.mesh, args.bunny_mesh
    ctx = bench.contexts(split + 1)[split]
    model, _, priors, _ = nc.sle_model(bench, ctx, float(ctx.y_train.mean()))
    start = time.perf_counter()
    with model, threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        idata = sample_basins(
            priors, draws=settings.draws, tune=settings.tune, chains=settings.chains,
            cores=settings.cores, target_accept=settings.target_accept, nuts_sampler="nutpie",
            random_seed=settings.seed, progressbar=False, compute_convergence_checks=False,
            nuts_sampler_kwargs={"store_divergences": True},
        )  # fmt: skip
    seconds = time.perf_counter() - start
    summary = az.summary(idata, var_names=priors.var_names(model), round_to="none")
    stats_ = idata.sample_stats
    fit = {
        "benchmark": name, "split": split, "n_train": ctx.n_train, "basins": len(priors.basins),
        "divergences": int(stats_["diverging"].sum()), "seconds": seconds,
        "steps_per_draw": float(stats_["n_steps"].mean()),
        "r_hat_max": float(summary["r_hat"].max()),
        "ess_bulk_min": float(summary["ess_bulk"].min()),
        "u_of_divergence_starts": None, "share_above": None, "share_below": None, "u": None,
    }  # fmt: skip
    starts = radius_divergence_starts(idata, model, priors)
    if starts is not None:  # the quantile scale; not when several basins are sampled
        u = idata.posterior[model.rvs_to_values[priors["radius"]].name].values  # (chain, draw)
        fit.update(
            u_of_divergence_starts=[float(v) for v in starts],
            share_above=[float(v) for v in (u > TAIL_U).mean(axis=1)],
            share_below=[float(v) for v in (u < -TAIL_U).mean(axis=1)],
            u=u.tolist(),
        )
    return fit


def _row(fit: dict) -> list:
    starts = fit["u_of_divergence_starts"]

    def shares(key):
        return "-" if fit[key] is None else ", ".join(f"{100 * v:.1f}" for v in fit[key])

    where = "-" if not starts else ", ".join(f"{v:.1f}" for v in sorted(starts))
    beyond = "-" if not starts else f"{np.mean(np.abs(starts) > 3):.2f}"
    return [fit["benchmark"], fit["split"], fit["basins"], fit["divergences"], where, beyond,
            shares("share_below"), shares("share_above"), fit["r_hat_max"],
            fit["ess_bulk_min"], fit["steps_per_draw"]]  # fmt: skip


def _figure(fits: list[dict], path) -> None:
    plt = pyplot()
    shown = [f for f in fits if f["u"] is not None]
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(4.2 * max(len(shown), 1), 3.4),
                             squeeze=False)  # fmt: skip
    grid = np.linspace(-4.5, 4.5, 200)
    for ax, fit in zip(axes[0], shown, strict=False):
        for c, chain in enumerate(np.asarray(fit["u"])):
            ax.hist(chain, bins=np.linspace(-4.5, 4.5, 46), density=True, histtype="step",
                    label=f"chain {c}")  # fmt: skip
        ax.plot(grid, stats.norm.pdf(grid), "k--", lw=1, label="N(0, 1)")
        starts = np.clip(fit["u_of_divergence_starts"], -4.5, 4.5)
        ax.plot(starts, np.full_like(starts, 2e-4), "rv", ms=7, label="divergence starts (clipped)")
        ax.set(title=f"{fit['benchmark']}, split {fit['split']}", xlabel="radius u",
               yscale="log", ylim=(1e-4, 1))  # fmt: skip
    axes[0][0].legend(fontsize=7)
    axes[0][0].set_ylabel("density of draws")
    save_figure(fig, path)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    nc.add_fit_arguments(p, "saxs:0")
    args = p.parse_args(argv)
    requested = nc.requested_fits(p, args.fits or (QUICK_FITS if args.quick else FITS))
    stem = "divergence_origins"
    path = args.out / f"{stem}.json"
    fits = read_saved_fits(path, args.quick)
    done = {(f["benchmark"], f["split"]) for f in fits}
    for name, split in requested:
        if (name, split) in done:
            continue
        fits.append(_sample(name, split, args.quick, args))
        write_json(path, {"quick": args.quick, "tail_u": TAIL_U, "fits": fits})
    header = ["benchmark", "split", "basins", "div.", "u where divergences started",
              "share with abs(u) > 3", "% of draws with u < -2.33, per chain",
              "% with u > 2.33, per chain", "r̂ max", "bulk ESS min", "steps/draw"]  # fmt: skip
    lines = [
        "Generated by `python -m benchmarks.studies.divergence_origins`. What it does: see the "
        "script's docstring. A chain following the grid posterior's radius marginal has about 1 % "
        "of its draws beyond each of u = -2.33 and u = 2.33.",
        "",
        *markdown_rows(header, [_row(f) for f in fits]),
        "",
        f"![radius u per chain and divergence starts]({stem}.png)",
    ]
    write_markdown(args.out / f"{stem}.md", "Where NUTS diverges on the SLE defaults", lines)
    _figure(fits, args.out / f"{stem}.png")


if __name__ == "__main__":
    main()
