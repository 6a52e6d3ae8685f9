"""The README's first example runs as written, and a first run prints no warning that is not the
library's own. The code of the first three tests runs in a fresh interpreter as on a new machine
(ArviZ's once-a-day stamp empty); PyTensor's C modules and numba's compiled functions come from
the suite's caches: compiling them anew costs a minute (benchmarks/results/readme_block.md), and
the notices a fresh compilation logs (PyTensor's BLAS ones) are hidden by the library, as a test
below checks."""

import re

import pytest

from benchmarks.readme_block import README, fresh_interpreter, readme_block
from tests.support import run_quick


def test_arviz_announces_its_refactor_to_a_fresh_cache(tmp_path):
    """The premise of the tests below: without pymc_sle imported first, the banner shows."""
    out = fresh_interpreter("import arviz", tmp_path)
    assert "ArviZ is undergoing a major refactor" in out.stderr


def test_importing_pymc_sle_first_hides_the_first_run_notices(tmp_path):
    code = (
        "import logging, warnings\n"
        "import pymc_sle\n"
        "import arviz\n"
        "blas = logging.getLogger('pytensor.tensor.blas')\n"
        "blas.warning('Using NumPy C-API based implementation for BLAS functions.')\n"
        "blas.warning('another notice')\n"
        "warnings.warn('PyTensor could not link to a BLAS installation. Operations ...', "
        "UserWarning)\n"
        "warnings.warn('PyTensor could not link to a GPU', UserWarning)\n"  # not ours to hide
        "warnings.warn('ArviZ is undergoing nothing', FutureWarning)\n"
    )
    out = fresh_interpreter(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "refactor" not in out.stderr and "BLAS" not in out.stderr
    assert "could not link to a GPU" in out.stderr and "undergoing nothing" in out.stderr
    assert "another notice" in out.stderr


def test_the_fit_and_predict_example_runs_as_written_and_prints_no_warning(tmp_path):
    """The block as written, timed statement by statement (``benchmarks/readme_block.py``'s
    quick run): no warning printed, and a fitted model's predictions."""
    lines = readme_block("Fit and predict").splitlines()
    assert len([line for line in lines if line.strip()]) <= 15
    (run,) = run_quick("readme_block", tmp_path)["runs"]
    assert not run["warned"], run["stderr"]
    quality = run["quality"]
    assert quality["shapes"] == [[100], [100], [100]] and quality["draws"] == 4000
    assert 0.85 <= quality["coverage"] <= 1.0  # 95 % intervals of a fitted model
    assert quality["rmse"] < 0.5 * quality["sd"]  # the mean follows the function
    # the chains agree and mix, as the README's az.summary line would show
    assert quality["r_hat_max"] <= 1.01 and quality["divergences"] == 0
    assert min(quality["ess_bulk_min"], quality["ess_tail_min"]) >= 400
    # every statement is timed, the sampler's split into its chains' sampling and the rest
    assert [label for label, _ in run["statements"]][:2] == ["import pymc_sle as sle",
                                                            "import pymc as pm"]  # fmt: skip
    assert all(seconds >= 0 for _, seconds in run["statements"]) and run["sampling_s"] > 0
    sampler = next(s for label, s in run["statements"] if "sample_basins(" in label)
    assert 0 < run["sampler_fixed_s"] < sampler < run["wall_s"]
    text = (tmp_path / "readme_block_quick.md").read_text()
    assert "| `idata = sle.sample_basins(priors, random_seed=1)` |" in text


@pytest.mark.parametrize("heading", ["Fit and predict", "Your own distance matrix"])
def test_readme_answers_the_first_questions_on_its_first_screen(heading):
    """'How do I fit my own matrix, and how big can it be' before the first screen ends: the
    sections are linked from the top, and the size table is in them."""
    top = README.read_text().split("\n## ", 1)[0]
    anchor = heading.lower().replace(" ", "-")
    assert f"(#{anchor})" in top
    own = README.read_text().split("\n## Your own distance matrix\n", 1)[1].split("\n## ")[0]
    assert "| training points `n` |" in own and "size_limits.md" in own


def test_the_requirements_table_quotes_what_the_validator_says():
    import numpy as np

    from pymc_sle import DistanceMatrix

    own = README.read_text().split("\n## Your own distance matrix\n", 1)[1]
    quoted = re.findall(r"\| `` ?(\w+Error): (.*?) ?`` \|", own)
    bad = [np.zeros(3), np.array([[0.0, np.nan]]), np.array([[0.0, -1.0]]), np.array([[{}]])]
    assert len(quoted) == len(bad)
    for (kind, message), values in zip(quoted, bad, strict=True):
        with pytest.raises({"ValueError": ValueError, "TypeError": TypeError}[kind]) as raised:
            DistanceMatrix(values)
        assert str(raised.value) == message


def test_the_classification_block_runs_on_a_small_mesh():
    """The 'Classification and counts' block, after the large-data block's distances on a
    162-vertex icosphere with labels of a field on it: finite probabilities, one per test
    vertex, that separate the classes."""
    import numpy as np
    import trimesh

    import pymc_sle as sle

    sphere = trimesh.creation.icosphere(subdivisions=2)
    vertices, faces = np.asarray(sphere.vertices), np.asarray(sphere.faces)
    rng = np.random.default_rng(0)
    truth = 1 / (1 + np.exp(-4.0 * vertices[:, 2]))
    all_labels = (rng.uniform(size=len(vertices)) < truth).astype(float)
    order = rng.permutation(len(vertices))
    train, test = np.sort(order[:130]), np.sort(order[130:])
    D = sle.distances.geodesic(vertices, faces, cols=train, cutoff="auto")
    namespace = {"pm": __import__("pymc"), "sle": sle, "D": D, "train": train, "test": test,
                 "labels": all_labels[train]}  # fmt: skip
    exec(readme_block("Classification and counts"), namespace)
    probability = namespace["probability"]
    assert probability.shape == test.shape and np.all((probability > 0) & (probability < 1))
    assert np.corrcoef(probability, truth[test])[0, 1] > 0.8
