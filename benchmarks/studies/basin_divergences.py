"""Divergences basin by basin, and where they start, at target acceptance 0.9 and 0.95.

``sample_basins`` pools each radius basin's chains, thinned by the basins' masses, so the pooled
sample stats lose most divergent draws and every record of where a divergent trajectory left
from. This study samples each basin of chosen NUTS-benchmark splits on its own
(``sle.inference.basin_models``: the models ``sample_basins`` samples), exactly as the benchmark
does otherwise (its ``sle_model``, 4 chains x (1000 tune + 1000 draws), nutpie with its low-rank
mass matrix, one BLAS thread per chain, 2 cores; basin ``b`` with sampler seed ``seed + b``, as
``sample_basins`` seeds it), with nutpie's ``store_divergences=True``, at target acceptance 0.9
and 0.95 and for several sampler seeds.

Per basin, target acceptance and seed: the divergences, leapfrog steps per draw, wall time,
largest r-hat and smallest bulk ESS of the basin's chains, and for each divergent trajectory the
hyperparameters (``radius``, ``ls``, ``eta``, ``sigma``) where it left from, with their
quantiles among the fit's draws (a quantile of 0 or 1: farther out than any draw). The run
resumes: fits already in the JSON file are kept (a ``--quick`` run starts afresh over full fits,
and the other way round). Writes benchmarks/results/studies/basin_divergences.{json,md,png}.

Run:  python -m benchmarks.studies.basin_divergences [--quick] [--fits saxs:2 strings:2]
      [--seeds 1 2]
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from threadpoolctl import threadpool_limits

from benchmarks import nuts_convergence as nc
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    read_saved_fits,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.inference import basin_models
from pymc_sle.inference.basins import NUTPIE_DEFAULTS

#: The NUTS benchmark's splits sampled as several radius basins.
FITS = ("strings:2", "saxs:2")
QUICK_FITS = ("one_d:0",)
TARGET_ACCEPTS = (0.9, 0.95)
HYPERPARAMETERS = ("radius", "ls", "eta", "sigma")


def _starts(idata, model: pm.Model, priors) -> list[dict]:
    """Each divergent trajectory's start: the hyperparameters there, and their quantiles among
    the fit's draws."""
    stats = idata.sample_stats
    diverging = stats["diverging"].values.astype(bool)
    if not diverging.any():
        return []
    columns = list(stats["unconstrained_parameter"].values)
    values = {v.name: v for v in model.unobserved_value_vars}
    names = [priors[h].name for h in HYPERPARAMETERS]
    constrained = model.compile_fn([values[n] for n in names], inputs=model.value_vars,
                                   on_unused_input="ignore")  # fmt: skip
    out = []
    for start in stats["divergence_start"].values[diverging]:
        point = {v.name: start[columns.index(v.name)] for v in model.value_vars}  # all scalars
        here = constrained(point)
        out.append({
            h: {"value": float(x), "quantile": float(np.mean(idata.posterior[n].values < x))}
            for h, n, x in zip(HYPERPARAMETERS, names, here, strict=True)
        })  # fmt: skip
    return out


def _sample(name: str, split: int, seeds: list[int], quick: bool, args) -> list[dict]:
    """Every basin of one split, at each target acceptance and seed."""
    settings = nc.QUICK_NUTS if quick else nc.FULL_NUTS
    bench = nc.BENCHMARKS[name](quick, args)  # reads args.cache, args.mesh, args.bunny_mesh
    ctx = bench.contexts(split + 1)[split]
    model, _, priors, _ = nc.sle_model(bench, ctx, float(ctx.y_train.mean()))
    fits = []
    for b, (basin, confined) in enumerate(basin_models(priors, model=model)):
        for target_accept in TARGET_ACCEPTS:
            for seed in seeds:
                start = time.perf_counter()
                with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    idata = pm.sample(
                        draws=settings.draws, tune=settings.tune, chains=settings.chains,
                        cores=settings.cores, target_accept=target_accept, model=confined,
                        nuts_sampler="nutpie", random_seed=seed + b, progressbar=False,
                        compute_convergence_checks=False,
                        nuts_sampler_kwargs={**NUTPIE_DEFAULTS, "store_divergences": True},
                    )  # fmt: skip
                seconds = time.perf_counter() - start
                summary = az.summary(idata, var_names=priors.var_names(confined), round_to="none")
                fits.append({
                    "benchmark": name, "split": split, "basin": b,
                    "radius": None if basin is None else basin.radius,
                    "mass": 1.0 if basin is None else basin.mass,
                    "target_accept": target_accept, "seed": seed, "seconds": seconds,
                    "divergences": int(idata.sample_stats["diverging"].sum()),
                    "steps_per_draw": float(idata.sample_stats["n_steps"].mean()),
                    "r_hat_max": float(summary["r_hat"].max()),
                    "ess_bulk_min": float(summary["ess_bulk"].min()),
                    "starts": _starts(idata, confined, priors),
                })  # fmt: skip
                done = fits[-1]["divergences"]
                print(f"{name} split {split} basin {b} at {target_accept} seed {seed}: "
                      f"{done} divergences, {seconds:.0f} s", flush=True)  # fmt: skip
    return fits


def _where(fit: dict) -> str:
    """Where one fit's divergent trajectories left from: the hyperparameters beyond the 5-95 %
    range of the fit's draws, with their quantiles."""

    def one(start: dict) -> str:
        far = [f"{h} {s['value']:.3g} (q {s['quantile']:.3f})" for h, s in start.items()
               if not 0.05 <= s["quantile"] <= 0.95]  # fmt: skip
        return "; ".join(far) or "inside every 5-95 % range"

    return " / ".join(one(s) for s in fit["starts"]) or "-"


def _summary_rows(fits: list[dict]) -> list[list]:
    """Per split, basin and target acceptance: divergences per seed and mean steps per draw."""
    groups: dict[tuple, list[dict]] = {}
    for f in fits:
        groups.setdefault((f["benchmark"], f["split"], f["basin"], f["target_accept"]), []).append(
            f
        )
    rows = []
    for (name, split, b, target_accept), group in groups.items():
        group.sort(key=lambda f: f["seed"])
        rows.append([
            name, split, b, "-" if group[0]["radius"] is None else f"{group[0]['radius']:.3g}",
            f"{100 * group[0]['mass']:.1f}", target_accept,
            ", ".join(str(f["seed"]) for f in group),
            ", ".join(str(f["divergences"]) for f in group),
            float(np.mean([f["steps_per_draw"] for f in group])),
            max(f["r_hat_max"] for f in group), min(f["ess_bulk_min"] for f in group),
        ])  # fmt: skip
    return rows


def _figure(fits: list[dict], path) -> None:
    """Divergences summed over seeds, and leapfrog steps per draw, per basin and target
    acceptance."""
    plt = pyplot()
    basins = sorted({(f["benchmark"], f["split"], f["basin"]) for f in fits})
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    width = 0.8 / len(TARGET_ACCEPTS)
    for k, target_accept in enumerate(TARGET_ACCEPTS):
        at = [[f for f in fits if (f["benchmark"], f["split"], f["basin"]) == key
               and f["target_accept"] == target_accept] for key in basins]  # fmt: skip
        x = np.arange(len(basins)) + (k - (len(TARGET_ACCEPTS) - 1) / 2) * width
        axes[0].bar(x, [sum(f["divergences"] for f in g) for g in at], width,
                    label=f"target accept {target_accept}")  # fmt: skip
        axes[1].bar(x, [np.mean([f["steps_per_draw"] for f in g]) if g else 0 for g in at], width)
    labels = [f"{name} {split}\nbasin {b}" for name, split, b in basins]
    for ax, ylabel in zip(axes, ("divergences (sum over seeds)", "leapfrog steps per draw"),
                          strict=True):  # fmt: skip
        ax.set_xticks(np.arange(len(basins)), labels, fontsize=8)
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=8)
    save_figure(fig, path)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    nc.add_fit_arguments(p, "saxs:2")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2], help="sampler seeds")
    args = p.parse_args(argv)
    requested = nc.requested_fits(p, args.fits or (QUICK_FITS if args.quick else FITS))
    stem = "basin_divergences"
    path = args.out / f"{stem}.json"
    fits = read_saved_fits(path, args.quick)
    for name, split in requested:
        done = {f["seed"] for f in fits if (f["benchmark"], f["split"]) == (name, split)}
        seeds = [s for s in args.seeds if s not in done]
        if seeds:
            fits.extend(_sample(name, split, seeds, args.quick, args))
            write_json(path, {"quick": args.quick, "fits": fits})
    fits.sort(key=lambda f: (f["benchmark"], f["split"], f["basin"], f["target_accept"], f["seed"]))
    header = ["benchmark", "split", "basin", "radius", "mass (%)", "target accept", "seeds",
              "divergences per seed", "steps/draw (mean)", "r̂ max", "bulk ESS min"]  # fmt: skip
    starts = [[f["benchmark"], f["split"], f["basin"], f["target_accept"], f["seed"],
               f["divergences"], _where(f)] for f in fits if f["starts"]]  # fmt: skip
    where = ["benchmark", "split", "basin", "target accept", "seed", "div.", "where they left from"]
    lines = [
        "Generated by `python -m benchmarks.studies.basin_divergences`. What it does: see the "
        "script's docstring. Each basin's chains are sampled on their own, as `sample_basins` "
        "samples them, at each target acceptance and sampler seed.",
        "",
        *markdown_rows(header, _summary_rows(fits)),
        "",
        "## Where the divergent trajectories left from",
        "",
        "The hyperparameters outside the 5-95 % range of the fit's own draws, with their "
        "quantile among them (`/` separates trajectories).",
        "",
        *(markdown_rows(where, starts) if starts else ["None."]),
        "",
        f"![divergences and steps per basin]({stem}.png)",
    ]
    write_markdown(
        args.out / f"{stem}.md", "Divergences basin by basin: target acceptance 0.9 and 0.95", lines
    )
    _figure(fits, args.out / f"{stem}.png")


if __name__ == "__main__":
    main()
