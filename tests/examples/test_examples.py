"""The example scripts (the documentation's how-to guides) run as a user would run them, in
quick mode, and print or save what their guide promises."""

import re
from pathlib import Path

import pytest

from tests.support import run_script

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "script, extra, expected_output, expected_files",
    [
        ("quickstart.py", [],
         [r"rmse", r"elpd_loo", r"LOO coverage of the 95 % intervals: (0\.\d|1\.0)\d\d",
          r"LOO coverage, each point predicted as a new one: (0\.\d|1\.0)\d\d"], []),
        ("amplitude_identifiability.py", ["--out", "{tmp}"], [], ["amplitude_ls_pairs.png"]),
        ("mesh_gp.py", ["--out", "{tmp}"],
         [r"RMSE on unobserved", r"95 % band", r"^ls\s", r"r_hat"], ["mesh_gp.png"]),
        ("images_w2.py", [], [r"Gaussian of W2, ls = 5 x median: (PSD|indefinite)",
                              r"SLE of W2: PSD", r"'picp'", r"^ls\s"], []),
        ("strings_classification.py", [], [r"test accuracy 0\.\d+", r"Brier score"], []),
        ("nonstationary.py", ["--out", "{tmp}"],
         [r"^stationary SLE: rmse", r"^non-stationary SLE \(radius field\): rmse"],
         ["nonstationary.png"]),
        ("dask_distances.py", ["--store", "{tmp}/store"],
         [r"first run: \(40, 20\) block", r"rerun \(resumes from the store\): \(40, 20\) block"],
         ["w2.npz"]),
        ("large_mesh.py", ["--out", "{tmp}"],
         [r"SparseDistanceMatrix\(shape=\(642, 552\)", r"^MAP: \{'radius'",
          r"held-out RMSE against the noiseless field: 0\.[01]\d", r"95 % intervals cover"],
         ["large_mesh.png"]),
        ("mesh_classification.py", ["--out", "{tmp}"],
         [r"SparseDistanceMatrix\(shape=\(642, 552\)", r"^MAP: \{'radius'",
          r"held-out accuracy 0\.[6-9]\d\d", r"Poisson: held-out rate error"],
         ["mesh_classification.png"]),
        ("sampler_backends.py", [], [r"^pymc +\d", r"^nutpie +\d", r"^numpyro +\d"], []),
        ("new_data_after_fit.py", [],
         [r"W2 block of the new images: \(17, 60\)",
          r"posterior predictive draws for the new images: \(2, 200, 17\)",
          r"^radius\s", r"divergences: \d+", r"scores on the new images: \{'rmse'",
          r"training then new rows: \(77, 60\)"], []),
    ],
)  # fmt: skip
def test_example_runs(tmp_path, script, extra, expected_output, expected_files):
    args = [a.format(tmp=tmp_path) for a in extra]
    # one as a user runs it, in an interpreter of its own; the rest share the suite's imports
    alone = script == "large_mesh.py"
    result = run_script(EXAMPLES / script, "--quick", *args, cwd=tmp_path, subprocess_run=alone)
    assert result.stdout.strip()
    for pattern in expected_output:
        assert re.search(pattern, result.stdout, flags=re.MULTILINE), (pattern, result.stdout)
    for name in expected_files:
        assert (tmp_path / name).exists(), name
