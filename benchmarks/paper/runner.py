"""Running an experiment: the resumable, parallel loop over trials and fits, and the command
line every paper script shares.

`run` draws R training sets per size, fits every model by MAP and, where asked, by NUTS, and
appends one CSV row per (model, size, draw, inference) as soon as it finishes. A rerun skips the
rows already present, so an interrupted run resumes. Tasks run in ``--jobs`` worker processes
with one BLAS thread each: a trial's MAP fits are one task, each NUTS fit another. Workers append
their rows under an exclusive file lock.
"""

from __future__ import annotations

import argparse
import time
import traceback
from pathlib import Path

from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from benchmarks._paths import RESULTS
from benchmarks.paper.fitting import PAPER_NUTS, QUICK_NUTS, fit_map, fit_nuts
from benchmarks.paper.models import ModelSpec
from benchmarks.paper.problem import Problem
from benchmarks.paper.results_csv import append_row, read_rows, row_key
from benchmarks.paper.summary import summarise
from pymc_sle.evaluation import NutsSettings

__all__ = ["experiment", "parser", "plan", "run", "selected"]

HERE = Path(__file__).resolve().parent


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
            append_row(csv_path, row)
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
    nuts: NutsSettings = PAPER_NUTS,
    jobs: int = 1,
) -> Path:
    """Run every missing (model, size, draw, inference) and return the per-trial CSV path.

    MAP for every model on ``n_draws`` draws per size; NUTS for ``nuts_models`` on the first
    ``nuts_draws`` draws of each size in ``nuts_sizes`` (default: ``sizes``).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{problem.name}_trials.csv"
    done = {row_key(r) for r in read_rows(csv_path)}
    trials = problem.trials(sizes, n_draws, seed)
    nuts_sizes = set(sizes if nuts_sizes is None else nuts_sizes)
    wanted = plan(trials, specs, done, nuts_models, nuts_draws, nuts_sizes)
    tasks = [delayed(_run_trial)(problem, trial, units, csv_path, nuts) for trial, units in wanted]
    print(f"{problem.name}: {len(tasks)} tasks to run", flush=True)
    Parallel(n_jobs=jobs, verbose=0)(tasks)
    return csv_path


def experiment(args, prob: Problem, module, *, quick_size: int) -> Path:
    """Run (unless ``--summary-only``) and summarise the experiment of ``module`` (its
    ``specs()``, ``TABLE_SIZES``, ``NUTS_MODELS``, ``TITLE`` and docstring) from its parsed
    arguments: ``--quick`` is one draw at ``quick_size`` with a tiny NUTS run; otherwise the
    table sizes with ``--draws`` MAP draws and ``--nuts-draws`` NUTS draws of the NUTS models."""
    specs, sizes, nuts_models = module.specs(), module.TABLE_SIZES, module.NUTS_MODELS
    if args.quick:
        sizes, draws, nuts_draws, nuts = (quick_size,), 1, 1, QUICK_NUTS
    else:
        draws, nuts_draws, nuts = args.draws, args.nuts_draws, PAPER_NUTS
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
    return summarise(csv_path, title=module.TITLE, table_sizes=sizes, models=models,
                     note=module.__doc__)  # fmt: skip


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
    p.add_argument("--out", type=Path, default=RESULTS / "paper", help="result directory")
    p.add_argument("--summary-only", action="store_true", help="rebuild tables from the CSV")
    p.add_argument("--cache", type=Path, default=HERE / "cache", help="distance/eigenpair cache")
    p.add_argument("--models", nargs="+", help="run only these models (default: all)")
    p.add_argument("--render", action="store_true", help="draw predictions (mesh experiments)")
    return p
