"""Benchmark scripts run end to end in their quick mode, so that they cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_distances_benchmark_quick(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    mesh = tmp_path / "sphere.obj"
    trimesh.creation.icosphere(3).export(mesh)
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "distances.py"),
            "--quick",
            "--mesh",
            str(mesh),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "distances_quick.json").read_text())
    assert results["geodesic"]["n_vertices"] == 642
    assert results["exact_w2"]["max_relative_error_vs_reference"] < 1e-9
    assert (tmp_path / "distances_quick.md").read_text().startswith("# Distance builders")


def test_blas_threads_benchmark_quick(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "blas_threads.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    runs = json.loads((tmp_path / "blas_threads_quick.json").read_text())["runs"]
    assert runs["default"]["post_tuning_steps"] == runs["one_blas_thread"]["post_tuning_steps"]


def test_performance_benchmark_quick(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "performance.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "performance_quick.json").read_text())["rows"]
    assert {row["backend"] for row in rows} == {"C"}
    assert all(row["floor"] > 0 and row["sle_sparse_0.05"] > 0 for row in rows)
    assert (tmp_path / "performance_quick.md").read_text().startswith("# Log-likelihood")


def test_nuts_teddy_benchmark_quick(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    mesh = tmp_path / "sphere.obj"
    trimesh.creation.icosphere(2).export(mesh)
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "nuts_teddy.py"),
            "--quick",
            "--mesh",
            str(mesh),
            "--samplers",
            "pymc",
            "nutpie",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "nuts_teddy_quick.json").read_text())
    assert results["n_vertices"] == 162 and results["n_train"] == 60
    for name in ("pymc", "nutpie"):
        assert results["samplers"][name]["ess_bulk_min"] > 0
