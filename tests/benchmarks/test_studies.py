"""The diagnostic studies (benchmarks/studies/*.py) run end to end in quick mode, so they cannot
rot, and their outputs satisfy what the studies claim to measure."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.support import run_module


@pytest.fixture
def run_study(tmp_path, distance_cache):
    """Run ``python -m benchmarks.studies.<name> --quick`` into ``tmp_path``; check its markdown and
    figure; return the output folder."""

    def run(name: str, *args: str) -> Path:
        run_module(f"benchmarks.studies.{name}", "--quick", "--jobs", "1", "--out", tmp_path,
                   "--cache", distance_cache, *args)  # fmt: skip
        assert (tmp_path / f"{name}.md").read_text().startswith("# ")
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
        return tmp_path

    return run


@pytest.fixture
def sphere(icosphere_obj) -> str:
    return icosphere_obj(3)


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_conditioning_quick(run_study):
    out = run_study("conditioning")
    stats = json.loads((out / "conditioning.json").read_text())
    table = rows(out / "conditioning.csv")
    assert len(table) == 2 * 2 * 2  # settings x models x sizes, one draw
    assert all(float(r["kappa"]) >= 1.0 for r in table)
    for setting in ("initial", "optimised"):
        for model in ("SLE", "Raw-distance embedding"):
            assert set(stats[setting][model]) >= {"kappa_mean", "alpha"}
    sle_rows = [r for r in table if r["model"] == "SLE"]
    assert all(0 < float(r["s_bar"]) <= int(r["size"]) for r in sle_rows)


def test_distortion_quick(run_study):
    stats = json.loads((run_study("distortion") / "distortion.json").read_text())
    assert stats["n_pairs"] == 60 * 59 // 2
    assert abs(stats["fraction_beyond_r_local"] - 0.067) < 0.01  # the paper's share of far pairs
    assert stats["r_dense"] > stats["diameter"] > stats["r_local"]
    assert all(-1 <= v <= 1 for v in stats["spearman"].values())
    assert stats["spearman"]["sw2_vs_w2"] > 0.8  # sliced W2 orders pairs like exact W2


def test_ablation_quick(run_study, sphere):
    out = run_study("ablation", "--teddy-mesh", sphere, "--bunny-mesh", sphere)
    for name in ("teddy", "bunny_sines"):
        table = rows(out / f"{name}_trials.csv")
        assert {(r["model"], r["size"]) for r in table} == {
            (m, s) for m in ("SLE", "Raw-distance embedding") for s in ("30", "40")
        }
        assert all(r["status"] == "ok" for r in table)
    text = (out / "ablation.md").read_text()
    assert "## Teddy" in text and "## Bunny" in text


def test_sensitivity_quick(run_study, sphere):
    out = run_study("sensitivity", "--mesh", sphere)
    table = rows(out / "teddy_sensitivity_trials.csv")
    names = {r["model"] for r in table}
    assert names == {"radius = 10", "radius = 13", "amplitude = 1", "amplitude = 2",
                     "inner = matern52", "inner = matern32", "inner = rbf"}  # fmt: skip
    for row in table:
        params = json.loads(row["params"])
        assert "max_logp" in params
        if row["model"].startswith("radius"):
            assert "radius" not in params  # held fixed, not re-optimised
        if row["model"].startswith("amplitude"):
            assert "amplitude" not in params and "radius" in params


def test_runtime_quick(run_study):
    stats = json.loads((run_study("runtime") / "runtime.json").read_text())
    assert stats["sizes"] == [30, 60]
    for model in ("SLE", "Matern", "Raw-distance embedding"):
        for column in ("kernel_ms", "kernel_mib", "train_s", "predict_s"):
            assert all(v > 0 for v in stats[model][column]["mean"])
            assert "alpha" in stats[model][column]
    s_bar = stats["SLE"]["s_bar_initial"]["mean"]
    assert all(0 < s <= n for s, n in zip(s_bar, stats["sizes"], strict=True))


def test_hyperposterior_quick(run_study, sphere):
    # NUTS on the smallest case only (--nuts-max-n): the other cases run the same sampling code.
    out = run_study("hyperposterior", "--teddy-mesh", sphere, "--bunny-mesh", sphere, "--nuts",
                    "--nuts-max-n", "20")  # fmt: skip
    stats = json.loads((out / "hyperposterior.json").read_text())
    assert set(stats) == {"Teddy, n = 40", "1-D, n = 20", "Bunny, n = 40",
                          "SAXS (exact W2), n = 40", "Strings (edit distance), n = 30"}  # fmt: skip
    for name, splits in stats.items():
        (split,) = splits
        masses = [mode["mass"] for mode in split["modes"]]
        assert masses and min(masses) >= 0.01 and sum(masses) <= 1.0 + 1e-9
        sampled = "nuts_chain_radius_medians" in split
        assert sampled == (name == "1-D, n = 20")
        assert not sampled or len(split["nuts_chain_radius_medians"]) == 4
        assert split["nearest_neighbour"] > 0
    assert len(rows(out / "hyperposterior.csv")) == 5
    # a second run of one problem keeps the others' results
    run_study("hyperposterior", "--problems", "one_d", "--figure", "one_d.png")
    again = json.loads((out / "hyperposterior.json").read_text())
    assert set(again) == set(stats) and (out / "one_d.png").exists()
    assert len(rows(out / "hyperposterior.csv")) == 5


def test_example_mixing_quick(run_study):
    stats = json.loads((run_study("example_mixing") / "example_mixing.json").read_text())
    fits = {fit["example"]: fit for fit in stats["fits"]}
    assert set(fits) == {"mesh", "images"}
    for fit in fits.values():
        assert fit["r_hat_max"] > 0.9 and fit["ess_bulk_min"] > 0 and fit["wall_s"] > 0
        assert fit["sampled_radius_as"] in ("quantile u", "log radius")
        assert fit["share_u_below_wall"] is None or 0 <= fit["share_u_below_wall"] <= 1
        assert fit["target_accept"] == 0.9 and fit["basins"] >= 1
        scales = dict(part.split(": ") for part in fit["scales"].split("; "))
        assert set(scales) == {"radius", "ls", "eta", "sigma"}
        assert 0 < fit["sigma_q05"] <= fit["sigma_median"]


def test_calibration_candidates_quick(run_study, sphere):
    from benchmarks.studies.calibration_candidates import BASELINE, QUICK_CANDIDATES

    out = run_study("calibration_candidates", "--mesh", sphere)
    stats = json.loads((out / "calibration_candidates.json").read_text())
    assert stats["settings"]["splits"] == 1
    results = {r["candidate"]: r for r in stats["results"]}
    # Quick: one candidate per code path, the landmarks added, and the baseline
    assert set(results) == {*QUICK_CANDIDATES, "+ 20 landmarks", BASELINE}
    for name, r in results.items():
        (split,) = r["splits"]
        assert 0 <= r["picp"] <= 1 and r["sd_z"] > 0 and r["rmse"] > 0
        assert r["picp"] == split["picp"] and r["nlpd"] == split["nlpd"]
        assert (split["radius"] is None) == (name == BASELINE)
        assert name == BASELINE or split["radius"] > 0
        assert (split["shape"] is None) == (name != "shape learned")
    assert results["shape learned"]["splits"][0]["shape"] > 0


def test_local_radius_factors_are_kth_neighbour_distances_over_their_median():
    from benchmarks.studies.calibration_candidates import local_radius_factors

    x = np.array([0.0, 1.0, 2.0, 4.0, 8.0])
    D = np.abs(x[:, None] - x[None, :])
    np.testing.assert_allclose(local_radius_factors(D, 1), [1, 1, 1, 2, 4])
    np.testing.assert_allclose(local_radius_factors(D, 2), np.array([2, 1, 2, 3, 6]) / 2)
    np.testing.assert_allclose(local_radius_factors(D, 4), np.array([8, 7, 6, 4, 8]) / 7)
    for k in (0, 5):
        with pytest.raises(ValueError, match=r"`k` must be in \[1, 4\]"):
            local_radius_factors(D, k)


def test_calibration_candidates_skip_what_changes_nothing():
    from types import SimpleNamespace

    from benchmarks.studies.calibration_candidates import CANDIDATES, candidates_for

    bench = SimpleNamespace(inner="matern32")
    names = [c.name for c in candidates_for(bench, 0)]
    assert "inner matern32" not in names and "inner matern52" in names
    assert not any("landmarks" in n for n in names)
    assert len(names) == len(CANDIDATES) - 2
    assert "+ 5 landmarks" in [c.name for c in candidates_for(bench, 5)]


def test_extra_landmarks_are_unused_points_and_bounded_by_them():
    from dataclasses import dataclass
    from types import SimpleNamespace

    from benchmarks.studies.calibration_candidates import with_extra_landmarks

    @dataclass
    class Split:  # the fields of benchmarks.paper.problem.Context that are used
        trial: object
        points: np.ndarray
        landmark: dict
        n_train: int

    x = np.arange(10.0)
    problem = SimpleNamespace(
        pool=np.arange(8), distances=lambda p, c, kind: np.abs(x[p][:, None] - x[c][None, :])
    )
    bench = SimpleNamespace(problem=problem, kind="euclidean")
    ctx = Split(SimpleNamespace(seed=1), np.array([0, 1, 9]), {}, 2)  # 9: a test point
    D = with_extra_landmarks(bench, ctx, 6).landmark["euclidean"].values
    assert D.shape == (3, 8)  # the two training points and all six unused pool points
    np.testing.assert_array_equal(D[:, :2], np.abs(x[[0, 1, 9]][:, None] - x[[0, 1]][None, :]))
    np.testing.assert_array_equal(np.sort(D[0, 2:]), np.arange(2.0, 8.0))
    with pytest.raises(ValueError, match="`extra` must be at most the 6 unused points, got 7"):
        with_extra_landmarks(bench, ctx, 7)


def test_calibration_candidates_reject_a_candidate_that_changes_nothing(sphere):
    from types import SimpleNamespace

    from benchmarks.nuts_data import BENCHMARKS
    from benchmarks.studies.calibration_candidates import fit

    bench = BENCHMARKS["teddy_200"](True, SimpleNamespace(mesh=sphere))
    with pytest.raises(ValueError, match=r"`name` must be one of .* but got 'inner matern52'"):
        fit(bench, True, "inner matern52", 1, 1)  # Teddy's own inner kernel


def test_radius_divergence_starts_reads_u_and_skips_pooled_basins():
    """nutpie's records give u at each divergence's last good state; when the chains sampled a
    confined copy of u (basins apart, pooled), there is no u column and nothing is read."""
    import types

    import arviz as az
    import xarray as xr

    from benchmarks.studies.common import radius_divergence_starts

    def idata(names):
        starts = np.arange(2 * 3 * len(names), dtype=float).reshape(2, 3, len(names))
        diverging = np.array([[True, False, False], [False, False, True]])
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), diverging),
             "divergence_start": (("chain", "draw", "unconstrained_parameter"), starts)},
            coords={"unconstrained_parameter": names},
        )  # fmt: skip
        return az.InferenceData(sample_stats=stats)

    radius = object()
    model = types.SimpleNamespace(
        rvs_to_transforms={radius: types.SimpleNamespace(to_unit=None)},
        rvs_to_values={radius: types.SimpleNamespace(name="radius_quantilelog__")},
    )
    priors = {"radius": radius}
    found = radius_divergence_starts(idata(["eta_log__", "radius_quantilelog__"]), model, priors)
    np.testing.assert_array_equal(found, [1.0, 11.0])
    assert radius_divergence_starts(idata(["eta_log__", "radius_chain__"]), model, priors) is None


def test_basin_jumps_quick(run_study):
    stats = json.loads((run_study("basin_jumps") / "basin_jumps.json").read_text())
    [case] = stats["cases"]
    for name in ("plain", "basins"):
        fit = case[name]
        assert sum(fit["share"]) == pytest.approx(1.0) and fit["r_hat_max"] > 0.9
        assert len(fit["share"]) == len(case["reference"]) == len(case["basin_radius"])
    assert sum(case["reference"]) == pytest.approx(1.0)
    assert set(case["reference_edge_mass"]) == {"radius", "ls", "eta", "sigma"}


def test_scale_ablation_quick(run_study):
    stats = json.loads((run_study("scale_ablation") / "scale_ablation.json").read_text())
    [case] = stats["cases"]
    assert (case["case"], case["scale"]) == ("one_d:0", "ls_ridge")
    defaults, without = case["fits"]
    assert (defaults["variant"], without["variant"]) == ("defaults", "without ls ridge")
    assert "ls: ridge" in defaults["scales"] and "ls: centred log" in without["scales"]
    for fit in case["fits"]:
        assert fit["r_hat_max"] > 0.9 and fit["ess_bulk_min"] > 0 and fit["wall_s"] > 0


def test_tilted_quadrature_quick(run_study):
    stats = json.loads((run_study("tilted_quadrature") / "tilted_quadrature.json").read_text())
    assert stats["reference_vs_quad"] < 1e-9  # the reference is the integral
    default = [r for r in stats["rows"] if r["rule"].endswith("(default)")]
    assert len(default) == 3 * 4  # ranges x likelihoods
    assert max(max(r["log_z"], r["mean_sd"], r["variance"]) for r in default) < 1e-9
    fixed = [r for r in stats["rows"] if r["rule"] == "fixed 81" and r["range"] == "extreme"]
    assert max(r["variance"] for r in fixed) > 1e-6  # what the spacing cap is for


def test_ep_acceleration_quick(run_study):
    stats = json.loads((run_study("ep_acceleration") / "ep_acceleration.json").read_text())
    from benchmarks.studies.ep_acceleration import DEPTHS

    assert len(stats["rows"]) == 3 * len(DEPTHS)  # cases x depths
    for row in stats["rows"]:
        assert row["sweeps_mean"] >= 1 and row["sweeps_max"] >= row["sweeps_mean"]
        # every depth converges to the same sites, to EP's tolerance
        assert row["log_z_difference"] < 1e-8 and row["a_difference"] < 1e-5
        if row["depth"] == 1:  # the reference the others are compared with
            assert row["log_z_difference"] == 0 == row["a_difference"]
