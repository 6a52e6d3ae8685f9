"""Where benchmark inputs and results live, and how results are written."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: Third-party meshes (never committed): ``../shared/data`` beside the repository.
SHARED_DATA = ROOT.parent / "shared" / "data"


def write_results(out: Path, name: str, quick: bool, result: dict, summary: str) -> None:
    """Write ``result`` as ``{name}.json`` and ``summary`` as ``{name}.md`` into ``out``
    (``{name}_quick.*`` for a ``--quick`` run), and print the summary."""
    stem = f"{name}_quick" if quick else name
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2))
    (out / f"{stem}.md").write_text(summary)
    print(summary)
