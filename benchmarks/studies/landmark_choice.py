"""Whose landmarks, and how many? SLE's intervals under NUTS with fewer, or non-training, landmarks.

The paper embeds every point by its distances to all ``n`` training points, so a training point
is its own landmark (``phi_i(x_i) = a``) and a new point is not. On SAXS the NUTS benchmark's
95 % PICP is 0.81 and 0.85 on two splits, and a plug-in check found the held-out point's own
landmark is most of the gap between exact LOO and test coverage there
(``docs/how-to/calibration.md``). This study refits the README recipe (``sle_priors``,
``sample_basins``, nutpie; ``STUDY_NUTS``: 4 chains x (500 tune + 500 draws)) on the NUTS
benchmark's splits with three landmark sets:

- ``all training``: the ``n`` training points (the paper's, the library's default);
- ``m training``: a random ``m`` of them, so ``n - m`` training points are not their own landmark;
- ``m unused``: ``m`` random points of the benchmark's pool that are neither training nor test
  points, so no point, training or new, is its own landmark;

with ``m = 0.6 n``, or all the unused points where there are fewer (SAXS: 150, all its unused
images; Teddy n = 200: 120; strings: 100, all; 1-D: 30). ``all`` against
``m training`` measures the landmark count, ``m training`` against ``m unused`` their origin.
Per fit: test PICP, RMSE, NLPD, CRPS, the exact LOO coverage twice -- as fitted
(``exact_loo``), and with each held-out point's own landmark dropped
(``own_landmark="drop"``, on every ``len/DROPPED_LOO_DRAWS``-th draw: it factorises the
covariance once per point and draw), which predicts each point as a new one would be and
estimates the same as the first where no training point is a landmark (from fewer draws) --
with the largest Pareto k of the
second, the posterior median radius, r-hat, bulk and tail ESS, divergences and wall time (the
sampling and test prediction; the LOO times are apart).

Fits are appended to ``landmark_choice.csv`` as they finish; a rerun skips those it holds
(``--refit`` redoes them). Writes benchmarks/results/studies/landmark_choice.{csv,json,md,png}.

``--quick``: the 1-D benchmark (n = 20, ``m = 12``), one split, short chains.

Run:  python -m benchmarks.studies.landmark_choice [--quick] [--benchmarks saxs teddy_200 ...]
      [--only-splits N ...] [--mesh PATH] [--cache DIR] [--refit] [--summary-only]
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

import pymc_sle as sle
from benchmarks.studies.common import (
    markdown_rows,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from benchmarks.studies.loo_calibration import (
    dropped_loo,
    fit_diagnostics,
    run_study,
    sample_and_check,
)

BENCHMARKS = ("saxs", "teddy_200", "strings", "one_d")
DEFAULT_BENCHMARKS = ("saxs", "teddy_200")
#: The reduced landmark count, as a share of the training points.
SHARE = 0.6
LANDMARK_SETS = ("all training", "m training", "m unused")
COLUMNS = ["benchmark", "split", "landmarks", "n_landmarks", "n_train", "test_picp",
           "loo_coverage", "loo_coverage_dropped", "pareto_k_max_dropped", "dropped_loo_s",
           "rmse", "nlpd", "crps", "radius_median", "r_hat_max", "ess_bulk_min", "ess_tail_min",
           "divergences", "wall_s"]  # fmt: skip
TEXT_COLUMNS = 3


def landmark_columns(bench, ctx, which: str) -> np.ndarray:
    """The pool points used as landmarks by the set ``which`` on split ``ctx`` (seeded by the
    split)."""
    train = ctx.points[: ctx.n_train]
    if which == "all training":
        return train
    unused = np.setdiff1d(bench.problem.pool, ctx.points)
    m = min(round(SHARE * ctx.n_train), unused.size)
    rng = np.random.default_rng(ctx.trial.seed)
    if which == "m training":
        return np.sort(rng.choice(train, size=m, replace=False))
    if which == "m unused":
        return np.sort(rng.choice(unused, size=m, replace=False))
    raise ValueError(f"`which` must be one of {LANDMARK_SETS}, but got {which!r}")


def with_landmarks(bench, ctx, columns: np.ndarray):
    """``ctx`` whose SLE embeds every point by its distances to the pool points ``columns``."""
    D = sle.DistanceMatrix(bench.problem.distances(ctx.points, columns, bench.kind))
    return replace(ctx, landmark={**ctx.landmark, bench.kind: D})


def fit(bench, ctx, which: str, settings) -> dict:
    """The README recipe with the landmark set ``which`` on one split: one CSV row."""
    columns = landmark_columns(bench, ctx, which)
    start = time.perf_counter()
    checked = sample_and_check(bench, with_landmarks(bench, ctx, columns), "SLE", settings)
    wall = time.perf_counter() - start - checked.loo_seconds
    result = checked.holdout
    dropped, dropped_seconds = dropped_loo(checked)
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "landmarks": which,
        "n_landmarks": columns.size, "n_train": ctx.n_train, "test_picp": result.scores["picp"],
        "loo_coverage": checked.loo.coverage(0.95),
        "loo_coverage_dropped": dropped.coverage(0.95),
        "pareto_k_max_dropped": float(np.max(dropped.pareto_k)),
        "dropped_loo_s": dropped_seconds, "rmse": result.scores["rmse"],
        "nlpd": result.scores["nlpd"], "crps": result.scores["crps"],
        "radius_median": float(result.idata.posterior["radius"].median()),
        **fit_diagnostics(result), "wall_s": wall,
    }  # fmt: skip


def _order(row: dict) -> tuple:
    return BENCHMARKS.index(row["benchmark"]), LANDMARK_SETS.index(row["landmarks"]), row["split"]


#: What the figure draws per split: (column, marker and line style, label).
CURVES = (("test_picp", "o-", "test PICP"), ("loo_coverage", "s:", "LOO coverage"),
          ("loo_coverage_dropped", "^--", "LOO, own landmark dropped"))  # fmt: skip


def figure(rows: list[dict], path) -> None:
    """Test PICP and the two LOO coverages per landmark set: a panel per benchmark (two per
    row), a colour per split, a line style per quantity (shifted apart a little, so equal values
    stay visible)."""
    plt = pyplot()
    names = [b for b in BENCHMARKS if any(r["benchmark"] == b for r in rows)]
    n_rows = -(-len(names) // 2)
    fig, axes = plt.subplots(n_rows, min(len(names), 2), figsize=(10, 4.0 * n_rows),
                             squeeze=False)  # fmt: skip
    for ax, name in zip(axes.flat, names, strict=False):
        chosen = [r for r in rows if r["benchmark"] == name]
        for split in sorted({r["split"] for r in chosen}):
            line = sorted((r for r in chosen if r["split"] == split), key=_order)
            x = [LANDMARK_SETS.index(r["landmarks"]) for r in line]
            for shift, (column, style, _) in zip((-0.05, 0.0, 0.05), CURVES, strict=True):
                ax.plot(np.add(x, shift), [r[column] for r in line], style, color=f"C{split}",
                        alpha=0.8)  # fmt: skip
        ax.axhspan(0.92, 0.97, color="0.9", zorder=0)
        ax.set_xticks(range(len(LANDMARK_SETS)), LANDMARK_SETS)
        ax.set(title=name, ylabel="coverage of the 95 % intervals")
    for ax in axes.flat[len(names) :]:
        ax.set_axis_off()
    handles = [plt.Line2D([], [], color="k", linestyle=style[1:], marker=style[0], label=label)
               for _, style, label in CURVES]  # fmt: skip
    handles += [plt.Line2D([], [], color=f"C{s}", lw=4, label=f"split {s}")
                for s in sorted({r["split"] for r in rows})]  # fmt: skip
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.9", label="target band"))
    axes.flat[0].legend(handles=handles, fontsize=7)
    save_figure(fig, path)


def summarise(rows: list[dict], out, settings) -> None:
    rows = sorted(rows, key=_order)
    stats = {}
    for name in dict.fromkeys(r["benchmark"] for r in rows):
        for which in LANDMARK_SETS:
            chosen = [r for r in rows if (r["benchmark"], r["landmarks"]) == (name, which)]
            if chosen:
                stats[f"{name}, {which}"] = {
                    "fits": len(chosen),
                    "in_band": sum(0.92 <= r["test_picp"] <= 0.97 for r in chosen),
                    **{f"mean_{k}": float(np.mean([r[k] for r in chosen]))
                       for k in ("test_picp", "loo_coverage", "loo_coverage_dropped", "rmse",
                                 "nlpd")},
                    "r_hat_max": max(r["r_hat_max"] for r in chosen),
                    "ess_bulk_min": min(r["ess_bulk_min"] for r in chosen),
                    "divergences": int(sum(r["divergences"] for r in chosen)),
                }  # fmt: skip
    write_json(out / "landmark_choice.json", {"settings": settings.__dict__, "share": SHARE,
                                              "rows": rows, "summary": stats})  # fmt: skip
    figure(rows, out / "landmark_choice.png")
    summary = markdown_rows(
        ["benchmark, landmarks", "fits", "PICP in [0.92, 0.97]", "mean test PICP",
         "mean LOO coverage", "mean LOO coverage, own landmark dropped", "mean RMSE",
         "mean NLPD", "r̂ max", "min bulk ESS", "divergences"],
        [[key, s["fits"], s["in_band"], f"{s['mean_test_picp']:.3f}",
          f"{s['mean_loo_coverage']:.3f}", f"{s['mean_loo_coverage_dropped']:.3f}",
          f"{s['mean_rmse']:.3f}", f"{s['mean_nlpd']:.3f}",
          f"{s['r_hat_max']:.3f}", f"{s['ess_bulk_min']:.0f}", s["divergences"]]
         for key, s in stats.items()],
    )  # fmt: skip
    table = markdown_rows(
        ["benchmark", "landmarks", "m", "split", "test PICP", "LOO coverage",
         "LOO coverage, own landmark dropped", "max Pareto k (dropped)", "RMSE", "NLPD", "CRPS",
         "radius (median)", "r̂ max", "min bulk ESS", "min tail ESS", "divergences",
         "wall (s)"],
        [[r["benchmark"], r["landmarks"], int(r["n_landmarks"]), r["split"],
          f"{r['test_picp']:.3f}", f"{r['loo_coverage']:.3f}",
          f"{r['loo_coverage_dropped']:.3f}", f"{r['pareto_k_max_dropped']:.2f}",
          f"{r['rmse']:.3f}",
          f"{r['nlpd']:.3f}", f"{r['crps']:.3f}", f"{r['radius_median']:.3g}",
          f"{r['r_hat_max']:.3f}", f"{r['ess_bulk_min']:.0f}", f"{r['ess_tail_min']:.0f}",
          int(r["divergences"]), f"{r['wall_s']:.0f}"] for r in rows],
    )  # fmt: skip
    write_markdown(
        out / "landmark_choice.md",
        "Whose landmarks, and how many",
        [
            "Generated by `python -m benchmarks.studies.landmark_choice`. The README recipe "
            f"({settings.nuts_sampler}, {settings.chains} chains x ({settings.tune} tune + "
            f"{settings.draws} "
            f"draws)) with the training points, a random {SHARE:.0%} of them, or as many unused "
            "pool points as landmarks, on the NUTS benchmark's splits. What the script does: "
            "see its docstring.",
            "",
            *summary,
            "",
            "![Test PICP and LOO coverage per landmark set](landmark_choice.png)",
            "",
            *table,
        ],
    )


def main(argv=None) -> None:
    run_study(
        __doc__, argv, name="landmark_choice", choices=BENCHMARKS, default=DEFAULT_BENCHMARKS,
        columns=COLUMNS, text=TEXT_COLUMNS, variant="landmarks", variants=LANDMARK_SETS,
        fit=fit, summarise=summarise,
        report=lambda r: f"{r['benchmark']} split {r['split']} {r['landmarks']}: test PICP "
                         f"{r['test_picp']:.3f}, LOO {r['loo_coverage']:.3f}, dropped "
                         f"{r['loo_coverage_dropped']:.3f}, r-hat {r['r_hat_max']:.3f}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
