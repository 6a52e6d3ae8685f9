import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pymc_sle import DistanceMatrix, SparseDistanceMatrix, __version__
from pymc_sle.cli import build_parser, main
from tests.support import run_module

REFERENCE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "demo"


def test_demo_quick_writes_figure_and_scores(tmp_path):
    """The quick demo as ``benchmarks.demo_reference --quick`` runs it: ``pymc-sle demo`` in a
    process of its own, everything it printed kept (the benchmark's quick mode, tested here)."""
    run_module("benchmarks.demo_reference", "--quick", "--out", tmp_path)
    report = json.loads((tmp_path / "demo.json").read_text())["results"]
    assert set(report) == {"SLE (Matern 3/2)", "Matern 3/2"}
    for scores in report.values():
        assert 0.0 <= scores["picp"] <= 1.0 and scores["rmse"] > 0 and scores["crps"] > 0
        assert 0.0 <= scores["loo_coverage"] <= 1.0 and 0.0 <= scores["loo_coverage_new"] <= 1.0
        assert scores["target_accept"] == 0.9  # no priors: pm.sample's default, as it ran
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    printed = (tmp_path / "demo_output_quick.txt").read_text()
    assert printed.startswith("# pymc-sle demo --quiet --out DIR --quick (DIR: this folder)")
    assert str(tmp_path) not in printed and "warning" not in printed.lower()
    assert "r_hat" in printed and "held-out scores" in printed and "loo_coverage" in printed
    assert "2 chains x (300 tune + 200 draws), pymc NUTS on 2 cores" in printed  # before sampling
    assert re.search(r"the demo took \d+ s", printed)
    _check_reference(report, printed)


def _check_reference(report: dict, printed: str) -> None:
    """benchmarks/results/demo/ holds a full run's output: its settings must be the full demo's
    today, and its table's columns what the demo prints today (the quick run shows them).
    Rerun ``python -m benchmarks.demo_reference`` when this fails."""
    from dataclasses import asdict

    from pymc_sle.demo import DemoSettings

    kept = json.loads((REFERENCE / "demo.json").read_text())
    assert kept["settings"] == json.loads(json.dumps(asdict(DemoSettings.full(progressbar=False))))
    assert {model: list(scores) for model, scores in kept["results"].items()} == {
        model: list(scores) for model, scores in report.items()
    }
    text = (REFERENCE / "demo_output.txt").read_text()
    header = re.compile(r"^\s+rmse\s.*$", flags=re.MULTILINE)
    assert header.search(text).group().split() == header.search(printed).group().split()
    assert text.startswith("# pymc-sle demo --quiet --out DIR")


def test_the_full_demo_shows_progress_and_quiet_hides_it(monkeypatch):
    """The CLI demo asks for the sampler's progress bar unless --quiet (the run is stubbed)."""
    seen = {}
    monkeypatch.setattr("pymc_sle.demo.run_demo", lambda out, settings: seen.update(s=settings))
    main(["demo", "--draws", "10"])
    assert seen["s"].nuts.progressbar and seen["s"].nuts.draws == 10
    main(["demo", "--quiet"])
    assert not seen["s"].nuts.progressbar
    main(["demo", "--quick"])
    assert not seen["s"].nuts.progressbar  # CI logs stay readable


def test_rejects_non_positive_draws(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--draws", "0"])
    assert "must be a positive integer" in capsys.readouterr().err


def test_help_and_version_do_not_import_the_modelling_stack():
    # --help must answer at once: neither PyMC nor PyTensor (seconds to import) may load
    code = (
        "import sys\n"
        "from pymc_sle.cli import main\n"
        "for argv in (['--help'], ['distances', 'geodesic', '--help'], ['--version']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('pymc', 'pytensor', 'numba', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert f"pymc-sle {__version__}" in out.stdout


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub
                yield from _subparsers(sub)


def test_every_command_has_an_example_and_every_option_help():
    parsers = [build_parser(), *_subparsers(build_parser())]
    assert len(parsers) == 6  # pymc-sle, demo, distances and its three kinds
    for parser in parsers:
        assert "pymc-sle " in (parser.epilog or ""), parser.prog
        for action in parser._actions:
            assert action.help, f"{parser.prog} {action.option_strings or action.dest}"
    geodesic_help = next(p for p in parsers if p.prog.endswith("geodesic")).format_help()
    assert "(default: 1)" in geodesic_help and "(default: graph)" in geodesic_help
    assert "(default: None)" not in geodesic_help


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


def test_distances_geodesic_with_a_cutoff_writes_a_sparse_matrix(tmp_path, capsys):
    pytest.importorskip("trimesh")
    _grid_obj(tmp_path / "grid.obj")
    command = ["distances", "geodesic", str(tmp_path / "grid.obj"), "--cols", "0,8", "--quiet"]
    out = tmp_path / "d.npz"
    assert main([*command, "--cutoff", "2.5", "--out", str(out)]) == 0
    D = SparseDistanceMatrix.load(out)
    assert D.shape == (9, 2) and D.cutoff == 2.5
    dense = D.to_dense()
    assert dense[0, 0] == 0.0 and dense[8, 0] == np.inf and dense[4, 0] == pytest.approx(np.sqrt(2))
    assert main([*command, "--cutoff", "2.5", "--out", str(tmp_path / "d.npy")]) == 2
    assert "--cutoff writes a SparseDistanceMatrix, whose --out must end in '.npz'" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main([*command, "--cutoff", "-1", "--out", str(out)])
    assert "must be a positive, finite number, got -1" in capsys.readouterr().err


def test_distances_wasserstein_with_a_cutoff_writes_the_pairs_below_it(tmp_path, capsys):
    from pymc_sle.distances import wasserstein

    images = np.random.default_rng(0).gamma(1.0, size=(5, 4, 4))
    np.save(tmp_path / "images.npy", images)
    dense = wasserstein(images, n_jobs=1, progress=False).values
    cutoff = float(np.median(dense[np.triu_indices(5, 1)]))
    command = ["distances", "wasserstein", str(tmp_path / "images.npy"), "--jobs", "1", "--quiet"]
    out = tmp_path / "d.npz"
    assert main([*command, "--cutoff", str(cutoff), "--out", str(out)]) == 0
    D = SparseDistanceMatrix.load(out)
    below = dense < cutoff
    assert D.cutoff == cutoff and np.isinf(D.to_dense()[~below]).all()
    np.testing.assert_allclose(D.to_dense()[below], dense[below], rtol=1e-12)
    assert main([*command, "--cutoff", str(cutoff), "--out", str(tmp_path / "d.npy")]) == 2
    assert "whose --out must end in '.npz'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # sliced W2 has no cutoff
        main(["distances", "sliced", str(tmp_path / "images.npy"), "--cutoff", "1", "--out",
              str(out)])  # fmt: skip


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


@pytest.fixture
def cli_inputs(tmp_path, monkeypatch):
    """A folder with a small mesh, images, a garbage mesh and index files; the working directory."""
    monkeypatch.chdir(tmp_path)
    _grid_obj(tmp_path / "grid.obj")
    (tmp_path / "garbage.obj").write_text("not a mesh\n")
    np.save(tmp_path / "images.npy", np.random.default_rng(0).gamma(1.0, size=(4, 5, 5)))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "float-rows.txt").write_text("1.5\n2\n")
    (tmp_path / "int-rows.txt").write_text("1\n2\n")
    np.save(tmp_path / "nan-rows.npy", np.array([1.0, np.nan]))
    return tmp_path


GEODESIC = ["distances", "geodesic", "grid.obj", "--out", "d.npz", "--quiet"]
SLICED = ["distances", "sliced", "images.npy", "--out", "d.npz", "--quiet", "--jobs", "1"]
BAD_INPUTS = {
    "missing mesh": (["distances", "geodesic", "nope.obj", "--out", "d.npz"], "does not exist"),
    "garbage mesh": (["distances", "geodesic", "garbage.obj", "--out", "d.npz"], "garbage.obj"),
    "empty row range": ([*GEODESIC, "--rows", "5:2"], "needs stop > start"),
    "negative rows": ([*GEODESIC, "--rows=-1,2"], "must be >= 0"),
    "negative rows, spaced": ([*GEODESIC, "--rows", "-1,2"], "must be >= 0, but got [-1]"),
    "negative cols range": ([*GEODESIC, "--cols", "-2:3"], "must be >= 0, but got [-2, -1]"),
    "output under a file": ([*GEODESIC[:3], "--out", "int-rows.txt/d.npz"], "is a file"),
    "demo output under a file": (["demo", "--out", "int-rows.txt/demo"], "is a file, not a"),
    "rows out of range": ([*GEODESIC, "--rows", "0,9"], "`rows` must index the 9 vertices"),
    "missing output folder": ([*GEODESIC[:3], "--out", "no/d.npz"], "folder 'no'"),
    "output suffix": ([*GEODESIC[:3], "--out", "d.txt"], "must end in .npz or .npy"),
    "zero jobs": ([*GEODESIC, "--jobs", "0"], "--jobs: must be -1"),
    "text jobs": ([*GEODESIC, "--jobs", "all"], "--jobs: must be -1"),
    "bad scheduler": ([*SLICED, "--scheduler", "bogus"], "Dask scheduler address"),
    "float rows file": ([*GEODESIC, "--rows", "float-rows.txt"], "must hold integer indices"),
    "NaN rows file": ([*GEODESIC, "--rows", "nan-rows.npy"], "must hold integer indices"),
    "missing rows file": ([*GEODESIC, "--rows", "nope.txt"], "does not exist"),
    "bad index spec": ([*SLICED, "--rows", "a-b"], "expected 'start:stop'"),
    "pickled images": (["distances", "wasserstein", "objects.npy", "--out", "d.npz"], ".npy array"),
    "mesh as images": (
        ["distances", "wasserstein", "grid.obj", "--out", "d.npz"],
        "'grid.obj' must be a .npy array of shape (n, *grid) written by numpy.save, but the file "
        "is not in NumPy's .npy format",
    ),
    "text as images": (["distances", "sliced", "int-rows.txt", "--out", "d.npz"], "not in NumPy"),
    "no command": ([], "required"),
    "zero draws": (["demo", "--draws", "0"], "must be a positive integer"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_user_errors_are_one_line_on_stderr_with_status_2(cli_inputs, capsys, case):
    pytest.importorskip("trimesh")
    argv, expected = BAD_INPUTS[case]
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and expected in err, err
    assert not (cli_inputs / "d.npz").exists()  # nothing computed or written


def test_an_integral_rows_file_is_accepted(cli_inputs):
    pytest.importorskip("trimesh")
    assert main([*GEODESIC, "--rows", "int-rows.txt", "--cols", "0"]) == 0
    assert DistanceMatrix.load(cli_inputs / "d.npz").shape == (2, 1)


@pytest.mark.slow
def test_full_demo_meets_the_acceptance_criteria(tmp_path):
    # Issue 2's "done when": SLE PICP in [0.85, 1], r-hat < 1.01 for every hyperparameter, and
    # no divergences, with the demo's default settings (about 3.5 minutes on 2 cores).
    assert main(["demo", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "demo.json").read_text())["results"]
    sle = report["SLE (Matern 3/2)"]
    assert 0.85 <= sle["picp"] <= 1.0
    for scores in report.values():
        assert scores["max_rhat"] < 1.01
        assert scores["divergences"] == 0
