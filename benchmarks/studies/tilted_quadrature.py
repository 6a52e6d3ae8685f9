"""Tilted quadrature: how many nodes EP's tilted moments need, and how far apart.

``sle.gp.EP`` integrates each tilted density :math:`p(y \\mid f)\\,\\mathcal N(f; \\mu, v)` by
the trapezoidal rule over the range where it lies within :math:`e^{-40}` of its mode
(``pymc_sle.gp._laplace._likelihoods.tilted_by_quadrature``). This study compares node rules
on random cavities -- means uniform on [-8, 8], variances log-uniform over three ranges (typical,
wide, extreme) -- for the logit, Binomial (20 trials) and Poisson (counts about 5, and 200)
likelihoods: the largest error of :math:`\\log Z`, of the mean (in tilted sds) and the relative
error of the variance, against the same rule with nodes 0.005 apart (at least 20,001), itself
checked against ``scipy.integrate.quad`` on a subsample; and each rule's time against the
default's, measured alternately in one run. The rules: a fixed count (``fixed N``), or at least
``min`` nodes over the range, at most ``spacing`` apart (``min / spacing``).
Writes benchmarks/results/studies/tilted_quadrature.{json,md,png}.

``--quick`` draws 60 cavities per range and checks 5 against ``quad``.

Run:  python -m benchmarks.studies.tilted_quadrature [--quick]
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy import integrate

import pymc_sle as sle
from benchmarks.studies import common
from pymc_sle.gp._laplace._likelihoods import tilted_by_quadrature

#: The likelihoods studied: name, model, counts drawn for the cavities' observations.
LIKELIHOODS = {
    "logit": (sle.gp.Bernoulli(), lambda rng, m: rng.integers(0, 2, m)),
    "binomial (20)": (sle.gp.Binomial(n=20), lambda rng, m: rng.integers(0, 21, m)),
    "poisson (about 5)": (sle.gp.Poisson(), lambda rng, m: rng.poisson(5.0, m)),
    "poisson (200)": (sle.gp.Poisson(), lambda rng, m: np.full(m, 200)),
}
#: Cavity variances, log-uniform between these bounds.
RANGES = {"typical": (0.1, 10.0), "wide": (1e-3, 400.0), "extreme": (1e-6, 1e4)}
#: Node rules: (label, min_nodes, max_spacing, max_nodes); the first is the library's default.
RULES = [
    ("81 / 0.3 (default)", 81, 0.3, 4001),
    ("fixed 161", 161, np.inf, 161),
    ("fixed 81", 81, np.inf, 81),
    ("41 / 0.3", 41, 0.3, 4001),
    ("81 / 0.5", 81, 0.5, 4001),
    ("81 / 1.0", 81, 1.0, 4001),
]
REFERENCE = (20_001, 0.005, 400_001)


def _errors(found, reference) -> dict:
    (log_z, mean, variance), (ref_z, ref_mean, ref_variance) = found, reference
    return {
        "log_z": float(np.max(np.abs(log_z - ref_z))),
        "mean_sd": float(np.max(np.abs(mean - ref_mean) / np.sqrt(ref_variance))),
        "variance": float(np.max(np.abs(variance / ref_variance - 1.0))),
    }


def _by_quad(likelihood, y, mu, v) -> tuple[float, float, float]:
    """One tilted distribution's ``(log Z, mean, variance)`` by adaptive quadrature."""
    rough = tilted_by_quadrature(likelihood, y, mu, v, ())
    centre, sd = float(rough[1][0]), float(np.sqrt(rough[2][0]))

    def log_tilted(f):
        return likelihood.log_density(y, np.array([f]))[0] - 0.5 * (f - mu[0]) ** 2 / v[0]

    top = log_tilted(centre)

    def moment(k):  # absolute tolerance on the moment's scale: the first moment is near 0
        return integrate.quad(lambda f: np.exp(log_tilted(f) - top) * (f - centre) ** k,
                              centre - 60 * sd, centre + 60 * sd, points=[centre], limit=2000,
                              epsabs=1e-13 * sd ** (k + 1), epsrel=1e-13)[0]  # fmt: skip

    z, first, second = moment(0), moment(1), moment(2)
    log_z = np.log(z) + top - 0.5 * np.log(2 * np.pi * v[0])
    return log_z, centre + first / z, second / z - (first / z) ** 2


def _rule(likelihood, y, mu, v, rule):
    _, min_nodes, spacing, most = rule
    return tilted_by_quadrature(likelihood, y, mu, v, (), min_nodes=min_nodes,
                                max_spacing=spacing, max_nodes=most)  # fmt: skip


def study(cavities: int, checked: int, repeats: int) -> dict:
    """Every rule's largest errors and time against the default's, per range and likelihood."""
    rng = np.random.default_rng(0)
    rows, reference_check = [], 0.0
    for range_name, (low, high) in RANGES.items():
        for name, (likelihood, draw) in LIKELIHOODS.items():
            y = draw(rng, cavities).astype(float)
            mu = rng.uniform(0.0 if name == "poisson (200)" else -8.0, 8.0, cavities)
            v = np.exp(rng.uniform(np.log(low), np.log(high), cavities))
            reference = _rule(likelihood, y, mu, v, ("reference", *REFERENCE))
            for i in range(checked):
                one = slice(i, i + 1)
                exact = _by_quad(likelihood, y[one], mu[one], v[one])
                error = _errors(exact, [r[one] for r in reference])
                reference_check = max(reference_check, *error.values())
            times = {rule[0]: [] for rule in RULES}
            for _ in range(repeats):  # alternately, so that the machine's load is shared
                for rule in RULES:
                    began = time.perf_counter()
                    _rule(likelihood, y, mu, v, rule)
                    times[rule[0]].append(time.perf_counter() - began)
            default = np.median(times[RULES[0][0]])
            for rule in RULES:
                errors = _errors(_rule(likelihood, y, mu, v, rule), reference)
                rows.append({"range": range_name, "likelihood": name, "rule": rule[0],
                             "time_vs_default": float(np.median(times[rule[0]]) / default),
                             **errors})  # fmt: skip
    return {"cavities": cavities, "quad_checked": checked,
            "reference_vs_quad": reference_check, "rows": rows}  # fmt: skip


def report(stats: dict) -> list[str]:
    worst = {}
    for row in stats["rows"]:
        key = (row["rule"], row["range"])
        error = max(row["log_z"], row["mean_sd"], row["variance"])
        worst[key] = max(worst.get(key, 0.0), error)
    times = {}
    for row in stats["rows"]:
        times.setdefault(row["rule"], []).append(row["time_vs_default"])
    header = ["rule", *(f"worst error, {r} cavities" for r in RANGES), "time / default (median)"]
    table = [[rule[0], *(f"{worst[(rule[0], r)]:.1e}" for r in RANGES),
              f"{np.median(times[rule[0]]):.2f}"] for rule in RULES]  # fmt: skip
    return [
        f"{stats['cavities']} random cavities per range and likelihood (module notes); the "
        "worst error is the largest of the log normaliser's absolute error, the mean's in tilted "
        "sds and the variance's relative error, over the four likelihoods. The reference (nodes "
        f"0.005 apart) is within {stats['reference_vs_quad']:.1e} of `scipy.integrate.quad` on "
        f"the {stats['quad_checked']} cavities per range and likelihood checked.",
        "",
        *common.markdown_rows(header, table),
        "",
        "Per likelihood:",
        "",
        *common.markdown_rows(
            ["range", "likelihood", "rule", "log Z", "mean (sds)", "variance (rel.)", "time"],
            [
                [
                    r["range"],
                    r["likelihood"],
                    r["rule"],
                    f"{r['log_z']:.1e}",
                    f"{r['mean_sd']:.1e}",
                    f"{r['variance']:.1e}",
                    f"{r['time_vs_default']:.2f}",
                ]
                for r in stats["rows"]
            ],
        ),
    ]


def figure(stats: dict, path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(1, len(RANGES), figsize=(12, 3.6), sharey=True)
    for ax, range_name in zip(axes, RANGES, strict=True):
        for rule in RULES:
            rows = [r for r in stats["rows"] if r["range"] == range_name and r["rule"] == rule[0]]
            errors = [max(r["log_z"], r["mean_sd"], r["variance"], 1e-16) for r in rows]
            ax.plot(range(len(rows)), errors, "o-", label=rule[0])
        ax.set_xticks(range(len(LIKELIHOODS)), list(LIKELIHOODS), rotation=20, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"{range_name} cavities {RANGES[range_name]}")
    axes[0].set_ylabel("worst error")
    axes[-1].legend(fontsize=7)
    common.save_figure(fig, path)


def main(argv=None) -> None:
    args = common.parser(__doc__.splitlines()[0]).parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        stats = study(60 if args.quick else 2000, 5 if args.quick else 40, 3 if args.quick else 7)
    args.out.mkdir(parents=True, exist_ok=True)
    common.write_json(args.out / "tilted_quadrature.json", stats)
    common.write_markdown(args.out / "tilted_quadrature.md", __doc__.splitlines()[0], report(stats))
    figure(stats, args.out / "tilted_quadrature.png")
    print((args.out / "tilted_quadrature.md").read_text())


if __name__ == "__main__":
    main()
