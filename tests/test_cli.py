import json

import pytest

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
