"""New points as their own landmarks: SLE's test intervals under NUTS, predicted both ways.

Every training point is one of SLE's landmarks (the paper's construction), so the model is fitted
with each observation's embedding holding its own full-amplitude coordinate, which acts like a
nugget; ``gp.conditional`` predicts a new point without one. On SAXS the NUTS benchmark's 95 %
PICP is 0.81 and 0.85 on two splits. ``pymc_sle.evaluation.new_points.own_landmark_predictive``
predicts each new point by the same SLE with that point added to the landmarks, the posterior
importance-weighted to that model. This study fits the README recipe (``sle_priors``,
``sample_basins``, nutpie; ``STUDY_NUTS``: 4 chains x (500 tune + 500 draws); the distance
matrix square over the split's points, landmarks the training points: the benchmark's model) on
the NUTS benchmark's splits and scores the test set twice from the same posterior:

- ``conditional``: ``gp.conditional``'s marginals (``fit_and_score``, as the benchmark does);
- ``own landmark``: ``own_landmark_predictive`` on every ``len/PREDICTIVE_DRAWS``-th draw,
  scored from ``SCORED_DRAWS`` draws of its mixture,

both by ``pymc_sle.evaluation.metrics.evaluate`` (PICP, NLPD, CRPS, RMSE), with the largest
Pareto k of the second's weights, its time, and the fit's r-hat, bulk and tail ESS and
divergences.

Fits are appended to ``new_point_prediction.csv`` as they finish; a rerun skips those it holds
(``--refit`` redoes them). Writes
benchmarks/results/studies/new_point_prediction.{csv,json,md,png}.

``--quick``: the 1-D benchmark, one split, short chains.

Run:  python -m benchmarks.studies.new_point_prediction [--quick] [--benchmarks saxs ...]
      [--only-splits N ...] [--mesh PATH] [--cache DIR] [--refit] [--summary-only]
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_sle as sle
from benchmarks.studies.common import (
    markdown_rows,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from benchmarks.studies.loo_calibration import fit_diagnostics, run_study
from pymc_sle.evaluation.holdout import fit_and_score
from pymc_sle.evaluation.metrics import evaluate
from pymc_sle.evaluation.new_points import own_landmark_predictive

BENCHMARKS = ("saxs", "teddy_200", "strings", "one_d")
#: Posterior draws (every k-th) the own-landmark predictive reads: one Cholesky factorisation per
#: test point and draw.
PREDICTIVE_DRAWS = 100
#: Draws of each test point's mixture that score it (as many as the benchmark's predictive).
SCORED_DRAWS = 500
SCORES = ("picp", "nlpd", "crps", "rmse")
#: The model column (one model; it keys the resumable rows).
MODEL = "README recipe"
COLUMNS = ["benchmark", "split", "model", "n_train", "n_test",
           *[f"{s}_{p}" for p in ("conditional", "own") for s in SCORES],
           "pareto_k_max", "own_s", "radius_median", "r_hat_max", "ess_bulk_min",
           "ess_tail_min", "divergences", "wall_s"]  # fmt: skip
TEXT_COLUMNS = 3


def sle_model(bench, ctx, offset: float):
    """The README recipe on one split with a square distance matrix over the split's points
    (training, then test) and the training points as landmarks: (model, gp, priors)."""
    D = sle.DistanceMatrix(bench.problem.distances(ctx.points, ctx.points, bench.kind))
    train = np.arange(ctx.n_train)
    y = ctx.y_train - offset
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # several basins: sample_basins samples them
        priors = sle.priors.sle_priors(D, train, y, landmarks=train, inner=bench.inner)
        cov = priors["eta"] ** 2 * sle.SLE(
            D, landmarks=train, radius=priors["radius"], ls=priors["ls"], inner=bench.inner
        )
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=ctx.X_train, y=y, sigma=priors["sigma"])
    return model, gp, priors


def fit(bench, ctx, recipe: str, settings) -> dict:
    """One split: the recipe (``recipe``: ``MODEL``, the row's model column) sampled once, its
    test set predicted both ways; one CSV row."""
    y_test = bench.problem.y[bench.problem.test]
    offset = float(ctx.y_train.mean())
    start = time.perf_counter()
    model, gp, priors = sle_model(bench, ctx, offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        result = fit_and_score(model, gp, ctx.X_test, y_test - offset, settings, priors=priors)
    wall = time.perf_counter() - start
    posterior = result.idata.posterior
    step = -(-posterior.sizes["chain"] * posterior.sizes["draw"] // PREDICTIVE_DRAWS)
    start = time.perf_counter()
    new = own_landmark_predictive(result.idata.sel(draw=slice(None, None, step)), gp, ctx.X_test,
                                  model=model)  # fmt: skip
    own_seconds = time.perf_counter() - start
    draws = new.sample(SCORED_DRAWS, seed=ctx.trial.seed)[None]
    own = evaluate(az.from_dict(posterior_predictive={"y": draws}), y_test - offset, "y")
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "model": recipe, "n_train": ctx.n_train,
        "n_test": y_test.size,
        **{f"{s}_conditional": result.scores[s] for s in SCORES},
        **{f"{s}_own": own[s] for s in SCORES},
        "pareto_k_max": float(np.max(new.pareto_k)), "own_s": own_seconds,
        "radius_median": float(posterior["radius"].median()),
        **fit_diagnostics(result), "wall_s": wall,
    }  # fmt: skip


def _order(row: dict) -> tuple:
    return BENCHMARKS.index(row["benchmark"]), row["split"]


def figure(rows: list[dict], path) -> None:
    """Test PICP per split, both predictives (left), and the NLPD's change from
    ``gp.conditional`` to the own-landmark predictive (right: below 0 is better)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = [b for b in BENCHMARKS if any(r["benchmark"] == b for r in rows)]
    for i, name in enumerate(names):
        for r in sorted((r for r in rows if r["benchmark"] == name), key=_order):
            x = i + (r["split"] - 1) * 0.12
            left.plot([x - 0.03, x + 0.03], [r["picp_conditional"], r["picp_own"]], color="0.6",
                      lw=0.8, zorder=0)  # fmt: skip
            left.plot(x - 0.03, r["picp_conditional"], "o", color="C0")
            left.plot(x + 0.03, r["picp_own"], "s", color="C1")
            right.bar(x, r["nlpd_own"] - r["nlpd_conditional"], width=0.1, color="C1")
    for ax in (left, right):
        ax.set_xticks(range(len(names)), names)
    left.axhspan(0.92, 0.97, color="0.9", zorder=0)
    left.set(ylabel="test PICP (95 %)", title="PICP per split (band: the target)")
    right.axhline(0.0, color="0.3", lw=0.8)
    right.set(ylabel="NLPD, own landmark - conditional",
              title="NLPD change per split (below 0: better)")  # fmt: skip
    handles = [plt.Line2D([], [], color=c, marker=m, ls="", label=label)
               for c, m, label in (("C0", "o", "gp.conditional"),
                                   ("C1", "s", "own_landmark_predictive"))]  # fmt: skip
    left.legend(handles=handles, fontsize=8)
    save_figure(fig, path)


def summarise(rows: list[dict], out, settings) -> None:
    rows = sorted(rows, key=_order)
    stats = {}
    for name in dict.fromkeys(r["benchmark"] for r in rows):
        chosen = [r for r in rows if r["benchmark"] == name]
        stats[name] = {
            "fits": len(chosen),
            **{f"in_band_{p}": sum(0.92 <= r[f"picp_{p}"] <= 0.97 for r in chosen)
               for p in ("conditional", "own")},
            **{f"mean_{s}_{p}": float(np.mean([r[f"{s}_{p}"] for r in chosen]))
               for s in SCORES for p in ("conditional", "own")},
            "pareto_k_max": max(r["pareto_k_max"] for r in chosen),
            "r_hat_max": max(r["r_hat_max"] for r in chosen),
            "ess_bulk_min": min(r["ess_bulk_min"] for r in chosen),
            "divergences": int(sum(r["divergences"] for r in chosen)),
        }  # fmt: skip
    write_json(out / "new_point_prediction.json", {
        "settings": settings.__dict__, "predictive_draws": PREDICTIVE_DRAWS,
        "scored_draws": SCORED_DRAWS, "rows": rows, "summary": stats,
    })  # fmt: skip
    figure(rows, out / "new_point_prediction.png")
    summary = markdown_rows(
        ["benchmark", "fits", "PICP in [0.92, 0.97]: conditional, own landmark",
         "mean PICP", "mean NLPD", "mean CRPS", "mean RMSE", "max Pareto k", "r̂ max",
         "min bulk ESS", "divergences"],
        [[name, s["fits"], f"{s['in_band_conditional']}, {s['in_band_own']}",
          *[f"{s[f'mean_{k}_conditional']:.3f} → {s[f'mean_{k}_own']:.3f}" for k in SCORES],
          f"{s['pareto_k_max']:.2f}", f"{s['r_hat_max']:.3f}", f"{s['ess_bulk_min']:.0f}",
          s["divergences"]] for name, s in stats.items()],
    )  # fmt: skip
    table = markdown_rows(
        ["benchmark", "split", "n", "test points", "PICP", "NLPD", "CRPS", "RMSE",
         "max Pareto k", "own-landmark time (s)", "radius (median)", "r̂ max", "min bulk ESS",
         "min tail ESS", "divergences", "wall (s)"],
        [[r["benchmark"], r["split"], int(r["n_train"]), int(r["n_test"]),
          *[f"{r[f'{k}_conditional']:.3f} → {r[f'{k}_own']:.3f}" for k in SCORES],
          f"{r['pareto_k_max']:.2f}", f"{r['own_s']:.0f}", f"{r['radius_median']:.3g}",
          f"{r['r_hat_max']:.3f}", f"{r['ess_bulk_min']:.0f}", f"{r['ess_tail_min']:.0f}",
          int(r["divergences"]), f"{r['wall_s']:.0f}"] for r in rows],
    )  # fmt: skip
    write_markdown(
        out / "new_point_prediction.md",
        "New points as their own landmarks",
        [
            "Generated by `python -m benchmarks.studies.new_point_prediction`. The README recipe "
            f"({settings.nuts_sampler}, {settings.chains} chains x ({settings.tune} tune + "
            f"{settings.draws} "
            "draws)) on the NUTS benchmark's splits; each test set predicted by "
            "`gp.conditional` and by `own_landmark_predictive` (every new point its own "
            f"landmark; {PREDICTIVE_DRAWS} posterior draws), scored from {SCORED_DRAWS} draws "
            "of each. Cells `a → b`: conditional → own landmark. What the script does: see "
            "its docstring.",
            "",
            *summary,
            "",
            "![Test PICP and NLPD per split, both predictives](new_point_prediction.png)",
            "",
            *table,
        ],
    )


def main(argv=None) -> None:
    run_study(
        __doc__, argv, name="new_point_prediction", choices=BENCHMARKS, default=BENCHMARKS,
        columns=COLUMNS, text=TEXT_COLUMNS, variant="model", variants=[MODEL], fit=fit,
        summarise=summarise,
        report=lambda r: f"{r['benchmark']} split {r['split']}: PICP "
                         f"{r['picp_conditional']:.3f} -> {r['picp_own']:.3f}, NLPD "
                         f"{r['nlpd_conditional']:.3f} -> {r['nlpd_own']:.3f}, k "
                         f"{r['pareto_k_max']:.2f}, r-hat {r['r_hat_max']:.3f}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
