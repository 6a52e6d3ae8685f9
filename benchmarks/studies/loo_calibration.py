"""Can a user see SLE's interval shortfall without a test set? Exact LOO coverage vs test PICP.

The NUTS benchmark (``benchmarks/nuts_convergence.py``) finds SLE's 95 % PICP below the
[0.92, 0.97] band on some Teddy and SAXS splits while its chains agree; a user has no test set
to find that out. ``pymc_sle.evaluation.loo.exact_loo`` gives each training observation's exact
leave-one-out predictive at every posterior draw, Pareto-smoothed over the draws: the share of
its LOO PIT values inside [0.025, 0.975] estimates the 95 % coverage from the training data
alone. This study fits the benchmark's models on its splits -- the README recipe (``sle_priors``,
``sample_basins``, nutpie) and the benchmark's baseline (PyMC's NUTS) -- with ``STUDY_NUTS``
(4 chains x (500 tune + 500 draws), half the benchmark's, enough for coverage) and reports, per
fit, the test PICP, the LOO coverage, their difference, the largest Pareto k, ``elpd_loo`` per
observation, the chains' r-hat and bulk ESS, and how long ``exact_loo`` took. If the LOO
coverage tracks the test PICP, a user can check calibration on their own data.

Fits are appended to ``loo_calibration.csv`` as they finish, and a rerun skips the fits it holds
(``--refit`` redoes them), so the study can run in pieces.
Writes benchmarks/results/studies/loo_calibration.{csv,json,md,png}.

``--quick``: the 1-D benchmark, one split, short chains.

Run:  python -m benchmarks.studies.loo_calibration [--quick] [--benchmarks one_d teddy_200 ...]
      [--only-splits N ...] [--mesh PATH] [--cache DIR] [--refit] [--summary-only]
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pymc as pm

from benchmarks import nuts_convergence
from benchmarks._paths import SHARED_DATA
from benchmarks.paper.models import build
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    read_fit_rows,
    run_resumable,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.evaluation.holdout import (
    HoldoutFit,
    NutsSettings,
    fit_and_score,
    holdout_predictive,
)
from pymc_sle.evaluation.loo import ExactLOO, exact_loo
from pymc_sle.evaluation.metrics import evaluate

STUDY_NUTS = NutsSettings(
    draws=500, tune=500, chains=4, cores=2, seed=1, predictive_draws=500, nuts_sampler="nutpie"
)
BENCHMARKS = ("one_d", "strings", "teddy_200", "saxs")
#: The models and their samplers, as the NUTS benchmark runs them: the baseline on PyMC's NUTS,
#: SLE on the settings' sampler (``None``): nutpie in a full run, PyMC's in ``--quick`` mode,
#: which spares the quick runs nutpie's numba compile of every model (about a minute each).
SAMPLERS = {"SLE": None, "baseline": "pymc"}
COLUMNS = ["benchmark", "split", "model", "spec", "test_picp", "loo_coverage", "pareto_k_max",
           "elpd_loo_per_point", "r_hat_max", "ess_bulk_min", "n_train", "draws",
           "loo_s"]  # fmt: skip


@dataclass(frozen=True)
class CheckedFit:
    """One model sampled on one split, scored on its test set and checked by exact LOO."""

    holdout: HoldoutFit
    loo: ExactLOO
    loo_seconds: float
    spec: str
    model: pm.Model
    gp: pm.gp.Marginal
    X_test: object
    y_test: np.ndarray  # as scored: less the model's offset
    settings: NutsSettings


def sample_and_check(bench, ctx, model_name: str, settings: NutsSettings) -> CheckedFit:
    """Sample ``model_name`` ("SLE": the README recipe with ``ctx``'s landmarks; "baseline": the
    NUTS benchmark's) on ``ctx``, score it on the test set and run :func:`exact_loo`."""
    y_test = bench.problem.y[bench.problem.test]
    if model_name == "SLE":
        offset = float(ctx.y_train.mean())
        model, gp, priors, _ = nuts_convergence.sle_model(bench, ctx, offset)
        spec = "SLE"
    else:
        offset, priors = 0.0, None
        model, gp, _ = build(bench.baseline, ctx)
        spec = bench.baseline.name
    run = replace(settings, nuts_sampler=SAMPLERS[model_name] or settings.nuts_sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        holdout = fit_and_score(model, gp, ctx.X_test, y_test - offset, run, priors=priors)
    start = time.perf_counter()
    loo = exact_loo(holdout.idata, gp, var_name="y", model=model)
    return CheckedFit(holdout, loo, time.perf_counter() - start, spec, model, gp, ctx.X_test,
                      y_test - offset, run)  # fmt: skip


def own_landmark_scores(checked: CheckedFit) -> tuple[dict, float]:
    """A checked fit's test scores with each test point predicted with its own landmark
    (``holdout_predictive(..., prediction="own_landmark")``, the NUTS benchmark's SLE
    prediction, from the same posterior) and the largest Pareto shape of its weights."""
    predictive, pareto_k = holdout_predictive(
        checked.holdout.idata, checked.gp, checked.X_test, checked.settings,
        model=checked.model, prediction="own_landmark",
    )  # fmt: skip
    return evaluate(predictive, checked.y_test, "y_test"), float(np.max(pareto_k))


#: Posterior draws (every k-th) that the LOO with own landmarks dropped reads: it factorises the
#: covariance once per observation and draw.
DROPPED_LOO_DRAWS = 200


def dropped_loo(checked: CheckedFit) -> tuple[ExactLOO, float]:
    """``exact_loo(..., own_landmark="drop")`` of a checked fit on every
    ``len/DROPPED_LOO_DRAWS``-th draw, and the seconds it took."""
    idata = checked.holdout.idata
    step = -(-idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"] // DROPPED_LOO_DRAWS)
    start = time.perf_counter()
    loo = exact_loo(idata.sel(draw=slice(None, None, step)), checked.gp, var_name="y",
                    model=checked.model, own_landmark="drop")  # fmt: skip
    return loo, time.perf_counter() - start


def fit_diagnostics(result: HoldoutFit) -> dict:
    """The CSV columns of a fit's convergence: r-hat, bulk and tail ESS, divergences."""
    return {k: result.diagnostics[k]
            for k in ("r_hat_max", "ess_bulk_min", "ess_tail_min", "divergences")}  # fmt: skip


def run_study(doc: str, argv, *, name: str, choices, default, columns: list[str], text: int,
              variant: str, variants, fit, report, summarise) -> None:  # fmt: skip
    """The main of a resumable study of the NUTS benchmark's fits (:func:`study_arguments`):
    ``fit(bench, ctx, value, settings)`` for every benchmark, split and value of ``variants``
    that ``<out>/<name>.csv`` does not hold (column ``variant``), then
    ``summarise(rows, out, settings)``; with ``--summary-only``, the summary alone."""
    args, settings, names, n_splits = study_arguments(doc, choices, default, argv)
    path = args.out / f"{name}.csv"
    if args.summary_only:
        rows = read_fit_rows(path, columns, text=text)
    else:
        rows = run_resumable(
            path, columns, text=text, variant=variant, refit=args.refit, report=report,
            jobs=benchmark_jobs(names, n_splits, variants, args),
            fit=lambda bench, ctx, value: fit(bench, ctx, value, settings),
        )  # fmt: skip
    summarise(rows, args.out, settings)


def study_arguments(doc: str, choices, default, argv):
    """The command line of a resumable study of the NUTS benchmark's fits: ``(args, settings,
    benchmark names, splits)``; ``--quick`` is the 1-D benchmark, one split, short chains."""
    p = parser(doc.splitlines()[0])
    p.add_argument("--mesh", default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--benchmarks", nargs="+", choices=choices, default=list(default))
    p.add_argument("--only-splits", nargs="+", type=int, choices=range(nuts_convergence.N_SPLITS),
                   help="fit these splits only (default: every split)")  # fmt: skip
    p.add_argument("--refit", action="store_true", help="redo the fits the CSV already holds")
    p.add_argument("--summary-only", action="store_true", help="rewrite the summary from the CSV")
    args = p.parse_args(argv)
    args.bunny_mesh = None  # the bunny is not studied
    settings = nuts_convergence.QUICK_NUTS if args.quick else STUDY_NUTS
    names, n_splits = (["one_d"], 1) if args.quick else (args.benchmarks, nuts_convergence.N_SPLITS)
    return args, settings, names, n_splits


def benchmark_jobs(names, n_splits: int, variants, args):
    """``(bench, ctx, variant)`` for every NUTS benchmark in ``names``, split (those of
    ``args.only_splits`` when given) and variant (the benchmarks built as ``nuts_convergence``
    builds them from ``args``)."""
    for name in names:
        bench = nuts_convergence.BENCHMARKS[name](args.quick, args)
        for ctx in bench.contexts(n_splits):
            if args.only_splits and ctx.trial.draw not in args.only_splits:
                continue
            for variant in variants:
                yield bench, ctx, variant


def fit(bench, ctx, model_name: str, settings: NutsSettings) -> dict:
    """One model on one split: one CSV row."""
    checked = sample_and_check(bench, ctx, model_name, settings)
    result, loo = checked.holdout, checked.loo
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "model": model_name,
        "spec": checked.spec, "test_picp": result.scores["picp"],
        "loo_coverage": loo.coverage(0.95), "pareto_k_max": float(np.max(loo.pareto_k)),
        "elpd_loo_per_point": float(np.mean(loo.elpd_loo)),
        "r_hat_max": result.diagnostics["r_hat_max"],
        "ess_bulk_min": result.diagnostics["ess_bulk_min"], "n_train": ctx.n_train,
        "draws": loo.log_likelihood.sizes["chain"] * loo.log_likelihood.sizes["draw"],
        "loo_s": checked.loo_seconds,
    }  # fmt: skip


def figure(rows: list[dict], path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 5.4))
    names = sorted({r["benchmark"] for r in rows})
    markers = dict(zip(names, "osD^v<>", strict=False))
    for model, colour in (("SLE", "tab:blue"), ("baseline", "tab:orange")):
        for name in names:
            chosen = [r for r in rows if r["model"] == model and r["benchmark"] == name]
            ax.scatter([r["loo_coverage"] for r in chosen], [r["test_picp"] for r in chosen],
                       c=colour, marker=markers[name], label=f"{model}, {name}")  # fmt: skip
    values = [v for r in rows for v in (r["loo_coverage"], r["test_picp"])]
    low, high = min([*values, 0.9]) - 0.01, max([*values, 0.98]) + 0.01
    ax.plot([low, high], [low, high], color="k", lw=0.8, label="LOO coverage = test PICP")
    ax.axhspan(0.92, 0.97, color="0.9", zorder=0, label="target band")
    ax.set(xlim=(low, high), ylim=(low, high), xlabel="exact LOO coverage of the 95 % intervals",
           ylabel="test PICP of the 95 % intervals")  # fmt: skip
    ax.legend(fontsize=7, loc="upper left")
    save_figure(fig, path)


def summarise(rows: list[dict], out, settings: NutsSettings) -> None:
    rows = sorted(rows, key=lambda r: (BENCHMARKS.index(r["benchmark"])
                                       if r["benchmark"] in BENCHMARKS else 99,
                                       r["model"] != "SLE", r["split"]))  # fmt: skip
    gaps = {
        model: np.array([r["test_picp"] - r["loo_coverage"] for r in rows if r["model"] == model])
        for model in SAMPLERS
    }
    below = {
        model: [(r["test_picp"] < 0.92, r["loo_coverage"] < 0.93) for r in rows
                if r["model"] == model]
        for model in SAMPLERS
    }  # fmt: skip
    stats = {
        model: {
            "fits": int(gap.size),
            "mean_gap": float(gap.mean()) if gap.size else None,
            "mean_abs_gap": float(np.abs(gap).mean()) if gap.size else None,
            "test_below_band": int(sum(t for t, _ in below[model])),
            "test_below_band_flagged": int(sum(t and f for t, f in below[model])),
            "flagged": int(sum(f for _, f in below[model])),
        }
        for model, gap in gaps.items()
    }
    write_json(out / "loo_calibration.json", {"settings": settings.__dict__, "rows": rows,
                                              "summary": stats})  # fmt: skip
    figure(rows, out / "loo_calibration.png")
    table = markdown_rows(
        ["benchmark", "model", "split", "test PICP", "LOO coverage", "test - LOO",
         "max Pareto k", "elpd_loo / point", "r̂ max", "min bulk ESS", "n", "draws",
         "exact_loo (s)"],
        [[r["benchmark"], r["spec"], r["split"], f"{r['test_picp']:.3f}",
          f"{r['loo_coverage']:.3f}", f"{r['test_picp'] - r['loo_coverage']:+.3f}",
          f"{r['pareto_k_max']:.2f}", f"{r['elpd_loo_per_point']:.3f}",
          f"{r['r_hat_max']:.3f}", f"{r['ess_bulk_min']:.0f}", int(r["n_train"]),
          int(r["draws"]), f"{r['loo_s']:.1f}"] for r in rows],
    )  # fmt: skip
    summary = markdown_rows(
        ["model", "fits", "mean test - LOO", "mean |test - LOO|", "test PICP < 0.92",
         "... of them with LOO coverage < 0.93", "LOO coverage < 0.93"],
        [[m, s["fits"], f"{s['mean_gap']:+.3f}" if s["fits"] else "-",
          f"{s['mean_abs_gap']:.3f}" if s["fits"] else "-", s["test_below_band"],
          s["test_below_band_flagged"], s["flagged"]] for m, s in stats.items()],
    )  # fmt: skip
    write_markdown(
        out / "loo_calibration.md",
        "Exact LOO coverage against test PICP",
        [
            "Generated by `python -m benchmarks.studies.loo_calibration`. NUTS "
            f"{settings.chains} chains x ({settings.tune} tune + {settings.draws} draws); SLE is "
            "the README recipe (nutpie), the baseline the NUTS benchmark's (PyMC). `LOO "
            "coverage`: the share of training observations whose exact LOO PIT "
            "(`pymc_sle.evaluation.loo.exact_loo`) lies in [0.025, 0.975], from the training "
            "data alone. What the script does: see its docstring.",
            "",
            *summary,
            "",
            "![LOO coverage against test PICP](loo_calibration.png)",
            "",
            *table,
        ],
    )


def main(argv=None) -> None:
    run_study(
        __doc__, argv, name="loo_calibration", choices=BENCHMARKS, default=BENCHMARKS,
        columns=COLUMNS, text=4, variant="model", variants=SAMPLERS, fit=fit,
        report=lambda r: f"{r['benchmark']} split {r['split']} {r['model']}: test PICP "
                         f"{r['test_picp']:.3f}, LOO {r['loo_coverage']:.3f}",
        summarise=summarise,
    )  # fmt: skip


if __name__ == "__main__":
    main()
