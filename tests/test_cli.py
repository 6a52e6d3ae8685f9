import json

import numpy as np
import pytest

from pymc_sle import DistanceMatrix
from pymc_sle.cli import build_parser, main


def test_demo_quick_writes_figure_and_scores(tmp_path, capsys):
    assert main(["demo", "--quick", "--out", str(tmp_path), "--seed", "1"]) == 0
    report = json.loads((tmp_path / "demo.json").read_text())["results"]
    assert set(report) == {"SLE (Matern 3/2)", "Matern 3/2"}
    for scores in report.values():
        assert 0.0 <= scores["picp"] <= 1.0 and scores["rmse"] > 0 and scores["crps"] > 0
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "r_hat" in printed and "held-out scores" in printed


def test_rejects_non_positive_draws(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--draws", "0"])
    assert "must be a positive integer" in capsys.readouterr().err


def test_requires_a_command(capsys):
    with pytest.raises(SystemExit):
        main([])
    assert "required" in capsys.readouterr().err


def _grid_obj(path):
    lines = [f"v {x} {y} 0\n" for x in range(3) for y in range(3)]
    index = np.arange(9).reshape(3, 3) + 1
    for i in range(2):
        for j in range(2):
            a, b, c, d = index[i, j], index[i + 1, j], index[i + 1, j + 1], index[i, j + 1]
            lines += [f"f {a} {b} {c}\n", f"f {a} {c} {d}\n"]
    path.write_text("".join(lines))


def test_distances_geodesic_writes_a_distance_matrix(tmp_path):
    pytest.importorskip("trimesh")
    _grid_obj(tmp_path / "grid.obj")
    out = tmp_path / "d.npz"
    assert (
        main(
            [
                "distances",
                "geodesic",
                str(tmp_path / "grid.obj"),
                "--out",
                str(out),
                "--cols",
                "0,8",
                "--quiet",
            ]
        )
        == 0
    )
    D = DistanceMatrix.load(out)
    assert D.shape == (9, 2) and D.values[8, 0] == pytest.approx(2 * np.sqrt(2))


@pytest.mark.parametrize("kind", ["wasserstein", "sliced"])
def test_distances_transport_commands(tmp_path, kind):
    images = np.random.default_rng(0).gamma(1.0, size=(4, 5, 5))
    np.save(tmp_path / "images.npy", images)
    np.save(tmp_path / "cols.npy", np.array([1, 3]))
    out = tmp_path / "d.npy"
    args = ["distances", kind, str(tmp_path / "images.npy"), "--out", str(out), "--rows", "0:4"]
    assert main([*args, "--cols", str(tmp_path / "cols.npy"), "--jobs", "1", "--quiet"]) == 0
    D = DistanceMatrix.load(out)
    assert D.shape == (4, 2) and D.values[1, 0] == 0.0 and D.values[0, 0] > 0


def test_distances_rejects_bad_index_spec(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["distances", "sliced", "x.npy", "--out", "d.npz", "--rows", "a-b"]
        )
    assert "expected 'start:stop'" in capsys.readouterr().err


@pytest.mark.slow
def test_full_demo_meets_the_acceptance_criteria(tmp_path):
    # Issue 2's "done when": SLE PICP in [0.85, 1], r-hat < 1.01 for every hyperparameter, and
    # no divergences, with the demo's default settings (about 1.5 minutes on 2 cores).
    assert main(["demo", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "demo.json").read_text())["results"]
    sle = report["SLE (Matern 3/2)"]
    assert 0.85 <= sle["picp"] <= 1.0
    for scores in report.values():
        assert scores["max_rhat"] < 1.01
        assert scores["divergences"] == 0
