"""Benchmark scripts run end to end in their quick mode, so that they cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_quick(script: str, out: Path, *args: str) -> dict:
    """Run ``benchmarks/<script>.py --quick``; return its JSON result."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{script}.py"), "--quick", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / f"{script}_quick.json").read_text())


@pytest.fixture
def sphere(tmp_path):
    """A mesh file with subdivision level ``n`` of an icosphere."""
    trimesh = pytest.importorskip("trimesh")

    def make(subdivisions: int) -> str:
        path = tmp_path / f"sphere{subdivisions}.obj"
        trimesh.creation.icosphere(subdivisions).export(path)
        return str(path)

    return make


def test_distances_benchmark_quick(tmp_path, sphere):
    results = run_quick("distances", tmp_path, "--mesh", sphere(3))
    assert results["geodesic"]["n_vertices"] == 642
    assert results["exact_w2"]["max_relative_error_vs_reference"] < 1e-9
    assert (tmp_path / "distances_quick.md").read_text().startswith("# Distance builders")


def test_blas_threads_benchmark_quick(tmp_path):
    runs = run_quick("blas_threads", tmp_path)["runs"]
    assert runs["default"]["post_tuning_steps"] == runs["one_blas_thread"]["post_tuning_steps"]


def test_performance_benchmark_quick(tmp_path):
    rows = run_quick("performance", tmp_path)["rows"]
    assert {row["backend"] for row in rows} == {"C"}
    assert all(row["floor"] > 0 and row["sle_sparse_0.05"] > 0 for row in rows)
    assert (tmp_path / "performance_quick.md").read_text().startswith("# Log-likelihood")


def test_nuts_teddy_benchmark_quick(tmp_path, sphere):
    results = run_quick("nuts_teddy", tmp_path, "--mesh", sphere(2), "--samplers", "pymc", "nutpie")
    assert results["n_vertices"] == 162 and results["n_train"] == 60
    for name in ("pymc", "nutpie"):
        assert results["samplers"][name]["ess_bulk_min"] > 0
