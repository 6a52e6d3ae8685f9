"""Runtime and memory vs N: SLE vs Matern vs the raw-distance embedding (paper App. J, Table 5).

On the 1-D benchmark (`pymc_sle.datasets.one_dimensional`, N training points = landmarks, 100
test points), one BLAS thread, for each model of the 1-D reproduction
(`benchmarks/paper/one_d.py`: Matern-3/2 everywhere):

- ``kernel_ms``: one evaluation of the training Gram K(X, X) with symbolic hyperparameters (what
  every likelihood evaluation pays), median of 5 calls after compilation, at the paper's initial
  hyperparameters (SLE: r = 0.15, ls = 1; raw embedding and Matern: ls = 1);
- ``kernel_mib``: the peak memory those calls allocate (tracemalloc, which sees NumPy's and
  PyTensor's buffers);
- ``train_s``: bounded maximum-likelihood training with `pymc_sle.find_map` (16 screened starts,
  2 L-BFGS runs), compilation included -- the paper timed 200 MCMC samples instead;
- ``predict_s``: predictive mean and variance at the 100 test points at the fit, compilation
  included (``gp.predict`` compiles on every call, so this is mostly compile time);
- ``s_bar``: mean non-zeros per SLE embedding row at r = 0.15 and at the fitted radius.

Exponents alpha of t ~ N^alpha are fitted over the N grid. Ratios are within one run.

Run:  `python -m benchmarks.studies.runtime [--quick] [--draws 3]`
"""

from __future__ import annotations

import csv
import json
import time
import tracemalloc
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks.paper.models import build
from benchmarks.studies import common
from pymc_sle import find_map
from pymc_sle.datasets import one_dimensional
from pymc_sle.kernels import DistanceCovariance, RawLandmarkEmbedding

SIZES = (50, 100, 150, 200, 250, 300, 350, 400, 450, 500)
QUICK_SIZES = (30, 60)
MODELS = ("SLE", "Matern", "Raw-distance embedding")
INITIAL_RADIUS = 0.15


def _kernel_function(model: str, data):
    ls, radius = pt.dscalar("ls"), pt.dscalar("radius")
    D, train = data.distances, data.train
    if model == "SLE":
        cov = sle.SLE(D, landmarks=train, radius=radius, ls=ls, radius_max=INITIAL_RADIUS)
    elif model == "Matern":
        cov = DistanceCovariance(D, ls=ls)
    else:
        cov = RawLandmarkEmbedding(D, landmarks=train, ls=ls)
    return pytensor.function([ls, radius], cov(train[:, None]), on_unused_input="ignore")


def kernel_cost(model: str, data) -> tuple[float, float]:
    """(median ms per K(X, X) evaluation, peak MiB allocated by one)."""
    fn = _kernel_function(model, data)
    fn(1.0, INITIAL_RADIUS)
    seconds = []
    for _ in range(5):
        start = time.perf_counter()
        fn(1.0, INITIAL_RADIUS)
        seconds.append(time.perf_counter() - start)
    tracemalloc.start()
    fn(1.0, INITIAL_RADIUS)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return 1e3 * float(np.median(seconds)), peak / 2**20


def s_bar(data, radius: float) -> float:
    return float(np.mean(np.count_nonzero(data.distances.values[data.train][:, data.train]
                                          < radius, axis=1)))  # fmt: skip


def measure(model: str, size: int, draw: int) -> dict:
    with threadpool_limits(1):
        data = one_dimensional(n_train=size, n_test=100, seed=draw)
        kernel_ms, kernel_mib = kernel_cost(model, data)
        ctx = common.one_d_context(data, draw)
        start = time.perf_counter()
        pymc_model, gp, _ = build(common.one_d_spec(model), ctx)
        with pymc_model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            point = find_map(seed=draw).point
            train_s = time.perf_counter() - start
            start = time.perf_counter()
            gp.predict(ctx.X_test, point=point, diag=True, pred_noise=True)
            predict_s = time.perf_counter() - start
    row = {"model": model, "size": size, "draw": draw, "kernel_ms": kernel_ms,
           "kernel_mib": kernel_mib, "train_s": train_s, "predict_s": predict_s}  # fmt: skip
    if model == "SLE":
        row["s_bar_initial"] = s_bar(data, INITIAL_RADIUS)
        row["s_bar_fitted"] = s_bar(data, float(point["radius"]))
    return row


COLUMNS = ("kernel_ms", "kernel_mib", "train_s", "predict_s")


def summary(rows: list[dict]) -> dict:
    sizes = sorted({r["size"] for r in rows})
    out = {"sizes": sizes}
    for model in MODELS:
        entry = {}
        for column in (*COLUMNS, "s_bar_initial", "s_bar_fitted"):
            per_size = [[r[column] for r in rows if r["model"] == model and r["size"] == n
                         and column in r] for n in sizes]  # fmt: skip
            if all(per_size):
                mean = [float(np.mean(v)) for v in per_size]
                se = [float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
                      for v in per_size]  # fmt: skip
                entry[column] = {"mean": mean, "se": se}
                if column in COLUMNS:
                    entry[column]["alpha"] = common.power_law(sizes, mean)
        out[model] = entry
    return out


def figure(stats: dict, path) -> None:
    plt = common.pyplot()
    titles = {"kernel_ms": "K(X, X) evaluation (ms)", "kernel_mib": "peak allocation (MiB)",
              "train_s": "MAP training (s)", "predict_s": "prediction (s)"}  # fmt: skip
    from matplotlib.ticker import NullFormatter

    sizes = stats["sizes"]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.6))
    for ax, column in zip(axes, COLUMNS, strict=True):
        for model in MODELS:
            entry = stats[model][column]
            ax.errorbar(sizes, entry["mean"], yerr=np.nan_to_num(entry["se"]),
                        marker="o", ms=3, capsize=2,
                        label=f"{model}: N^{entry['alpha']:.2f}")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sizes[:: max(1, len(sizes) // 4)]  # a few sizes, labelled plainly
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("N (training points)")
        ax.set_title(titles[column])
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    fig.suptitle(f"mean ± standard error over {stats.get('draws', 'the')} data draws; "
                 "exponents from a power-law fit", fontsize=10)  # fmt: skip
    common.save_figure(fig, path, dpi=120)


def report(stats: dict, draws: int) -> list[str]:
    lines = [__doc__.split("\n\n", 1)[1].split("Run:")[0].strip(), "",
             f"Mean ± standard error over {draws} data draws.", ""]  # fmt: skip
    header = ["N", "model", "kernel (ms)", "peak (MiB)", "train (s)", "predict (s)", "s-bar"]
    rows = []
    for i, n in enumerate(stats["sizes"]):
        for model in MODELS:
            entry = stats[model]
            cells = [f"{entry[c]['mean'][i]:.3g} ± {entry[c]['se'][i]:.2g}" for c in COLUMNS]
            s = (f"{entry['s_bar_initial']['mean'][i]:.1f} (fitted "
                 f"{entry['s_bar_fitted']['mean'][i]:.1f})") if model == "SLE" else "-"  # fmt: skip
            rows.append([n, model, *cells, s])
    lines += [*common.markdown_rows(header, rows), "", "Exponents (t ~ N^alpha):", ""]
    lines += common.markdown_rows(
        ["model", *COLUMNS], [[m, *(stats[m][c]["alpha"] for c in COLUMNS)] for m in MODELS]
    )
    sle_last, raw_last = stats["SLE"]["kernel_ms"]["mean"][-1], stats[
        "Raw-distance embedding"]["kernel_ms"]["mean"][-1]  # fmt: skip
    matern_last = stats["Matern"]["kernel_ms"]["mean"][-1]
    lines += ["", f"At N = {stats['sizes'][-1]}, one K(X, X) costs {sle_last / matern_last:.2f} x "
              f"Matern's and {sle_last / raw_last:.2f} x the raw embedding's for SLE."]  # fmt: skip
    return lines


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0], draws=3)
    p.add_argument("--figure-only", action="store_true", help="redraw from runtime.json")
    args = p.parse_args(argv)
    if args.figure_only:
        figure(json.loads((args.out / "runtime.json").read_text()), args.out / "runtime.png")
        return
    sizes, draws = (QUICK_SIZES, 1) if args.quick else (SIZES, args.draws)
    # Sequential on purpose: timings from parallel workers would share the cores.
    rows = [measure(m, n, d) for n in sizes for d in range(draws) for m in MODELS]
    args.out.mkdir(parents=True, exist_ok=True)
    fields = ["model", "size", "draw", *COLUMNS, "s_bar_initial", "s_bar_fitted"]
    with open(args.out / "runtime.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    stats = summary(rows)
    stats["draws"] = draws
    common.write_json(args.out / "runtime.json", stats)
    common.write_markdown(args.out / "runtime.md", __doc__.splitlines()[0], report(stats, draws))
    figure(stats, args.out / "runtime.png")
    print((args.out / "runtime.md").read_text())


if __name__ == "__main__":
    main()
