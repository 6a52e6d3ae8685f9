"""The README's first example runs as written, and a first run prints no warning that is not the
library's own."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_block(heading: str) -> str:
    """The first ``python`` code block under the README's ``## heading``."""
    section = README.read_text().split(f"\n## {heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter as on a new machine: ArviZ has announced nothing today (a
    new cache folder holds its once-a-day stamp) and numba compiles everything anew (an empty
    cache folder), so every warning a new user would see is printed. PyTensor's C modules come
    from the suite's compile folder: compiling them anew costs a minute, and the notices a fresh
    compilation logs (PyTensor's BLAS ones) are hidden by the library, as the test below
    checks."""
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
    }
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )


def test_arviz_announces_its_refactor_to_a_fresh_cache(tmp_path):
    """The premise of the tests below: without pymc_sle imported first, the banner shows."""
    out = _run("import arviz", tmp_path)
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
    out = _run(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "refactor" not in out.stderr and "BLAS" not in out.stderr
    assert "could not link to a GPU" in out.stderr and "undergoing nothing" in out.stderr
    assert "another notice" in out.stderr


def test_the_fit_and_predict_example_runs_as_written_and_prints_no_warning(tmp_path):
    code = readme_block("Fit and predict")
    assert len([line for line in code.splitlines() if line.strip()]) <= 15
    checks = (
        "import json, numpy as np\n"
        "inside = (lower <= data.y_test) & (data.y_test <= upper)\n"
        "rmse = float(np.sqrt(np.mean((mean - data.y_test) ** 2)))\n"
        "print(json.dumps({'shapes': [mean.shape, lower.shape, upper.shape], "
        "'coverage': float(inside.mean()), 'rmse': rmse, 'sd': float(data.y_test.std()), "
        "'draws': int(draws.sizes['sample'])}))\n"
    )
    out = _run(code + checks, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "warning" not in out.stderr.lower() and "warn(" not in out.stderr, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["shapes"] == [[100], [100], [100]] and result["draws"] == 4000
    assert 0.85 <= result["coverage"] <= 1.0  # 95 % intervals of a fitted model
    assert result["rmse"] < 0.5 * result["sd"]  # the mean follows the function


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
