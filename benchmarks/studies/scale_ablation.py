"""What each scale ``sle_priors`` samples on buys: NUTS with it and without it, on the NUTS
benchmark's splits where it applies.

Each case is one benchmark split (``benchmarks.nuts_data``: the README recipe, nothing tuned)
and one of the scales ``SLEPriors.scales`` reports, sampled by ``sle.sample_basins`` with nutpie
(4 chains x (1000 + 1000), 2 cores, the benchmark's settings) twice: with the library's
defaults, and with that one scale replaced by what it replaces:

- ``quantile radius``: the radius on a log scale centred at the grid's mode, in units of its
  posterior sd (the ``centred log`` the library keeps for several basins);
- ``ls ridge``: ``ls`` on a centred log scale instead of relative to its ridge;
- ``floored ridges``: ``eta`` and ``sigma`` on centred log scales (``scale_ridges=False``);
- ``noise quantile``: the noise on its floored ridge alone (``noise_at_zero`` out of reach);
- ``radius cap``: no cap below the lighter basins above the start's (``cap_radius=False``);
- ``zoomed map``: the radius map from the fine grid alone (``map_cells=0``);
- ``search``: no search at all (``start="prior"``: PyMC's log scales and default start), on a
  split with two basins.

The basin label that lets plain ``pm.sample`` jump between basins has its own study
(``benchmarks/studies/basin_jumps.py``). Per fit: the largest r-hat, smallest bulk and tail
ESS, divergences, leapfrog steps per draw and wall time (sampling, compilation included).

Writes benchmarks/results/studies/scale_ablation.{json,md,png}.

Run:  python -m benchmarks.studies.scale_ablation [--quick] [--cases one_d:0:ls_ridge ...]
(``--cases`` runs those cases and keeps the earlier run's other rows.)
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
from pymc.model.transform.conditioning import change_value_transforms

import pymc_sle as sle
from benchmarks._paths import SHARED_DATA
from benchmarks.nuts_data import BENCHMARKS, sle_model
from benchmarks.studies import common
from pymc_sle.inference import DEFAULT_POLICY
from pymc_sle.inference._sampler import worst_values
from pymc_sle.inference._transforms import CenteredLog

#: ``benchmark:split`` and the scale whose worth the case measures.
CASES = {
    "quantile_radius": "one_d:0",
    "ls_ridge": "one_d:0",
    "floored_ridges": "strings:0",
    "zoomed_map": "strings:1",
    "noise_quantile": "teddy_200:0",
    "radius_cap": "teddy_200:0",
    "search": "strings:2",
}
#: What ``sle_priors`` is given instead of its defaults, per scale.
PRIOR_OPTIONS = {
    "floored_ridges": {"scale_ridges": False},
    "radius_cap": {"cap_radius": False},
    "zoomed_map": {"policy": dataclasses.replace(DEFAULT_POLICY, map_cells=0.0)},
    "noise_quantile": {"policy": dataclasses.replace(DEFAULT_POLICY, noise_at_zero=2.0)},
    "search": {"start": "prior"},
}


def _centred(model: pm.Model, priors, name: str, spread: float) -> pm.Model:
    """A copy of ``model`` with ``name`` on a log scale centred at its start, in units of
    ``spread`` (its posterior sd of the log under the defaults), instead of the scale
    ``sle_priors`` chose."""
    variable = priors[name]
    saved = dict(model.rvs_to_initial_values)
    start = float(saved[variable])
    model.rvs_to_initial_values.update(dict.fromkeys(saved))
    try:
        copied = change_value_transforms(model, {variable.name: CenteredLog(start, spread)})
    finally:
        model.rvs_to_initial_values.update(saved)
    free = {v.name for v in copied.free_RVs}
    for rv, value in saved.items():
        if value is not None and rv.name in free:
            copied.set_initval(copied[rv.name], value)
    return copied


def fit(bench, ctx, scale: str | None, draws: int, chains: int, defaults=None) -> dict:
    """The split's model with the defaults (``scale=None``) or without ``scale``, sampled;
    ``defaults``, the posterior under the defaults, gives a centred scale its spread."""
    offset = float(ctx.y_train.mean())
    model, _, priors, _ = sle_model(bench, ctx, offset, **PRIOR_OPTIONS.get(scale, {}))
    scales = dict(priors.scales)
    if scale in ("quantile_radius", "ls_ridge"):
        name = "radius" if scale == "quantile_radius" else "ls"
        spread = float(np.log(defaults[name].values).std())
        model = _centred(model, priors, name, spread)
        scales[name] = "centred log"
    began = time.perf_counter()
    idata = sle.sample_basins(priors, draws=draws, tune=draws, chains=chains, cores=2,
                              random_seed=1, nuts_sampler="nutpie", model=model,
                              progressbar=False)  # fmt: skip
    wall = time.perf_counter() - began
    summary = az.summary(idata, var_names=priors.var_names(model, idata), round_to="none")
    steps = idata.sample_stats.get("n_steps")
    row = {
        "variant": "defaults" if scale is None else f"without {scale.replace('_', ' ')}",
        "scales": "; ".join(f"{k}: {v}" for k, v in scales.items()),
        "basins": len(priors.basins),
        **worst_values(idata, summary),
        "steps_per_draw": None if steps is None else float(steps.mean()),
        "wall_s": wall,
    }
    return row, idata.posterior


HEADER = ["scale", "split", "variant", "scales", "r̂ max", "bulk ESS min", "tail ESS min",
          "divergences", "steps per draw", "wall (s)"]  # fmt: skip


def table(rows: list[dict]) -> list[str]:
    cells = [
        [row["scale"].replace("_", " "), row["case"], f["variant"], f["scales"],
         round(f["r_hat_max"], 3), round(f["ess_bulk_min"]), round(f["ess_tail_min"]),
         f["divergences"], "-" if f["steps_per_draw"] is None else round(f["steps_per_draw"], 1),
         round(f["wall_s"])]
        for row in rows
        for f in row["fits"]
    ]  # fmt: skip
    return common.markdown_rows(HEADER, cells)


def figure(rows: list[dict], path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.8 * len(rows)), 7), sharex=True)
    labels = [f"{r['scale'].replace('_', ' ')}\n{r['case']}" for r in rows]
    x = np.arange(len(rows))
    for ax, key, title in ((axes[0], "r_hat_max", "largest r-hat"),
                           (axes[1], "ess_bulk_min", "smallest bulk ESS")):  # fmt: skip
        for shift, k, label in ((-0.18, 0, "defaults"), (0.18, 1, "without the scale")):
            ax.bar(x + shift, [r["fits"][k][key] for r in rows], 0.34, label=label)
        ax.set_title(title)
    axes[1].set_xticks(x, labels, fontsize=7, rotation=35, ha="right")
    axes[0].axhline(1.01, color="k", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    common.save_figure(fig, path)


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=[f"{c}:{s}" for s, c in CASES.items()],
                   help="benchmark:split:scale triples")  # fmt: skip
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    args = p.parse_args(argv)
    cases = ["one_d:0:ls_ridge"] if args.quick else args.cases
    draws, chains = (40, 2) if args.quick else (1000, 4)
    built, fitted = {}, {}
    rows = [] if args.quick else _kept(args.out / "scale_ablation.json", cases)
    for case in cases:
        name, split, scale = case.split(":")
        bench = built.setdefault(name, BENCHMARKS[name](args.quick, args))
        ctx = bench.contexts(int(split) + 1)[int(split)]
        if (name, split) not in fitted:  # the defaults' fit serves every scale of its split
            fitted[name, split] = fit(bench, ctx, None, draws, chains)
        defaults, posterior = fitted[name, split]
        without, _ = fit(bench, ctx, scale, draws, chains, posterior)
        rows.append({"case": f"{name}:{split}", "scale": scale, "fits": [defaults, without]})
        print(case, [(f["variant"], round(f["r_hat_max"], 3), round(f["ess_bulk_min"]),
                      f["divergences"]) for f in (defaults, without)], flush=True)  # fmt: skip
        if not args.quick:  # after every case, so a run stopped early keeps what it measured
            _write(rows, draws, chains, args)
    _write(rows, draws, chains, args)


def _kept(path: Path, cases: list[str]) -> list[dict]:
    """The earlier full run's rows for the cases not run now (``--cases`` reruns some, adds
    others, and keeps the rest)."""
    if not path.exists():
        return []
    earlier = json.loads(path.read_text())
    return [r for r in earlier["cases"] if f"{r['case']}:{r['scale']}" not in cases]


def _write(rows: list[dict], draws: int, chains: int, args) -> None:
    rows.sort(key=lambda r: (list(CASES).index(r["scale"]), r["case"]))
    settings = {"draws": draws, "chains": chains, "quick": args.quick}
    common.write_json(args.out / "scale_ablation.json", {"settings": settings, "cases": rows})
    intro = (
        "Generated by `python -m benchmarks.studies.scale_ablation`: on the NUTS benchmark's "
        "splits where each scale applies, `sample_basins` with nutpie "
        f"({chains} chains x ({draws} + {draws}), 2 cores) on the library's defaults and with "
        "that one scale replaced by what it replaces (the script's docstring says what). r̂ and "
        "ESS are the worst over `priors.var_names(model)`."
    )
    common.write_markdown(args.out / "scale_ablation.md", "What each sampled scale buys",
                          [intro, "", *table(rows), "",
                           "![r-hat and bulk ESS per case](scale_ablation.png)"])  # fmt: skip
    figure(rows, args.out / "scale_ablation.png")


if __name__ == "__main__":
    main()
