"""How far a perfectly calibrated model's PICP strays on the NUTS benchmark's Teddy splits.

The NUTS benchmark (``benchmarks/nuts_convergence.py``) checks that every split's 95 % PICP lies in
[0.92, 0.97]. One split's PICP is one draw: its test values share one latent field, so their
misses are correlated, and even the model that generated the data lands outside the band on some
splits. On Teddy the generator is known -- one draw of a Matérn GP on the mesh
(``benchmarks.paper.teddy.FIELD``: every Laplace--Beltrami eigenpair, the normalisation of
``pymc_sle.datasets.matern_field``) observed with noise -- so this study computes, on the
benchmark's own splits (n = 200 and 400 training vertices, the same 400 test vertices):

- ``oracle on the data``: the PICP of the exact GP posterior under the generating kernel and its
  true hyperparameters (``y_test ~ N(mu, var + noise_sd**2)``) on the benchmark's observed values;
- ``oracle over redraws``: the same intervals' PICP on fields and noise redrawn from the generator
  at the same vertices (one redraw serves every split, as the benchmark's splits share one
  field): its 5-95 % range and the probability that it lies in the band, per split, on all three
  splits of a training size, and on all six;
- the benchmark's SLE (current default, nutpie) and baseline PICP on each split, read from
  ``benchmarks/results/nuts_convergence.csv`` where it has them, and the probability that the
  oracle covers as little (or as much) on a redraw: how surprising each miss would be for a
  calibrated model.

For comparison, the probability of the band for 400 *independent* test errors (binomial), which
correlated errors widen. Writes benchmarks/results/studies/picp_spread.{json,md,png}.

Run:  python -m benchmarks.studies.picp_spread [--quick] [--mesh PATH] [--draws 4000]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from benchmarks import nuts_convergence
from benchmarks._paths import RESULTS, SHARED_DATA
from benchmarks.paper import teddy
from benchmarks.studies.common import (
    markdown_rows,
    parser,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.kernels.spectral import laplace_beltrami, matern_spectrum

SIZES = (200, 400)
LEVEL = 0.95
LOW, HIGH = nuts_convergence.PICP_RANGE


def generator_covariance(mesh) -> tuple[np.ndarray, np.ndarray]:
    """The generating field's eigenvectors scaled by its prior sd per eigenpair (``B``, so that
    ``f = B @ z`` with ``z ~ N(0, I)``), and its covariance ``B @ B.T``."""
    with threadpool_limits(limits=1, user_api="blas"):
        pairs = laplace_beltrami(mesh.vertices, mesh.faces, mesh.n_vertices)
    weights = matern_spectrum(pairs.eigenvalues, ls=teddy.FIELD["ls"], nu=teddy.FIELD["nu"])
    scaled = teddy.FIELD["sd"] * pairs.eigenvectors * np.sqrt(weights)
    return scaled, scaled @ scaled.T


def oracle(cov: np.ndarray, train: np.ndarray, test: np.ndarray, noise_sd: float):
    """The exact GP posterior's predictive at ``test`` given noisy values at ``train``: the
    weights ``A`` with ``mu = A.T @ y_train`` and the predictive sd (noise included)."""
    k_train = cov[np.ix_(train, train)] + noise_sd**2 * np.eye(train.size)
    k_cross = cov[np.ix_(test, train)]
    weights = np.linalg.solve(k_train, k_cross.T)
    var = np.diag(cov)[test] - np.einsum("ij,ji->i", k_cross, weights) + noise_sd**2
    return weights, np.sqrt(var)


def picp(y_test: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """The share of test values within the central ``LEVEL`` interval (last axis)."""
    half = stats.norm.ppf(0.5 + LEVEL / 2) * sd
    return np.mean(np.abs(y_test - mu) <= half, axis=-1)


def benchmark_picp(csv_path: Path, name: str, n_train: int) -> dict[str, dict[int, float]]:
    """``{"SLE": {split: picp}, "baseline": {...}}`` from the NUTS benchmark's current fits."""
    out = {"SLE": {}, "baseline": {}}
    if not csv_path.exists():
        return out
    for row in nuts_convergence.read_rows(csv_path):
        if row["benchmark"] != name or row["n_train"] != n_train:
            continue
        if not nuts_convergence.is_current(row):
            continue
        if row["model"] != "SLE":
            out["baseline"][int(row["split"])] = row["picp"]
        elif row["sampler"] == "nutpie":
            out["SLE"][int(row["split"])] = row["picp"]
    return out


def tail_probability(redraws: np.ndarray, value: float) -> float:
    """How often a redraw's PICP is as far from the band's side ``value`` lies on: below the
    band, ``P(PICP <= value)``; above it, ``P(PICP >= value)``; inside it, ``nan``."""
    if value < LOW:
        return float(np.mean(redraws <= value))
    if value > HIGH:
        return float(np.mean(redraws >= value))
    return float("nan")


def figure(results: dict, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), sharey=True)
    for ax, (name, result) in zip(np.atleast_1d(axes), results.items(), strict=True):
        splits = result["splits"]
        ax.axhspan(LOW, HIGH, color="0.9", label="target band")
        ax.violinplot([s["redraws"] for s in splits], positions=range(len(splits)),
                      showextrema=False)  # fmt: skip
        for key, marker, colour, label in (
            ("oracle", "o", "k", "oracle on the data"),
            ("sle", "s", "tab:red", "SLE (benchmark)"),
            ("baseline", "^", "tab:blue", "baseline (benchmark)"),
        ):
            points = [(i, s[key]) for i, s in enumerate(splits) if s[key] is not None]
            if points:
                ax.plot(*zip(*points, strict=True), marker, color=colour, label=label)
        ax.set_xticks(range(len(splits)), [f"split {s['split']}" for s in splits])
        ax.set_title(f"{name}: n = {result['n_train']}, {result['n_test']} test vertices")
    axes = np.atleast_1d(axes)
    axes[0].set_ylabel(f"{LEVEL:.0%} PICP (violins: the oracle over redrawn fields)")
    axes[0].legend(loc="lower left", fontsize=8)
    save_figure(fig, path)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _fmt_share(value: float | None, draws: int) -> str:
    """A share of ``draws`` redraws; none of them is written as below one in ``draws``."""
    return f"< {1 / draws:.5f}" if value == 0.0 else _fmt(value, 4)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0], draws=4000)
    p.add_argument("--mesh", default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument(
        "--results",
        type=Path,
        default=RESULTS / "nuts_convergence.csv",
        help="the NUTS benchmark's results, for SLE's and the baseline's PICP",
    )
    args = p.parse_args(argv)
    draws, n_splits = (200, 1) if args.quick else (args.draws, nuts_convergence.N_SPLITS)
    problem, field = teddy.problem(args.mesh, n_test=60 if args.quick else teddy.N_TEST)
    scaled, cov = generator_covariance(field.mesh)
    if not np.isclose(np.mean(np.diag(cov)), teddy.FIELD["sd"] ** 2, rtol=1e-6):
        raise RuntimeError("the generator's prior variance does not average sd**2")
    rng = np.random.default_rng(0)
    noise_sd = field.noise_sd
    redrawn = rng.standard_normal((draws, scaled.shape[1])) @ scaled.T
    redrawn += noise_sd * rng.standard_normal(redrawn.shape)
    results, all_in_band = {}, np.ones(draws, bool)
    for size in SIZES:
        bench = nuts_convergence.teddy_benchmark(size, problem, args.quick)
        name = bench.name
        measured = benchmark_picp(args.results, name, bench.size)
        splits, in_band = [], np.ones(draws, bool)
        for ctx in bench.contexts(n_splits):
            train, test = ctx.points[: ctx.n_train], ctx.points[ctx.n_train :]
            weights, sd = oracle(cov, train, test, noise_sd)
            redraws = picp(redrawn[:, test], redrawn[:, train] @ weights, sd)
            split_in_band = (redraws >= LOW) & (redraws <= HIGH)
            in_band &= split_in_band
            split = ctx.trial.draw
            sle, baseline = measured["SLE"].get(split), measured["baseline"].get(split)
            splits.append({
                "split": split,
                "oracle": float(picp(field.y[test], field.y[train] @ weights, sd)),
                "redraws": redraws,  # for the figure; the JSON keeps its summaries
                "redraw_mean": float(redraws.mean()),
                "redraw_q05": float(np.quantile(redraws, 0.05)),
                "redraw_q95": float(np.quantile(redraws, 0.95)),
                "p_in_band": float(split_in_band.mean()),
                "p_below": float(np.mean(redraws < LOW)),
                "p_above": float(np.mean(redraws > HIGH)),
                "sle": sle, "baseline": baseline,
                "sle_tail": None if sle is None else tail_probability(redraws, sle),
            })  # fmt: skip
            print(f"{name} split {split}: oracle {splits[-1]['oracle']:.4f}, "
                  f"P(in band) {splits[-1]['p_in_band']:.3f}", flush=True)  # fmt: skip
        all_in_band &= in_band
        n_test = int(test.size)
        binomial = stats.binom(n_test, 1 - LEVEL)  # misses among independent errors
        results[name] = {
            "n_train": bench.size, "n_test": n_test, "splits": splits,
            "p_all_splits_in_band": float(in_band.mean()),
            "p_in_band_independent": float(
                binomial.cdf(np.floor((1 - LOW) * n_test + 1e-9))
                - binomial.cdf(np.ceil((1 - HIGH) * n_test - 1e-9) - 1)
            ),
        }  # fmt: skip
    settings = {"draws": draws, "splits": n_splits, "band": [LOW, HIGH], "field": teddy.FIELD}
    figure(results, args.out / "picp_spread.png")
    for result in results.values():
        for split in result["splits"]:
            del split["redraws"]
    write_json(args.out / "picp_spread.json", {
        "settings": settings, "p_all_in_band": float(all_in_band.mean()), **results,
    })  # fmt: skip
    table = markdown_rows(
        ["benchmark, split", "oracle on the data", "oracle over redraws: 5-95 %",
         "P(in band)", "P(below 0.92)", "P(above 0.97)", "SLE (benchmark)",
         "P(oracle as far out as SLE)", "baseline (benchmark)"],
        [[f"{name}, split {s['split']}", _fmt(s["oracle"]),
          f"{s['redraw_q05']:.3f}-{s['redraw_q95']:.3f}", _fmt(s["p_in_band"]),
          _fmt(s["p_below"]), _fmt(s["p_above"]), _fmt(s["sle"]), _fmt_share(s["sle_tail"], draws),
          _fmt(s["baseline"])]
         for name, r in results.items() for s in r["splits"]],
    )  # fmt: skip
    summary = markdown_rows(
        ["benchmark", "P(every split in band)", "P(in band), independent errors, per split"],
        [[name, _fmt(r["p_all_splits_in_band"]), _fmt(r["p_in_band_independent"])]
         for name, r in results.items()],
    )  # fmt: skip
    write_markdown(
        args.out / "picp_spread.md",
        "PICP of the generating model on the Teddy splits",
        [
            "Generated by `python -m benchmarks.studies.picp_spread`. The exact GP posterior "
            "under the field's generating Matérn kernel and true hyperparameters (the oracle), "
            f"on the NUTS benchmark's {n_splits} Teddy split{'s' * (n_splits > 1)} per "
            "training size; "
            f"{draws} redraws of field and noise at the same vertices, one redraw shared by "
            f"every split. Band: [{LOW}, {HIGH}]. `P(oracle as far out as SLE)`: the share of "
            "redraws on which the oracle covers as little as SLE did (as much, above the band); "
            "`-` where SLE is in the band or the benchmark has no such fit. What the script "
            "does: see its docstring.",
            "",
            *table,
            "",
            *summary,
            "",
            f"P(all {len(SIZES) * n_splits} splits in band) for the oracle: "
            f"{all_in_band.mean():.3f}.",
            "",
            "![PICP of the oracle over redraws, with the benchmark's](picp_spread.png)",
        ],
    )


if __name__ == "__main__":
    main()
