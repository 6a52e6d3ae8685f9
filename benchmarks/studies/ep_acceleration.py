"""EP's sweeps: how many Anderson acceleration saves, by how many updates it combines.

``sle.gp.EP`` runs parallel EP sweeps to the fixed point where every posterior marginal matches
its tilted moments (``pymc_sle.gp._laplace._ep``); the sweeps converge linearly, slowly where
the sites are sharp. For each of the Laplace verification's cases (``benchmarks.laplace``:
Bernoulli, Poisson and Bernoulli labels with well-separated classes, on 200 vertices of the
bunny with dense geodesic distances) it walks the hyperparameters from their Laplace MAP by
random steps of 0.08 in PyMC's unconstrained space (a sampler's leapfrog steps are of that
size), and runs EP at each point, warm-started from the sites found at the nearest earlier
point as in sampling, with each Anderson depth (1: the damped sweeps alone). Reported: sweeps
per evaluation (mean and largest), time per evaluation against depth 1 (the depths alternate
point by point, so that the machine's load is shared; one BLAS thread, as in a sampler's
worker), and the largest difference of the log
marginal likelihood and of the sites' ``a`` from depth 1's.
Writes benchmarks/results/studies/ep_acceleration.{json,md,png}.

``--quick``: 40 vertices of an icosphere, 6 points.

Run:  python -m benchmarks.studies.ep_acceleration [--quick]
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks._laplace_verify import CASES, verification_model
from benchmarks.studies import common

#: Anderson depths compared; the library's default is ``_ep.ANDERSON_DEPTH``.
DEPTHS = (1, 3, 5, 8)
STEP = 0.08  # the random walk's step in the unconstrained space


def _walk(case: str, mesh: str, n: int, points: int):
    """The case's observations, and along the walk the hyperparameters (radius, ls, eta and
    the Poisson offset) with the dense covariance at them."""
    import pymc as pm

    from benchmarks._laplace_data import labelled_mesh

    kind, sharpness, _ = CASES[case]
    D, _, train, _, latent, labels = labelled_mesh(mesh, n, 0, sharpness=sharpness)
    y = labels[train]
    if kind == "poisson":
        y = np.random.default_rng(3).poisson(np.exp(1.0 + latent[train])).astype(float)
    model, gp = verification_model(kind, D, y, train.size, "laplace")
    with model:
        start = pm.find_MAP(progressbar=False)
    names = ["radius", "ls", "eta"] + (["offset"] if kind == "poisson" else [])
    outputs = [model[k] for k in names] + [gp.cov_func(np.arange(train.size)[:, None])]
    evaluate = model.compile_fn(model.replace_rvs_by_values(outputs))
    rng = np.random.default_rng(0)
    point = {v.name: np.asarray(start[v.name]) for v in model.value_vars}
    walk = []
    for _ in range(points):
        point = {k: v + STEP * rng.standard_normal(v.shape) for k, v in point.items()}
        *params, K = evaluate(point)
        walk.append(([float(v) for v in params], K))
    return kind, y, walk


def study(mesh: str, n: int, points: int) -> dict:
    import pymc_sle as sle
    from pymc_sle.gp._laplace._approximation import DenseStructure
    from pymc_sle.gp._laplace._ep import find_sites, log_marginal
    from pymc_sle.gp._laplace._warm import WarmStart, forget

    rows = []
    for case in CASES:
        kind, y, walk = _walk(case, mesh, n, points)
        likelihood = sle.gp.Poisson() if kind == "poisson" else sle.gp.Bernoulli()
        found = {d: [] for d in DEPTHS}
        for params, K in walk:
            mean = np.full(y.size, params[3] if kind == "poisson" else 0.0)
            for depth in DEPTHS:
                warm = WarmStart(("ep_acceleration", case, depth), params)
                began = time.perf_counter()
                sites = find_sites(DenseStructure(K), likelihood, y, mean, anderson_depth=depth,
                                   warm=warm)  # fmt: skip
                elapsed = time.perf_counter() - began
                found[depth].append((sites.sweeps, elapsed, log_marginal(sites), sites.a))
        for depth in DEPTHS:
            forget(("ep_acceleration", case, depth))
            sweeps = [f[0] for f in found[depth][1:]]  # the first starts cold
            rows.append({
                "case": case, "depth": depth, "sweeps_mean": float(np.mean(sweeps)),
                "sweeps_max": int(np.max(sweeps)),
                "time_vs_damped": float(sum(f[1] for f in found[depth][1:])
                                        / sum(f[1] for f in found[1][1:])),
                "log_z_difference": float(max(abs(f[2] - g[2]) for f, g in
                                              zip(found[depth], found[1], strict=True))),
                "a_difference": float(max(np.abs(f[3] - g[3]).max() / np.abs(g[3]).max() for f, g
                                          in zip(found[depth], found[1], strict=True))),
            })  # fmt: skip
    return {"mesh": mesh, "n": n, "points": points, "step": STEP, "rows": rows}


def report(stats: dict) -> list[str]:
    from pymc_sle.gp._laplace._ep import ANDERSON_DEPTH

    header = ["case", "depth", "sweeps (mean)", "sweeps (max)", "time / depth 1",
              "log Z difference", "a difference (rel.)"]  # fmt: skip
    table = [[r["case"], r["depth"], f"{r['sweeps_mean']:.1f}", r["sweeps_max"],
              f"{r['time_vs_damped']:.2f}", f"{r['log_z_difference']:.1e}",
              f"{r['a_difference']:.1e}"] for r in stats["rows"]]  # fmt: skip
    return [
        f"{stats['points']} points of a random walk (step {stats['step']}) from each case's "
        f"Laplace MAP, {stats['n']} vertices of `{stats['mesh']}` (module notes); sweeps and "
        "times are over the warm-started evaluations (all but the first). The differences are "
        "against depth 1 (the damped sweeps alone): of log Z, and of the sites' `a` relative to "
        f"its largest entry. The library's default depth is {ANDERSON_DEPTH}.",
        "",
        *common.markdown_rows(header, table),
    ]


def figure(stats: dict, path) -> None:
    plt = common.pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for case in CASES:
        rows = [r for r in stats["rows"] if r["case"] == case]
        ax.plot([r["depth"] for r in rows], [r["sweeps_mean"] for r in rows], "o-", label=case)
    ax.set_xlabel("Anderson depth (1: damped sweeps alone)")
    ax.set_ylabel("sweeps per warm evaluation (mean)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    common.save_figure(fig, path)


def main(argv=None) -> None:
    args = common.parser(__doc__.splitlines()[0]).parse_args(argv)
    from benchmarks.scaling import BUNNY

    mesh = "icosphere-3" if args.quick or not BUNNY.exists() else "bunny"
    with threadpool_limits(1, user_api="blas"):
        stats = study(mesh, 40 if args.quick else 200, 6 if args.quick else 60)
    args.out.mkdir(parents=True, exist_ok=True)
    common.write_json(args.out / "ep_acceleration.json", stats)
    common.write_markdown(args.out / "ep_acceleration.md", __doc__.splitlines()[0], report(stats))
    figure(stats, args.out / "ep_acceleration.png")
    print((args.out / "ep_acceleration.md").read_text())


if __name__ == "__main__":
    main()
