"""Conditioning of the Gram matrix vs N: SLE vs the raw-distance landmark embedding (paper App. H).

On the 1-D benchmark (`pymc_sle.datasets.one_dimensional`, N uniform inputs, every training
point a landmark) this computes the 2-norm condition number kappa_2(K + s2 I) of

- ``initial``: both kernels at the paper's initial hyperparameters -- radius r = 0.15, amplitude
  1, shape 1, length scale 1, signal variance 1, Matern-3/2 inner kernel -- with the paper's
  nugget s2 = 0.01. The paper does not state the raw embedding's length scale; both use 1.
- ``optimised``: both kernels at their bounded maximum-likelihood hyperparameters (the 1-D
  reproduction's models and bounds, `benchmarks/paper/one_d.py`), with the fitted signal and
  noise variances, i.e. the matrix the likelihood actually factorises.

and the mean number of non-zeros per embedding row s-bar. Exponents alpha of kappa ~ N^alpha are
least-squares fits over the N grid (the paper: N^0.38 for SLE vs N^~1 for the raw embedding,
ratio 9.8 at N = 1000).

Run:  `python -m benchmarks.studies.conditioning [--quick] [--draws 5] [--jobs 2]`
"""

from __future__ import annotations

import csv
import warnings

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks.paper.fitting import gram
from benchmarks.paper.models import build
from benchmarks.studies import common
from pymc_sle import find_map
from pymc_sle.datasets import one_dimensional
from pymc_sle.kernels import RawLandmarkEmbedding

SIZES = (20, 35, 50, 100, 200, 350, 500, 750, 1000)
QUICK_SIZES = (20, 40)
INITIAL = {"radius": 0.15, "ls": 1.0, "nugget": 0.01}
MODELS = ("SLE", "Raw-distance embedding")


def kappa(matrix: np.ndarray) -> float:
    eigenvalues = np.linalg.eigvalsh(matrix)
    return float(eigenvalues[-1] / eigenvalues[0])


def _kernel(model: str, data, hyper: dict):
    X = data.train[:, None]
    if model == "SLE":
        cov = sle.SLE(data.distances, landmarks=data.train, radius=hyper["radius"], ls=hyper["ls"])
    else:
        cov = RawLandmarkEmbedding(data.distances, landmarks=data.train, ls=hyper["ls"])
    K = cov(X).eval()
    s_bar = float(np.count_nonzero(cov.embed(X).eval(), axis=1).mean())
    return K, s_bar


def initial(model: str, size: int, draw: int) -> dict:
    data = one_dimensional(n_train=size, n_test=2, seed=draw)
    K, s_bar = _kernel(model, data, INITIAL)
    return {"kappa": kappa(K + INITIAL["nugget"] * np.eye(size)), "s_bar": s_bar}


def optimised(model: str, size: int, draw: int) -> dict:
    data = one_dimensional(n_train=size, n_test=2, seed=draw)
    ctx = common.one_d_context(data, draw)
    pymc_model, _, cov = build(common.one_d_spec(model), ctx)
    with pymc_model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = find_map(seed=draw).point
    K = gram(pymc_model, cov, ctx.X_train, point)
    fitted = {k: float(point[k]) for k in ("radius", "ls", "noise_var") if k in point}
    row = {"kappa": kappa(K + fitted["noise_var"] * np.eye(size)), **fitted}
    if model == "SLE":
        hyper = {"radius": fitted["radius"], "ls": fitted["ls"]}
        row["s_bar"] = _kernel(model, data, hyper)[1]
    return row


def _task(setting: str, model: str, size: int, draw: int) -> dict:
    with threadpool_limits(1):
        result = (initial if setting == "initial" else optimised)(model, size, draw)
    return {"setting": setting, "model": model, "size": size, "draw": draw, **result}


def summary(rows: list[dict]) -> dict:
    out = {}
    for setting in ("initial", "optimised"):
        sizes = sorted({r["size"] for r in rows if r["setting"] == setting})
        entry = {"sizes": sizes}
        for model in MODELS:
            k = [np.mean([r["kappa"] for r in rows if (r["setting"], r["model"], r["size"])
                          == (setting, model, n)]) for n in sizes]  # fmt: skip
            entry[model] = {"kappa_mean": k, "alpha": common.power_law(sizes, k)}
            s = [[r["s_bar"] for r in rows if (r["setting"], r["model"], r["size"])
                  == (setting, model, n) and "s_bar" in r] for n in sizes]  # fmt: skip
            if all(s):
                entry[model]["s_bar_mean"] = [float(np.mean(v)) for v in s]
        raw, bump = entry["Raw-distance embedding"]["kappa_mean"], entry["SLE"]["kappa_mean"]
        entry["ratio_raw_over_sle"] = [a / b for a, b in zip(raw, bump, strict=True)]
        out[setting] = entry
    return out


def figure(rows: list[dict], stats: dict, path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    titles = {"initial": "initial hyperparameters (r = 0.15, nugget 0.01)",
              "optimised": "maximum-likelihood hyperparameters"}  # fmt: skip
    for ax, setting in zip(axes, ("initial", "optimised"), strict=True):
        sizes = stats[setting]["sizes"]
        for model in MODELS:
            values = [[r["kappa"] for r in rows if (r["setting"], r["model"], r["size"])
                       == (setting, model, n)] for n in sizes]  # fmt: skip
            mean = stats[setting][model]["kappa_mean"]
            line = ax.plot(sizes, mean, marker="o", ms=3,
                           label=f"{model}: N^{stats[setting][model]['alpha']:.2f}")  # fmt: skip
            ax.fill_between(sizes, [min(v) for v in values], [max(v) for v in values],
                            color=line[0].get_color(), alpha=0.2)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (training points = landmarks)")
        ax.set_title(titles[setting], fontsize=10)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("kappa_2(K + noise I)")
    fig.suptitle("Gram conditioning on the 1-D benchmark: mean, min-max band over draws")
    common.save_figure(fig, path, dpi=120)


def report(stats: dict) -> list[str]:
    lines = [__doc__.split("\n\n", 1)[1].split("Run:")[0].strip(), ""]
    for setting in ("initial", "optimised"):
        entry = stats[setting]
        lines += [f"## {setting} hyperparameters", ""]
        header = ["N", "kappa SLE", "kappa raw", "raw / SLE", "s-bar SLE"]
        s_bar = entry["SLE"].get("s_bar_mean", [float("nan")] * len(entry["sizes"]))
        table = [
            [n, entry["SLE"]["kappa_mean"][i], entry["Raw-distance embedding"]["kappa_mean"][i],
             entry["ratio_raw_over_sle"][i], s_bar[i]]
            for i, n in enumerate(entry["sizes"])
        ]  # fmt: skip
        lines += [*common.markdown_rows(header, table), ""]
        lines.append(
            f"Exponents: SLE N^{entry['SLE']['alpha']:.2f}, raw-distance embedding "
            f"N^{entry['Raw-distance embedding']['alpha']:.2f}; ratio at N = {entry['sizes'][-1]}:"
            f" {entry['ratio_raw_over_sle'][-1]:.3g}."
        )
        lines.append("")
    return lines


def main(argv=None) -> None:
    args = common.parser(__doc__.splitlines()[0], draws=5).parse_args(argv)
    sizes, draws = (QUICK_SIZES, 1) if args.quick else (SIZES, args.draws)
    tasks = [delayed(_task)(setting, model, n, d) for setting in ("initial", "optimised")
             for model in MODELS for n in sizes for d in range(draws)]  # fmt: skip
    rows = Parallel(n_jobs=args.jobs)(tasks)
    args.out.mkdir(parents=True, exist_ok=True)
    fields = ["setting", "model", "size", "draw", "kappa", "s_bar", "radius", "ls", "noise_var"]
    with open(args.out / "conditioning.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    stats = summary(rows)
    common.write_json(args.out / "conditioning.json", {"draws": draws, **stats})
    common.write_markdown(args.out / "conditioning.md", __doc__.splitlines()[0], report(stats))
    figure(rows, stats, args.out / "conditioning.png")
    print((args.out / "conditioning.md").read_text())


if __name__ == "__main__":
    main()
