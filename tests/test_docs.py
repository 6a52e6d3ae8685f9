"""The documentation site builds with ``mkdocs build --strict``: every page, every snippet of an
example script, every link and anchor, and the API reference from the docstrings."""

import html
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-5000:]
    site = tmp_path / "site"
    for page in ("index.html", "how-to/mesh/index.html", "api/index.html",
                 "benchmarks/studies/index.html", "results/studies/why_sle.png"):  # fmt: skip
        assert (site / page).exists(), page
    api = (site / "api" / "index.html").read_text()
    assert "pymc_sle.SLE" in api and "radius_max" in api  # rendered from the docstrings
    mesh = html.unescape(re.sub(r"<[^>]+>", "", (site / "how-to/mesh/index.html").read_text()))
    assert "geodesic(mesh.vertices, mesh.faces, cols=train)" in mesh  # the example, inlined
    assert not (site / "hooks").exists()
