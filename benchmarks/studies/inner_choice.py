"""Which inner kernel? SLE's intervals under NUTS per inner kernel, and what exact LOO would choose.

SLE applies a stationary kernel (the *inner* kernel) to the distance between embeddings; the
NUTS benchmark uses the paper's per benchmark (Matern-5/2 on Teddy, Matern-3/2 elsewhere), and
its 95 % PICP falls below the [0.92, 0.97] band on some Teddy and SAXS splits. A plug-in check
(``calibration_candidates``) found a rougher inner kernel, Matern-1/2, widening the intervals
there. Which inner kernel fits is a modelling choice a user makes from the training data alone;
the usual Bayesian answer is the expected log predictive density of new points, estimated by
exact LOO. This study refits the README recipe (``sle_priors(..., inner=...)``,
``sample_basins``, nutpie; ``STUDY_NUTS``: 4 chains x (500 tune + 500 draws)) on the NUTS
benchmark's splits with each inner kernel of ``INNERS`` and records, per fit, the test PICP,
RMSE, NLPD and CRPS of both predictions from the same posterior -- ``gp.conditional``'s
marginals (columns without prefix) and each test point with its own landmark (``own_``: the NUTS
benchmark's SLE prediction, ``holdout_predictive(..., prediction="own_landmark")`` on 100 draws;
with the largest Pareto shape of its weights and the seconds it took) -- and the exact LOO with
each held-out point's own landmark dropped (``exact_loo(..., own_landmark="drop")`` on every
``len/DROPPED_LOO_DRAWS``-th draw, as in ``landmark_choice``): its mean ``elpd_loo`` per point,
coverage and largest Pareto k; with the posterior median radius and length scale, r-hat, bulk
and tail ESS, divergences and wall time (sampling and the conditional's test prediction; the LOO
and the own-landmark prediction apart). The summary names, per split, the inner kernel whose
dropped LOO ``elpd_loo`` is highest -- the one a user following the how-to would pick -- and its
test scores beside the benchmark's own inner kernel's.

Fits are appended to ``inner_choice.csv`` as they finish; a rerun skips those it holds
(``--refit`` redoes them). Writes benchmarks/results/studies/inner_choice.{csv,json,md,png}.

``--quick``: the 1-D benchmark, one split, short chains.

Run:  python -m benchmarks.studies.inner_choice [--quick] [--benchmarks saxs teddy_200 ...]
      [--only-splits N ...] [--mesh PATH] [--cache DIR] [--refit] [--summary-only]
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from benchmarks.studies.common import (
    markdown_rows,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from benchmarks.studies.loo_calibration import (
    DROPPED_LOO_DRAWS,
    dropped_loo,
    fit_diagnostics,
    own_landmark_scores,
    run_study,
    sample_and_check,
)

BENCHMARKS = ("saxs", "teddy_200", "one_d", "strings", "teddy_400")
DEFAULT_BENCHMARKS = ("saxs", "teddy_200")
INNERS = ("matern12", "matern32", "matern52")
COLUMNS = ["benchmark", "split", "inner", "default_inner", "n_train", "test_picp", "rmse",
           "nlpd", "crps", "own_picp", "own_rmse", "own_nlpd", "own_crps", "own_pareto_k_max",
           "own_s", "loo_elpd_dropped", "loo_coverage_dropped", "pareto_k_max_dropped",
           "dropped_loo_s", "radius_median", "ls_median", "r_hat_max", "ess_bulk_min",
           "ess_tail_min", "divergences", "wall_s"]  # fmt: skip
TEXT_COLUMNS = 4


def fit(bench, ctx, inner: str, settings) -> dict:
    """The README recipe with the inner kernel ``inner`` on one split: one CSV row."""
    start = time.perf_counter()
    checked = sample_and_check(replace(bench, inner=inner), ctx, "SLE", settings)
    wall = time.perf_counter() - start - checked.loo_seconds
    result = checked.holdout
    posterior = result.idata.posterior
    dropped, dropped_seconds = dropped_loo(checked)
    start = time.perf_counter()
    own, own_pareto_k = own_landmark_scores(checked)
    own_seconds = time.perf_counter() - start
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "inner": inner,
        "default_inner": bench.inner, "n_train": ctx.n_train,
        "test_picp": result.scores["picp"], "rmse": result.scores["rmse"],
        "nlpd": result.scores["nlpd"], "crps": result.scores["crps"],
        **{f"own_{k}": own[k] for k in ("picp", "rmse", "nlpd", "crps")},
        "own_pareto_k_max": own_pareto_k, "own_s": own_seconds,
        "loo_elpd_dropped": float(np.mean(dropped.elpd_loo)),
        "loo_coverage_dropped": dropped.coverage(0.95),
        "pareto_k_max_dropped": float(np.max(dropped.pareto_k)),
        "dropped_loo_s": dropped_seconds,
        "radius_median": float(posterior["radius"].median()),
        "ls_median": float(posterior["ls"].median()),
        **fit_diagnostics(result), "wall_s": wall,
    }  # fmt: skip


def _order(row: dict) -> tuple:
    return BENCHMARKS.index(row["benchmark"]), row["split"], INNERS.index(row["inner"])


def loo_choices(rows: list[dict]) -> list[dict]:
    """Per benchmark and split holding every inner kernel of ``INNERS``: the fit whose dropped
    LOO ``elpd_loo`` is highest (``"chosen"``), the benchmark's own inner kernel's fit
    (``"default"``) and the fits with the best test NLPD of each prediction (``"best_nlpd"``:
    ``gp.conditional``'s, ``"best_own_nlpd"``: with the own landmark)."""
    out = []
    for key in dict.fromkeys((r["benchmark"], r["split"]) for r in sorted(rows, key=_order)):
        fits = [r for r in rows if (r["benchmark"], r["split"]) == key]
        if {r["inner"] for r in fits} != set(INNERS):
            continue
        out.append({
            "benchmark": key[0], "split": key[1],
            "chosen": max(fits, key=lambda r: r["loo_elpd_dropped"]),
            "default": next(r for r in fits if r["inner"] == r["default_inner"]),
            "best_nlpd": min(fits, key=lambda r: r["nlpd"]),
            "best_own_nlpd": min(fits, key=lambda r: r["own_nlpd"]),
        })  # fmt: skip
    return out


def figure(rows: list[dict], path) -> None:
    """Test PICP per split (left; filled: each test point with its own landmark, hollow:
    ``gp.conditional``'s marginals); and per fit, against the benchmark's own inner kernel's on
    the same split, the change of the test NLPD (``gp.conditional``'s: like the dropped LOO, it
    predicts each point without its own landmark) and of the dropped LOO's -elpd_loo per point
    (right: points on the diagonal's side of the axes are ranked alike), a colour per inner
    kernel, a marker per benchmark."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    names = [b for b in BENCHMARKS if any(r["benchmark"] == b for r in rows)]
    markers = dict(zip(names, "osD^v", strict=False))
    own = {(r["benchmark"], r["split"]): r for r in rows if r["inner"] == r["default_inner"]}
    for i, name in enumerate(names):
        for j, inner in enumerate(INNERS):
            chosen = [r for r in rows if (r["benchmark"], r["inner"]) == (name, inner)]
            x = i + (j - 1) * 0.22 + np.linspace(-0.05, 0.05, len(chosen))
            left.plot(x, [r["own_picp"] for r in chosen], markers[name], color=f"C{j}")
            left.plot(x, [r["test_picp"] for r in chosen], markers[name], color=f"C{j}",
                      mfc="none", alpha=0.6)  # fmt: skip
            paired = [
                (r, own[key])
                for r in chosen
                if (key := (r["benchmark"], r["split"])) in own and r is not own[key]
            ]
            right.plot([base["loo_elpd_dropped"] - r["loo_elpd_dropped"] for r, base in paired],
                       [r["nlpd"] - base["nlpd"] for r, base in paired], markers[name],
                       color=f"C{j}")  # fmt: skip
    left.axhspan(0.92, 0.97, color="0.9", zorder=0)
    left.set_xticks(range(len(names)), names)
    left.set(ylabel="test PICP (95 %)", title="coverage per split")
    right.axhline(0.0, color="0.6", lw=0.8)
    right.axvline(0.0, color="0.6", lw=0.8)
    right.set(xlabel="change of -elpd_loo per point (own landmark dropped)",
              ylabel="change of test NLPD (gp.conditional)",
              title="against the benchmark's inner kernel, same split")  # fmt: skip
    handles = [plt.Line2D([], [], color=f"C{j}", marker="o", ls="", label=inner)
               for j, inner in enumerate(INNERS)]  # fmt: skip
    handles += [plt.Line2D([], [], color="k", marker=markers[n], ls="", label=n) for n in names]
    right.legend(handles=handles, fontsize=7)
    save_figure(fig, path)


def _scores(row: dict) -> list[str]:
    """A fit's inner kernel, test PICP and NLPD (own landmark, conditional), as the picks show
    them."""
    return [row["inner"], f"{row['own_picp']:.3f}, {row['test_picp']:.3f}",
            f"{row['own_nlpd']:.3f}, {row['nlpd']:.3f}"]  # fmt: skip


def summarise(rows: list[dict], out, settings) -> None:
    rows = sorted(rows, key=_order)
    stats = {}
    for name in dict.fromkeys(r["benchmark"] for r in rows):
        for inner in INNERS:
            chosen = [r for r in rows if (r["benchmark"], r["inner"]) == (name, inner)]
            if chosen:
                stats[f"{name}, {inner}"] = {
                    "fits": len(chosen),
                    "in_band": sum(0.92 <= r["test_picp"] <= 0.97 for r in chosen),
                    "in_band_own": sum(0.92 <= r["own_picp"] <= 0.97 for r in chosen),
                    **{f"mean_{k}": float(np.mean([r[k] for r in chosen]))
                       for k in ("test_picp", "own_picp", "loo_coverage_dropped",
                                 "loo_elpd_dropped", "rmse", "nlpd", "own_nlpd")},
                    "r_hat_max": max(r["r_hat_max"] for r in chosen),
                    "ess_bulk_min": min(r["ess_bulk_min"] for r in chosen),
                    "divergences": int(sum(r["divergences"] for r in chosen)),
                }  # fmt: skip
    choices = loo_choices(rows)
    write_json(out / "inner_choice.json", {
        "settings": settings.__dict__, "rows": rows, "summary": stats,
        "loo_choices": [{"benchmark": c["benchmark"], "split": c["split"],
                         **{k: c[k]["inner"]
                            for k in ("chosen", "default", "best_nlpd", "best_own_nlpd")}}
                        for c in choices],
    })  # fmt: skip
    figure(rows, out / "inner_choice.png")
    summary = markdown_rows(
        ["benchmark, inner kernel", "fits", "PICP in [0.92, 0.97]: own landmark, conditional",
         "mean test PICP: own landmark, conditional", "mean LOO coverage (dropped)",
         "mean elpd_loo per point (dropped)", "mean RMSE (conditional)",
         "mean NLPD: own landmark, conditional", "r̂ max", "min bulk ESS", "divergences"],
        [[key, s["fits"], f"{s['in_band_own']}, {s['in_band']}",
          f"{s['mean_own_picp']:.3f}, {s['mean_test_picp']:.3f}",
          f"{s['mean_loo_coverage_dropped']:.3f}", f"{s['mean_loo_elpd_dropped']:.3f}",
          f"{s['mean_rmse']:.3f}", f"{s['mean_own_nlpd']:.3f}, {s['mean_nlpd']:.3f}",
          f"{s['r_hat_max']:.3f}", f"{s['ess_bulk_min']:.0f}", s["divergences"]]
         for key, s in stats.items()],
    )  # fmt: skip
    picks = markdown_rows(
        ["benchmark", "split", "LOO's choice", "its test PICP (own, cond.)",
         "its NLPD (own, cond.)", "benchmark's inner kernel", "its test PICP (own, cond.)",
         "its NLPD (own, cond.)", "best test NLPD (own, cond.)"],
        [[c["benchmark"], c["split"], *_scores(c["chosen"]), *_scores(c["default"]),
          f"{c['best_own_nlpd']['inner']}, {c['best_nlpd']['inner']}"] for c in choices],
    )  # fmt: skip
    table = markdown_rows(
        ["benchmark", "split", "inner", "test PICP", "own-landmark PICP",
         "LOO coverage (dropped)", "elpd_loo per point (dropped)", "max Pareto k", "RMSE", "NLPD",
         "own-landmark NLPD", "own-landmark max Pareto k", "CRPS",
         "radius (median)", "ls (median)", "r̂ max", "min bulk ESS", "min tail ESS",
         "divergences", "wall (s)"],
        [[r["benchmark"], r["split"], r["inner"], f"{r['test_picp']:.3f}",
          f"{r['own_picp']:.3f}", f"{r['loo_coverage_dropped']:.3f}",
          f"{r['loo_elpd_dropped']:.3f}", f"{r['pareto_k_max_dropped']:.2f}",
          f"{r['rmse']:.3f}", f"{r['nlpd']:.3f}", f"{r['own_nlpd']:.3f}",
          f"{r['own_pareto_k_max']:.2f}", f"{r['crps']:.3f}", f"{r['radius_median']:.3g}",
          f"{r['ls_median']:.3g}",
          f"{r['r_hat_max']:.3f}", f"{r['ess_bulk_min']:.0f}", f"{r['ess_tail_min']:.0f}",
          int(r["divergences"]), f"{r['wall_s']:.0f}"] for r in rows],
    )  # fmt: skip
    write_markdown(
        out / "inner_choice.md",
        "Which inner kernel?",
        [
            "Generated by `python -m benchmarks.studies.inner_choice`. The README recipe "
            f"({settings.nuts_sampler}, {settings.chains} chains x ({settings.tune} tune + "
            f"{settings.draws} "
            f"draws)) with each inner kernel of {', '.join(INNERS)}, on the NUTS benchmark's "
            "splits. `dropped`: exact LOO with each held-out point's own landmark dropped, on "
            f"{DROPPED_LOO_DRAWS} draws. Test scores of two predictions from each posterior: "
            "`own` (each test point with its own landmark, the NUTS benchmark's SLE prediction, "
            f"on {settings.own_landmark_draws} draws) and `cond.` (`gp.conditional`'s "
            "marginals). What the script does: see its docstring.",
            "",
            *summary,
            "",
            "The inner kernel with the highest dropped-LOO `elpd_loo` per split (a user's "
            "choice from the training data alone), against the benchmark's own:",
            "",
            *picks,
            "",
            "![Test PICP per inner kernel; test NLPD against LOO](inner_choice.png)",
            "",
            *table,
        ],
    )


def main(argv=None) -> None:
    run_study(
        __doc__, argv, name="inner_choice", choices=BENCHMARKS, default=DEFAULT_BENCHMARKS,
        columns=COLUMNS, text=TEXT_COLUMNS, variant="inner", variants=INNERS, fit=fit,
        summarise=summarise,
        report=lambda r: f"{r['benchmark']} split {r['split']} {r['inner']}: test PICP "
                         f"{r['test_picp']:.3f} (own landmark {r['own_picp']:.3f}), NLPD "
                         f"{r['nlpd']:.3f} ({r['own_nlpd']:.3f}), LOO elpd "
                         f"{r['loo_elpd_dropped']:.3f}, coverage "
                         f"{r['loo_coverage_dropped']:.3f}, r-hat {r['r_hat_max']:.3f}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
