"""Benchmark scripts run end to end in their quick mode, so that they cannot rot."""

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.nuts_convergence import SAMPLED_AS
from benchmarks.paper import results_csv, runner, summary
from tests.support import run_module, run_quick


def test_distances_benchmark_quick(tmp_path, icosphere_obj):
    # as the README says to run a benchmark: python -m, in an interpreter of its own
    results = run_quick("distances", tmp_path, "--mesh", icosphere_obj(3), subprocess_run=True)
    assert results["geodesic"]["n_vertices"] == 642
    assert results["exact_w2"]["max_relative_error_vs_reference"] < 1e-9
    cutoff = results["w2_cutoff"]
    assert cutoff["pairs_lost"] == 0 and cutoff["max_abs_difference"] < 1e-12
    assert cutoff["pairs_below_cutoff"] <= cutoff["pairs_solved"] <= 1.0
    assert 0.0 < cutoff["bound_over_w2_median"] <= 1.0
    assert (tmp_path / "distances_quick.md").read_text().startswith("# Distance builders")
    # A section rerun keeps the others' results.
    run_quick("distances", tmp_path, "--mesh", icosphere_obj(3), "--section", "w2_cutoff")
    again = json.loads((tmp_path / "distances_quick.json").read_text())
    assert again["geodesic"] == results["geodesic"] and again["exact_w2"] == results["exact_w2"]


def test_size_limits_benchmark_quick(tmp_path):
    result = run_quick("size_limits", tmp_path)
    (row,) = result["sizes"]
    assert row["n"] == 30 and row["priors_s"] > 0 and row["grad_ms"] > 0 and row["peak_mib"] > 0
    assert 0 < 60 * row["nuts_min"] and row["draw_s"] > 0
    assert {(r["n"], r["gp"]) for r in result["blas"]} == {(40, "sle"), (40, "matern32")}
    assert all(r["ldflags"] == "" for r in result["blas"] if r["blas"] == "none (pip)")
    text = (tmp_path / "size_limits_quick.md").read_text()
    assert text.startswith("# What the recipe costs") and "| 30 |" in text


def test_performance_benchmark_quick(tmp_path):
    result = run_quick("performance", tmp_path)
    rows = result["rows"]
    assert {row["backend"] for row in rows} == {"C"}
    assert all(row["floor"] > 0 and row["sle_sparse_0.05"] > 0 for row in rows)
    (memory,) = result["meta"]["memory_mib"].values()  # measured in two fresh processes
    assert np.isfinite(memory["resident"]) and memory["transient"] >= 0
    assert (tmp_path / "performance_quick.md").read_text().startswith("# Log-likelihood")


def test_nuts_convergence_benchmark_quick_resumes(tmp_path, distance_cache):
    args = ["--benchmarks", "one_d", "--samplers", "pymc", "--cache", distance_cache,
            "--splits", "2", "--only-splits", "0"]  # fmt: skip
    run_quick("nuts_convergence", tmp_path, *args)
    csv_path = tmp_path / "nuts_convergence_quick.csv"
    rows = list(csv.DictReader(csv_path.open()))
    # only the split asked for, of the two
    assert [(r["split"], r["model"], r["spec"], r["sampler"]) for r in rows] == [
        ("0", "SLE", "SLE", "pymc"),
        ("0", "baseline", "Matern", "pymc"),
    ]
    for r in rows:
        assert float(r["wall_s"]) > float(r["sampling_s"]) > 0
        parts = sum(float(r[k]) for k in ("setup_s", "sampling_s", "predict_s"))
        assert float(r["predict_s"]) > 0 and parts == pytest.approx(float(r["wall_s"]))
        assert float(r["steps_per_draw"]) >= 1  # PyMC's NUTS reports its leapfrog steps
        assert 0 <= float(r["picp"]) <= 1 and float(r["rmse"]) > 0 and float(r["r_hat_max"]) > 0
        assert float(r["grad_ms"]) > 0  # one log density and gradient, timed after sampling
    sle_row, baseline_row = rows
    # the worst variables are named: the SLE's four hyperparameters
    watched = {"radius", "ls", "eta", "sigma"}
    assert sle_row["r_hat_var"] in watched and sle_row["ess_bulk_var"] in watched
    # The SLE's divergence records are kept; the radius is on its quantile scale here.
    recorded, at_wall = float(sle_row["divergences_recorded"]), float(sle_row["wall_divergences"])
    assert recorded == float(sle_row["divergences"]) and 0 <= at_wall <= recorded
    starts = [float(u) for u in filter(None, sle_row["divergence_u"].split(";"))]
    assert len(starts) == recorded and sum(u < -3 for u in starts) == at_wall
    assert np.isnan(float(baseline_row["wall_divergences"]))  # no radius to place them on
    run_quick("nuts_convergence", tmp_path, *args)  # resumes: every fit is already there
    assert len(list(csv.DictReader(csv_path.open()))) == 2
    # --refit reruns the fits asked for and replaces their rows, keeping the others.
    run_quick("nuts_convergence", tmp_path, *args, "--models", "SLE", "--refit")
    refitted = list(csv.DictReader(csv_path.open()))
    assert [(r["model"], r["sampler"]) for r in refitted] == [("baseline", "pymc"), ("SLE", "pymc")]
    assert refitted[0] == baseline_row
    text = (tmp_path / "nuts_convergence_quick.md").read_text()
    assert "| one_d / pymc | r-hat <= 1.01 |" in text
    assert [r["sampled_as"] for r in refitted] == ["", SAMPLED_AS]
    # what the radius cap cut off: below the 0.5 % sle_priors allows; none for the baseline
    assert 0 <= float(refitted[1]["truncated_mass"]) < 0.005
    assert float(refitted[0]["truncated_mass"]) == 0
    # what sle_priors decided for the split, one scale per hyperparameter; none for the baseline
    scales = dict(part.split(": ") for part in refitted[1]["scales"].split("; "))
    assert set(scales) == {"radius", "ls", "eta", "sigma"} and scales["ls"] == "ridge"
    assert refitted[0]["scales"] == ""
    # the SLE predicts each test point with its own landmark, and keeps its weights' worst shape
    assert [r["prediction"] for r in refitted] == ["conditional", "own landmark"]
    assert np.isnan(float(refitted[0]["pareto_k_max"])) and float(refitted[1]["pareto_k_max"]) > 0
    # one radius basin here and no priors for the baseline: both at 0.9
    assert [float(r["target_accept"]) for r in refitted] == [0.9, 0.9]
    assert "| target accept |" in text


def test_nuts_convergence_rejects_splits_it_does_not_have(tmp_path, capsys):
    from benchmarks.nuts_convergence import main

    with pytest.raises(SystemExit):
        main(["--quick", "--out", str(tmp_path), "--splits", "2", "--only-splits", "0", "2"])
    assert "--only-splits must be in [0, 2), but got [2]" in capsys.readouterr().err


def test_nuts_convergence_targets_report_each_figure():
    from benchmarks._nuts_summary import targets as check
    from benchmarks.nuts_convergence import BASIN_RULE, FULL_NUTS, SAMPLED_AS, is_current
    from benchmarks.nuts_convergence import aggregate as summary_of

    def aggregate(rows):  # what summarise does: the current default's fits only
        return summary_of([r for r in rows if is_current(r)])

    def targets(summary, n_splits):
        return check(summary, n_splits, FULL_NUTS)

    def row(split, r_hat, picp, divergences=0, sampled_as=SAMPLED_AS):
        return {"benchmark": "teddy_400", "split": split, "model": "SLE", "spec": "SLE",
                "sampler": "pymc", "r_hat_max": r_hat, "ess_bulk_min": 500.0,
                "ess_tail_min": 450.0, "divergences": divergences, "setup_s": 50.0,
                "sampling_s": 600.0, "wall_s": 700.0,
                "min_ess_per_s": 500.0 / 700.0, "rmse": 1.0, "crps": 0.5, "picp": picp,
                "nlpd": 1.0, "multimodal_warning": "", "basins": 1,
                "sampled_as": sampled_as, "mass_matrix": "diagonal",
                "basin_rule": BASIN_RULE, "steps_per_draw": 6.0, "grad_ms": 10.0,
                "divergences_recorded": divergences,
                "wall_divergences": divergences // 2,
                "divergence_u": ";".join(["-3.5", "0.25", "1.5"][:divergences]),
                "r_hat_var": "sigma", "ess_bulk_var": "radius", "prediction": "own landmark",
                "pareto_k_max": 0.5}  # fmt: skip

    # A fit of an earlier default is not shown, nor checked against the targets.
    old = {**row(0, 1.5, 0.5), "sampled_as": "centred log"}
    summary = aggregate([old, row(0, 1.004, 0.95), row(1, 1.02, 0.93, divergences=2)])
    assert [s["splits"] for s in summary] == [2]
    assert summary[0]["r_hat_max"] == 1.02 and summary[0]["picp_range"] == (0.93, 0.95)
    status = {c["target"]: (c["value"], c["status"]) for c in targets(summary, n_splits=3)}
    assert status["r-hat <= 1.01"] == ("1.020", "missed (2 of 3 splits)")
    assert status["min bulk ESS >= 400"] == ("500", "met (2 of 3 splits)")
    assert status["0 divergences"] == ("2", "missed (2 of 3 splits)")
    assert status["PICP in [0.92, 0.97]"] == ("0.930-0.950", "met (2 of 3 splits)")
    assert status["wall <= 10 min"] == ("11.7 min", "missed (2 of 3 splits)")
    assert status["every target"] == ("-", "not run with the current default")  # e.g. one_d
    # A miss comes with its reason, read off the measurements; a target met has none.
    reason = {c["target"]: c["reason"] for c in targets(summary, n_splits=3)}
    assert reason["min bulk ESS >= 400"] == "-"
    assert reason["r-hat <= 1.01"] == "split 1, on `sigma`"  # the split with r-hat 1.02
    reason = {c["target"]: c["reason"] for c in targets(summary, n_splits=3)}
    assert reason["0 divergences"] == (
        "1 of the 2 recorded left from the small-radius wall (u < -3), the other from u = 0.25"
    )
    # 4 chains x 2000 iterations x 6 steps x 10 ms on 2 cores: 240 s of the 600 s of sampling.
    assert reason["wall <= 10 min"].startswith("6.0-6.0 leapfrog steps per draw x 10.0 ms")
    assert "about 240 s of gradients" in reason["wall <= 10 min"]
    # Each target also gives the baseline's figure on the benchmark, when it was run.
    assert {c["baseline"] for c in targets(summary, n_splits=3)} == {"-"}
    baseline = {**row(0, 1.002, 0.9, divergences=3), "model": "baseline",
                "spec": "Geometric Matern", "sampled_as": "", "basin_rule": "",
                "prediction": "conditional"}  # fmt: skip
    summary = aggregate([row(0, 1.004, 0.95), baseline])
    of_baseline = {c["target"]: c["baseline"] for c in targets(summary, n_splits=3)}
    assert of_baseline["0 divergences"] == "3 (Geometric Matern, 1 split)"
    assert of_baseline["PICP in [0.92, 0.97]"] == "0.900-0.900 (Geometric Matern, 1 split)"
    assert of_baseline["wall <= 10 min"] == "-"
    # PICP misses say on which side, and how the NLPD compares with the baseline's.
    summary = aggregate([row(0, 1.004, 0.9), row(1, 1.004, 0.99), row(2, 1.004, 0.95),
                         {**baseline, "nlpd": 0.5}])  # fmt: skip
    picp = next(c for c in targets(summary, n_splits=3) if c["target"].startswith("PICP"))
    assert picp["reason"] == (
        "1 of 3 splits below 0.92 (intervals too narrow); 1 of 3 splits above 0.97 (intervals "
        "too wide); NLPD 1.000 against the baseline's 0.500"
    )
    three = aggregate([row(0, 1.004, 0.95, divergences=3)])
    divergences = next(c for c in targets(three, n_splits=1) if c["target"] == "0 divergences")
    assert divergences["reason"].endswith("(u < -3), the others from u in [0.25, 1.50]")
    # Divergences without a record (several basins) are counted as such.
    unrecorded = {**row(0, 1.004, 0.95, divergences=3), "divergences_recorded": float("nan")}
    summary = aggregate([unrecorded, row(1, 1.004, 0.95, divergences=2)])
    divergences = next(c for c in targets(summary, n_splits=2) if c["target"] == "0 divergences")
    assert divergences["reason"] == (
        "1 of the 2 recorded left from the small-radius wall (u < -3), the other from u = 0.25; "
        "3 not recorded (several basins)"
    )
    # nutpie's fits are checked with the mass matrix sample_basins gives it, not the diagonal
    # one, and under the current basin rule.
    nutpie = [{**row(0, 1.001, 0.95), "sampler": "nutpie", "mass_matrix": "low-rank"},
              {**row(0, 1.3, 0.95), "sampler": "nutpie", "mass_matrix": "diagonal"},
              {**row(0, 1.3, 0.95), "sampler": "nutpie", "mass_matrix": "low-rank",
               "basin_rule": "dips > 3 nats, mass >= 1 %"}]  # fmt: skip
    checked = [c for c in targets(aggregate(nutpie), n_splits=1) if c["target"] == "r-hat <= 1.01"]
    assert [(c["where"], c["value"]) for c in checked] == [("teddy_400 / nutpie", "1.001")]


def run_paper(script: str, out: Path, cache: Path, *args: str) -> list[dict]:
    """Run ``python -m benchmarks.paper.<script> --quick``; return its per-trial CSV rows."""
    run_module(f"benchmarks.paper.{script}", "--quick", "--jobs", "1", "--out", out,
               "--cache", cache, *args)  # fmt: skip
    with open(out / f"{script}_trials.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _check_rows(rows, models, nuts_models, may_fail=()):
    expected = {(m, "map") for m in models} | {(m, "nuts") for m in nuts_models}
    assert {(r["model"], r["inference"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for row in rows:
        if row["model"] not in may_fail:
            assert row["status"] == "ok", row
            assert float(row["rmse"]) > 0 and 0 <= float(row["picp"]) <= 1


def test_paper_teddy_quick_and_resume(tmp_path, icosphere_obj, distance_cache):
    mesh = icosphere_obj(3)
    rows = run_paper("teddy", tmp_path, distance_cache, "--mesh", mesh, "--render")
    models = ["SLE", "Geometric Matern", "Geometric Matern (unit amplitude)",
              "Raw-distance embedding", "SLE (nearest-neighbour radius bound)",
              "Matern on geodesic"]  # fmt: skip
    _check_rows(rows, models, ["SLE", "Geometric Matern"], may_fail={"Matern on geodesic"})
    assert (tmp_path / "teddy.md").read_text().startswith("# Teddy mesh")
    assert (tmp_path / "teddy.png").exists() and (tmp_path / "teddy_sle.png").exists()
    before = (tmp_path / "teddy_trials.csv").read_bytes()
    again = run_module("benchmarks.paper.teddy", "--quick", "--jobs", "1",
                       "--out", tmp_path, "--cache", distance_cache, "--mesh", mesh)  # fmt: skip
    assert "teddy: 0 tasks to run" in again.stdout
    assert (tmp_path / "teddy_trials.csv").read_bytes() == before


def test_paper_bunny_quick(tmp_path, icosphere_obj, distance_cache):
    rows = run_paper("bunny", tmp_path, distance_cache, "--mesh", icosphere_obj(3), "--render")
    models = ["SLE", "Riemannian Matern (20)", "Riemannian Matern (50)",
              "Riemannian Matern (20, unit amplitude)", "Riemannian Matern (50, unit amplitude)",
              "Raw-distance embedding"]  # fmt: skip
    _check_rows(rows, models, [])
    assert (tmp_path / "bunny.md").read_text().startswith("# Stanford bunny")


def test_paper_saxs_quick(tmp_path, distance_cache):
    rows = run_paper("saxs", tmp_path, distance_cache, "--render")
    models = [
        "SLE - W2",
        "Matern - sliced W2",
        "SLE - sliced W2",
        "Matern - sliced W2 (64x64)",
        "Matern - W2",
        "Raw-distance embedding - W2",
    ]
    _check_rows(rows, models, ["SLE - W2", "Matern - sliced W2"], may_fail={"Matern - W2"})
    w2 = [r for r in rows if r["model"] == "Matern - W2" and r["status"] == "ok"]
    assert all(r["min_eigenvalue"] != "" for r in w2)  # the PSD check ran
    assert "sliced W2" in (tmp_path / "saxs.md").read_text()
    assert (tmp_path / "saxs_images.png").exists()


def test_paper_one_d_quick(tmp_path, distance_cache):
    rows = run_paper("one_d", tmp_path, distance_cache)
    _check_rows(rows, ["SLE", "Matern", "Raw-distance embedding"], ["SLE", "Matern"])


def test_paper_protocol_dedupes_and_aggregates(tmp_path):
    path = tmp_path / "x_trials.csv"
    base = {"experiment": "x", "inference": "map", "size": 10, "status": "ok", "crps": 1.0}
    for model, draw, rmse, picp in [("A", 0, 1.0, 0.9), ("A", 1, 3.0, 0.94), ("A", 1, 99.0, 0.0),
                                    ("B", 0, 0.5, 0.5), ("B", 1, 0.5, 0.5)]:  # fmt: skip
        results_csv.append_row(
            path, {**base, "model": model, "draw": draw, "rmse": rmse, "picp": picp}
        )
    rows = results_csv.read_rows(path)
    assert len(rows) == 4  # the repeated (A, map, 10, 1) row is dropped, the first one kept
    stats = summary.aggregate(rows)
    mean, se, n = stats[("A", "map", 10)]["rmse"]
    assert (mean, n) == (2.0, 2) and abs(se - 1.0) < 1e-12  # sd sqrt(2) over sqrt(2)
    table = summary.markdown_table(rows, "map", [10], ["A", "B"])
    assert "**0.500 ± 0.000**" in table  # B has the lower RMSE
    assert "**0.920 ± 0.020**" in table  # A's PICP is closer to 0.95


def test_paper_protocol_counts_draws_per_model(tmp_path):
    path = tmp_path / "x_trials.csv"
    base = {"experiment": "x", "inference": "nuts", "status": "ok", "rmse": 1.0, "crps": 1.0,
            "picp": 0.9}  # fmt: skip
    for model, size, draws in [("A", 10, 5), ("B", 10, 5), ("A", 20, 5), ("B", 20, 4)]:
        for draw in range(draws):
            results_csv.append_row(path, {**base, "model": model, "size": size, "draw": draw})
    rows = results_csv.read_rows(path)
    assert summary.draws_per_cell(rows, "B", "nuts", 20) == 4  # not A's 5
    assert summary.draws_per_cell(rows, "B", "map", 20) == 0
    assert summary.draw_counts(rows, ["A", "B"], "nuts", [10]) == "5"
    assert summary.draw_counts(rows, ["A", "B"], "nuts", [10, 20, 30]) == "10: 5, 20: 4-5, 30: 0"
    table = summary.markdown_table(rows, "nuts", [10, 20], ["A", "B"])
    assert table.count("(n=4)") == 3  # B's three metric cells at size 20, and only those


def test_paper_protocol_plans_one_task_per_nuts_fit():
    specs = [SimpleNamespace(name=name) for name in ("A", "B", "C")]
    trials = [SimpleNamespace(size=size, draw=draw) for size in (10, 20) for draw in range(3)]
    done = {("A", "map", 10, 0), ("B", "map", 10, 0), ("C", "map", 10, 0), ("A", "nuts", 10, 1)}
    tasks = runner.plan(trials, specs, done, nuts_models=("A", "B"), nuts_draws=2,
                          nuts_sizes={10})  # fmt: skip
    summary = [(t.size, t.draw, [(s.name, i) for s, i in units]) for t, units in tasks]
    maps = [("A", "map"), ("B", "map"), ("C", "map")]
    assert summary == [
        (10, 0, [("A", "nuts")]),  # its MAP fits are done: no MAP task
        (10, 0, [("B", "nuts")]),
        (10, 1, maps),  # one task for all MAP fits of a trial
        (10, 1, [("B", "nuts")]),  # A's NUTS fit on this draw is done
        (10, 2, maps),  # draw 2 is past nuts_draws
        (20, 0, maps),  # size 20 is not a NUTS size
        (20, 1, maps),
        (20, 2, maps),
    ]
    assert runner.plan(trials, specs, done, ("A",), 0, set()) == [
        (t, [(s, "map") for s in specs]) for t in trials[1:]
    ]


def test_scaling_benchmark_quick(tmp_path):
    result = run_quick("scaling", tmp_path)
    sizes = result["sizes"]
    assert [row["n"] for row in sizes] == [300, 600]
    for row in sizes:
        assert row["sparse_ms"] > 0 and row["factor_ms"] > 0 and row["selinv_ms"] > 0
        assert row["matern_ms"] > 0
        assert 20 < row["distances_per_row"] < 40  # the cutoff's ~32 training points per bump
    # The dense path runs up to --dense-max only (300 in quick mode).
    assert sizes[0]["dense_ms"] > 0 and sizes[0]["dense_peak_mib"] > 0
    assert sizes[1]["dense_ms"] is None
    (fit,) = result["map"]
    assert fit["n_train"] == 300 and fit["n_test"] == 100 and fit["evaluations"] > 0
    assert fit["rmse_latent"] < 0.5 and 0.5 < fit["picp_95"] <= 1.0
    nuts = result["nuts"]
    assert nuts["chains"] == 2 and nuts["draws"] == 20 and np.isfinite(nuts["r_hat_max"])
    assert nuts["basins"] >= 1 and nuts["priors_min"] > 0 and nuts["steps_per_draw"] >= 1
    text = (tmp_path / "scaling_quick.md").read_text()
    assert text.startswith("# Exact SLE Gaussian processes at large N")
    assert "## A fit at scale" in text and "## NUTS on the sparse likelihood" in text
    assert (tmp_path / "scaling_quick.png").stat().st_size > 10_000


def test_subsample_search_benchmark_quick(tmp_path):
    result = run_quick("subsample_search", tmp_path)
    (row,) = result["compare"]
    (subset,) = row["subsets"]
    assert row["n"] == 300 and subset["size"] == 100 and 0.0 <= subset["tv_radius"] <= 1.0
    assert subset["radius_mode"] <= row["cutoff"] * (1 + 1e-12)
    scale = result["scale"]
    assert scale["n"] == 600 and scale["priors_s"] > 0 and scale["evaluations"] > 0
    assert scale["radius_cap"] <= scale["cutoff"] * (1 + 1e-12)
    assert scale["point"]["radius"] <= scale["cutoff"] * (1 + 1e-12)
    text = (tmp_path / "subsample_search_quick.md").read_text()
    assert text.startswith("# sle_priors at scale: the search on a random subset")
    assert "## At N = 600" in text


def test_pymc_marginal_benchmark_quick(tmp_path):
    result = run_quick("pymc_marginal", tmp_path)
    assert [(row["problem"], row["n"]) for row in result["rows"]] == [("dense", 200),
                                                                       ("sparse", 400)]  # fmt: skip
    for row in result["rows"]:
        assert row["pymc_ms"] > 0 and row["sle_ms"] > 0 and row["ratio"] > 0
        assert row["max_relative_difference"] < 1e-10  # the two classes give one density
    assert 20 < result["rows"][1]["stored_per_row"] < 45  # cutoff="auto": ~32 a row
    assert (tmp_path / "pymc_marginal_quick.md").exists()


def test_laplace_benchmark_quick(tmp_path):
    result = run_quick("laplace", tmp_path)
    size = result["sizes"][0]
    assert size["newton_cold"] >= size["newton_warm"] > 0 and size["warm_s"] > 0
    assert size["gaussian_s"] > 0  # the Gaussian model has free variables: nothing folded away
    assert size["ep_sweeps_cold"] >= 1 and size["ep_warm_s"] > 0 and size["ep_vs_laplace"] > 0
    fit = result["map"][0]
    assert 0.5 < fit["accuracy"] <= 1 and fit["log_loss"] > 0
    assert sum(count for *_, count in fit["reliability"]) == fit["n_test"]
    assert result["nuts"]["laplace_gradient_ms"] > 0 and result["nuts"]["latent_gradient_ms"] > 0
    assert [row["case"] for row in result["verify"]] == ["poisson"]
    row = result["verify"][0]
    assert row["target_accept"] == 0.95 and row["latent_values"] == "Laplace-whitened"
    assert 0 < row["relative_difference"] < 1
    assert row["relative_difference"] != row["probability_difference"]  # rates are not near 1
    assert row["ep_relative_difference"] > 0 and set(row["ep_quantile_difference_sd"]) == {
        "radius",
        "ls",
        "eta",
        "offset",
    }
    for method in ("laplace", "ep", "latent"):  # every run's mixing is recorded
        assert 0.9 < row[f"{method}_r_hat_max"] < 2 and row[f"{method}_ess_tail_min"] > 0
    # the exact run is stored for later runs, with its date
    assert (tmp_path / "laplace_quick_references" / "poisson.npz").exists()
    assert "(sampled " in (tmp_path / "laplace_quick.md").read_text()
    assert (tmp_path / "laplace_quick.md").read_text().startswith("# The Laplace latent GP")


def test_laplace_verify_reloads_the_exact_run_only_under_the_same_settings(tmp_path):
    from benchmarks._laplace_verify import load_reference, save_reference

    rng = np.random.default_rng(0)
    fit = (rng.uniform(size=5), {"ls": rng.normal(size=8), "eta": rng.normal(size=8)},
           {"ls": rng.uniform(size=3), "eta": rng.uniform(size=3)})  # fmt: skip
    settings = {"case": "poisson", "cases": ("poisson", 1.0, 0.95), "data_sha256": "ab"}
    path = tmp_path / "poisson.npz"
    assert load_reference(path, settings) is None  # none stored
    save_reference(path, settings, fit, {"latent_s": 3.0, "latent_sampled_on": "2026-12-07"})
    (mean, draws, errors), diagnostics = load_reference(path, settings)
    np.testing.assert_array_equal(mean, fit[0])
    assert list(draws) == ["ls", "eta"] and all(
        np.array_equal(draws[k], fit[1][k]) and np.array_equal(errors[k], fit[2][k]) for k in draws
    )
    assert diagnostics == {"latent_s": 3.0, "latent_sampled_on": "2026-12-07"}
    assert load_reference(path, {**settings, "data_sha256": "cd"}) is None  # other data


@pytest.mark.parametrize(
    ("difference", "error", "r_hat", "verdict"),
    [
        (0.19, 0.05, (1.0, 1.005), "met"),
        (0.25, 0.05, (1.0, 1.01), "missed"),
        (0.11, 0.29, (1.0, 1.005), "undecided"),  # the Monte Carlo error cannot resolve 0.2 sd
        (0.11, 0.05, (1.0, 1.067), "undecided"),  # a reference that has not mixed decides nothing
        (1.34, 0.05, (1.011, 1.0), "undecided"),  # nor does an approximation that has not
    ],
)
def test_laplace_quantile_verdict(difference, error, r_hat, verdict):
    from benchmarks._laplace_report import quantile_verdict

    row = {"ep_quantile_difference_sd": {"radius": 0.01, "ls": difference},
           "ep_quantile_mcse_sd": {"radius": 9.0, "ls": error},  # the worst difference's error
           "ep_r_hat_max": r_hat[0], "latent_r_hat_max": r_hat[1]}  # fmt: skip
    text = quantile_verdict(row, "ep_", "ep")
    assert text.startswith(f"{verdict} ({difference:.2f} sd (ls), Monte Carlo error {error:.2f}")
    assert ("the approximation's r̂" in text) == (r_hat[0] > 1.01)
    assert ("the exact run's r̂" in text) == (r_hat[1] > 1.01)


def test_nuts_cost_benchmark_quick(tmp_path):
    run = run_quick("nuts_cost", tmp_path)["runs"][0]
    assert run["variant"] == "pymc" and run["gradients_per_kept_draw"] >= run["steps_per_draw"]
    assert run["ess_tail_min"] > 0 and run["worst"] in {"radius", "ls", "eta", "sigma"}
    assert isinstance(run["priors_warnings"], list)
    low, median, high = run["radius_quantiles"]
    assert 0 < low <= median <= high <= run["cutoff"]  # the radius prior stops at the cutoff
    page = (tmp_path / "nuts_cost_quick.md").read_text()
    assert page.startswith("# NUTS per kept draw") and "- N = 100: the full PyMC NUTS run" in page
    assert "two chains a half" not in page  # one call: no halves' walls
    # in halves: chains 0-1 wait for chains 2-3, and together they are the one-call run's chains
    assert run_quick("nuts_cost", tmp_path, "--half", "1")["runs"] == [run]  # nothing written
    joined = run_quick("nuts_cost", tmp_path, "--half", "2")["runs"][0]
    same = ("gradients_per_kept_draw", "first_100_steps_per_iteration", "r_hat_max", "ess_tail_min")
    assert {k: joined[k] for k in same} == {k: run[k] for k in same}
    assert joined["wall_s"] == sum(joined["halves_wall_s"]) and run["halves_wall_s"] is None
    assert "two chains a half" in (tmp_path / "nuts_cost_quick.md").read_text()
    assert not (tmp_path / "nuts_cost_quick_halves").exists()  # the halves' draws are removed


@pytest.mark.parametrize(("q99", "pinned"), [(0.0099, True), (0.0098, False)])
def test_nuts_cost_page_says_when_the_radius_is_held_by_the_cutoff(q99, pinned):
    from benchmarks.nuts_cost import summary as nuts_cost_page

    row = {"n": 20000, "variant": "pymc", "draws": 500, "gradients_per_kept_draw": 12.0,
           "tuning_steps_per_iteration": 6.0, "first_100_steps_per_iteration": 6.0,
           "steps_per_draw": 6.0, "wall_s": 60.0, "r_hat_max": 1.0, "ess_bulk_min": 900.0,
           "ess_tail_min": 500.0, "divergences": 0, "radius_quantiles": [0.005, 0.009, q99],
           "cutoff": 0.01}  # fmt: skip
    page = nuts_cost_page([row])
    assert ("the posterior is truncated by the sparsity" in page) is pinned
    assert (f"quantile is {q99:g} against the cutoff 0.01" in page) is pinned
    assert "- N = 20,000: the full PyMC NUTS run" in page


def test_compile_cost_benchmark_quick(tmp_path):
    result = run_quick("compile_cost", tmp_path)
    assert [row["step"] for row in result["steps"]] == ["B (new data)"]
    assert all(row["build_s"] > 0 and row["sample_s"] > 0 for row in result["steps"])
    assert all(row["new_modules"] >= 0 and "radius" in row["transforms"] for row in result["steps"])
    assert (tmp_path / "compile_cost_quick.md").read_text().startswith("# Compiling")


def test_laplace_verify_whitening_is_the_stand_in_posterior_with_its_density():
    """f = m + F z with F F^T = (K^-1 + W)^-1, m = F F^T (K^-1 mu + W y~), and the density of
    z is log N(f | mu, K) + log|det F|, at two points."""
    import pytensor
    import pytensor.tensor as pt
    from scipy.stats import multivariate_normal

    from benchmarks._laplace_verify import _whitened

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    K, W = A @ A.T + 0.1 * np.eye(6), rng.uniform(0.01, 5.0, size=6)
    mean, pseudo = rng.normal(size=6), rng.normal(size=6)
    z = pt.vector("z")
    f, log_density = _whitened(z, pt.as_tensor(mean), pt.as_tensor(K), pseudo, W)
    evaluate = pytensor.function([z], [pt.jacobian(f, z), f, log_density])
    covariance = np.linalg.inv(np.linalg.inv(K) + np.diag(W))
    for point in (np.zeros(6), rng.normal(size=6)):
        F, f0, density = evaluate(point)
        np.testing.assert_allclose(F @ F.T, covariance, rtol=1e-10, atol=1e-12)
        centre = covariance @ (np.linalg.solve(K, mean) + W * pseudo)
        np.testing.assert_allclose(f0, centre + F @ point, rtol=1e-10, atol=1e-12)
        expected = multivariate_normal(mean, K).logpdf(f0) + np.linalg.slogdet(F)[1]
        assert density == pytest.approx(expected, rel=1e-10)
