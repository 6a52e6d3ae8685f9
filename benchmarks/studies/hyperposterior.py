"""The SLE hyperparameter posterior on a grid: radius modes, their mass, and where NUTS sits.

For the model the README recommends -- ``sle_priors`` (LogNormal radius and length scale between
data-adaptive bounds, HalfNormal signal and noise) and ``eta**2 * SLE(...)`` with a zero mean --
the joint posterior of (radius, ls, eta, sigma) is evaluated on a full grid
(``pymc_sle.inference.grid_posterior``: one eigendecomposition per (radius, ls), every
(eta, sigma) from it), so its marginals are exact up to the grid's resolution. Per problem and
training split it reports the radius basins and the mass each holds, the profile log likelihood
over radius x ls, and the two degenerate regions: below the smallest training distance every
embedding is one-hot, and far above the largest the bump is nearly flat over the data.

With ``--nuts`` the first release's README recipe (``start="prior"``: chains start at the prior
medians, jittered) is also sampled, 4 chains x (500 + 500) with one BLAS thread per chain, on the
first split of each problem, and each chain's radius draws are drawn over the grid marginal:
where chains get stuck.

Problems (the paper reproduction's data and splits): Teddy (Matern-5/2 GP draw, n = 200 and 400,
Matern-5/2 inner), 1-D (n = 50, Matern-3/2), the bunny's geodesic sine (n = 400, Matern-3/2),
SAXS images with exact W2 (n = 250, Matern-5/2; the W2 matrix is cached under ``--cache``) and
evolving sequences with the edit distance (n = 200, Matern-3/2; ``benchmarks.nuts_data``'s
string benchmark). ``--problems`` recomputes some of them and keeps the others' results, so the
study runs in pieces; each run draws its own ``--figure``.

Run:  `python -m benchmarks.studies.hyperposterior [--quick] [--nuts] [--problems teddy one_d]`
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks._paths import SHARED_DATA
from benchmarks.paper.problem import Problem
from benchmarks.studies import common
from pymc_sle.inference import GridPosterior, grid_posterior


@dataclass
class Case:
    """One problem at one training size: its data, inner kernel and splits."""

    name: str
    inner: str
    splits: list[tuple[np.ndarray, np.ndarray]]  # (training distances n x n, y)


def _cases_from(problem: Problem, kind: str, inner: str, sizes, n_splits: int, label: str):
    cases = []
    for size in sizes:
        splits = []
        for trial in problem.trials([size], n_splits, seed=0):  # the reproduction's draws
            D = problem.distances(trial.train, trial.train, kind)
            y = problem.y[trial.train]
            splits.append((np.asarray(D), y - y.mean()))  # centred: the recipe has a zero mean
        cases.append(Case(f"{label}, n = {size}", inner, splits))
    return cases


def teddy_cases(mesh: Path, quick: bool, n_splits: int) -> list[Case]:
    from benchmarks.paper import teddy

    problem, _ = teddy.problem(mesh, n_test=60 if quick else teddy.N_TEST)
    sizes = (40,) if quick else (200, 400)
    return _cases_from(problem, "geodesic", "matern52", sizes, n_splits, "Teddy")


def one_d_cases(quick: bool, n_splits: int) -> list[Case]:
    from benchmarks.paper import one_d

    sizes = (20,) if quick else (50,)
    return _cases_from(one_d.problem(), "euclidean", "matern32", sizes, n_splits, "1-D")


def bunny_cases(mesh: Path, quick: bool, n_splits: int) -> list[Case]:
    from pymc_sle.datasets import geodesic_sine_field
    from pymc_sle.distances import geodesic

    field = geodesic_sine_field(mesh, oscillations=3.0)
    vertices, faces = field.mesh.vertices, field.mesh.faces
    order = np.random.default_rng(11).permutation(field.mesh.n_vertices)  # as the reproduction
    n_test = 60 if quick else 5000
    problem = Problem(
        "bunny",
        field.y,
        np.sort(order[:n_test]),
        np.sort(order[n_test:]),
        lambda points, cols, kind: geodesic(vertices, faces, rows=points, cols=cols).values,
    )
    sizes = (40,) if quick else (400,)
    return _cases_from(problem, "geodesic", "matern32", sizes, n_splits, "Bunny")


def saxs_cases(quick: bool, n_splits: int, cache: Path) -> list[Case]:
    from benchmarks.paper import saxs

    sizes = (40,) if quick else (250,)
    problem = saxs.problem(quick, cache)
    return _cases_from(problem, "W2", "matern52", sizes, n_splits, "SAXS (exact W2)")


def strings_cases(quick: bool, n_splits: int, cache: Path) -> list[Case]:
    from benchmarks.nuts_data import strings_problem

    sizes = (30,) if quick else (200,)
    problem = strings_problem(quick, cache)
    return _cases_from(problem, "edit", "matern32", sizes, n_splits, "Strings (edit distance)")


def sample_readme_recipe(D: np.ndarray, y: np.ndarray, inner: str, draws: int, start: str):
    """The README recipe with ``sle_priors(start=start)``, sampled by PyMC's NUTS (4 chains, one
    BLAS thread each): the radius draws (chain, draw) and the convergence diagnostics."""
    import pymc as pm
    from threadpoolctl import threadpool_limits

    import pymc_sle as sle
    from pymc_sle.evaluation import convergence

    rows = np.arange(y.size)
    with pm.Model(), threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priors = sle.sle_priors(D, rows, y, inner=inner, start=start)
        cov = priors["eta"] ** 2 * sle.SLE(D, radius=priors["radius"], ls=priors["ls"], inner=inner)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=rows[:, None], y=y, sigma=priors["sigma"])
        idata = pm.sample(
            draws, tune=draws, chains=4, cores=2, random_seed=1, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    _, diagnostics = convergence(idata, ["radius", "ls", "eta", "sigma"])
    return idata.posterior["radius"].values, diagnostics


def refined_grid(
    D: np.ndarray, y: np.ndarray, inner: str, sizes: dict
) -> tuple[GridPosterior, GridPosterior]:
    """A coarse grid over the priors' range, then a grid as fine over where its mass lies."""
    rows = np.arange(y.size)
    coarse = grid_posterior(D, rows, y, inner=inner, **sizes)
    n_radius, n_ls = sizes.get("n_radius", 40), sizes.get("n_ls", 40)
    radius = np.geomspace(*coarse.mass_range("radius"), n_radius)
    ls = np.geomspace(*coarse.mass_range("ls"), n_ls)
    fine = grid_posterior(
        D, rows, y, inner=inner, radius=radius, ls=ls, n_scale=sizes.get("n_scale", 32)
    )
    return coarse, fine


def radius_profile(
    D: np.ndarray, y: np.ndarray, inner: str, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The log likelihood maximised over (ls, eta, sigma) at ``n`` radii across the radius
    prior's central 99.9 %: how rough the landscape a sampler walks is."""
    grid = grid_posterior(D, np.arange(y.size), y, inner=inner, n_radius=n, n_ls=24, n_scale=12)
    return grid.radius, grid.profile_log_likelihood.max(axis=1)


def summarise_grid(grid: GridPosterior) -> dict:
    p = grid.marginal("radius")
    cdf = np.cumsum(p)
    profile = np.unravel_index(
        np.argmax(grid.profile_log_likelihood), grid.profile_log_likelihood.shape
    )
    return {
        "modes": [vars(m) for m in grid.radius_modes()],
        "radius_median": float(grid.radius[np.searchsorted(cdf, 0.5)]),
        "radius_below_nearest_neighbour": float(p[grid.radius <= grid.nearest_neighbour].sum()),
        "nearest_neighbour": grid.nearest_neighbour,
        "profile_max": {"radius": float(grid.radius[profile[0]]), "ls": float(grid.ls[profile[1]])},
    }


def figure(panels: list[dict], path: Path) -> None:
    plt = common.pyplot()
    fig, axes = plt.subplots(len(panels), 3, figsize=(18, 3.8 * len(panels)), squeeze=False)
    for panel, (left, middle, right) in zip(panels, axes, strict=True):
        label, coarse, fine = panel["label"], panel["coarse"], panel["fine"]
        profile = coarse.profile_log_likelihood
        shown = np.maximum(profile, profile.max() - 60.0)
        image = left.pcolormesh(coarse.radius, coarse.ls, shown.T, shading="nearest")
        fig.colorbar(image, ax=left, label="log likelihood, max over eta and sigma")
        joint = coarse.joint_with_radius("ls")
        left.contour(coarse.radius, coarse.ls, joint.T, levels=[joint.max() * 0.05],
                     colors="w", linewidths=0.8)  # fmt: skip
        left.set(xscale="log", yscale="log", xlabel="radius (distance units)",
                 ylabel="ls (embedding-distance units)")  # fmt: skip
        left.set_title(f"(a) {label}: profile log likelihood over the priors' range\n"
                       "white: posterior at 5 % of its peak", fontsize=9)  # fmt: skip
        radii, best = panel["profile"]
        middle.plot(radii, best - best.max(), color="k", lw=0.8)
        for median in panel.get("chains_medians", []):
            middle.axvline(median, color="tab:orange", lw=0.8, ls="--")
        middle.axvline(coarse.nearest_neighbour, color="r", ls=":")
        middle.set(xscale="log", xlabel="radius (distance units)",
                   ylabel="log likelihood - max (over ls, eta, sigma)",
                   ylim=(max(best.min() - best.max(), -80), 5))  # fmt: skip
        middle.set_title(f"(b) {label}: profile over {radii.size} radii\n"
                         "orange dashes: NUTS chain medians; red dots: smallest distance",
                         fontsize=9)  # fmt: skip
        p = fine.marginal("radius")
        right.plot(fine.radius, p / np.gradient(np.log(fine.radius)), color="k",
                   label="grid posterior (refined)")  # fmt: skip
        chains = panel.get("chains")
        if chains is not None:
            bins = np.geomspace(
                min(fine.radius[0], chains.min()), max(fine.radius[-1], chains.max()), 50
            )
            per_draw = 1.0 / (chains.shape[1] * np.log(bins[1] / bins[0]))  # density of log r
            for c, draws in enumerate(chains):
                right.hist(draws, bins=bins, histtype="step", label=f"NUTS chain {c + 1}",
                           weights=np.full(draws.size, per_draw))  # fmt: skip
        right.set(xscale="log", xlabel="radius (distance units)",
                  ylabel="posterior density of log radius")  # fmt: skip
        right.set_title(f"(c) {label}: radius marginal", fontsize=9)
        right.legend(fontsize=7)
    common.save_figure(fig, path, dpi=100)


PROBLEMS = ("teddy", "one_d", "bunny", "saxs", "strings")


def _merge_with_earlier(out: Path, rows: list, payload: dict, nuts_rows: list):
    """Results of problems not run now are kept from the files of an earlier run, so the study
    can be run in pieces (``--problems``)."""
    json_path, csv_path, md_path = (out / f"hyperposterior.{x}" for x in ("json", "csv", "md"))
    if not (json_path.exists() and csv_path.exists()):
        return rows, payload, nuts_rows
    earlier = json.loads(json_path.read_text())
    with csv_path.open() as handle:
        earlier_rows = list(csv.reader(handle))[1:]
    kept = [r for r in earlier_rows if r[0] not in payload]
    merged = {k: v for k, v in earlier.items() if k not in payload} | payload
    earlier_nuts = []
    if md_path.exists():  # the NUTS table is only in the markdown
        lines = md_path.read_text().split("| problem | start |")[1:]
        for line in lines[0].splitlines()[2:] if lines else []:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 7 and cells[0] not in payload:
                earlier_nuts.append(cells)
    return kept + rows, merged, earlier_nuts + nuts_rows


def main(argv=None) -> None:
    p = common.parser(__doc__.splitlines()[0], draws=3)
    p.add_argument("--teddy-mesh", type=Path, default=SHARED_DATA / "teddy.obj")
    p.add_argument("--bunny-mesh", type=Path, default=SHARED_DATA / "stanford-bunny.obj")
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS),
                   help="problems to (re)compute; the others' results are kept")  # fmt: skip
    p.add_argument(
        "--figure",
        default="hyperposterior.png",
        help="file name of this run's figure (one row of panels per problem run)",
    )
    p.add_argument("--nuts", action="store_true", help="also sample the README recipe")
    p.add_argument("--nuts-max-n", type=int, default=200, help="sample only cases this small")
    args = p.parse_args(argv)
    n_splits = 1 if args.quick else args.draws
    grid_sizes = {"n_radius": 10, "n_ls": 10, "n_scale": 8} if args.quick else {}
    makers = {
        "teddy": lambda: teddy_cases(args.teddy_mesh, args.quick, n_splits),
        "one_d": lambda: one_d_cases(args.quick, n_splits),
        "bunny": lambda: bunny_cases(args.bunny_mesh, args.quick, n_splits),
        "saxs": lambda: saxs_cases(args.quick, n_splits, args.cache),
        "strings": lambda: strings_cases(args.quick, n_splits, args.cache),
    }
    rows, nuts_rows, payload, panels = [], [], {}, []
    for name in args.problems:
        for case in makers[name]():
            payload[case.name] = []
            for split, (D, y) in enumerate(case.splits):
                coarse, fine = refined_grid(D, y, case.inner, grid_sizes)
                stats = summarise_grid(fine)
                if split == 0:
                    panel = {"label": case.name, "coarse": coarse, "fine": fine}
                    panel["profile"] = radius_profile(D, y, case.inner, 12 if args.quick else 160)
                    radii, best = panel["profile"]
                    peaks = np.flatnonzero((best[1:-1] > best[:-2]) & (best[1:-1] >= best[2:])) + 1
                    stats["profile_local_maxima"] = [
                        {"radius": float(radii[i]), "below_max": float(best.max() - best[i])}
                        for i in peaks
                    ]
                    if args.nuts and y.size <= args.nuts_max_n:
                        draws = 50 if args.quick else 500
                        for start in ("prior", "mode"):
                            chains, diagnostics = sample_readme_recipe(
                                D, y, case.inner, draws, start
                            )
                            medians = np.median(chains, axis=1).tolist()
                            stats[f"nuts_start_{start}"] = {**diagnostics, "medians": medians}
                            nuts_rows.append([case.name, start, *diagnostics.values(),
                                              ", ".join(f"{v:.3g}" for v in medians)])  # fmt: skip
                            if start == "prior":  # drawn: where the first release's chains sat
                                panel["chains"] = chains
                        stats["nuts_chain_radius_medians"] = stats["nuts_start_prior"]["medians"]
                        panel["chains_medians"] = stats["nuts_chain_radius_medians"]
                    panels.append(panel)
                payload[case.name].append(stats)
                modes = stats["modes"]
                rows.append([
                    case.name, split, len(modes),
                    ", ".join(f"{m['radius']:.3g} ({100 * m['mass']:.0f} %)" for m in modes),
                    stats["radius_median"], stats["nearest_neighbour"],
                    100 * stats["radius_below_nearest_neighbour"],
                    stats["profile_max"]["radius"], stats["profile_max"]["ls"],
                    ", ".join(f"{v:.3g}" for v in stats.get("nuts_chain_radius_medians", []))
                    or "-",
                ])  # fmt: skip
                print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    header = ["problem", "split", "radius basins", "modes (mass)", "median radius",
              "smallest distance", "mass below it (%)", "profile max: radius", "profile max: ls",
              "NUTS chain medians"]  # fmt: skip
    rows, payload, nuts_rows = _merge_with_earlier(args.out, rows, payload, nuts_rows)
    with open(args.out / "hyperposterior.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    common.write_json(args.out / "hyperposterior.json", payload)
    common.write_markdown(
        args.out / "hyperposterior.md",
        __doc__.splitlines()[0],
        [
            __doc__.split("\n\n", 1)[1].split("Run:")[0].strip(),
            "",
            *common.markdown_rows(header, rows),
            "",
            "NUTS on the first split, README recipe, 4 chains x (500 + 500), from the two starts "
            "of `sle_priors` (`prior`: the first release's; `mode`: the grid posterior's highest "
            "cell, the default now):",
            "",
            *common.markdown_rows(
                [
                    "problem",
                    "start",
                    "r-hat max",
                    "min bulk ESS",
                    "min tail ESS",
                    "divergences",
                    "chain radius medians",
                ],
                nuts_rows,
            ),
        ],
    )
    figure(panels, args.out / args.figure)
    print((args.out / "hyperposterior.md").read_text())


if __name__ == "__main__":
    main()
