"""Which change to the SLE model would calibrate its intervals on Teddy and SAXS?

The NUTS benchmark (``benchmarks/nuts_convergence.py``) finds SLE's 95 % PICP below the
[0.92, 0.97] target on Teddy (n = 200: 0.90-0.93) and SAXS (0.80-0.91), with chains that agree,
while the baselines cover 0.935-0.95 and 0.90-0.93. The coverage study (retired;
``git show e670ef1:benchmarks/studies/coverage.py``) traced Teddy's misses to test points the
embedding puts nearer the training points than they are. This study measures the candidate
remedies within the paper's kernel family, each the README recipe (``sle_priors`` +
``eta**2 * SLE(...)``, ``sle.gp.Marginal``) with one change:

- ``shape 0.5`` and ``shape 3``: the bump's shape ``beta`` (the paper's Appendix shows 0.5-5 and
  uses 1), which moves how fast each coordinate changes with the distance; ``shape learned``:
  a hyperparameter, ``LogNormal`` with 95 % of its mass in [0.25, 4] (``SHAPE_PRIOR``);
- ``local radii``: the paper's non-stationary SLE with a data-adaptive radius field,
  ``r_j = radius * rho_j`` with ``rho_j`` landmark ``j``'s distance to its
  ``LOCAL_NEIGHBOUR``-th nearest training point over the median of those
  (:func:`local_radius_factors`): wider bumps where the training points are sparse;
- ``inner ...``: another inner kernel (Matérn-1/2 or -3/2/-5/2, RBF) than the benchmark's;
- ``+ N landmarks``: the training points plus ``N`` points that are neither training nor test
  points as landmarks (Teddy: other vertices; SAXS has none to spare), so the embedding sees the
  geometry from more places;
- ``two scales``: the recipe plus a second SLE term ``eta2**2 * SLE(radius2, ls2)`` with
  ``radius2`` between the lower radius bound and the bounds' geometric mean: a local term
  whose variance far from the data the training points cannot explain away;
- the benchmark's baseline, for reference.

Each is fitted by multi-start MAP (``pymc_sle.find_map``; plug-in Gaussian predictions, noise
included) on the benchmark's three splits, and scored on its test set: PICP of the 95 %
interval, ``sd(z)`` of ``z = (y - mu) / sd`` (1 when the predictive spread is right), RMSE and
NLPD, each the mean over splits. A plug-in PICP is close to NUTS's here (the recipe: 0.91 at the
MAP on Teddy, 0.90-0.93 under NUTS): the posterior's hyperparameter spread is narrow.
Writes benchmarks/results/studies/calibration_candidates.{json,md,png}.

``--quick`` fits Teddy only (on ``--mesh``), one split, two starts.

Run:  python -m benchmarks.studies.calibration_candidates [--quick] [--jobs 2] [--mesh PATH]
      [--summary-only]
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks import nuts_data
from benchmarks._paths import SHARED_DATA
from benchmarks.paper.models import build
from benchmarks.studies import common
from pymc_sle import score_gaussian

#: The neighbour whose distance sets a landmark's radius factor (``local radii``).
LOCAL_NEIGHBOUR = 10
#: ``shape learned``: LogNormal with this prior mass between these bounds.
SHAPE_PRIOR = ((0.25, 4.0), 0.95)
#: The benchmarks studied, with how many unused points ``+ N landmarks`` adds (full, quick runs;
#: 0: none to spare).
BENCHMARKS = {"teddy_200": (800, 20), "saxs": (0, 0)}


@dataclass(frozen=True)
class Candidate:
    """One change to the README recipe (the defaults are the recipe)."""

    name: str
    shape: float | None = 1.0  # None: learned, SHAPE_PRIOR
    inner: str | None = None  # None: the benchmark's
    local_radii: bool = False
    extra_landmarks: bool = False
    two_scales: bool = False


RECIPE = Candidate("recipe")
CANDIDATES = (
    RECIPE,
    Candidate("shape 0.5", shape=0.5),
    Candidate("shape 3", shape=3.0),
    Candidate("shape learned", shape=None),
    Candidate("local radii", local_radii=True),
    Candidate("inner matern12", inner="matern12"),
    Candidate("inner matern32", inner="matern32"),
    Candidate("inner matern52", inner="matern52"),
    Candidate("inner rbf", inner="rbf"),
    Candidate("+ landmarks", extra_landmarks=True),
    Candidate("two scales", two_scales=True),
)
BASELINE = "baseline"
#: ``--quick``: one candidate per code path (the other shapes, and the other inner kernels, run
#: the recipe's with another parameter).
QUICK_CANDIDATES = ("recipe", "shape learned", "local radii", "two scales")


def plug_in(model, gp, ctx, offset: float, starts: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Predictive mean and standard deviation (noise included) at the model's MAP, and the MAP."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = sle.find_map(n_starts=starts, seed=ctx.trial.seed).point
        mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=True)
    return mu + offset, np.sqrt(var), point


def local_radius_factors(train_distances: np.ndarray, k: int = LOCAL_NEIGHBOUR) -> np.ndarray:
    """``rho_j``: each landmark's (column's) distance to its ``k``-th nearest training point
    (row), the landmark itself excluded, over the median of those. Median 1."""
    D = np.asarray(train_distances, dtype=float)
    if not 1 <= k < D.shape[0]:
        raise ValueError(f"`k` must be in [1, {D.shape[0] - 1}], but got {k!r}")
    kth = np.sort(np.where(D > 0, D, np.inf), axis=0)[k - 1]
    return kth / np.median(kth)


def candidates_for(bench, extra: int) -> list[Candidate]:
    """The candidates that change something on ``bench``: no inner kernel equal to its own, no
    extra landmarks where there are none to spare."""
    out = [c for c in CANDIDATES if c.inner != bench.inner and (extra or not c.extra_landmarks)]
    return [replace(c, name=f"+ {extra} landmarks") if c.extra_landmarks else c for c in out]


def with_extra_landmarks(bench, ctx, extra: int):
    """``ctx`` with the training points plus ``extra`` random unused points as landmarks."""
    problem = bench.problem
    unused = np.setdiff1d(problem.pool, ctx.points)
    if unused.size < extra:
        raise ValueError(f"`extra` must be at most the {unused.size} unused points, got {extra}")
    chosen = np.random.default_rng(ctx.trial.seed).choice(unused, size=extra, replace=False)
    columns = np.concatenate([ctx.points[: ctx.n_train], np.sort(chosen)])
    D = sle.DistanceMatrix(problem.distances(ctx.points, columns, bench.kind))
    return replace(ctx, landmark={**ctx.landmark, bench.kind: D})


def sle_model(candidate: Candidate, bench, ctx, offset: float):
    """The README recipe with ``candidate``'s change: (model, gp)."""
    D = ctx.landmark[bench.kind]
    n = ctx.n_train
    rows, y = np.arange(n), ctx.y_train - offset
    inner = candidate.inner or bench.inner
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # several radius basins: MAP is global
        priors = sle.sle_priors(D, rows, y, inner=inner)
        radius = priors["radius"]
        if candidate.local_radii:
            radius = radius * pt.constant(local_radius_factors(D.values[:n, :n]))
        shape = candidate.shape
        if shape is None:
            shape = pm.LogNormal("shape", **sle.lognormal_between(*SHAPE_PRIOR[0], SHAPE_PRIOR[1]))
        cov = priors["eta"] ** 2 * sle.SLE(
            D, radius=radius, ls=priors["ls"], shape=shape, inner=inner
        )
        if candidate.two_scales:
            bounds = sle.suggest_bounds(D, rows, y)
            low = bounds.radius[0]
            radius2 = pm.LogNormal("radius2", **sle.lognormal_between(
                low, np.sqrt(low * bounds.radius[1]), 0.95))  # fmt: skip
            ls2 = pm.LogNormal("ls2", **sle.lognormal_between(*bounds.ls, 0.95))
            eta2 = pm.HalfNormal("eta2", sigma=float(np.std(y)))
            cov = cov + eta2**2 * sle.SLE(D, radius=radius2, ls=ls2, inner=inner)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=ctx.X_train, y=y, sigma=priors["sigma"])
    return model, gp


def fit(bench, quick: bool, name: str, n_splits: int, starts: int) -> dict:
    """One candidate (or the baseline) on ``n_splits`` splits of ``bench`` (a
    ``nuts_convergence`` benchmark): per-split scores and MAP."""
    extra = BENCHMARKS[bench.name][quick]
    known = {c.name: c for c in candidates_for(bench, extra)}
    if name != BASELINE and name not in known:
        raise ValueError(f"`name` must be one of {[*known, BASELINE]}, but got {name!r}")
    candidate = known.get(name)  # None: the baseline
    y_test = bench.problem.y[bench.problem.test]
    splits = []
    with threadpool_limits(limits=1, user_api="blas"):
        for ctx in bench.contexts(n_splits):
            if candidate is None:
                model, gp, _ = build(bench.baseline, ctx)
                offset = 0.0
            else:
                offset = float(ctx.y_train.mean())
                extended = candidate.extra_landmarks
                context = with_extra_landmarks(bench, ctx, extra) if extended else ctx
                model, gp = sle_model(candidate, bench, context, offset)
            mu, sd, point = plug_in(model, gp, ctx, offset, starts)
            z = (y_test - mu) / sd
            splits.append({
                **score_gaussian(y_test, mu, sd), "sd_z": float(np.std(z)),
                "radius": float(point["radius"]) if "radius" in point else None,
                "shape": float(point["shape"]) if "shape" in point else None,
            })  # fmt: skip
    means = {k: float(np.mean([s[k] for s in splits])) for k in ("picp", "sd_z", "rmse", "nlpd")}
    return {"benchmark": bench.name, "candidate": name, **means, "splits": splits}


def _map_point(split: dict) -> str:
    if split["radius"] is None:
        return "-"
    return f"{split['radius']:.3g}" + ("" if split["shape"] is None else f" ({split['shape']:.2g})")


def figure(results: list[dict], labels: dict[str, str], path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(1, len(labels), figsize=(6.2 * len(labels), 4.8), squeeze=False)
    for ax, (bench_name, label) in zip(axes[0], labels.items(), strict=True):
        ax.axvspan(0.92, 0.97, color="tab:green", alpha=0.12, label="PICP target")
        for r in (r for r in results if r["benchmark"] == bench_name):
            colour = ("k" if r["candidate"] == BASELINE
                      else "tab:red" if r["candidate"] == RECIPE.name else "tab:blue")  # fmt: skip
            ax.plot(r["picp"], r["nlpd"], "o", color=colour)
            ax.annotate(r["candidate"], (r["picp"], r["nlpd"]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")  # fmt: skip
        ax.set(title=label, xlabel="95 % PICP (mean over splits)",
               ylabel="NLPD (mean over splits; lower is better)")  # fmt: skip
        ax.margins(x=0.15, y=0.1)  # room for the labels
        ax.legend(fontsize=8, loc="lower left")
    common.save_figure(fig, path)


def summarise(payload: dict, out) -> None:
    """Write the markdown table and the figure of a results payload (the JSON's contents)."""
    results, settings = payload["results"], payload["settings"]
    labels = settings["labels"]
    figure(results, labels, out / "calibration_candidates.png")
    table = common.markdown_rows(
        ["benchmark", "model", "PICP", "sd(z)", "RMSE", "NLPD", "PICP per split",
         "MAP radius (shape) per split"],
        [[labels[r["benchmark"]], r["candidate"], f"{r['picp']:.3f}", f"{r['sd_z']:.2f}",
          f"{r['rmse']:.3g}", f"{r['nlpd']:.3f}",
          ", ".join(f"{s['picp']:.3f}" for s in r["splits"]),
          ", ".join(_map_point(s) for s in r["splits"])]
         for r in results],
    )  # fmt: skip
    common.write_markdown(
        out / "calibration_candidates.md",
        "Candidate remedies for SLE's calibration (Teddy, SAXS)",
        [
            "Generated by `python -m benchmarks.studies.calibration_candidates`. The README "
            "recipe with one change each, plug-in predictions at the multi-start MAP "
            f"({settings['starts']} starts), {settings['splits']} split(s) of the NUTS "
            "benchmark; means over splits. PICP target: [0.92, 0.97]. What each candidate is: "
            "see the script's docstring.",
            "",
            *table,
            "",
            "![PICP against NLPD per candidate](calibration_candidates.png)",
        ],
    )


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--mesh", default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--summary-only", action="store_true",
                   help="rewrite the markdown and figure from the JSON; fit nothing")  # fmt: skip
    args = p.parse_args(argv)
    path = args.out / "calibration_candidates.json"
    if args.summary_only:
        summarise(json.loads(path.read_text()), args.out)
        return
    n_splits, starts = (1, 2) if args.quick else (nuts_data.N_SPLITS, 16)
    names = list(BENCHMARKS)[:1] if args.quick else BENCHMARKS  # Teddy runs every code path
    benches = {name: nuts_data.BENCHMARKS[name](args.quick, args) for name in names}
    tasks = [
        (bench, candidate.name)
        for name, bench in benches.items()
        for candidate in candidates_for(bench, BENCHMARKS[name][args.quick])
        if not args.quick or candidate.name in QUICK_CANDIDATES or candidate.extra_landmarks
    ]  # fmt: skip
    tasks += [(bench, BASELINE) for bench in benches.values()]
    results = Parallel(n_jobs=args.jobs)(
        delayed(fit)(bench, args.quick, candidate, n_splits, starts) for bench, candidate in tasks
    )
    settings = {"splits": n_splits, "starts": starts, "local_neighbour": LOCAL_NEIGHBOUR,
                "n_train": {name: bench.size for name, bench in benches.items()},
                "labels": {name: bench.label for name, bench in benches.items()}}  # fmt: skip
    payload = {"settings": settings, "results": results}
    common.write_json(path, payload)
    summarise(payload, args.out)


if __name__ == "__main__":
    main()
