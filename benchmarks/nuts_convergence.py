"""NUTS on the library's recommended SLE model: convergence, speed and calibration per benchmark.

The model is the README recipe with the library's defaults, nothing tuned per benchmark:
``sle.priors.sle_priors(D, train, y, inner=...)`` (whose default ``start="mode"`` starts the chains
in the highest basin of a coarse grid posterior), ``eta**2 * sle.SLE(D, radius=..., ls=...)`` and
``sle.gp.Marginal`` with a zero mean on the centred targets, sampled by
``sle.inference.sample_basins(priors)`` (``pm.sample`` when the radius posterior has one basin;
otherwise every basin behind a dip deeper than 3 nats, or 1.5 nats for shoulders under 5 %,
holding >= 0.5 % of the mass, each confined to its radius interval, pooled by mass). 4 chains x
(1000 tune + 1000 draws) per basin, ``target_accept`` 0.9 (0.95 for several basins: the
defaults of ``sample_basins``; column ``target_accept``), one BLAS thread per chain, on 2 cores,
by PyMC's NUTS and by nutpie;
the best baseline of each benchmark (the paper reproduction's model and priors) by PyMC's NUTS on
the same splits. Every fit predicts the benchmark's fixed test set: the SLE fits as the README
does, each test point with its own landmark as every training point is
(``own_landmark_predictive``), the baselines by ``gp.conditional``'s marginals (column
``prediction``; SLE rows predicted by ``gp.conditional`` are the earlier default's).

Benchmarks (the paper reproduction's data and splits, ``Problem.trials(seed=0)``):

============  ==========================  ======  ==========  ===============================
name          data                        n       inner       baseline
============  ==========================  ======  ==========  ===============================
one_d         1-D function                50      Matern-3/2  Matern
teddy_200     Teddy mesh, geodesic        200     Matern-5/2  Geometric Matern
teddy_400     Teddy mesh, geodesic        400     Matern-5/2  Geometric Matern
saxs          SAXS images, exact W2       250     Matern-3/2  Matern on sliced W2
bunny         bunny geodesic sine         400     Matern-3/2  Raw-distance embedding
strings       evolving sequences, edit    200     Matern-3/2  Raw-distance embedding
============  ==========================  ======  ==========  ===============================

Per fit (one row of the CSV): wall time of the start search (``setup_s``), of sampling with
compilation (``sampling_s``) and of prediction and scoring (``predict_s``; draws from each
test point's predictive; the own-landmark predictive in 2 threads, ``fit_and_score``'s
``cores``, in rows written after it got ``n_jobs``, in one before), the largest Pareto shape
of the own-landmark predictive's weights (``pareto_k_max``), the mean number of leapfrog
steps -- gradient
evaluations -- per draw (``steps_per_draw``), largest r-hat, smallest bulk and tail ESS
(and the variables of the first two: ``r_hat_var``, ``ess_bulk_var``), min-ESS/s (smallest
bulk ESS over the total wall time), divergences, RMSE, CRPS, PICP (95 %), NLPD, whether
``sle_priors`` warned that the radius posterior has basins one start cannot reach, and how
many basins were sampled (r-hat and ESS are then the worst over the basins' own
chains). For the SLE fits also: how many divergent trajectories' starts the sampler recorded,
where they left from on the radius's quantile coordinate ``u`` (``divergence_u``) and how many
of those from the small-radius wall (``wall_divergences``: ``u`` below -3); not recorded for
several basins, sampled on centred log scales. And the milliseconds one log density and
gradient evaluation takes (``grad_ms``, measured after sampling, in the sampler's backend),
and what ``sle_priors`` decided for the split: the scale NUTS samples each hyperparameter on
(``scales``, from ``SLEPriors.scales``; e.g. whether the noise reached zero). Each target the
summary checks comes with its reason, read off these measurements.

The run resumes: every finished fit is appended to the CSV at once, and fits already there are
skipped, so it can be done in pieces (``--benchmarks``, ``--samplers``, ``--models``,
``--only-splits``); ``--refit`` reruns the selected fits and replaces their rows.
Rows of earlier defaults and options stay in the CSV as a record, labelled by how they were
sampled (``sampled_as``); the targets are checked on the current default's.

Writes benchmarks/results/nuts_convergence.{csv,json,md,png}.

Run:  python -m benchmarks.nuts_convergence [--quick] [--benchmarks one_d teddy_200 ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from threadpoolctl import threadpool_limits

import pymc_sle as sle
from benchmarks._paths import RESULTS, SHARED_DATA
from benchmarks.paper.models import build
from benchmarks.paper.problem import Context, Problem
from benchmarks.paper.runner import selected
from benchmarks.studies.common import WALL_U, radius_divergence_starts
from pymc_sle.evaluation.holdout import NutsSettings, fit_and_score
from pymc_sle.inference.basins import NUTPIE_DEFAULTS
from pymc_sle.inference.priors import DEFAULT_POLICY

BASIN_BARRIER, SHOULDER_BARRIER = DEFAULT_POLICY.basin_barrier, DEFAULT_POLICY.shoulder_barrier
SHOULDER_MASS, MIN_BASIN_MASS = DEFAULT_POLICY.shoulder_mass, DEFAULT_POLICY.min_basin_mass
WEIGHING_SCALES = DEFAULT_POLICY.weighing_scales
HERE = Path(__file__).resolve().parent
SAMPLERS = ("pymc", "nutpie")
FULL_NUTS = NutsSettings(draws=1000, tune=1000, chains=4, cores=2, seed=1, predictive_draws=500)
QUICK_NUTS = NutsSettings(draws=60, tune=60, chains=2, cores=1, seed=1, predictive_draws=40)
N_SPLITS = 3
#: Targets of issue 14.
R_HAT_MAX, ESS_MIN, PICP_RANGE = 1.01, 400.0, (0.92, 0.97)
TEDDY_400_WALL_S, FVGP_SPEEDUP = 600.0, 10.0
FIELDS = [
    "benchmark", "split", "model", "spec", "sampler", "n_train", "setup_s", "sampling_s", "wall_s",
    "r_hat_max", "ess_bulk_min", "ess_tail_min", "min_ess_per_s", "divergences",
    "rmse", "crps", "picp", "nlpd", "multimodal_warning", "basins", "sampled_as", "predict_s",
    "steps_per_draw", "mass_matrix", "basin_rule", "divergences_recorded", "wall_divergences",
    "grad_ms", "divergence_u", "r_hat_var", "ess_bulk_var", "truncated_mass", "scales",
    "prediction", "pareto_k_max", "target_accept",
]  # fmt: skip
#: How ``sle_priors`` hands the SLE hyperparameters to NUTS. Fits of earlier defaults stay in the
#: results as a record; targets are checked on the current ones.
SAMPLED_AS = (
    "capped home-basin quantile radius, mean-ridge ls, floored-ridge eta, sigma; "
    "quantile noise where it reaches zero; zoomed radius map where the grid is coarse"
)
#: A variant tried and not adopted: the quantile maps' cubics with the cubic spline's slopes
#: (limited to Hyman's monotone range) instead of PCHIP's, so that the sampled log density's
#: gradient, which holds log g'(u), does not jump at the maps' knots. Fewer leapfrog steps on
#: the 1-D benchmark; no more effective draws overall (median bulk ESS 0.91 times the default's
#: over the 13 splits run before it was stopped).
SMOOTH_MAPS_SAMPLED_AS = f"{SAMPLED_AS}; twice-differentiable maps (tried)"
#: The default before the radius map was built from a grid zoomed onto the start's basin where
#: the fine grid resolves it with fewer than 2 cells per sd (column ``scales``: ``zoomed``). Its
#: rows of the other splits, the same model, carry the current label.
NOISE_SAMPLED_AS = (
    "capped home-basin quantile radius, mean-ridge ls, floored-ridge eta, sigma; "
    "quantile noise where it reaches zero"
)
#: The default before the noise was sampled on its quantile scale where it reaches zero (the
#: coarse grid puts 0.5 % of its mass below a tenth of its median: SAXS, Teddy n = 200 splits 0
#: and 2). Its rows of the other splits, the same model, carry the current label.
CAPPED_SAMPLED_AS = "capped home-basin quantile radius, mean-ridge ls, floored-ridge eta, sigma"
#: The first form of the cap, tried for part of one session: without a basin above the start's,
#: the radius was capped at the fine grid's top, which on the W2-image example sat at u = 2.8
#: (there a chain went down to eta = 7e-4 and r-hat rose to 1.038); now it is capped where u = 6.
TOP_CAP_SAMPLED_AS = f"{CAPPED_SAMPLED_AS}; capped at the fine grid's top (tried)"
#: The default before the radius map was built over the start's basin and capped below the light
#: basins above it (``sle_priors``'s ``cap_radius``), and before eta and sigma followed floored
#: ridges (``scale_ridges``).
WALL_CUT_SAMPLED_AS = "wall-cut quantile radius, mean-ridge ls"
#: The option ``scale_ridges=True`` before the cap: eta and sigma also follow ridges of their
#: own, floored at their grid means (followed only where they rise: where the GP gives way to
#: noise).
SCALE_RIDGES_SAMPLED_AS = "wall-cut quantile radius, mean-ridge ls, floored-ridge eta, sigma"
#: The option before its ridges were floored (tried as the default for part of one session). It
#: removed the divergences that start at the small-radius wall, where at fixed eta and sigma the
#: log density falls off a cliff, and gave the gallery's W2-image model divergences it does not
#: have by default.
FULL_RIDGES_SAMPLED_AS = "wall-cut quantile radius, mean-ridge ls, eta, sigma"
UNCUT_SAMPLED_AS = "quantile radius, mean-ridge ls"
#: The default before sample_basins confined each basin's chains to its radius interval (on the
#: strings' split 2 the chains started in one basin strayed into the other).
UNCONFINED_SAMPLED_AS = f"{WALL_CUT_SAMPLED_AS}, basins not confined"
FIRST_SAMPLED_AS = "centred log"
#: The default until ls followed its ridge across deep dips too: on the splits whose radius has
#: several basins behind deep dips (strings and SAXS, split 2), every variable was sampled on a
#: centred log scale. Those splits' fits were first recorded under ``WALL_CUT_SAMPLED_AS``,
#: which described only the single-basin splits; they carry this label since.
CENTRED_ACROSS_DIPS_SAMPLED_AS = f"{WALL_CUT_SAMPLED_AS}; centred log ls across deep dips"
#: A variant tried and not adopted: the uncut map with ``sigma ~ Gamma(2, 2.5 / std(y))`` instead of
#: ``HalfNormal(std(y))``, which keeps chains away from sigma = 0. It removed the W2-image
#: example's divergences but not the benchmark's (they start at the small-radius wall).
GAMMA_NOISE_SAMPLED_AS = "quantile radius, mean-ridge ls, Gamma noise (tried)"
#: Earlier defaults, oldest first, and the variant tried, kept in the results: the first mode
#: start; a ridge that followed the conditional mode of log ls (it jumped between two modes on
#: Teddy); the maps used across several basins (the dips became trenches; now centred log scales
#: there); the radius map whose lower tail reached past the small-radius wall; basins sampled
#: without confining their chains; ls on a centred log scale across deep dips; the scale ridges
#: before they were floored; the floored scale ridges, an option then; and the default before
#: the cap and the floored ridges.
PREVIOUS_SAMPLED_AS = (
    FIRST_SAMPLED_AS,
    "quantile radius, mode-ridge ls",
    "quantile radius, mean-ridge ls, across basins",
    "quantile radius, mean-ridge ls, fine-grid centred log across basins",
    GAMMA_NOISE_SAMPLED_AS,
    UNCUT_SAMPLED_AS,
    UNCONFINED_SAMPLED_AS,
    CENTRED_ACROSS_DIPS_SAMPLED_AS,
    FULL_RIDGES_SAMPLED_AS,
    SCALE_RIDGES_SAMPLED_AS,
    WALL_CUT_SAMPLED_AS,
    TOP_CAP_SAMPLED_AS,
    CAPPED_SAMPLED_AS,
    NOISE_SAMPLED_AS,
    SMOOTH_MAPS_SAMPLED_AS,
)


#: The mass matrix each sampler adapts under ``sample_basins`` (the baselines: PyMC's diagonal),
#: read from the library's nutpie defaults. nutpie's was diagonal too until ``sample_basins``
#: gave it the low-rank modified one; its fits with the diagonal one are kept.
MASS_MATRIX = {
    "pymc": "diagonal",
    "nutpie": "low-rank" if NUTPIE_DEFAULTS.get("low_rank_modified_mass_matrix") else "diagonal",
}


#: Which radius basins ``sample_basins`` samples apart: those behind dips deeper than
#: ``BASIN_BARRIER`` nats, and shoulders (less than ``SHOULDER_MASS`` behind dips deeper than
#: ``SHOULDER_BARRIER``), holding at least ``MIN_BASIN_MASS``. Fits under earlier rules are kept:
#: the first left SAXS split 0's 0.7 % shoulder to the main basin's chains; the tried one
#: separated every basin behind a 1.5-nat dip. Basins are weighed (and, where there are several,
#: the maps read) on a grid with ``WEIGHING_SCALES`` cells of eta and sigma over their mass.
BASIN_RULE = (
    f"dips > {BASIN_BARRIER:g} nats (> {SHOULDER_BARRIER:g} for basins < "
    f"{100 * SHOULDER_MASS:g} %), mass >= {100 * MIN_BASIN_MASS:g} %; weighed on "
    f"{WEIGHING_SCALES} scale cells over their mass"
)
#: The rule before the weighing grid resolved eta and sigma: it weighed only where two basins
#: held 1 %, on 64 cells over [1e-3, 3] * std(y), and SAXS split 0's shoulder (weighed on the
#: fine grid's 16 cells) got 0.70 % of the pool where resolved cells give 1.8 %. Its fits of the
#: splits with one basin, the same model, carry the current rule.
COARSE_WEIGHING_BASIN_RULE = "dips > 3 nats (> 1.5 for basins < 5 %), mass >= 0.5 %"
PREVIOUS_BASIN_RULE = "dips > 3 nats, mass >= 1 %"
TRIED_BASIN_RULE = "dips > 1.5 nats, mass >= 0.5 %"
#: How each fit predicts its test set: SLE fits each test point with its own landmark, as every
#: training point is (``own_landmark_predictive``, the README's predictive); the baselines, and
#: SLE fits before it, by ``gp.conditional``'s marginals.
PREDICTION = {"SLE": "own landmark", "baseline": "conditional"}
#: ``fit_and_score``'s name for each.
PREDICTION_OPTION = {"own landmark": "own_landmark", "conditional": "conditional"}
#: The columns that say which default a fit ran under, beside (benchmark, split, model, sampler).
IDENTITY = ("sampled_as", "mass_matrix", "basin_rule", "prediction")
#: The CSV's columns that are not numbers.
TEXT_FIELDS = ("benchmark", "model", "spec", "sampler", "multimodal_warning", "divergence_u",
               "r_hat_var", "ess_bulk_var", "scales", *IDENTITY)  # fmt: skip


def _with_new_columns(row: dict) -> dict:
    """A row of a results file written before a column was added, with that column filled in."""
    unrecorded = dict.fromkeys(("divergences_recorded", "wall_divergences", "grad_ms"), "nan")
    row = {"basins": 1, "steps_per_draw": "nan", "mass_matrix": "diagonal", **unrecorded,
           "divergence_u": "", "r_hat_var": "", "ess_bulk_var": "", "truncated_mass": 0.0,
           "scales": "", "prediction": "conditional", "pareto_k_max": "nan",
           "target_accept": 0.9, **row}  # fmt: skip
    row.setdefault("basin_rule", PREVIOUS_BASIN_RULE if row["model"] == "SLE" else "")
    row.setdefault("sampled_as", FIRST_SAMPLED_AS if row["model"] == "SLE" else "")
    if "predict_s" not in row:  # wall = setup + sampling + prediction and scoring
        wall, setup, sampling = (float(row[k]) for k in ("wall_s", "setup_s", "sampling_s"))
        row["predict_s"] = wall - setup - sampling
    return row


def _sampled_as(model_name: str) -> str:
    return SAMPLED_AS if model_name == "SLE" else ""


def _mass_matrix(model_name: str, sampler: str) -> str:
    return MASS_MATRIX[sampler] if model_name == "SLE" else "diagonal"


def _identity(model_name: str, sampler: str) -> tuple[str, str, str, str]:
    """The current default's ``IDENTITY`` columns for a model and sampler."""
    rule = BASIN_RULE if model_name == "SLE" else ""
    return _sampled_as(model_name), _mass_matrix(model_name, sampler), rule, PREDICTION[model_name]


def is_current(entry: dict) -> bool:
    """A fit (or group of fits) of the current default: its sampled variables, mass matrix,
    basin rule and prediction."""
    return tuple(entry[k] for k in IDENTITY) == _identity(entry["model"], entry["sampler"])


@dataclass
class Benchmark:
    """One benchmark: its problem, training size, distance, SLE inner kernel and baseline."""

    name: str
    label: str
    problem: Problem
    kind: str
    size: int
    inner: str
    baseline: object  # a benchmarks.paper.models.ModelSpec

    def contexts(self, n_splits: int) -> list[Context]:
        kinds = {self.kind, *self.baseline.distance_kinds}
        return [
            self.problem.context(trial, kinds, set(self.baseline.square_kinds))
            for trial in self.problem.trials([self.size], n_splits, seed=0)
        ]


def _one_d(quick: bool, args) -> Benchmark:
    from benchmarks.paper import one_d

    baseline = selected(one_d.specs(), ["Matern"])[0]
    size = 20 if quick else 50
    return Benchmark("one_d", "1-D", one_d.problem(), "euclidean", size, "matern32", baseline)


def teddy_benchmark(size: int, problem, quick: bool) -> Benchmark:
    """The Teddy benchmark with ``size`` training vertices on a built ``teddy.problem`` (30 with
    ``quick``): the sizes share one problem, its geodesics and eigenpairs."""
    from benchmarks.paper import teddy

    baseline = selected(teddy.specs(), ["Geometric Matern"])[0]
    n = 30 if quick else size
    return Benchmark(
        f"teddy_{size}", f"Teddy, n = {size}", problem, "geodesic", n, "matern52", baseline
    )


def _teddy(size: int) -> Callable:
    def make(quick: bool, args) -> Benchmark:
        from benchmarks.paper import teddy

        problem, _ = teddy.problem(args.mesh, n_test=60 if quick else teddy.N_TEST)
        return teddy_benchmark(size, problem, quick)

    return make


def _saxs(quick: bool, args) -> Benchmark:
    from benchmarks.paper import saxs

    baseline = selected(saxs.specs(), ["Matern - sliced W2"])[0]
    problem = saxs.problem(quick, args.cache)
    return Benchmark(
        "saxs", "SAXS (exact W2)", problem, "W2", 30 if quick else 250, "matern32", baseline
    )


def _bunny(quick: bool, args) -> Benchmark:
    from benchmarks.paper import bunny

    mesh = args.mesh if quick else args.bunny_mesh
    n_test, pairs = (60, 20) if quick else (bunny.N_TEST, 20)  # the baseline needs no pairs
    problem, _ = bunny.problem(mesh, n_test, pairs, args.cache)
    baseline = selected(bunny.specs([]), ["Raw-distance embedding"])[0]
    return Benchmark("bunny", "Bunny", problem, "geodesic", 30 if quick else 400, "matern32",
                     baseline)  # fmt: skip


def strings_problem(quick: bool, cache: Path) -> Problem:
    """Evolving sequences (``pymc_sle.datasets.evolving_sequences``): 400 items, 100 of them
    the test set; edit distances between all items, cached under ``cache``."""
    from pymc_sle.datasets import evolving_sequences
    from pymc_sle.distances import edit_distance, pairwise

    n, n_test = (80, 20) if quick else (400, 100)
    data = evolving_sequences(n=n, seed=3)
    path = cache / f"strings-{'quick' if quick else 'full'}-edit.npz"
    if path.exists():
        D = sle.DistanceMatrix.load(path).values
    else:
        D = pairwise(data.sequences, edit_distance, n_jobs=2, progress=not quick).values
        cache.mkdir(parents=True, exist_ok=True)
        sle.DistanceMatrix(D).save(path)
    order = np.random.default_rng(17).permutation(n)
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])
    return Problem("strings", data.y, test, pool, lambda p, c, kind: D[np.ix_(p, c)])


def _strings(quick: bool, args) -> Benchmark:
    from benchmarks.paper.models import raw_embedding_spec, scaled_to_data

    baseline = raw_embedding_spec(
        "Raw-distance embedding", "edit", "matern32", scaled_to_data((0.01, 10.0), (1e-6, 1.0))
    )
    problem = strings_problem(quick, args.cache)
    return Benchmark("strings", "Strings (edit distance)", problem, "edit",
                     30 if quick else 200, "matern32", baseline)  # fmt: skip


BENCHMARKS: dict[str, Callable] = {
    "one_d": _one_d,
    "strings": _strings,
    "teddy_200": _teddy(200),
    "saxs": _saxs,
    "teddy_400": _teddy(400),
    "bunny": _bunny,
}


#: The starts of ``sle_priors``' warnings about the radius posterior: several basins, and the cap.
_PRIOR_WARNINGS = ("The radius posterior has more than one basin", "The radius is capped")


def sle_model(bench: Benchmark, ctx: Context, offset: float):
    """The README recipe on one split: returns (model, gp, priors, the warnings of several basins
    and of the radius cap, or "")."""
    D = ctx.landmark[bench.kind]
    rows = np.arange(ctx.n_train)
    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        priors = sle.priors.sle_priors(D, rows, ctx.y_train - offset, inner=bench.inner)
        cov = priors["eta"] ** 2 * sle.SLE(
            D, radius=priors["radius"], ls=priors["ls"], inner=bench.inner
        )
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=ctx.X_train, y=ctx.y_train - offset, sigma=priors["sigma"])
    said = [str(w.message) for w in caught]
    return model, gp, priors, " ".join(m for m in said if m.startswith(_PRIOR_WARNINGS))


def fit(
    bench: Benchmark,
    ctx: Context,
    model_name: str,
    settings: NutsSettings,
) -> dict:
    """Build and sample one model on one split; one CSV row."""
    start = time.perf_counter()
    y_test = bench.problem.y[bench.problem.test]
    if model_name == "SLE":
        offset = float(ctx.y_train.mean())
        model, gp, priors, warning = sle_model(bench, ctx, offset)
    else:
        offset, warning, priors = 0.0, "", None
        model, gp, _ = build(bench.baseline, ctx)
    setup = time.perf_counter() - start
    sampled = [*model.free_RVs, *model.observed_RVs]  # before the prediction adds its own
    if model_name == "SLE":
        settings = replace(settings, divergence_records=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice
        result = fit_and_score(model, gp, ctx.X_test, y_test - offset, settings, priors=priors,
                               prediction=PREDICTION_OPTION[PREDICTION[model_name]])  # fmt: skip
    wall = setup + result.seconds
    starts = None if priors is None else radius_divergence_starts(result.idata, model, priors)
    d = result.diagnostics
    stats = result.idata.sample_stats  # leapfrog steps = gradient evaluations
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else float("nan")
    return {
        "benchmark": bench.name, "split": ctx.trial.draw, "model": model_name,
        "spec": "SLE" if model_name == "SLE" else bench.baseline.name,
        "sampler": settings.nuts_sampler, "n_train": ctx.n_train, "setup_s": setup,
        "sampling_s": result.sampling_seconds, "wall_s": wall, **d,
        "min_ess_per_s": d["ess_bulk_min"] / wall, **result.scores,
        "multimodal_warning": warning, "predict_s": result.seconds - result.sampling_seconds,
        "steps_per_draw": steps,
        "divergences_recorded": float("nan") if starts is None else starts.size,
        "wall_divergences": float("nan") if starts is None else int(np.sum(starts < WALL_U)),
        "divergence_u": "" if starts is None else ";".join(f"{u:.2f}" for u in starts),
        "grad_ms": gradient_ms(model, sampled, settings.nuts_sampler),
        "truncated_mass": 0.0 if priors is None else priors.truncated_mass,
        "scales": "" if priors is None else scales_label(priors),
        "pareto_k_max": float("nan") if result.pareto_k is None else float(result.pareto_k.max()),
        "target_accept": result.idata.posterior.attrs["target_accept"],
        **dict(zip(IDENTITY, _identity(model_name, settings.nuts_sampler), strict=True)),
    }  # fmt: skip


def scales_label(priors) -> str:
    """``SLEPriors.scales`` as one CSV cell: what ``sle_priors`` decided for this fit."""
    return "; ".join(f"{name}: {scale}" for name, scale in priors.scales.items())


def gradient_ms(model: pm.Model, rvs, sampler: str, seconds: float = 0.5) -> float:
    """Milliseconds per evaluation of the log density of ``rvs`` (the sampled and observed
    variables) and its gradient, at the model's initial point, one BLAS thread, compiled for the
    sampler's backend (nutpie: NUMBA; PyMC: the C backend): what one leapfrog step costs.
    Measured after sampling, outside the fit's wall time."""
    values = [model.rvs_to_values[rv] for rv in rvs if rv in model.free_RVs]
    logp = model.logp(vars=list(rvs))
    function = pm.compile(
        values, [logp, *pt.grad(logp, values)], mode="NUMBA" if sampler == "nutpie" else None
    )
    point = model.initial_point()
    inputs = [point[v.name] for v in values]
    with threadpool_limits(limits=1, user_api="blas"):
        function(*inputs)
        calls, begin = 0, time.perf_counter()
        while calls < 3 or time.perf_counter() - begin < seconds:
            function(*inputs)
            calls += 1
    return 1000.0 * (time.perf_counter() - begin) / calls


def _fit_key(benchmark: str, split: int, model_name: str, sampler: str, identity) -> tuple:
    return (benchmark, int(split), model_name, sampler, *identity)


def done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    with path.open() as f:
        return {_row_key(r) for r in map(_with_new_columns, csv.DictReader(f))}


def _row_key(row: dict) -> tuple:
    return _fit_key(row["benchmark"], row["split"], row["model"], row["sampler"],
                    (row[k] for k in IDENTITY))  # fmt: skip


def append_row(path: Path, row: dict, replace_fit: bool = False) -> None:
    """Append one fit; a file written before a column was added gets it (with its default).
    With ``replace_fit``, earlier rows of the same fit (``_fit_key``) are dropped first."""
    new = not path.exists()
    if not new:
        with path.open() as f:
            reader = csv.DictReader(f)
            old_rows = list(reader)
            current = reader.fieldnames == FIELDS
        if replace_fit:
            kept = [r for r in old_rows if _row_key(_with_new_columns(r)) != _row_key(row)]
            current = current and len(kept) == len(old_rows)
            old_rows = kept
        if not current:
            with path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(map(_with_new_columns, old_rows))
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        writer.writerow({k: row[k] for k in FIELDS})


def run(args, settings: NutsSettings, csv_path: Path) -> None:
    done = set() if args.refit else done_keys(csv_path)

    def due(name: str, split: int, model: str, sampler: str) -> bool:
        identity = _identity(model, sampler)
        return model in args.models and _fit_key(name, split, model, sampler, identity) not in done

    for name in args.benchmarks:
        todo = [
            (split, model, sampler)
            for split in (args.only_splits or range(args.splits))
            for model in ("SLE", "baseline")
            for sampler in (args.samplers if model == "SLE" else ("pymc",))
            if due(name, split, model, sampler)
        ]
        if not todo:
            continue
        bench = BENCHMARKS[name](args.quick, args)
        contexts = bench.contexts(args.splits)
        for split, model, sampler in todo:
            run_settings = NutsSettings(**{**settings.__dict__, "nuts_sampler": sampler})
            row = fit(bench, contexts[split], model, run_settings)
            append_row(csv_path, row, replace_fit=args.refit)
            print(f"{name} split {split} {model} {sampler}: r-hat {row['r_hat_max']:.3f}, "
                  f"ESS {row['ess_bulk_min']:.0f}, PICP {row['picp']:.3f}, "
                  f"{row['wall_s']:.0f} s", flush=True)  # fmt: skip


def read_rows(path: Path) -> list[dict]:
    with path.open() as f:
        rows = list(map(_with_new_columns, csv.DictReader(f)))
    for r in rows:
        for k in FIELDS:
            if k not in TEXT_FIELDS:
                r[k] = float(r[k])
    return rows


def _fvgp_min_ess_per_s() -> float | None:
    path = RESULTS / "nuts_teddy.json"
    if not path.exists():
        return None
    return float(json.loads(path.read_text())["samplers"]["fvgp"]["min_ess_per_second"])


def aggregate(rows: list[dict]) -> list[dict]:
    """One entry per (benchmark, model, sampler, *IDENTITY): worst diagnostics and mean scores
    over splits; per benchmark, the current default first."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["benchmark"], r["model"], r["sampler"], *(r[k] for k in IDENTITY))
        groups.setdefault(key, []).append(r)
    order = {name: i for i, name in enumerate(BENCHMARKS)}
    current = {SAMPLED_AS: 0, "": 0} | {
        label: len(PREVIOUS_SAMPLED_AS) - i for i, label in enumerate(PREVIOUS_SAMPLED_AS)
    }

    def rank(key):
        bench, model, sampler, sampled_as, mass_matrix, rule, prediction = key
        _, current_mass, current_rule, current_prediction = _identity(model, sampler)
        return (order[bench], current[sampled_as], mass_matrix != current_mass,
                rule != current_rule, prediction != current_prediction, model,
                sampler)  # fmt: skip

    out = []
    for (bench, model, sampler, *identity), rs in sorted(
        groups.items(), key=lambda kv: rank(kv[0])
    ):
        out.append({
            "benchmark": bench, "model": model, "spec": rs[0]["spec"], "sampler": sampler,
            **dict(zip(IDENTITY, identity, strict=True)), "splits": len(rs),
            "r_hat_max": max(r["r_hat_max"] for r in rs),
            "ess_bulk_min": min(r["ess_bulk_min"] for r in rs),
            "ess_tail_min": min(r["ess_tail_min"] for r in rs),
            "divergences": int(sum(r["divergences"] for r in rs)),
            "wall_s": float(np.median([r["wall_s"] for r in rs])),
            "min_ess_per_s": float(np.median([r["min_ess_per_s"] for r in rs])),
            **{k: float(np.mean([r[k] for r in rs])) for k in ("rmse", "crps", "picp", "nlpd")},
            "picp_range": (min(r["picp"] for r in rs), max(r["picp"] for r in rs)),
            "picp_splits": [r["picp"] for r in rs],
            "r_hat_worst": _worst_of(max(rs, key=lambda r: r["r_hat_max"]), "r_hat_var"),
            "ess_bulk_worst": _worst_of(min(rs, key=lambda r: r["ess_bulk_min"]),
                                        "ess_bulk_var"),
            "warned": sum(r["basins"] > 1 for r in rs),
            **_divergence_origins(rs),
            "steps_per_draw_range": _range(r["steps_per_draw"] for r in rs),
            "steps_per_draw": _median(r["steps_per_draw"] for r in rs),
            "grad_ms": _median(r["grad_ms"] for r in rs),
            "sampling_s": float(np.median([r["sampling_s"] for r in rs])),
        })  # fmt: skip
    return out


def _worst_of(row: dict, column: str) -> tuple[int, str]:
    """The split of a group's worst fit and the variable ``column`` names there (``""`` for a
    fit run before the variables were kept)."""
    return int(row["split"]), row[column]


def _finite(values) -> list[float]:
    return [v for v in map(float, values) if np.isfinite(v)]


def _range(values) -> tuple[float, float] | None:
    finite = _finite(values)
    return (min(finite), max(finite)) if finite else None


def _median(values) -> float | None:
    finite = _finite(values)
    return float(np.median(finite)) if finite else None


def _divergence_origins(rows: list[dict]) -> dict:
    """Over a group's fits: divergent trajectories whose start was recorded, how many of those
    left from the small-radius wall, and divergences without a record (fits run before the
    records were kept, several basins, or PyMC's first 100 per chain only)."""
    recorded = [r for r in rows if np.isfinite(r["divergences_recorded"])]
    return {
        "divergences_recorded": int(sum(r["divergences_recorded"] for r in recorded)),
        "wall_divergences": int(sum(r["wall_divergences"] for r in recorded)),
        "divergence_u": sorted(
            float(u) for r in recorded for u in filter(None, r["divergence_u"].split(";"))
        ),
        "divergences_unrecorded": int(
            sum(r["divergences"] for r in rows)
            - sum(min(r["divergences_recorded"], r["divergences"]) for r in recorded)
        ),
    }


def _splits(n: int) -> str:
    return f"{n} split" if n == 1 else f"{n} splits"


def _worst_variable_reason(key: str) -> Callable[[dict, dict | None], str]:
    """The reason for an r-hat or ESS miss: the split and the variable of the worst fit."""

    def reason(s: dict, baseline: dict | None) -> str:
        split, variable = s[key]
        if not variable:
            return f"split {split} (no variable recorded: a fit run before they were kept)"
        return f"split {split}, on `{variable}`"

    return reason


def _divergence_reason(s: dict, baseline: dict | None) -> str:
    """Where the divergent trajectories left from, as far as the samplers recorded it."""
    parts = []
    if s["divergences_recorded"]:
        parts.append(f"{s['wall_divergences']} of the {s['divergences_recorded']} recorded "
                     f"left from the small-radius wall (u < {WALL_U:g})")  # fmt: skip
        others = [u for u in s["divergence_u"] if u >= WALL_U]  # sorted
        if len(others) == 1:
            parts[-1] += f", the other from u = {others[0]:.2f}"
        elif others:
            parts[-1] += f", the others from u in [{others[0]:.2f}, {others[-1]:.2f}]"
    if s["divergences_unrecorded"]:
        parts.append(f"{s['divergences_unrecorded']} not recorded (several basins, or fits run "
                     "before the records were kept)")  # fmt: skip
    return "; ".join(parts)


def _picp_reason(s: dict, baseline: dict | None) -> str:
    """Which side of the band the splits miss on, and the NLPD against the baseline's: an
    interval miss with a worse NLPD is a worse predictive distribution, not a sampler issue."""
    low, high = PICP_RANGE
    n = len(s["picp_splits"])
    parts = [
        f"{count} of {n} splits {side} {bound:g} ({what})"
        for count, side, bound, what in (
            (sum(p < low for p in s["picp_splits"]), "below", low, "intervals too narrow"),
            (sum(p > high for p in s["picp_splits"]), "above", high, "intervals too wide"),
        )
        if count
    ]
    if baseline is not None:
        parts.append(f"NLPD {s['nlpd']:.3f} against the baseline's {baseline['nlpd']:.3f}")
    return "; ".join(parts)


#: The targets every benchmark's SLE fits are checked against: name, the measured figure of a
#: summary entry, whether it is met, and the reason given when it is missed (from the entry and
#: the baseline's entry, if run).
_TARGETS = (
    ("r-hat <= 1.01", lambda s: f"{s['r_hat_max']:.3f}", lambda s: s["r_hat_max"] <= R_HAT_MAX,
     _worst_variable_reason("r_hat_worst")),
    ("min bulk ESS >= 400", lambda s: f"{s['ess_bulk_min']:.0f}",
     lambda s: s["ess_bulk_min"] >= ESS_MIN, _worst_variable_reason("ess_bulk_worst")),
    ("0 divergences", lambda s: f"{s['divergences']}", lambda s: s["divergences"] == 0,
     _divergence_reason),
    ("PICP in [0.92, 0.97]", lambda s: "{:.3f}-{:.3f}".format(*s["picp_range"]),
     lambda s: PICP_RANGE[0] <= s["picp_range"][0] and s["picp_range"][1] <= PICP_RANGE[1],
     _picp_reason),
)  # fmt: skip


def _speed_reason(s: dict, settings: NutsSettings, needed: float | None = None) -> str:
    """What the sampling time is made of: leapfrog steps per draw times the time of one
    gradient, over the iterations and cores; with ``needed``, the speed-up the target asks."""
    if s["grad_ms"] is None or s["steps_per_draw"] is None:
        return "gradient time not recorded"
    iterations = settings.chains * (settings.tune + settings.draws)
    seconds = iterations * s["steps_per_draw"] * s["grad_ms"] / 1000.0 / settings.cores
    lo, hi = s["steps_per_draw_range"]
    reason = (
        f"{lo:.1f}-{hi:.1f} leapfrog steps per draw x {s['grad_ms']:.1f} ms per gradient: "
        f"about {seconds:.0f} s of gradients ({iterations} iterations, tuning at the draws' "
        f"steps, on {settings.cores} cores) of a median {s['sampling_s']:.0f} s of sampling"
    )
    if needed is not None:
        reason += f"; the target needs {needed:.2f}x the effective draws per second"
    return reason


def targets(summary: list[dict], n_splits: int, settings: NutsSettings = FULL_NUTS) -> list[dict]:
    """Each target of issue 14, per benchmark and sampler of the SLE model: met or not, with the
    measured figure, the same figure of the benchmark's baseline under NUTS (``baseline``:
    ``"-"`` if it was not run), which tells a miss of the data from a miss of SLE, and for a
    miss the reason the measurements give (``reason``; ``"-"`` when met). ``settings`` are the
    fits' (the speed reasons count their iterations)."""
    out = []
    fvgp = _fvgp_min_ess_per_s()
    baselines = {s["benchmark"]: s for s in summary if s["model"] != "SLE"}
    for s in summary:
        if s["model"] != "SLE" or not is_current(s):
            continue
        where = f"{s['benchmark']} / {s['sampler']}"
        complete = s["splits"] >= n_splits
        baseline = baselines.get(s["benchmark"])
        checks = [
            (target, value(s), met(s),
             "-" if baseline is None
             else f"{value(baseline)} ({baseline['spec']}, {_splits(baseline['splits'])})",
             reason(s, baseline))
            for target, value, met, reason in _TARGETS
        ]  # fmt: skip
        if s["benchmark"] == "teddy_400":
            checks.append(("wall <= 10 min", f"{s['wall_s'] / 60:.1f} min",
                           s["wall_s"] <= TEDDY_400_WALL_S, "-",
                           _speed_reason(s, settings)))  # fmt: skip
            if fvgp is not None:
                goal = FVGP_SPEEDUP * fvgp
                checks.append((f"min-ESS/s >= 10x fvgp ({goal:.2f})", f"{s['min_ess_per_s']:.2f}",
                               s["min_ess_per_s"] >= goal, "-",
                               _speed_reason(s, settings, goal / s["min_ess_per_s"])))  # fmt: skip
        for target, value, met, of_baseline, reason in checks:
            status = "met" if met else "missed"
            if not complete:
                status += f" ({s['splits']} of {n_splits} splits)"
            out.append({"where": where, "target": target, "value": value, "status": status,
                        "baseline": of_baseline, "reason": "-" if met else reason})  # fmt: skip
    run = {s["benchmark"] for s in summary if s["model"] == "SLE" and is_current(s)}
    for name in BENCHMARKS:
        if name not in run:
            out.append({"where": name, "target": "every target", "value": "-",
                        "status": "not run with the current default", "baseline": "-",
                        "reason": "-"})  # fmt: skip
    return out


def figure(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # long model names on two lines, so neighbouring tick labels do not overlap
    labels = [f"{s['benchmark']}\n{textwrap.fill(s['spec'], 12)}\n{s['sampler']}" for s in summary]
    colours = ["tab:blue" if s["model"] == "SLE" else "tab:grey" for s in summary]
    x = np.arange(len(summary))
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 0.8 * len(summary)), 7.0), sharex=True)
    axes[0].bar(x, [s["r_hat_max"] - 1.0 for s in summary], color=colours)
    axes[0].axhline(R_HAT_MAX - 1.0, color="k", ls="--", lw=1, label="target r-hat 1.01")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("largest r-hat - 1 (worst split)")
    axes[0].legend(loc="upper right")
    lo = [s["picp"] - s["picp_range"][0] for s in summary]
    hi = [s["picp_range"][1] - s["picp"] for s in summary]
    axes[1].errorbar(x, [s["picp"] for s in summary], yerr=[lo, hi], fmt="none", ecolor="k")
    axes[1].scatter(x, [s["picp"] for s in summary], c=colours, zorder=3)
    axes[1].axhspan(*PICP_RANGE, color="tab:green", alpha=0.15, label="target [0.92, 0.97]")
    axes[1].axhline(0.95, color="tab:green", lw=1, label="nominal 0.95")
    axes[1].set_ylabel("95 % PICP (mean; bars: range over splits)")
    axes[1].legend(loc="lower left")  # the low PICPs are on the right
    axes[1].set_xticks(x, labels, fontsize=8)
    fig.suptitle("NUTS on the library's SLE defaults (blue) and the best baseline (grey)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def summarise(csv_path: Path, out: Path, stem: str, settings: NutsSettings, n_splits: int) -> dict:
    rows = read_rows(csv_path)
    summary = aggregate(rows)
    checks = targets(summary, n_splits, settings)
    payload = {"settings": settings.__dict__, "splits": n_splits, "summary": summary,
               "targets": checks}  # fmt: skip
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    figure([s for s in summary if is_current(s)], out / f"{stem}.png")
    table = _table(
        ["benchmark", "model", "sampler", "mass matrix", "sampled as", "basin rule", "prediction",
         "splits", "r̂ max",
         "bulk ESS min",
         "tail ESS min", "div.", "wall (s, median)", "min-ESS/s", "RMSE", "CRPS", "PICP", "NLPD",
         "multi-basin"],
        [[s["benchmark"], s["spec"], s["sampler"], s["mass_matrix"], s["sampled_as"] or "-",
          s["basin_rule"] or "-", s["prediction"], s["splits"],
          f"{s['r_hat_max']:.3f}",
          f"{s['ess_bulk_min']:.0f}", f"{s['ess_tail_min']:.0f}", s["divergences"],
          f"{s['wall_s']:.0f}", f"{s['min_ess_per_s']:.2f}", f"{s['rmse']:.4g}",
          f"{s['crps']:.4g}", f"{s['picp']:.3f}", f"{s['nlpd']:.3f}", s["warned"]]
         for s in summary],
    )  # fmt: skip
    per_fit = _table(
        ["benchmark", "split", "model", "sampler", "mass matrix", "sampled as", "basin rule",
         "basins", "target accept", "r̂ max",
         "bulk ESS",
         "div.", "u where they started", "wall (s)", "sampling (s)", "prediction (s)",
         "steps/draw", "ms per gradient", "prediction", "max Pareto k", "PICP", "RMSE"],
        [[r["benchmark"], int(r["split"]), r["spec"], r["sampler"], r["mass_matrix"],
          r["sampled_as"] or "-", r["basin_rule"] or "-",
          int(r["basins"]), f"{r['target_accept']:g}",
          f"{r['r_hat_max']:.3f}",
          f"{r['ess_bulk_min']:.0f}", int(r["divergences"]),
          r["divergence_u"].replace(";", ", ") or "-", f"{r['wall_s']:.0f}",
          f"{r['sampling_s']:.0f}", f"{r['predict_s']:.0f}",
          "-" if np.isnan(r["steps_per_draw"]) else f"{r['steps_per_draw']:.1f}",
          "-" if np.isnan(r["grad_ms"]) else f"{r['grad_ms']:.1f}", r["prediction"],
          "-" if np.isnan(r["pareto_k_max"]) else f"{r['pareto_k_max']:.2f}",
          f"{r['picp']:.3f}", f"{r['rmse']:.4g}"] for r in rows],
    )  # fmt: skip
    decided = {(r["benchmark"], int(r["split"])): r["scales"]
               for r in rows if r["model"] == "SLE" and r["scales"] and is_current(r)}  # fmt: skip
    order = list(BENCHMARKS)
    decisions = _table(
        ["benchmark", "split", *(f"`{n}` sampled on" for n in ("radius", "ls", "eta", "sigma"))],
        [[bench, split, *(part.split(": ")[1] for part in decided[bench, split].split("; "))]
         for bench, split in sorted(decided, key=lambda k: (order.index(k[0]), k[1]))],
    )  # fmt: skip
    target_table = _table(
        [
            "SLE fits",
            "target",
            "measured",
            "status",
            "the baseline under NUTS (splits run)",
            "reason (when missed)",
        ],
        [
            [c["where"], c["target"], c["value"], c["status"], c["baseline"], c["reason"]]
            for c in checks
        ],
    )
    lines = [
        "# NUTS on the library's SLE defaults: convergence and calibration",
        "",
        f"Generated by `python -m benchmarks.nuts_convergence`. {settings.chains} chains x "
        f"({settings.tune} tune + {settings.draws} draws), {settings.cores} cores, one BLAS "
        f"thread per chain; {n_splits} training splits per benchmark. `baseline` = the best "
        "baseline of the paper reproduction, its priors and model. Diagnostics are the worst over "
        "splits; scores are means (PICP also its range). `multi-basin` = splits whose radius "
        "posterior has more than one basin that `sample_basins` sampled, each with its chains "
        "confined to the basin's radius interval, pooled by mass; their r̂ and ESS are the "
        "worst over the basins. `target accept`: NUTS's target acceptance, `sample_basins`'s "
        "default (0.9 with one basin; 0.95 with several since the 0.9 left 1-2 divergences "
        "in a basin's tail on SAXS and strings split 2; earlier multi-basin rows ran at 0.9). "
        f"`basin rule`: which basins those are -- `{BASIN_RULE}` (the current default: basins "
        f"behind dips deeper than {BASIN_BARRIER:g} nats, or {SHOULDER_BARRIER:g} nats for "
        f"shoulders holding less than {100 * SHOULDER_MASS:g} %, sampled when they hold at least "
        f"{100 * MIN_BASIN_MASS:g} % of the grid's mass, and weighed on a grid that resolves "
        f"`eta` and `sigma`), `{COARSE_WEIGHING_BASIN_RULE}` (the same basins weighed on wider "
        "scale cells: SAXS split 0's shoulder got 0.70 % of the pool instead of 1.8 %), "
        f"`{PREVIOUS_BASIN_RULE}` (the earlier "
        "one, which left SAXS split 0's radius shoulder, 0.7 % of the mass behind a 1.8-nat dip, "
        f"to the main basin's chains) or `{TRIED_BASIN_RULE}` (tried: every basin behind a "
        "1.5-nat dip apart, and the fine grid spanning those basins, which moved it on strings "
        "split 1 and Teddy n = 200 split 1). "
        f"`sampled as`: how `sle_priors` hands the hyperparameters to NUTS; `{SAMPLED_AS}` "
        "(the current default: the radius on the quantile scale of the grid posterior's basin "
        "that holds its mode, with a lower tail cut off within a grid cell of the small-radius "
        "wall, capped softly below the next basin up, or where the quantile scale reaches 6, when "
        "what lies above holds less than 0.5 % of the grid's mass (column `truncated_mass`); "
        "`ls` as its ratio to the grid's conditional mean of `ls` given the radius; `eta` and "
        "`sigma` as ratios to their own ridges, floored at the grid posterior's means; where the "
        "noise reaches zero, i.e. the coarse grid puts 0.5 % of its mass below a tenth of its "
        "median, `sigma`'s ratio on its quantile scale from a fine grid with 96 noise cells; "
        "where the fine grid resolves the start's radius basin with fewer than 2 cells per "
        "posterior sd, the radius map built from one more grid pass zoomed onto that basin) is "
        "what the targets check. Rows of earlier defaults are kept as a record: "
        f"`{FIRST_SAMPLED_AS}` (every variable on a log scale centred at the grid mode) and "
        "`quantile radius, mode-ridge ls` "
        "(the ridge followed the conditional mode, which jumps between two modes on Teddy) and "
        "`quantile radius, mean-ridge ls, across basins` (the maps were also used when several "
        "basins are sampled) and `..., fine-grid centred log across basins` (several basins on "
        "log scales centred at the fine grid's mode); several basins now get exactly the "
        f"first default, centred at the coarse grid's mode; `{UNCUT_SAMPLED_AS}` (the quantile "
        "map's lower tail reached past the small-radius wall, where most divergent trajectories "
        f"started); `{UNCONFINED_SAMPLED_AS}` (the current default with each basin's chains "
        "free to leave it, which counts the mass they stray into twice); "
        f"`{WALL_CUT_SAMPLED_AS}` (the default before the cap and the floored ridges); "
        f"`{SCALE_RIDGES_SAMPLED_AS}` (the option `scale_ridges=True` before the cap: `eta` "
        "and `sigma` also as ratios to their own floored ridges); "
        f"`{FULL_RIDGES_SAMPLED_AS}` (that option before its ridges were floored, tried as the "
        "default in one session); "
        f"`{TOP_CAP_SAMPLED_AS}` (the cap's first form: without a basin above the start's, at "
        "the fine grid's top instead of where `u` = 6; the splits it sampled the same as the "
        "default of then, Teddy n = 400 and bunny split 1, keep that default's label); "
        f"`{CAPPED_SAMPLED_AS}` (the default before the noise's quantile scale; its rows of "
        "the splits where the noise does not reach zero, the same model, carry the label of "
        f"then); `{NOISE_SAMPLED_AS}` (the default before the zoomed radius map; its rows of "
        "the splits where the grid resolves the start's basin, the same model, carry the "
        "current label). The CSV's column `scales` records, per fit, the scale `sle_priors` "
        "chose for each hyperparameter (`SLEPriors.scales`); the rows of the default of then "
        "written before the column was added were filled in from `sle_priors` on their splits, "
        "without sampling. "
        f"`{SMOOTH_MAPS_SAMPLED_AS}`: the quantile maps' cubics took the cubic spline's "
        "slopes (within Hyman's monotone limit) instead of PCHIP's, so that the sampled log "
        "density's gradient, which holds `log g'(u)`, does not jump at the maps' knots; tried "
        "on 13 splits and not adopted (fewer leapfrog steps on the 1-D benchmark; no more "
        "effective draws overall). "
        f"`{GAMMA_NOISE_SAMPLED_AS}` is `{UNCUT_SAMPLED_AS}` with the noise prior "
        "`sigma ~ Gamma(2, 2.5 / std(y))` instead of `HalfNormal(std(y))`: tried, not adopted "
        "(fewer divergences on one example model, not on these benchmarks). "
        "`mass matrix`: what NUTS adapts -- PyMC's diagonal one; nutpie's low-rank modified "
        "one, the default `sample_basins` gives it (rows with nutpie's diagonal one are the "
        "earlier default, kept as a record). "
        "`prediction`: how the test set is predicted -- `own landmark` (the current default for "
        "SLE, the README's: each test point predicted with its own landmark, as every training "
        "point is, by `own_landmark_predictive` on "
        f"{settings.own_landmark_draws} posterior draws, its mixture sampled "
        f"{settings.predictive_draws} times; column `pareto_k_max`: the largest Pareto shape of "
        "its importance weights over the test points) or `conditional` (`gp.conditional`'s "
        f"marginals from {settings.predictive_draws} posterior draws: the baselines, and the "
        "SLE fits before the own-landmark predictive, kept as a record; their posteriors were "
        "sampled with the same seeds, but some of the two runs' chains differ, so r̂ and ESS "
        "differ a little between the two; the cause is not traced: a split sampled twice "
        "in one session by one script gave the same chains). "
        "The figure shows the current default and the baselines. "
        "What the script does: see its docstring.",
        "",
        "## Targets",
        "",
        *target_table,
        "",
        "A split's PICP is one draw: its test values share one field, so their misses are "
        "correlated. How often the model that generated the Teddy data would itself meet the "
        "band on these splits, and how surprising each of SLE's Teddy misses would be for it: "
        "[studies/picp_spread.md](studies/picp_spread.md).",
        "",
        "## Per benchmark",
        "",
        *table,
        "",
        f"![r-hat and PICP per benchmark]({stem}.png)",
        "",
        "## What `sle_priors` decided per split",
        "",
        "The current default's scales (`SLEPriors.scales`): `capped quantile` is the radius's "
        "quantile scale with its cap (`, zoomed`: its map from one more grid pass over the "
        "start's basin), `centred log` a log scale centred at the grid's mode "
        "(several basins), `ridge` / `floored ridge` a ratio to the grid's ridge given the "
        "radius, and `quantile` after it the noise's quantile scale (the noise reaches zero).",
        "",
        *decisions,
        "",
        "## Every fit",
        "",
        *per_fit,
        "",
    ]
    (out / f"{stem}.md").write_text("\n".join(lines))
    return payload


def add_fit_arguments(p: argparse.ArgumentParser, example: str) -> None:
    """The options of a study that samples chosen splits again: ``--fits`` (``benchmark:split``
    entries, read by :func:`requested_fits`) and the meshes."""
    p.add_argument("--fits", nargs="+", default=None, help=f"benchmark:split, e.g. {example}")
    p.add_argument("--mesh", default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--bunny-mesh", default=SHARED_DATA / "stanford-bunny.obj")


def requested_fits(p: argparse.ArgumentParser, entries) -> list[tuple[str, int]]:
    """``benchmark:split`` entries as ``(benchmark, split)``; a malformed one is ``p.error``."""
    out = []
    for entry in entries:
        name, _, split = entry.partition(":")
        if name not in BENCHMARKS or not split.isdigit():
            p.error(f"--fits entries must be benchmark:split with a benchmark in "
                    f"{sorted(BENCHMARKS)}, but got {entry!r}")  # fmt: skip
        out.append((name, int(split)))
    return out


def add_data_arguments(p: argparse.ArgumentParser, benchmarks: list[str]) -> None:
    """The options of a script over these benchmarks' data: result directory, distance cache,
    meshes, and which benchmarks (default ``benchmarks``)."""
    p.add_argument("--out", type=Path, default=RESULTS, help="result directory")
    p.add_argument("--cache", type=Path, default=HERE / "paper" / "cache", help="distance cache")
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj", help="Teddy mesh")
    p.add_argument("--bunny-mesh", type=Path, default=SHARED_DATA / "stanford-bunny.obj")
    p.add_argument("--benchmarks", nargs="+", choices=list(BENCHMARKS), default=benchmarks)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and chains: a smoke run")
    add_data_arguments(p, list(BENCHMARKS))
    p.add_argument("--samplers", nargs="+", choices=SAMPLERS, default=list(SAMPLERS))
    p.add_argument("--models", nargs="+", choices=("SLE", "baseline"), default=["SLE", "baseline"])
    p.add_argument("--splits", type=int, default=None, help=f"splits per benchmark ({N_SPLITS})")
    p.add_argument(
        "--only-splits",
        nargs="+",
        type=int,
        default=None,
        help="run only these splits (e.g. 2), to do a benchmark in pieces",
    )
    p.add_argument("--summary-only", action="store_true", help="rewrite the summary from the CSV")
    p.add_argument(
        "--refit",
        action="store_true",
        help="refit the selected fits even if they are in the CSV, replacing their rows",
    )
    args = p.parse_args(argv)
    settings = QUICK_NUTS if args.quick else FULL_NUTS
    args.splits = args.splits or (1 if args.quick else N_SPLITS)
    outside = sorted(set(args.only_splits or ()) - set(range(args.splits)))
    if outside:
        p.error(f"--only-splits must be in [0, {args.splits}), but got {outside}")
    stem = "nuts_convergence_quick" if args.quick else "nuts_convergence"
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / f"{stem}.csv"
    if not args.summary_only:
        run(args, settings, csv_path)
    summarise(csv_path, args.out, stem, settings, args.splits)


if __name__ == "__main__":
    main()
