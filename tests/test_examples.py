"""The example scripts run as a user would run them (quick mode)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "script, extra",
    [("quickstart.py", []), ("amplitude_identifiability.py", ["--out", "{tmp}"])],
)
def test_example_runs(tmp_path, script, extra):
    args = [a.format(tmp=tmp_path) for a in extra]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--quick", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()
