"""The latent GP by Laplace (``sle.gp.Laplace``) and EP (``sle.gp.EP``) at scale and against
the exact posterior.

Four sections, each run on its own (``--section``; the others' results are kept):

- ``sizes``: for each N (random vertices of a mesh, every one a landmark, ``cutoff="auto"``):
  the Laplace log density + gradient of a Bernoulli classifier through the sparse path, cold
  (Newton from zero) and warm (from the previous mode, as in a sampler: the median over small
  steps of the hyperparameters), Newton steps for each, against the Gaussian sparse likelihood
  on the same distances, the same for ``sle.gp.EP`` (EP sweeps for Newton steps, and its warm
  time against Laplace's, alternately), and peak memory (each N in a fresh process).
- ``map``: classification of the Stanford bunny's vertices (labels: Bernoulli of the logistic
  of three geodesic sines), the README's recipe (``sle_priors`` with the likelihood, MAP by
  ``sle.find_map``) on 86 % of the vertices and on
  1,000 of them, scored on the same held-out vertices: accuracy, log loss, Brier score and the
  reliability curve, with every stage timed.
- ``nuts``: NUTS over the hyperparameters at n = 2,000, 4 x (500 + 500) on 2 cores: r̂, ESS, time
  and held-out scores (``gp.predictive``), and one log density + gradient of ``pm.gp.Latent``'s
  model (NUTS over every latent value) at the same n, dense.
- ``verify``: Laplace + NUTS and EP + NUTS against ``pm.gp.Latent`` + NUTS on the latent values
  (the exact posterior, up to Monte Carlo) at n = 200 on dense distances, 4 x (1000 + 1000) each
  with nutpie (numba compiles the latent model's dense linear algebra, which PyTensor's C
  backend runs in Python) and one BLAS thread (its chains are threads of one process), for
  Bernoulli and Poisson labels and for Bernoulli labels with well-separated classes (where
  Laplace is known to be weak): the mean absolute difference of the held-out predictive
  probabilities (rates), and of the hyperparameters' 5/50/95 % quantiles in the exact
  posterior's sds, with that difference's Monte Carlo error, r̂ and ESS.

``--n`` (sizes) and ``--case`` (verify) run some rows of a section and keep the others.

Writes ``benchmarks/results/laplace.{json,md}``.

    python -m benchmarks.laplace [--quick] [--section sizes|map|nuts|verify] [--n N] [--case CASE]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks._laplace_data import labelled_mesh
from benchmarks._laplace_report import summary
from benchmarks._laplace_verify import (  # noqa: F401 (measure_verify: run by name)
    CASES,
    measure_verify,
    verification_model,
)
from benchmarks._paths import RESULTS
from benchmarks._timing import in_child, paired_ms, peak_mib

SECTIONS = ("sizes", "map", "nuts", "verify")
#: ``--section report`` measures nothing: it rewrites the page from the JSON (and ``--note``).
REPORT = "report"


def _classifier(D, n_train: int, labels, gp_class=None):
    """The README's classifier: ``sle.gp.Laplace`` (or ``gp_class``) with ``sle_priors``'
    latent priors; the model, the GP and the priors."""
    import pymc as pm

    import pymc_sle as sle

    bernoulli, rows = sle.gp.Bernoulli(), np.arange(n_train)
    with pm.Model() as model:
        priors = sle.sle_priors(D, rows, labels, likelihood=bernoulli)
        gp_class = gp_class or sle.gp.Laplace
        gp = gp_class(mean_func=priors.mean_func(), cov_func=priors.covariance())
        gp.marginal_likelihood("y", X=rows[:, None], y=labels, likelihood=bernoulli)
    return model, gp, priors


def measure_size(mesh_name: str, n: int, reps: int) -> dict:
    """In this process: one row of the sizes table."""
    import pymc as pm

    import pymc_sle as sle
    from benchmarks.performance import compile_value_and_grad

    D, distances_s, train, _, latent, labels = labelled_mesh(mesh_name, n)
    n = train.size
    model, _, _ = _classifier(D, n, labels[train])
    start = model.initial_point()
    names = [v.name for v in model.value_vars]

    def evaluation(model):
        """The compiled log density + gradient, its cold time at the start, and a sampler's
        next evaluation (the hyperparameters move a little from the start)."""
        logp = model.logp()
        fn = pm.compile(model.value_vars, [logp, *pm.gradient(logp, model.value_vars)])
        rng = np.random.default_rng(1)
        began = time.perf_counter()
        fn(*(start[k] for k in names))
        cold_s = time.perf_counter() - began
        return cold_s, lambda: fn(
            *(start[k] + 0.02 * rng.standard_normal(np.shape(start[k])) for k in names)
        )

    cold_s, step = evaluation(model)
    ep_model = _classifier(D, n, labels[train], sle.gp.EP)[0]
    ep_cold_s, ep_step = evaluation(ep_model)

    with pm.Model():  # the same covariance, Gaussian observations of the latent field
        radius = pm.Uniform("radius", D.cutoff / 4, D.cutoff)
        ls = pm.LogNormal("ls", np.log(2.0), 1.0)
        eta, sigma = pm.HalfNormal("eta", 3.0), pm.HalfNormal("sigma", 0.5)
        gaussian = pm.gp.Marginal(cov_func=eta**2 * sle.SLE(D, radius=radius, ls=ls))
        gaussian.marginal_likelihood("y", X=np.arange(n)[:, None], y=latent[train], sigma=sigma)
        gaussian_fn = compile_value_and_grad(pm.modelcontext(None), "FAST_RUN")
    warm_ms, gaussian_ms, ratio = paired_ms(step, gaussian_fn, reps)
    ep_warm_ms, _, ep_ratio = paired_ms(ep_step, step, reps)
    cold_steps, warm_steps = _iterations(model, start, "laplace")
    ep_cold_sweeps, ep_warm_sweeps = _iterations(ep_model, start, "ep")
    return {
        "mesh": mesh_name,
        "n": n,
        "distances_s": distances_s,
        "distances_per_row": D.nnz / D.n_points,
        "cold_s": cold_s,
        "warm_s": warm_ms / 1e3,
        "gaussian_s": gaussian_ms / 1e3,
        "warm_vs_gaussian": ratio,
        "newton_cold": cold_steps,
        "newton_warm": warm_steps,
        "ep_cold_s": ep_cold_s,
        "ep_warm_s": ep_warm_ms / 1e3,
        "ep_vs_laplace": ep_ratio,
        "ep_sweeps_cold": ep_cold_sweeps,
        "ep_sweeps_warm": ep_warm_sweeps,
        "peak_mib": peak_mib(),
    }


def _iterations(model, start, approximation: str) -> tuple[int, float]:
    """Newton steps (EP sweeps) cold at the start, and warm from the previous mode (sites)
    after small steps."""
    from pytensor.graph.traversal import ancestors

    from pymc_sle.gp._laplace._approximation import find_mode
    from pymc_sle.gp._laplace._ep import find_sites
    from pymc_sle.gp._laplace._sparse import SparseStructure
    from pymc_sle.gp._laplace._warm import WarmStart, forget

    node = next(
        v.owner
        for v in ancestors([model.logp()])
        if v.owner is not None and type(v.owner.op).__name__ == "LaplaceLogDensity"
    )
    op = node.op
    values = model.compile_fn(node.inputs[1:])  # the mean and the SLE parameters
    y = node.inputs[0].data

    def steps(point, warm):
        mean, *sle_values = values(point)
        structure = SparseStructure(op.problem, *(float(v) for v in sle_values))
        warm = WarmStart(("benchmark", approximation), [mean, *sle_values]) if warm else None
        if approximation == "ep":
            return find_sites(structure, op.likelihood, y, np.asarray(mean), warm=warm).sweeps
        return find_mode(structure, op.likelihood, y, np.asarray(mean), warm=warm).iterations

    cold = steps(start, False)
    rng = np.random.default_rng(2)
    moved = ({k: v + 0.02 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
             for _ in range(5))  # fmt: skip
    warm = [steps(point, True) for point in moved]
    forget(("benchmark", approximation))
    return cold, float(np.mean(warm[1:]))


def _scores(probability, truth) -> dict:
    """Accuracy, log loss, Brier score and the reliability curve (10 equal bins)."""
    clipped = np.clip(probability, 1e-12, 1 - 1e-12)
    bins = np.clip(np.digitize(probability, np.linspace(0, 1, 11)) - 1, 0, 9)
    curve = [[float(probability[bins == b].mean()), float(truth[bins == b].mean()),
              int(np.sum(bins == b))] for b in np.unique(bins)]  # fmt: skip
    return {
        "accuracy": float(np.mean((probability > 0.5) == truth)),
        "log_loss": float(-np.mean(truth * np.log(clipped) + (1 - truth) * np.log(1 - clipped))),
        "brier": float(np.mean((probability - truth) ** 2)),
        "reliability": curve,
    }


def measure_map(mesh_name: str, n_train: int, n_test: int) -> dict:
    """In this process: distances, model, MAP and prediction, timed, and the held-out scores."""

    import pymc_sle as sle

    began = time.perf_counter()
    D, distances_s, train, test, latent, labels = labelled_mesh(mesh_name, n_train, n_test)
    model, gp, _ = _classifier(D, train.size, labels[train])
    model_s = time.perf_counter() - began - distances_s
    tick = time.perf_counter()
    with model:
        fit = sle.find_map(seed=0)
    point = fit.point
    map_s = time.perf_counter() - tick
    tick = time.perf_counter()
    with model:
        mean, variance = gp.predict(train.size + np.arange(test.size)[:, None], point=point)
    predict_s = time.perf_counter() - tick
    probability = sle.gp.Bernoulli().mean(mean, variance)
    truth = labels[test]
    best = _scores(1 / (1 + np.exp(-latent[test])), truth)
    return {
        "mesh": mesh_name,
        "n_train": int(train.size),
        "n_test": int(test.size),
        "distances_s": distances_s,
        "model_s": model_s,
        "map_s": map_s,
        "predict_s": predict_s,
        "total_min": (time.perf_counter() - began) / 60,
        "map": {k: float(point[k]) for k in ("radius", "ls", "eta", "offset")},
        "map_evaluations": fit.n_evaluations,
        **_scores(probability, truth),
        "true_field_accuracy": best["accuracy"],
        "true_field_log_loss": best["log_loss"],
        "peak_mib": peak_mib(),
    }


def measure_nuts(mesh_name: str, n_train: int, n_test: int, draws: int, chains: int) -> dict:
    """In this process: NUTS over the hyperparameters (``sle.sample_basins``, PyMC's NUTS), its
    held-out scores, and the cost of one gradient of the ``pm.gp.Latent`` model at the same n."""
    import arviz as az

    import pymc_sle as sle
    from benchmarks.performance import compile_value_and_grad, median_ms

    D, _, train, test, _, labels = labelled_mesh(mesh_name, n_train, n_test)
    model, gp, priors = _classifier(D, train.size, labels[train])
    began = time.perf_counter()
    with model:  # the README's sampler: every basin, PyMC's NUTS started at the mode
        idata = sle.sample_basins(
            priors, draws=draws, tune=draws, chains=chains, cores=2, random_seed=1
        )
    nuts_s = time.perf_counter() - began
    with model:
        prediction = gp.predictive(train.size + np.arange(test.size)[:, None], idata, n_draws=100)
    table = az.summary(idata, var_names=priors.var_names(model, idata), round_to="none")
    laplace_fn = compile_value_and_grad(model, "FAST_RUN")
    laplace_ms = median_ms(laplace_fn, 5)
    latent_model, _ = verification_model("bernoulli", D, labels[train], train.size, "latent")
    latent_ms = median_ms(compile_value_and_grad(latent_model, "FAST_RUN"), 3)
    steps = float(idata.sample_stats["n_steps"].mean())
    return {
        "mesh": mesh_name,
        "n_train": int(train.size),
        "draws": draws,
        "chains": chains,
        "nuts_s": nuts_s,
        "r_hat_max": float(table["r_hat"].max()),
        "ess_bulk_min": float(table["ess_bulk"].min()),
        "ess_tail_min": float(table["ess_tail"].min()),
        "divergences": int(idata.sample_stats["diverging"].sum()),
        "steps_per_draw": steps,
        "laplace_gradient_ms": laplace_ms,
        "latent_gradient_ms": latent_ms,
        **_scores(prediction.mean, labels[test]),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes on an icosphere")
    parser.add_argument("--section", choices=(*SECTIONS, REPORT), action="append")
    parser.add_argument("--case", choices=CASES, action="append", help="verification cases")
    parser.add_argument("--n", type=int, action="append", help="the sizes section's sizes")
    parser.add_argument("--note", help="the conditions of the run, printed under the title")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from benchmarks.scaling import BUNNY

    stem = "laplace_quick" if args.quick else "laplace"
    path = args.out / f"{stem}.json"
    sections = args.section or SECTIONS
    result = json.loads(path.read_text()) if path.exists() and args.section else {}
    result["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    if args.note:
        result["note"] = args.note
    mesh = "bunny" if BUNNY.exists() else "icosphere-6"
    run = functools.partial(in_child, "benchmarks.laplace")  # each case in a fresh process
    if args.quick:  # in this process
        run = lambda function, *case: globals()[function](*case)  # noqa: E731
        sizes, reps = [("icosphere-3", 200)], 2
        fits, nuts = [("icosphere-3", 200, 60)], ("icosphere-3", 100, 40, 10, 2)
        verify = [("icosphere-3", "poisson", 40, 20, 10, "pymc")]  # the offset's path, the rates
    else:
        sizes = [(mesh, n) for n in (1_000, 2_000, 5_000, 10_000, 20_000, 34_834)]
        sizes = [s for s in [*sizes, ("icosphere-7", 100_000)] if not args.n or s[1] in args.n]
        reps = 5
        fits = [(mesh, 1_000, 4_834), (mesh, 30_000, 4_834)]
        nuts = (mesh, 2_000, 1_000, 500, 4)
        verify = [(mesh, case, 200, 200, 1000, "nutpie") for case in args.case or CASES]
    references = str(args.out / f"{stem}_references")  # the exact runs, reused (_laplace_verify)
    verify = [(*case, references) for case in verify]
    args.out.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every case, so a run stopped early keeps what it measured
        path.write_text(json.dumps(result, indent=2))
        (args.out / f"{stem}.md").write_text(summary(result))

    plan = {
        "sizes": ("measure_size", [(*size, reps) for size in sizes]),
        "map": ("measure_map", fits),
        "verify": ("measure_verify", verify),
    }
    for section in (s for s in SECTIONS if s in sections):
        if section == "nuts":
            result["nuts"] = run("measure_nuts", *nuts)
            save()
            continue
        function, cases = plan[section]
        key, chosen = {"sizes": ("n", args.n), "verify": ("case", args.case)}.get(
            section, ("", None)
        )
        # --n and --case keep the rows they do not run
        result[section] = [r for r in result.get(section) or [] if chosen and r[key] not in chosen]
        for case in cases:
            result[section].append(run(function, *case))
            print(result[section][-1], flush=True)
            if section == "sizes":
                result[section].sort(key=lambda r: r["n"])
            save()
    save()
    print(summary(result))


if __name__ == "__main__":
    main()
