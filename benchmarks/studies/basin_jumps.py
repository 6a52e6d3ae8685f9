"""Plain ``pm.sample`` on multi-basin radius posteriors: basin jumps against ``sample_basins``
and a brute-force grid.

On the NUTS benchmark's splits whose radius posterior has basins outside the start's holding
more than 1 % of the grid's mass (``--cases``; default strings split 2, SAXS splits 0 and 2),
the README recipe's model (:func:`benchmarks.nuts_data.sle_model`) is sampled three ways, 4
chains, 2 cores, seed 1:

- ``pm.sample`` as a user types it (PyMC's defaults, 1000 tune + 1000 draws): ``sle_priors``'
  basin label moves the radius between basins by Gibbs-Metropolis steps
  (``pymc_sle.inference._basins``);
- ``sle.sample_basins(priors)`` (PyMC's NUTS, 1000 + 1000): each basin apart, pooled
  by the grid's masses;
- ``pm.sample_smc`` (1000 particles per chain, PyMC's IMH kernel) on the same model built with
  ``sle_priors(..., start="prior")``: no initial values, which PyMC's SMC would copy into every
  particle, and no changes of variable.

Each basin's share of the draws is compared with a brute-force grid posterior of the same
model (:func:`reference_masses`): a wide pass over the priors' whole range (radius and length
scale 5 prior sd either side of their medians, ``eta`` and ``sigma`` over ``[1e-6, 12] *
std(y)``; 48 x 64 x 40 x 40 cells), then a fine one over its mass range (64 x 96 x 48 x 48);
within the radius cap where there is one. The basins are the radius intervals the label uses
(cut halfway, geometrically, between neighbouring basins' outermost grid cells).
``--reference-only`` recomputes the references of the cases in the JSON file, keeping their
samplers' results.

Writes benchmarks/results/studies/basin_jumps.{json,md,png}.

Run:  python -m benchmarks.studies.basin_jumps [--quick]
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

from benchmarks._paths import SHARED_DATA
from benchmarks.nuts_data import BENCHMARKS, sle_model
from benchmarks.studies import common
from pymc_sle import sample_basins
from pymc_sle.inference import DEFAULT_POLICY, grid_posterior
from pymc_sle.inference._basins import BasinJump, cuts
from pymc_sle.inference._bounds import target_scale
from pymc_sle.inference._sampler import worst_values

CASES = ("strings:2", "saxs:0", "saxs:2")
REFERENCE = {"width": 5.0, "n_radius": 48, "n_ls": 64, "wide_scale": 40, "fine_radius": 64,
             "fine_ls": 96, "fine_eta": 48, "fine_sigma": 48}  # fmt: skip
QUICK_REFERENCE = {"width": 5.0, "n_radius": 8, "n_ls": 8, "wide_scale": 8, "fine_radius": 8,
                   "fine_ls": 8, "fine_eta": 6, "fine_sigma": 6}  # fmt: skip
LABELS = {"plain": "pm.sample, basin jumps", "basins": "sample_basins",
          "smc": "pm.sample_smc, start='prior'"}  # fmt: skip
HEADER = ["split", "sampler", "reference", "grid weights", "share of draws", "per chain",
          "switches / 1,000", "r̂ max", "bulk ESS", "tail ESS", "divergences",
          "wall (s)"]  # fmt: skip


def reference_masses(D, n, y, inner: str, cuts, cap, cells: dict) -> tuple[list, dict]:
    """The brute-force grid's mass in each basin interval (within ``cap``), in two passes: a
        wide one over the priors' whole range (radius and length scale ``width`` prior sds either
        side of their medians, ``eta`` and ``sigma`` over ``[1e-6, 12] * std(y)``: the HalfNormal
    prior's density falls by ``e**-72`` there), then a fine one
        over the wide pass's mass range of every axis (all but 1e-6 of it). Also the mass the wide
        pass puts in each axis's end cells (small: its axes hold the posterior)."""
    rows = np.arange(n)
    scales = np.geomspace(1e-6, 12.0, cells["wide_scale"]) * target_scale(y)
    wide = grid_posterior(D, rows, y, inner=inner, width=cells["width"], eta=scales,
                          sigma=scales, n_radius=cells["n_radius"], n_ls=cells["n_ls"])  # fmt: skip
    axes = ("radius", "ls", "eta", "sigma")
    edges = {name: float(wide.marginal(name)[[0, -1]].max()) for name in axes}
    fine = {n: np.geomspace(*wide.mass_range(n, 1e-6), cells[f"fine_{n}"]) for n in axes}
    grid = grid_posterior(D, rows, y, inner=inner, **fine)
    marginal = grid.marginal("radius")
    if cap is not None:
        marginal = np.where(grid.radius < cap, marginal, 0.0)
    masses = np.bincount(np.searchsorted(cuts, grid.radius), marginal, len(cuts) + 1)
    return (masses / masses.sum()).tolist(), edges


def shares(idata, cuts) -> tuple[np.ndarray, np.ndarray, float]:
    """Each basin's share of the draws, pooled and per chain ``(chains, basins)``, and the basin
    switches per 1,000 draws."""
    basin = np.searchsorted(cuts, idata.posterior["radius"].values)
    per_chain = np.stack([np.bincount(c, minlength=len(cuts) + 1) / c.size for c in basin])
    switches = 1000 * float(np.mean(basin[:, 1:] != basin[:, :-1]))
    return per_chain.mean(axis=0).tolist(), per_chain, switches


def setup(bench, ctx, cells: dict) -> tuple:
    """The README recipe's model on one split, and the row of its basins and reference."""
    offset = float(ctx.y_train.mean())
    model, _, priors, _ = sle_model(bench, ctx, offset)
    basins = sorted((b for b in priors.basins if b.mass >= DEFAULT_POLICY.min_basin_mass),
                    key=lambda b: b.radius)  # fmt: skip
    meeting = cuts(basins)
    row = {"benchmark": bench.name, "split": ctx.trial.draw, "n": ctx.n_train,
           "jumps": isinstance(model.rvs_to_transforms[priors["radius"]], BasinJump),
           "basin_radius": [b.radius for b in basins], "cap": priors.radius_cap}  # fmt: skip
    row["reference"], row["reference_edge_mass"] = reference_masses(
        ctx.landmark[bench.kind], ctx.n_train, ctx.y_train - offset, bench.inner, meeting,
        priors.radius_cap, cells,
    )  # fmt: skip
    return offset, model, priors, meeting, row


def run_case(bench, ctx, draws: int, chains: int, cells: dict) -> dict:
    offset, model, priors, cuts, row = setup(bench, ctx, cells)
    common = dict(draws=draws, tune=draws, chains=chains, cores=2, random_seed=1,
                  progressbar=False, model=model)  # fmt: skip
    plain_model, _, plain_priors, _ = sle_model(bench, ctx, offset, start="prior")
    runs = {
        "plain": lambda: pm.sample(**common),
        "basins": lambda: sample_basins(priors, **common),
        "smc": lambda: pm.sample_smc(
            draws=draws, chains=chains, cores=2, random_seed=1, progressbar=False, model=plain_model
        ),
    }
    for name, sample in runs.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = sample()
        wall = time.perf_counter() - start
        mean, per_chain, switches = shares(idata, cuts)
        names = (
            priors.var_names(model, idata)
            if name != "smc"
            else plain_priors.var_names(plain_model, idata)
        )
        summary = az.summary(idata, var_names=names, round_to="none")
        worst = worst_values(idata, summary)
        row[name] = {"wall_s": wall, "share": mean,
                     "chain_share_min": per_chain.min(axis=0).tolist(),
                     "chain_share_max": per_chain.max(axis=0).tolist(),
                     "switches_per_1000": switches,
                     **{k: worst[k] for k in ("r_hat_max", "ess_bulk_min", "ess_tail_min",
                                              "divergences")}}  # fmt: skip
        if name == "basins":
            row["grid_weights"] = list(idata.posterior.attrs.get("basin_weight", [1.0]))
        if name == "smc":
            evidence = idata.sample_stats["log_marginal_likelihood"].values
            row[name]["log_evidence"] = [float(np.asarray(c[-1]).ravel()[-1]) for c in evidence]
    return row


def _shares(values) -> str:
    return " / ".join(f"{v:.3f}" for v in values)


def report(rows: list[dict], settings: dict) -> list[str]:
    table = []
    for r in rows:
        for name, label in LABELS.items():
            fit = r[name]
            table.append([
                f"{r['benchmark']} {r['split']} (n = {r['n']})", label, _shares(r["reference"]),
                _shares(r["grid_weights"]) if name == "basins" else "",
                _shares(fit["share"]),
                f"{_shares(fit['chain_share_min'])} .. {_shares(fit['chain_share_max'])}",
                round(fit["switches_per_1000"], 1), round(fit["r_hat_max"], 3),
                round(fit["ess_bulk_min"]), round(fit["ess_tail_min"]), fit["divergences"],
                round(fit["wall_s"]),
            ])  # fmt: skip
    return [
        f"**What holds today.** {_verdict(rows)}",
        "",
        f"Method: `benchmarks/studies/basin_jumps.py` (its docstring); {settings['chains']} "
        f"chains x ({settings['draws']} + {settings['draws']}) per NUTS run, "
        f"{settings['draws']} particles per SMC chain. Basins "
        "in order of radius; `reference`: the brute-force grid's masses; shares per chain: "
        "lowest .. highest; switches: draws whose basin differs from the previous one's. The "
        "reference's wide pass puts at most "
        f"{max(max(r['reference_edge_mass'].values()) for r in rows):.2g} of the mass in an end "
        "cell of any axis.",
        "",
        *common.markdown_rows(HEADER, table),
        "",
        "![Basin masses](basin_jumps.png)",
    ]


def figure(rows: list[dict], path: Path) -> None:
    """Each case's basin masses: the brute-force grid's, and the two samplers' shares."""
    fig, axes = common.pyplot().subplots(1, len(rows), figsize=(4 * len(rows), 3.2), squeeze=False)
    for ax, r in zip(axes[0], rows, strict=True):
        x = np.arange(len(r["reference"]))
        bars = (
            ("reference", r["reference"]),
            ("pm.sample, jumps", r["plain"]["share"]),
            ("sample_basins", r["basins"]["share"]),
            ("pm.sample_smc", r["smc"]["share"]),
        )
        for i, (label, values) in enumerate(bars):
            ax.bar(x + (i - 1.5) * 0.2, values, 0.2, label=label)
        ax.set_xticks(x, [f"r ~ {radius:.3g}" for radius in r["basin_radius"]])
        ax.set_title(f"{r['benchmark']} split {r['split']} (n = {r['n']})")
        ax.set_ylabel("posterior mass")
    axes[0][0].legend(fontsize=8)
    common.save_figure(fig, path)


def _verdict(rows: list[dict]) -> str:
    parts = []
    for name, label in LABELS.items():
        error = max(np.abs(np.subtract(r[name]["share"], r["reference"])).max() for r in rows)
        r_hat = max(r[name]["r_hat_max"] for r in rows)
        parts.append(f"{label} {error:.3f} (largest r̂ {r_hat:.3f})")
    head = "Largest error of a basin's share against the brute-force grid: "
    return head + "; ".join(parts) + "."


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), help="benchmark:split pairs")
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--reference-only", action="store_true",
                   help="recompute the JSON's references, keep its fits")  # fmt: skip
    args = p.parse_args(argv)
    cases = ["strings:0"] if args.quick else args.cases
    draws, chains, cells = (40, 2, QUICK_REFERENCE) if args.quick else (1000, 4, REFERENCE)
    path = args.out / "basin_jumps.json"
    kept = json.loads(path.read_text())["cases"] if args.reference_only else []
    if kept:
        cases = [f"{row['benchmark']}:{row['split']}" for row in kept]
    rows = []
    for i, case in enumerate(cases):
        name, split = case.split(":")
        bench = BENCHMARKS[name](args.quick, args)
        ctx = bench.contexts(int(split) + 1)[int(split)]
        if kept:
            rows.append(kept[i] | setup(bench, ctx, cells)[-1])
            continue
        rows.append(run_case(bench, ctx, draws, chains, cells))
        print(f"{case}: reference {_shares(rows[-1]['reference'])}, plain "
              f"{_shares(rows[-1]['plain']['share'])}, basins "
              f"{_shares(rows[-1]['basins']['share'])}")  # fmt: skip
    settings = {"draws": draws, "chains": chains, "reference": cells, "quick": args.quick}
    common.write_json(path, {"settings": settings, "cases": rows})
    figure(rows, args.out / "basin_jumps.png")
    common.write_markdown(args.out / "basin_jumps.md", "Basin jumps: plain pm.sample across radius "
                   "basins", report(rows, settings))  # fmt: skip


if __name__ == "__main__":
    main()
