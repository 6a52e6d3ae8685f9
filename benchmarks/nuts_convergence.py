"""NUTS on the library's recommended SLE model: convergence, speed and calibration per benchmark.

The model is the README recipe with the library's defaults, nothing tuned per benchmark
(:func:`benchmarks.nuts_data.sle_model`: ``sle_priors(D, train, y, inner=...)``,
``eta**2 * SLE(...)``, ``sle.gp.Marginal``, zero mean on the centred targets), sampled by
``sle.sample_basins(priors)`` with nutpie (its low-rank mass matrix, the default
``sample_basins`` gives it; ``--samplers pymc`` for PyMC's NUTS): 4 chains x (1000 tune + 1000
draws) per basin, one BLAS thread per chain, 2 cores. The best baseline of each benchmark (the
paper reproduction's model and priors) is sampled by PyMC's NUTS on the same splits. SLE fits
predict the benchmark's fixed test set as the README does (each test point with its own
landmark, ``own_landmark_predictive``), the baselines by ``gp.conditional``'s marginals. The
benchmarks and their splits: :mod:`benchmarks.nuts_data`.

Per fit (one row of the CSV): wall time of the start search (``setup_s``), of sampling with
compilation (``sampling_s``) and of prediction and scoring (``predict_s``), leapfrog steps per
draw, the milliseconds of one log density and gradient (``grad_ms``, after sampling, in the
sampler's backend), largest r-hat and smallest bulk and tail ESS with their variables,
divergences and, for the SLE, where they started on the radius's quantile coordinate ``u``,
RMSE, CRPS, PICP (95 %), NLPD, the number of radius basins sampled, the radius cap's truncated
mass and the scale ``sle_priors`` chose for each hyperparameter (``scales``). The columns
``sampled_as``, ``mass_matrix``, ``basin_rule`` and ``prediction`` name the default a fit ran
under: a fit of an earlier default is run again, and its row replaced, so the CSV holds the
current default only (earlier rows: git history and ``results/CHANGELOG.md``).

The run resumes: every finished fit is written to the CSV at once, and fits already there are
skipped (``--benchmarks``, ``--samplers``, ``--models``, ``--only-splits`` run it in pieces;
``--refit`` reruns the selected fits).

Writes benchmarks/results/nuts_convergence.{csv,json,md,png}.

Run:  python -m benchmarks.nuts_convergence [--quick] [--benchmarks one_d teddy_200 ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import textwrap
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from threadpoolctl import threadpool_limits

from benchmarks._nuts_summary import PICP_RANGE, R_HAT_MAX, aggregate, targets
from benchmarks.nuts_data import BENCHMARKS, N_SPLITS, Benchmark, add_data_arguments, sle_model
from benchmarks.paper.models import build
from benchmarks.paper.problem import Context
from benchmarks.studies.common import WALL_U, radius_divergence_starts
from pymc_sle.evaluation import NutsSettings, fit_and_score
from pymc_sle.inference import DEFAULT_POLICY
from pymc_sle.inference._sampler import NUTPIE_DEFAULTS

SAMPLERS = ("pymc", "nutpie")
FULL_NUTS = NutsSettings(draws=1000, tune=1000, chains=4, cores=2, seed=1, predictive_draws=500)
QUICK_NUTS = NutsSettings(draws=60, tune=60, chains=2, cores=1, seed=1, predictive_draws=40)
FIELDS = [
    "benchmark", "split", "model", "spec", "sampler", "n_train", "setup_s", "sampling_s", "wall_s",
    "r_hat_max", "ess_bulk_min", "ess_tail_min", "min_ess_per_s", "divergences",
    "rmse", "crps", "picp", "nlpd", "multimodal_warning", "basins", "sampled_as", "predict_s",
    "steps_per_draw", "mass_matrix", "basin_rule", "divergences_recorded", "wall_divergences",
    "grad_ms", "divergence_u", "r_hat_var", "ess_bulk_var", "truncated_mass", "scales",
    "prediction", "pareto_k_max", "target_accept",
]  # fmt: skip
#: How ``sle_priors`` hands the SLE hyperparameters to NUTS (``SLEPriors.scales`` per fit).
SAMPLED_AS = (
    "capped home-basin quantile radius, mean-ridge ls, floored-ridge eta, sigma; "
    "quantile noise where it reaches zero; zoomed radius map where the grid is coarse"
)
#: The mass matrix each sampler adapts under ``sample_basins`` (the baselines: PyMC's diagonal).
MASS_MATRIX = {
    "pymc": "diagonal",
    "nutpie": "low-rank" if NUTPIE_DEFAULTS.get("low_rank_modified_mass_matrix") else "diagonal",
}
#: Which radius basins ``sample_basins`` samples apart (``DEFAULT_POLICY``).
BASIN_RULE = (
    f"dips > {DEFAULT_POLICY.basin_barrier:g} nats (> {DEFAULT_POLICY.shoulder_barrier:g} for "
    f"basins < {100 * DEFAULT_POLICY.shoulder_mass:g} %), mass >= "
    f"{100 * DEFAULT_POLICY.min_basin_mass:g} %; weighed on "
    f"{DEFAULT_POLICY.weighing_scales} scale cells over their mass"
)
#: How each fit predicts its test set, and ``fit_and_score``'s name for it.
PREDICTION = {"SLE": ("own landmark", "own_landmark"), "baseline": ("conditional", "conditional")}
#: The columns that say which default a fit ran under, beside (benchmark, split, model, sampler).
IDENTITY = ("sampled_as", "mass_matrix", "basin_rule", "prediction")
#: The CSV's columns that are not numbers.
TEXT_FIELDS = ("benchmark", "model", "spec", "sampler", "multimodal_warning", "divergence_u",
               "r_hat_var", "ess_bulk_var", "scales", *IDENTITY)  # fmt: skip


def _identity(model_name: str, sampler: str) -> tuple[str, str, str, str]:
    """The current default's ``IDENTITY`` columns for a model and sampler."""
    if model_name != "SLE":
        return "", "diagonal", "", PREDICTION[model_name][0]
    return SAMPLED_AS, MASS_MATRIX[sampler], BASIN_RULE, PREDICTION[model_name][0]


def is_current(row: dict) -> bool:
    """A fit of the current default: its sampled variables, mass matrix, basin rule and
    prediction."""
    return tuple(row[k] for k in IDENTITY) == _identity(row["model"], row["sampler"])


def fit(
    bench: Benchmark,
    ctx: Context,
    model_name: str,
    settings: NutsSettings,
) -> dict:
    """Build and sample one model on one split; one CSV row."""
    start = time.perf_counter()
    y_test = bench.problem.y[bench.problem.test]
    if model_name == "SLE":
        offset = float(ctx.y_train.mean())
        model, gp, priors, warning = sle_model(bench, ctx, offset)
    else:
        offset, warning, priors = 0.0, "", None
        model, gp, _ = build(bench.baseline, ctx)
    setup = time.perf_counter() - start
    sampled = [*model.free_RVs, *model.observed_RVs]  # before the prediction adds its own
    if model_name == "SLE":
        settings = replace(settings, divergence_records=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        result = fit_and_score(model, gp, ctx.X_test, y_test - offset, settings, priors=priors,
                               prediction=PREDICTION[model_name][1])  # fmt: skip
    wall = setup + result.seconds
    starts = None if priors is None else radius_divergence_starts(result.idata, model, priors)
    d = result.diagnostics
    stats = result.idata.sample_stats  # leapfrog steps = gradient evaluations
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else float("nan")
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "model": model_name,
        "spec": "SLE" if model_name == "SLE" else bench.baseline.name,
        "sampler": settings.nuts_sampler, "n_train": ctx.n_train, "setup_s": setup,
        "sampling_s": result.sampling_seconds, "wall_s": wall, **d,
        "min_ess_per_s": d["ess_bulk_min"] / wall, **result.scores,
        "multimodal_warning": warning, "predict_s": result.seconds - result.sampling_seconds,
        "steps_per_draw": steps,
        "divergences_recorded": float("nan") if starts is None else starts.size,
        "wall_divergences": float("nan") if starts is None else int(np.sum(starts < WALL_U)),
        "divergence_u": "" if starts is None else ";".join(f"{u:.2f}" for u in starts),
        "grad_ms": gradient_ms(model, sampled, settings.nuts_sampler),
        "truncated_mass": 0.0 if priors is None else priors.truncated_mass,
        "scales": "" if priors is None else scales_label(priors),
        "pareto_k_max": float("nan") if result.pareto_k is None else float(result.pareto_k.max()),
        "target_accept": result.idata.posterior.attrs["target_accept"],
        **dict(zip(IDENTITY, _identity(model_name, settings.nuts_sampler), strict=True)),
    }  # fmt: skip


def scales_label(priors) -> str:
    """``SLEPriors.scales`` as one CSV cell: what ``sle_priors`` decided for this fit."""
    return "; ".join(f"{name}: {scale}" for name, scale in priors.scales.items())


def gradient_ms(model: pm.Model, rvs, sampler: str, seconds: float = 0.5) -> float:
    """Milliseconds per evaluation of the log density of ``rvs`` (the sampled and observed
    variables) and its gradient, at the model's initial point, one BLAS thread, compiled for the
    sampler's backend (nutpie: NUMBA; PyMC: the C backend): what one leapfrog step costs.
    Measured after sampling, outside the fit's wall time."""
    values = [model.rvs_to_values[rv] for rv in rvs if rv in model.free_RVs]
    logp = model.logp(vars=list(rvs))
    function = pm.compile(
        values, [logp, *pt.grad(logp, values)], mode="NUMBA" if sampler == "nutpie" else None
    )
    point = model.initial_point()
    inputs = [point[v.name] for v in values]
    with threadpool_limits(limits=1, user_api="blas"):
        function(*inputs)
        calls, begin = 0, time.perf_counter()
        while calls < 3 or time.perf_counter() - begin < seconds:
            function(*inputs)
            calls += 1
    return 1000.0 * (time.perf_counter() - begin) / calls


def _fit_key(row: dict) -> tuple:
    """Which fit a row is: benchmark, split, model and sampler (one row each in the CSV)."""
    return row["benchmark"], int(row["split"]), row["model"], row["sampler"]


def read_rows(path: Path, numbers: bool = True) -> list[dict]:
    """The CSV's rows (none if absent), with the numeric columns as floats unless ``numbers``
    is false."""
    if not path.exists():
        return []
    with path.open() as f:
        rows = list(csv.DictReader(f))
    for r in rows if numbers else ():
        for k in FIELDS:
            if k not in TEXT_FIELDS:
                r[k] = float(r[k])
    return rows


def write_row(path: Path, row: dict) -> None:
    """Write one fit, replacing the CSV's row of the same fit (of an earlier default, or
    refitted)."""
    rows = [r for r in read_rows(path, numbers=False) if _fit_key(r) != _fit_key(row)]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows([*rows, {k: row[k] for k in FIELDS}])


def run(args, settings: NutsSettings, csv_path: Path) -> None:
    done = set() if args.refit else {_fit_key(r) for r in read_rows(csv_path) if is_current(r)}
    for name in args.benchmarks:
        todo = [
            (split, model, sampler)
            for split in (args.only_splits or range(args.splits))
            for model in args.models
            for sampler in (args.samplers if model == "SLE" else ("pymc",))
            if (name, split, model, sampler) not in done
        ]
        if not todo:
            continue
        bench = BENCHMARKS[name](args.quick, args)
        contexts = bench.contexts(args.splits)
        for split, model, sampler in todo:
            row = fit(bench, contexts[split], model, replace(settings, nuts_sampler=sampler))
            write_row(csv_path, row)
            print(f"{name} split {split} {model} {sampler}: r-hat {row['r_hat_max']:.3f}, "
                  f"ESS {row['ess_bulk_min']:.0f}, PICP {row['picp']:.3f}, "
                  f"{row['wall_s']:.0f} s", flush=True)  # fmt: skip


def figure(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # long model names on two lines, so neighbouring tick labels do not overlap
    labels = [f"{s['benchmark']}\n{textwrap.fill(s['spec'], 12)}\n{s['sampler']}" for s in summary]
    colours = ["tab:blue" if s["model"] == "SLE" else "tab:grey" for s in summary]
    x = np.arange(len(summary))
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 0.8 * len(summary)), 7.0), sharex=True)
    axes[0].bar(x, [s["r_hat_max"] - 1.0 for s in summary], color=colours)
    axes[0].axhline(R_HAT_MAX - 1.0, color="k", ls="--", lw=1, label="target r-hat 1.01")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("largest r-hat - 1 (worst split)")
    axes[0].legend(loc="upper right")
    lo = [s["picp"] - s["picp_range"][0] for s in summary]
    hi = [s["picp_range"][1] - s["picp"] for s in summary]
    axes[1].errorbar(x, [s["picp"] for s in summary], yerr=[lo, hi], fmt="none", ecolor="k")
    axes[1].scatter(x, [s["picp"] for s in summary], c=colours, zorder=3)
    axes[1].axhspan(*PICP_RANGE, color="tab:green", alpha=0.15, label="target [0.92, 0.97]")
    axes[1].axhline(0.95, color="tab:green", lw=1, label="nominal 0.95")
    axes[1].set_ylabel("95 % PICP (mean; bars: range over splits)")
    axes[1].legend(loc="lower left")  # the low PICPs are on the right
    axes[1].set_xticks(x, labels, fontsize=8)
    fig.suptitle("NUTS on the library's SLE defaults (blue) and the best baseline (grey)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def summarise(csv_path: Path, out: Path, stem: str, settings: NutsSettings, n_splits: int) -> dict:
    rows = [r for r in read_rows(csv_path) if is_current(r)]
    summary = aggregate(rows)
    checks = targets(summary, n_splits, settings)
    payload = {"settings": settings.__dict__, "splits": n_splits, "summary": summary,
               "targets": checks}  # fmt: skip
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    figure(summary, out / f"{stem}.png")
    table = _table(
        ["benchmark", "model", "sampler", "mass matrix", "splits", "r̂ max", "bulk ESS min",
         "tail ESS min", "div.", "wall (s, median)", "min-ESS/s", "RMSE", "CRPS", "PICP", "NLPD",
         "multi-basin"],
        [[s["benchmark"], s["spec"], s["sampler"], s["mass_matrix"], s["splits"],
          f"{s['r_hat_max']:.3f}", f"{s['ess_bulk_min']:.0f}", f"{s['ess_tail_min']:.0f}",
          s["divergences"], f"{s['wall_s']:.0f}", f"{s['min_ess_per_s']:.2f}",
          f"{s['rmse']:.4g}", f"{s['crps']:.4g}", f"{s['picp']:.3f}", f"{s['nlpd']:.3f}",
          s["warned"]] for s in summary],
    )  # fmt: skip
    order = list(BENCHMARKS)
    rows.sort(key=lambda r: (order.index(r["benchmark"]), r["model"] != "SLE", r["split"]))
    per_fit = _table(
        ["benchmark", "split", "model", "sampler", "basins", "target accept", "r̂ max",
         "bulk ESS", "div.", "u where they started", "wall (s)", "sampling (s)",
         "prediction (s)", "steps/draw", "ms per gradient", "max Pareto k", "PICP", "RMSE"],
        [[r["benchmark"], int(r["split"]), r["spec"], r["sampler"], int(r["basins"]),
          f"{r['target_accept']:g}", f"{r['r_hat_max']:.3f}", f"{r['ess_bulk_min']:.0f}",
          int(r["divergences"]), r["divergence_u"].replace(";", ", ") or "-",
          f"{r['wall_s']:.0f}", f"{r['sampling_s']:.0f}", f"{r['predict_s']:.0f}",
          _cell(r["steps_per_draw"], ".1f"), _cell(r["grad_ms"], ".1f"),
          _cell(r["pareto_k_max"], ".2f"), f"{r['picp']:.3f}", f"{r['rmse']:.4g}"]
         for r in rows],
    )  # fmt: skip
    decisions = _table(
        ["benchmark", "split", *(f"`{n}` sampled on" for n in ("radius", "ls", "eta", "sigma"))],
        [[r["benchmark"], int(r["split"]), *(p.split(": ")[1] for p in r["scales"].split("; "))]
         for r in rows if r["model"] == "SLE"],
    )  # fmt: skip
    target_table = _table(
        ["SLE fits", "target", "measured", "status", "the baseline under NUTS (splits run)",
         "reason (when missed)"],
        [[c["where"], c["target"], c["value"], c["status"], c["baseline"], c["reason"]]
         for c in checks],
    )  # fmt: skip
    lines = [
        "# NUTS on the library's SLE defaults: convergence and calibration",
        "",
        f"Generated by `python -m benchmarks.nuts_convergence`: the README recipe on each "
        f"benchmark's {n_splits} training splits, sampled by `sample_basins` "
        f"({settings.chains} chains x ({settings.tune} tune + {settings.draws} draws) per radius "
        f"basin, {settings.cores} cores, one BLAS thread per chain; `target accept` 0.9 with one "
        "basin, 0.95 with several), against the benchmark's best baseline from the paper "
        "reproduction under PyMC's NUTS. Diagnostics are the worst over splits (over the basins' "
        "own chains where several were sampled: `multi-basin`), scores the means (PICP also its "
        "range); SLE predicts each test point with its own landmark "
        f"(`own_landmark_predictive`, {settings.own_landmark_draws} posterior draws), the "
        "baselines by `gp.conditional`. What the script does: see its docstring.",
        "",
        "## Targets",
        "",
        *target_table,
        "",
        "A split's PICP is one draw: its test values share one field, so their misses are "
        "correlated ([how often the generating model itself meets the band on the Teddy "
        "splits](studies/picp_spread.md)).",
        "",
        "## Per benchmark",
        "",
        *table,
        "",
        f"![r-hat and PICP per benchmark]({stem}.png)",
        "",
        "## What `sle_priors` decided per split",
        "",
        "`SLEPriors.scales`: `capped quantile` is the radius's quantile scale with its cap "
        "(`, zoomed`: its map from one more grid pass over the start's basin), `centred log` a "
        "log scale centred at the grid's mode (several basins), `ridge` / `floored ridge` a "
        "ratio to the grid's ridge given the radius, and `quantile` after it the noise's "
        "quantile scale (the noise reaches zero).",
        "",
        *decisions,
        "",
        "## Every fit",
        "",
        *per_fit,
        "",
    ]
    (out / f"{stem}.md").write_text("\n".join(lines))
    return payload


def _cell(value: float, spec: str) -> str:
    return "-" if np.isnan(value) else format(value, spec)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and chains: a smoke run")
    add_data_arguments(p, list(BENCHMARKS))
    p.add_argument("--samplers", nargs="+", choices=SAMPLERS, default=["nutpie"],
                   help="samplers of the SLE fits (the baselines': PyMC)")  # fmt: skip
    p.add_argument("--models", nargs="+", choices=("SLE", "baseline"), default=["SLE", "baseline"])
    p.add_argument("--splits", type=int, default=None, help=f"splits per benchmark ({N_SPLITS})")
    p.add_argument(
        "--only-splits",
        nargs="+",
        type=int,
        default=None,
        help="run only these splits (e.g. 2), to do a benchmark in pieces",
    )
    p.add_argument("--summary-only", action="store_true", help="rewrite the summary from the CSV")
    p.add_argument(
        "--refit",
        action="store_true",
        help="refit the selected fits even if they are in the CSV, replacing their rows",
    )
    args = p.parse_args(argv)
    settings = QUICK_NUTS if args.quick else FULL_NUTS
    args.splits = args.splits or (1 if args.quick else N_SPLITS)
    outside = sorted(set(args.only_splits or ()) - set(range(args.splits)))
    if outside:
        p.error(f"--only-splits must be in [0, {args.splits}), but got {outside}")
    stem = "nuts_convergence_quick" if args.quick else "nuts_convergence"
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / f"{stem}.csv"
    if not args.summary_only:
        run(args, settings, csv_path)
    summarise(csv_path, args.out, stem, settings, args.splits)


if __name__ == "__main__":
    main()
