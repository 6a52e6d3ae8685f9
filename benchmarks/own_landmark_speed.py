"""What the own-landmark predictive costs, and what its rank-2k update and threads save.

``own_landmark_predictive`` predicts each new point with the point added to the landmarks. A
new landmark changes only the rows and columns of the training covariance whose points its bump
reaches: where those are ``k`` of the ``n`` training points, the fitted factorisation is updated
at rank ``2k`` (``O(n^2 k)``), where they are most, the covariance is factorised anew
(``O(n^3)``). This times, on split 0 of the NUTS benchmark's data sets with the README model,
both ways in one run:

- ``default``: the rank-2k update where ``2k`` is at most half of ``n``, a new factorisation
  elsewhere (the library's rule);
- ``refactorised``: a new factorisation for every point;
- ``default, 2 threads``: the library's rule with ``n_jobs=2``, two points at a time (each
  thread with one BLAS thread), which must give the same numbers,

on the same draws: the MAP of the model (``pm.find_MAP`` from its initial point), repeated (the
cost does not depend on the draws' spread, only on how far the bumps reach), one BLAS thread,
after a warm-up call that compiles what both reuse. It checks that both give the same
predictive and reports how many training points the bumps reach (``k`` per test point: the
training points closer than the MAP radius).

Writes benchmarks/results/own_landmark_speed.{json,md}.

Run:  python -m benchmarks.own_landmark_speed [--quick] [--benchmarks saxs teddy_200 ...]
(``--quick``: the 1-D benchmark's tiny split, 3 draws.)
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

from benchmarks.nuts_data import BENCHMARKS, add_data_arguments, sle_model
from benchmarks.studies.common import markdown_rows, write_json
from pymc_sle.evaluation import new_points

#: ``(low-rank share, threads)``: the library's rule, every point factorised anew, and the
#: library's rule in two threads.
VARIANTS = {
    "default": (new_points._LOW_RANK_SHARE, 1),
    "refactorised": (0.0, 1),
    "default, 2 threads": (new_points._LOW_RANK_SHARE, 2),
}


def measure(name: str, args, draws: int) -> dict:
    """Both variants on split 0 of benchmark ``name``: one result entry."""
    bench = BENCHMARKS[name](args.quick, args)
    ctx = bench.contexts(1)[0]
    offset = float(ctx.y_train.mean())
    model, gp, _, _ = sle_model(bench, ctx, offset)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        point = pm.find_MAP(progressbar=False, include_transformed=False)
    names = [rv.name for rv in model.free_RVs]
    posterior = {k: np.full((1, draws, *np.shape(point[k])), point[k]) for k in names}
    idata = az.from_dict(posterior=posterior)
    radius = float(point["radius"])
    distances = ctx.landmark[bench.kind].values
    reach = (distances[ctx.n_train :, : ctx.n_train] < radius).sum(axis=1)
    runs, predictions = {}, {}
    new_points.own_landmark_predictive(idata.sel(draw=[0]), gp, ctx.X_test[:1], model=model)
    for variant, (share, threads) in VARIANTS.items():
        new_points._LOW_RANK_SHARE = share
        try:
            start = time.perf_counter()
            predictions[variant] = new_points.own_landmark_predictive(
                idata, gp, ctx.X_test, model=model, n_jobs=threads
            )
            seconds = time.perf_counter() - start
        finally:
            new_points._LOW_RANK_SHARE = VARIANTS["default"][0]
        runs[variant] = {
            "seconds": seconds,
            "ms_per_point_and_draw": 1e3 * seconds / (draws * ctx.X_test.shape[0]),
        }
    default, refactorised = predictions["default"], predictions["refactorised"]
    threaded = predictions["default, 2 threads"]
    scale = float(np.max(np.abs(refactorised.means)) + np.sqrt(refactorised.variances.max()))
    return {
        "benchmark": name,
        "n_train": ctx.n_train,
        "n_test": int(ctx.X_test.shape[0]),
        "draws": draws,
        "map_radius": radius,
        "reach_median": float(np.median(reach)),
        "reach_max": int(reach.max()),
        "low_rank_share_of_points": float(
            np.mean(2 * reach <= VARIANTS["default"][0] * ctx.n_train)
        ),
        "runs": runs,
        "speed_up": runs["refactorised"]["seconds"] / runs["default"]["seconds"],
        "thread_speed_up": runs["default"]["seconds"] / runs["default, 2 threads"]["seconds"],
        "threads_equal": bool(
            np.array_equal(threaded.means, default.means)
            and np.array_equal(threaded.variances, default.variances)
            and np.array_equal(threaded.log_weights, default.log_weights)
        ),
        "max_difference_over_scale": float(
            max(
                np.max(np.abs(default.means - refactorised.means)),
                np.max(np.abs(default.variances - refactorised.variances)),
            )
            / scale
        ),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    add_data_arguments(p, ["saxs", "teddy_200", "teddy_400", "bunny"])
    p.add_argument("--draws", type=int, default=None, help="draws per run (10; quick: 3)")
    args = p.parse_args(argv)
    draws = args.draws or (3 if args.quick else 10)
    benchmarks = ["one_d"] if args.quick else args.benchmarks
    entries = [measure(name, args, draws) for name in benchmarks]
    stem = "own_landmark_speed_quick" if args.quick else "own_landmark_speed"
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / f"{stem}.json", {"draws": draws, "entries": entries})
    table = markdown_rows(
        ["benchmark", "n", "test points", "bumps reach (median, max)", "points updated at rank 2k",
         "default (s)", "refactorised (s)", "speed-up", "2 threads (s)", "speed-up of threads",
         "ms per point and draw (default)", "largest difference / scale", "threads equal"],
        [[e["benchmark"], e["n_train"], e["n_test"], f"{e['reach_median']:.0f}, {e['reach_max']}",
          f"{100 * e['low_rank_share_of_points']:.0f} %", f"{e['runs']['default']['seconds']:.1f}",
          f"{e['runs']['refactorised']['seconds']:.1f}", f"{e['speed_up']:.2f}x",
          f"{e['runs']['default, 2 threads']['seconds']:.1f}", f"{e['thread_speed_up']:.2f}x",
          f"{e['runs']['default']['ms_per_point_and_draw']:.2f}",
          f"{e['max_difference_over_scale']:.1e}", "yes" if e["threads_equal"] else "no"]
         for e in entries],
    )  # fmt: skip
    lines = [
        "# The own-landmark predictive: cost, the rank-2k update and threads",
        "",
        f"Generated by `python -m benchmarks.own_landmark_speed`. Split 0 of each benchmark, the "
        f"README model at its MAP, {draws} draws, one BLAS thread per thread, the three "
        "variants in one run. `default`: the fitted factorisation updated at rank 2k where the "
        "new point's bump reaches k training points and 2k is at most half of n, factorised "
        "anew elsewhere; `refactorised`: every point factorised anew; `2 threads`: the default "
        "with `n_jobs=2` (`threads equal`: bit for bit the default's predictive). `bumps "
        "reach`: training points within the MAP radius of a test point. What the script does: "
        "see its docstring.",
        "",
        *table,
        "",
    ]
    (args.out / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
