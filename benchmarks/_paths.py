"""Where benchmark inputs and results live."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: Third-party meshes (never committed): ``../shared/data`` beside the repository.
SHARED_DATA = ROOT.parent / "shared" / "data"
