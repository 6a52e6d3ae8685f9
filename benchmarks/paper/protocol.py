"""The protocol every paper-reproduction experiment shares (benchmarks/paper/*.py).

An experiment is a `Problem` (observations, a fixed test set, a training pool and a way to get
distances for one trial) and a list of `ModelSpec` (how to build a PyMC GP for one trial).
`run` draws R training sets per size, fits every model by MAP (``pm.find_MAP``: the bounded
maximum-likelihood the paper used, since all priors are flat on the log scale) and, where asked,
by NUTS, scores the held-out predictions and appends one CSV row per (model, size, draw,
inference) as soon as it finishes. A rerun skips the rows already present, so an interrupted
run resumes. `summarise` writes the paper-layout markdown tables and the metrics-vs-size figure.

Tasks run in ``--jobs`` worker processes with one BLAS thread each: a trial's MAP fits are one
task, each NUTS fit another. Workers append their rows under an exclusive file lock.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import json
import os
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from pymc_sle import DistanceMatrix
from pymc_sle.inference import find_map
from pymc_sle.metrics import crps_samples, picp_samples, rmse, score_gaussian
from pymc_sle.plotting import plot_mesh_field

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parents[0] / "results" / "paper"
SHARED_DATA = HERE.parents[2] / "shared" / "data"
FIELDS = [
    "experiment", "model", "inference", "size", "draw", "seed", "status", "rmse", "crps", "picp",
    "nlpd", "seconds", "min_eigenvalue", "nonpositive_variances", "rhat_max", "ess_bulk_min",
    "divergences", "params",
]  # fmt: skip
METRICS = ("rmse", "crps", "picp")
NOMINAL = 0.95


# --------------------------------------------------------------------------------------------
# problems and trials


@dataclass
class Trial:
    """One training draw: global indices of the training points."""

    size: int
    draw: int
    seed: int
    train: np.ndarray


@dataclass
class Context:
    """What a model builder sees for one trial, in local indices.

    Points are ``points = concat(train, test)`` (global indices): ``X_train = 0..n-1``,
    ``X_test = n..n+n_test-1``. ``landmark[kind]`` is the (n + n_test, n) block of distance
    ``kind`` to the training points (the SLE's landmarks); ``square[kind]`` the
    (n + n_test, n + n_test) block, for the models that need one.
    """

    trial: Trial
    points: np.ndarray
    y_train: np.ndarray
    landmark: dict[str, DistanceMatrix]
    square: dict[str, DistanceMatrix]
    extras: dict = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        return self.trial.size

    @property
    def X_train(self) -> np.ndarray:
        return np.arange(self.n_train)[:, None]

    @property
    def X_test(self) -> np.ndarray:
        return np.arange(self.n_train, self.points.size)[:, None]


@dataclass
class Problem:
    """Observations ``y`` on ``n_points`` points, a fixed ``test`` set and a training ``pool``.

    ``distances(points, cols, kind)`` returns the (len(points), len(cols)) block of the distance
    named ``kind`` (e.g. "geodesic", "W2") between global point indices.
    """

    name: str
    y: np.ndarray
    test: np.ndarray
    pool: np.ndarray
    distances: Callable[[np.ndarray, np.ndarray, str], np.ndarray]
    extras: dict = field(default_factory=dict)

    def trials(self, sizes, n_draws: int, seed: int) -> list[Trial]:
        """R draws per size; the seed of draw ``r`` at size ``n`` is fixed by (seed, n, r)."""
        out = []
        for size in sizes:
            if size > self.pool.size:
                raise ValueError(f"training size {size} exceeds the pool of {self.pool.size}")
            for draw in range(n_draws):
                trial_seed = int(np.random.SeedSequence([seed, size, draw]).generate_state(1)[0])
                rng = np.random.default_rng(trial_seed)
                train = np.sort(rng.choice(self.pool, size=size, replace=False))
                out.append(Trial(size, draw, trial_seed, train))
        return out

    def context(self, trial: Trial, kinds: set[str], square_kinds: set[str]) -> Context:
        points = np.concatenate([trial.train, self.test])
        return Context(
            trial,
            points,
            self.y[trial.train],
            landmark={k: DistanceMatrix(self.distances(points, trial.train, k)) for k in kinds},
            square={k: DistanceMatrix(self.distances(points, points, k)) for k in square_kinds},
            extras=self.extras,
        )


# --------------------------------------------------------------------------------------------
# models


def log_uniform(name: str, lower: float, upper: float):
    """A positive hyperparameter with a flat prior on its log between ``lower`` and ``upper``.

    The MAP of a model built from these is the bounded maximum-likelihood estimate the paper
    computed; NUTS samples the same bounded posterior on the log scale.
    """
    if not 0 < lower < upper:
        raise ValueError(f"bounds of {name!r} must satisfy 0 < lower < upper, got {lower}, {upper}")
    log_value = pm.Uniform(f"log_{name}", np.log(lower), np.log(upper))
    return pm.Deterministic(name, pt.exp(log_value))


@dataclass(frozen=True)
class Hyper:
    """Bounds of the hyperparameters every model shares; ``None`` signal_var = unit amplitude,
    a float noise_var = fixed nugget, ``mean`` bounds = learnable constant mean (else zero)."""

    signal_var: tuple[float, float] | None
    noise_var: tuple[float, float] | float
    mean: tuple[float, float] | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A named GP model: ``kernel(ctx)`` builds its (unscaled) covariance inside the model and
    returns it; ``hyper(ctx)`` gives the shared bounds. ``psd_check`` evaluates the training Gram
    at the fitted hyperparameters and records its smallest eigenvalue."""

    name: str
    kernel: Callable[[Context], object]
    hyper: Callable[[Context], Hyper]
    distance_kinds: tuple[str, ...] = ()
    square_kinds: tuple[str, ...] = ()
    psd_check: bool = False


def build(spec: ModelSpec, ctx: Context):
    """The PyMC model of ``spec`` for one trial: returns (model, gp, training covariance)."""
    hyper = spec.hyper(ctx)
    with pm.Model() as model:
        cov = spec.kernel(ctx)
        if hyper.signal_var is not None:
            cov = log_uniform("signal_var", *hyper.signal_var) * cov
        if hyper.mean is None:
            mean = pm.gp.mean.Zero()
        else:
            mean = pm.gp.mean.Constant(pm.Uniform("mean", *hyper.mean))
        if isinstance(hyper.noise_var, tuple):
            sigma = pt.sqrt(log_uniform("noise_var", *hyper.noise_var))
        else:
            sigma = float(np.sqrt(hyper.noise_var))
        gp = sle.gp.Marginal(mean_func=mean, cov_func=cov)
        gp.marginal_likelihood("y", X=ctx.X_train, y=ctx.y_train, sigma=sigma)
    return model, gp, cov


def _params(model, point) -> dict:
    names = [v.name for v in model.deterministics] + [
        v.name for v in model.free_RVs if not v.name.startswith("log_")
    ]
    out = {}
    for name in names:
        value = np.asarray(point[name])
        out[name] = float(value) if value.ndim == 0 else value.tolist()
    return out


def gram(model, cov, X: np.ndarray, point: dict) -> np.ndarray:
    """``cov(X)`` as a numpy matrix at the hyperparameters of ``point`` (e.g. a MAP)."""
    matrix = model.replace_rvs_by_values([cov(X)])[0]
    fn = model.compile_fn(matrix, inputs=model.value_vars, on_unused_input="ignore")
    return fn({v.name: point[v.name] for v in model.value_vars})


def fit_map(spec: ModelSpec, ctx: Context, y_test: np.ndarray) -> dict:
    """MAP fit and Gaussian scores; ``params`` holds the fitted hyperparameters and the
    maximised log density ``max_logp``: the log marginal likelihood plus the flat priors'
    constant log density, so comparable between models with the same free variables."""
    model, gp, cov = build(spec, ctx)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = find_map(seed=ctx.trial.seed)
        point = result.point
        mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=True)
    # A kernel that is not PSD can predict negative variances; count them, score them as ~0.
    row = score_gaussian(y_test, mu, np.sqrt(np.maximum(var, 1e-300)))
    row["nonpositive_variances"] = int((var <= 0).sum())
    row["params"] = json.dumps({**_params(model, point), "max_logp": float(result.logp)})
    if spec.psd_check:
        every_point = np.arange(ctx.points.size)[:, None]
        row["min_eigenvalue"] = float(np.linalg.eigvalsh(gram(model, cov, every_point, point))[0])
    return row


@dataclass(frozen=True)
class NutsSettings:
    """PyMC NUTS settings. ``init="jitter+adapt_full"`` adapts a dense mass matrix: the SLE's
    amplitude and ls trade off along a straight ridge in log space, which a diagonal mass matrix
    can only follow with long trajectories (on Teddy, n = 200, one diagonal-adapted fit did not
    finish in 16 min; the dense one took 7.5 min with r-hat <= 1.02). It helps, but does not make
    SLE's SAXS chains mix (r-hat up to 1.83 at n = 250)."""

    chains: int = 2
    tune: int = 250
    draws: int = 250
    target_accept: float = 0.9
    predictive_draws: int = 200
    init: str = "jitter+adapt_full"


def fit_nuts(spec: ModelSpec, ctx: Context, y_test: np.ndarray, settings: NutsSettings) -> dict:
    import arviz as az

    model, gp, _ = build(spec, ctx)
    free = [v.name for v in model.free_RVs]
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=1,
            init=settings.init,
            target_accept=settings.target_accept,
            random_seed=ctx.trial.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        gp.conditional("y_pred", ctx.X_test, pred_noise=True)
        total = settings.chains * settings.draws
        step = max(1, total // settings.predictive_draws)
        thinned = idata.sel(draw=slice(None, None, step))
        predictive = pm.sample_posterior_predictive(
            thinned, var_names=["y_pred"], random_seed=ctx.trial.seed, progressbar=False
        )
    samples = predictive.posterior_predictive["y_pred"].values.reshape(-1, y_test.size)
    summary = az.summary(idata, var_names=free, kind="diagnostics")
    return {
        "rmse": rmse(y_test, samples.mean(axis=0)),
        "crps": crps_samples(y_test, samples),
        "picp": picp_samples(y_test, samples, NOMINAL),
        "nlpd": float("nan"),
        "rhat_max": float(summary["r_hat"].max()),
        "ess_bulk_min": float(summary["ess_bulk"].min()),
        "divergences": int(idata.sample_stats["diverging"].sum()),
        "params": json.dumps(
            {
                name: float(idata.posterior[name].mean())
                for name in idata.posterior.data_vars
                if idata.posterior[name].ndim == 2 and not name.startswith("log_")
            }
        ),
    }


# --------------------------------------------------------------------------------------------
# running and resuming


def _append(path: Path, row: dict) -> None:
    with open(path, "a", newline="") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            new = handle.tell() == 0
            writer = csv.DictWriter(handle, fieldnames=FIELDS, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_rows(path: Path) -> list[dict]:
    """The CSV's rows, one per (model, inference, size, draw): the first wins. A worker of an
    interrupted run can finish its trial after the parent is gone, so a rerun may append a
    second row for the same fit (with the same seed, the same numbers)."""
    if not path.exists():
        return []
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    unique = {}
    for row in rows:
        unique.setdefault(_key(row), row)
    return list(unique.values())


def _key(row) -> tuple:
    return (row["model"], row["inference"], int(row["size"]), int(row["draw"]))


def _run_trial(problem, trial, units, csv_path, nuts) -> None:
    """Fit each ``(spec, inference)`` of ``units`` on one trial's context, appending a row each."""
    with threadpool_limits(1):
        kinds = {k for s, _ in units for k in s.distance_kinds}
        squares = {k for s, _ in units for k in s.square_kinds}
        ctx = problem.context(trial, kinds, squares)
        y_test = problem.y[problem.test]
        for spec, inference in units:
            row = {
                "experiment": problem.name, "model": spec.name, "inference": inference,
                "size": trial.size, "draw": trial.draw, "seed": trial.seed,
            }  # fmt: skip
            start = time.perf_counter()
            try:
                if inference == "map":
                    row.update(fit_map(spec, ctx, y_test))
                else:
                    row.update(fit_nuts(spec, ctx, y_test, nuts))
                row["status"] = "ok"
            except Exception as err:  # a failed fit is a result, recorded with its reason
                row["status"] = f"failed: {type(err).__name__}: {str(err)[:200]}"
                traceback.print_exc()
            row["seconds"] = round(time.perf_counter() - start, 3)
            _append(csv_path, row)
            print(
                f"{problem.name} {spec.name} {inference} n={trial.size} r={trial.draw} "
                f"{row['status']} rmse={row.get('rmse', float('nan')):.4g} "
                f"picp={row.get('picp', float('nan')):.3f} {row['seconds']}s",
                flush=True,
            )


def plan(trials, specs, done, nuts_models, nuts_draws, nuts_sizes) -> list[tuple]:
    """The ``(trial, [(spec, inference), ...])`` tasks still to run, skipping the keys in ``done``.

    Every spec gets MAP; the specs named in ``nuts_models`` also get NUTS on draws below
    ``nuts_draws`` at sizes in ``nuts_sizes``. A trial's MAP fits form one task (they share one
    context, and each takes seconds); each NUTS fit, minutes to hours long, is a task of its own,
    so the workers stay balanced and a stopped run loses only the fits in flight.
    """
    tasks = []
    for trial in trials:
        maps, nuts_fits = [], []
        for spec in specs:
            if (spec.name, "map", trial.size, trial.draw) not in done:
                maps.append((spec, "map"))
            wants_nuts = (
                spec.name in nuts_models and trial.draw < nuts_draws and trial.size in nuts_sizes
            )
            if wants_nuts and (spec.name, "nuts", trial.size, trial.draw) not in done:
                nuts_fits.append((spec, "nuts"))
        tasks += [(trial, units) for units in ([maps] if maps else []) + [[f] for f in nuts_fits]]
    return tasks


def run(
    problem: Problem,
    specs: list[ModelSpec],
    *,
    sizes,
    n_draws: int,
    out_dir: Path,
    seed: int = 0,
    nuts_draws: int = 0,
    nuts_models: tuple[str, ...] = (),
    nuts_sizes=None,
    nuts: NutsSettings = NutsSettings(),
    jobs: int = 1,
) -> Path:
    """Run every missing (model, size, draw, inference) and return the per-trial CSV path.

    MAP for every model on ``n_draws`` draws per size; NUTS for ``nuts_models`` on the first
    ``nuts_draws`` draws of each size in ``nuts_sizes`` (default: ``sizes``).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{problem.name}_trials.csv"
    done = {_key(r) for r in read_rows(csv_path)}
    trials = problem.trials(sizes, n_draws, seed)
    nuts_sizes = set(sizes if nuts_sizes is None else nuts_sizes)
    wanted = plan(trials, specs, done, nuts_models, nuts_draws, nuts_sizes)
    tasks = [delayed(_run_trial)(problem, trial, units, csv_path, nuts) for trial, units in wanted]
    print(f"{problem.name}: {len(tasks)} tasks to run", flush=True)
    Parallel(n_jobs=jobs, verbose=0)(tasks)
    return csv_path


# --------------------------------------------------------------------------------------------
# summaries


def aggregate(rows: list[dict]) -> dict:
    """{(model, inference, size): {metric: (mean, se, n_ok), "failed": k}}"""
    groups: dict = {}
    for row in rows:
        key = (row["model"], row["inference"], int(row["size"]))
        groups.setdefault(key, []).append(row)
    out = {}
    for key, group in groups.items():
        ok = [r for r in group if r["status"] == "ok"]
        stats = {"n": len(group), "failed": len(group) - len(ok)}
        for metric in METRICS:
            values = np.array([float(r[metric]) for r in ok])
            values = values[np.isfinite(values)]
            if values.size:
                se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.nan
                stats[metric] = (float(values.mean()), float(se), int(values.size))
        out[key] = stats
    return out


def _best(metric: str, entries: dict) -> set:
    scored = {m: s[metric][0] for m, s in entries.items() if metric in s}
    if not scored:
        return set()
    score = (lambda v: abs(v - NOMINAL)) if metric == "picp" else (lambda v: v)
    best = min(score(v) for v in scored.values())
    return {m for m, v in scored.items() if score(v) == best}


def markdown_table(rows: list[dict], inference: str, sizes, models: list[str]) -> str:
    """The paper's layout: metric blocks, one row per model, one column per training size."""
    stats = aggregate(rows)
    header = "| Metric | Model | " + " | ".join(str(s) for s in sizes) + " |"
    lines = [header, "|---|---|" + "---|" * len(sizes)]
    arrows = {"rmse": "RMSE (↓)", "crps": "CRPS (↓)", "picp": "PICP 95 % (→ 0.95)"}
    full = {s: max(stats.get((m, inference, s), {"n": 0})["n"] for m in models) for s in sizes}
    for metric in METRICS:
        best = {
            s: _best(metric, {m: stats.get((m, inference, s), {}) for m in models}) for s in sizes
        }
        for i, model in enumerate(models):
            cells = []
            for size in sizes:
                entry = stats.get((model, inference, size))
                if entry is None or metric not in entry:
                    failed = entry["failed"] if entry else 0
                    cells.append(f"failed ({failed})" if failed else "-")
                    continue
                mean, se, n = entry[metric]
                text = f"{mean:.3f} ± {se:.3f}" if np.isfinite(se) else f"{mean:.3f}"
                if model in best[size]:
                    text = f"**{text}**"
                if n < full[size]:  # failed fits, or fewer draws than the column's other models
                    text += f" (n={n})"
                cells.append(text)
            label = arrows[metric] if i == 0 else ""
            lines.append(f"| {label} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draws_per_cell(rows, model, inference, size) -> int:
    """How many draws of ``model`` at ``size`` ran with ``inference`` (failed fits included)."""
    return len(
        {
            int(r["draw"])
            for r in rows
            if r["model"] == model and r["inference"] == inference and int(r["size"]) == size
        }
    )


def draw_counts(rows, models, inference, sizes) -> str:
    """A table heading's draw count: ``"30"`` when every (model, size) cell has 30 draws, else
    per size, e.g. ``"200: 5, 300: 5, 400: 0-2"`` (a range when the models differ)."""
    per_size = {s: sorted({draws_per_cell(rows, m, inference, s) for m in models}) for s in sizes}
    if len({c for counts in per_size.values() for c in counts}) == 1:
        return str(per_size[sizes[0]][0])
    return ", ".join(
        f"{s}: {c[0]}" if len(c) == 1 else f"{s}: {c[0]}-{c[-1]}" for s, c in per_size.items()
    )


def figure(rows: list[dict], models: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = aggregate(rows)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for metric, ax in zip(METRICS, axes, strict=True):
        for model in models:
            sizes = sorted(s for (m, inf, s) in stats if m == model and inf == "map")
            points = [(s, *stats[(model, "map", s)][metric][:2]) for s in sizes
                      if metric in stats[(model, "map", s)]]  # fmt: skip
            if points:
                s, mean, se = map(np.array, zip(*points, strict=True))
                ax.errorbar(
                    s, mean, yerr=np.nan_to_num(se), marker="o", ms=3, capsize=2, label=model
                )
        if metric == "picp":
            ax.axhline(NOMINAL, color="k", lw=0.8, ls="--")
        ax.set_xlabel("training size")
        ax.set_title(metric.upper() + " (MAP)")
        if metric != "picp":
            ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def summarise(
    csv_path: Path, *, title: str, table_sizes, models: list[str], note: str = ""
) -> Path:
    """Write ``<name>.md`` (paper-layout tables for MAP and NUTS) and ``<name>.png``."""
    rows = read_rows(csv_path)
    name = csv_path.stem.removesuffix("_trials")
    parts = [f"# {title}", "", note, ""] if note else [f"# {title}", ""]
    for inference, label in (
        ("map", "MAP (bounded maximum likelihood)"),
        ("nuts", "NUTS posterior predictive"),
    ):
        present = [
            m for m in models if any(r["model"] == m and r["inference"] == inference for r in rows)
        ]
        if not present:
            continue
        n = draw_counts(rows, present, inference, table_sizes)
        parts += [f"## {label} — draws per size: {n}", "",
                  markdown_table(rows, inference, table_sizes, present), ""]  # fmt: skip
        seconds = [float(r["seconds"]) for r in rows if r["inference"] == inference]
        parts += [f"Fits: {len(seconds)}, median {np.median(seconds):.1f} s each.", ""]
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        parts += ["## Failed fits", ""]
        counts: dict = {}
        for r in failures:
            counts.setdefault((r["model"], r["inference"], r["status"][:120]), 0)
            counts[(r["model"], r["inference"], r["status"][:120])] += 1
        parts += [f"- {m} ({i}), {k} x: {s}" for (m, i, s), k in sorted(counts.items())] + [""]
    eig = [(r["model"], int(r["size"]), float(r["min_eigenvalue"])) for r in rows
           if r.get("min_eigenvalue") not in (None, "")]  # fmt: skip
    if eig:
        parts += ["## PSD check at the fitted hyperparameters", "",
                  "Smallest eigenvalue of the kernel's Gram over training and test points; "
                  "negative predictive variances counted over the test set.", ""]  # fmt: skip
        for model in sorted({m for m, _, _ in eig}):
            values = np.array([v for m, _, v in eig if m == model])
            negative_var = sum(
                int(r["nonpositive_variances"] or 0) for r in rows if r["model"] == model
            )
            parts.append(
                f"- {model}: {int((values < 0).sum())} of {values.size} fitted Gram matrices "
                f"indefinite; smallest eigenvalue {values.min():.3g}; {negative_var} negative "
                "predictive variances in all"
            )
        parts.append("")
    md = csv_path.with_name(f"{name}.md")
    md.write_text("\n".join(parts))
    figure(rows, models, csv_path.with_name(f"{name}.png"), title)
    return md


QUICK_NUTS = NutsSettings(chains=1, tune=30, draws=30, predictive_draws=20)


def experiment(
    args,
    prob: Problem,
    specs: list[ModelSpec],
    *,
    sizes,
    quick_size: int,
    nuts_models: tuple[str, ...],
    title: str,
    note: str,
) -> Path:
    """Run (unless ``--summary-only``) and summarise one experiment from its parsed arguments:
    ``--quick`` is one draw at ``quick_size`` with a tiny NUTS run; otherwise ``sizes`` with
    ``--draws`` MAP draws and ``--nuts-draws`` NUTS draws of ``nuts_models``."""
    if args.quick:
        sizes, draws, nuts_draws, nuts = (quick_size,), 1, 1, QUICK_NUTS
    else:
        draws, nuts_draws, nuts = args.draws, args.nuts_draws, NutsSettings()
    if not args.summary_only:
        run(
            prob,
            selected(specs, args.models),
            sizes=sizes,
            n_draws=draws,
            out_dir=args.out,
            jobs=args.jobs,
            nuts_draws=nuts_draws,
            nuts_models=nuts_models,
            nuts=nuts,
        )
    csv_path = args.out / f"{prob.name}_trials.csv"
    models = [s.name for s in specs]
    return summarise(csv_path, title=title, table_sizes=sizes, models=models, note=note)


def selected(specs: list[ModelSpec], names) -> list[ModelSpec]:
    """The specs named in ``names`` (all when ``None``); unknown names are an error."""
    if names is None:
        return specs
    unknown = set(names) - {s.name for s in specs}
    if unknown:
        raise SystemExit(f"unknown --models {sorted(unknown)}; known: {[s.name for s in specs]}")
    return [s for s in specs if s.name in names]


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="1 draw, small sizes: a smoke run")
    p.add_argument("--draws", type=int, default=30, help="R, training draws per size (MAP)")
    p.add_argument("--nuts-draws", type=int, default=5, help="draws per size also run by NUTS")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--out", type=Path, default=RESULTS, help="result directory")
    p.add_argument("--summary-only", action="store_true", help="rebuild tables from the CSV")
    p.add_argument("--cache", type=Path, default=HERE / "cache", help="distance/eigenpair cache")
    p.add_argument("--models", nargs="+", help="run only these models (default: all)")
    p.add_argument("--render", action="store_true", help="draw predictions (mesh experiments)")
    return p


# --------------------------------------------------------------------------------------------
# mesh renderings


def render(problem: Problem, spec: ModelSpec, trial: Trial, mesh, path: Path, title: str) -> dict:
    """Fit ``spec`` by MAP on ``trial`` and draw truth, predictive mean, predictive sd and
    absolute error on every vertex of ``mesh`` (``problem.extras["f"]`` is the truth)."""
    import dataclasses

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    everywhere = dataclasses.replace(problem, test=np.arange(mesh.n_vertices))
    with threadpool_limits(1):
        ctx = everywhere.context(trial, set(spec.distance_kinds), set(spec.square_kinds))
        model, gp, _ = build(spec, ctx)
        point = find_map(model, seed=trial.seed).point
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mu, var = gp.predict(ctx.X_test, point=point, diag=True, pred_noise=False)
    truth = problem.extras["f"]
    sd = np.sqrt(np.maximum(var, 0.0))
    panels = {
        "truth": truth,
        f"{spec.name} mean": mu,
        f"{spec.name} sd": sd,
        "|error|": np.abs(mu - truth),
    }
    fig = plt.figure(figsize=(11, 10))
    # Colour limits from the 1st-99th percentiles, shared by truth and mean.
    shared = tuple(np.percentile(truth, [1, 99]))
    for i, (label, values) in enumerate(panels.items()):
        ax = fig.add_subplot(2, 2, i + 1, projection="3d")
        limits, cmap = (shared, "viridis") if i < 2 else (None, "magma")
        plot_mesh_field(ax, mesh.vertices, mesh.faces, values, limits=limits, cmap=cmap)
        ax.set_title(label, fontsize=11)
    fig.suptitle(f"{title} (n = {trial.size}, draw {trial.draw}, MAP)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"params": _params(model, point), "rmse_all_vertices": rmse(truth, mu)}
