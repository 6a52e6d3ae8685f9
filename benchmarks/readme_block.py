"""What the README's first example costs, statement by statement: on a new machine, and after.

The ``Fit and predict`` block of README.md runs as written, each run in a fresh interpreter, with
every statement timed (the statements at the top level and those of its ``with`` block; a
statement's time includes what it compiles). Runs:

- ``first``: as on a new machine: PyTensor's compile folder, numba's cache and ArviZ's
  once-a-day stamp all start empty;
- ``after``: the same, with the caches the ``first`` run filled;
- ``after, cores=1``: as ``after`` with ``sample_basins(..., cores=1)``: its chains one after
  the other, what PyMC's own default (half the CPUs) gives on 2 cores.

Each run also reports its interpreter's wall time from start to exit, and ``sample_basins``'
fixed cost: its statement's time minus the chains' sampling time that PyMC records
(``posterior.attrs["sampling_time"]``): the mode, the curvature, the compilation and the start
of the chains. ``--quick`` is one run with the caller's PyTensor compile folder and numba cache
(ArviZ's stamp empty): ``tests/test_readme.py`` runs it and checks what the block prints and
predicts.

Writes benchmarks/results/readme_block.{json,md}.

Run:  python -m benchmarks.readme_block [--quick]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._paths import RESULTS, ROOT, write_results
from benchmarks._timing import with_pytensor_flags

README = ROOT / "README.md"
SAMPLER = "sample_basins"


def readme_block(heading: str) -> str:
    """The first ``python`` code block under the README's ``## heading``."""
    section = README.read_text().split(f"\n## {heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


class _Timed(ast.NodeTransformer):
    """Each statement of the module and of its top-level ``with`` blocks is followed by a
    record of the time and the statement's first line (its comment cut); ``cores`` is added to
    the sampler's call when given."""

    def __init__(self, code: str, cores: int | None):
        self.lines, self.cores = code.splitlines(), cores

    def stamped(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for statement in body:
            if isinstance(statement, ast.With):  # its statements are timed, not itself
                statement.body = self.stamped(statement.body)
                out.append(statement)
                continue
            label = self.lines[statement.lineno - 1].split("  #")[0].strip()
            out += [statement, ast.parse(f"__stamps.append(({label!r}, __clock()))").body[0]]
        return out

    def visit_Module(self, node: ast.Module) -> ast.Module:
        self.generic_visit(node)
        node.body = self.stamped(node.body)
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        named = getattr(node.func, "attr", getattr(node.func, "id", None))
        if self.cores is not None and named == SAMPLER:
            node.keywords.append(ast.keyword("cores", ast.Constant(self.cores)))
        return node


#: What the block gives, read off its variables after the last statement: the shapes of the
#: predictive mean and interval, the interval's coverage of the test points, the RMSE against
#: the test values' standard deviation, the number of draws, and the sampler's diagnostics over
#: the hyperparameters the README's ``az.summary`` line shows (largest r-hat, smallest bulk and
#: tail ESS, divergences).
QUALITY = (
    "{'shapes': [list(mean.shape), list(lower.shape), list(upper.shape)], "
    "'r_hat_max': float(__summary['r_hat'].max()), "
    "'ess_bulk_min': float(__summary['ess_bulk'].min()), "
    "'ess_tail_min': float(__summary['ess_tail'].min()), "
    "'divergences': int(idata.sample_stats['diverging'].sum()), "
    "'coverage': float(((lower <= data.y_test) & (data.y_test <= upper)).mean()), "
    "'rmse': float(((mean - data.y_test) ** 2).mean() ** 0.5), 'sd': float(data.y_test.std()), "
    "'draws': int(draws.sizes['sample'])}"
)


def timed(code: str, cores: int | None = None) -> str:
    """``code`` instrumented: it prints, last, one JSON line with each statement's seconds, the
    sampling time PyMC recorded and :data:`QUALITY`."""
    tree = ast.fix_missing_locations(_Timed(code, cores).visit(ast.parse(code)))
    return (
        "import time as __time\n__clock = __time.perf_counter\n__stamps = [('', __clock())]\n"
        + ast.unparse(tree)
        + "\nimport json as __json\n"
        "__steps = [(b[0], b[1] - a[1]) for a, b in zip(__stamps, __stamps[1:])]\n"
        "__sampled = float(idata.posterior.attrs.get('sampling_time', 'nan'))\n"
        "__summary = __import__('arviz').summary(idata, var_names=priors.var_names(model, idata))\n"
        f"__quality = {QUALITY}\n"
        "print(__json.dumps({'statements': __steps, 'sampling_s': __sampled, "
        "'quality': __quality}))\n"
    )


def fresh_interpreter(code: str, folder: Path, caches: Path | None = None):
    """Run ``code`` in a fresh interpreter in ``folder``, ArviZ having announced nothing today
    (a cache folder in ``folder`` holds its once-a-day stamp). PyTensor compiles, and numba
    caches, into ``caches`` (the caller's folders when ``None``; an empty folder is a new
    machine). Returns the completed process."""
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    env.pop("PYTHONWARNINGS", None)
    if caches is not None:
        env["NUMBA_CACHE_DIR"] = str(caches / "numba")
        env["PYTENSOR_FLAGS"] = with_pytensor_flags(f"base_compiledir={caches}")
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True)  # fmt: skip


def measure(name: str, folder: Path, caches: Path | None, cores: int | None) -> dict:
    """One timed run of the README block (see :func:`fresh_interpreter`)."""
    began = time.perf_counter()
    process = fresh_interpreter(timed(readme_block("Fit and predict"), cores), folder, caches)
    wall = time.perf_counter() - began
    if process.returncode:
        raise RuntimeError(f"the README block failed ({name}):\n{process.stderr[-3000:]}")
    timings = json.loads(process.stdout.strip().splitlines()[-1])
    sampler = next(t for label, t in timings["statements"] if f"{SAMPLER}(" in label)
    warned = "warning" in process.stderr.lower() or "warn(" in process.stderr
    return {"run": name, "wall_s": wall, "statements": timings["statements"],
            "sampling_s": timings["sampling_s"],
            "sampler_fixed_s": sampler - timings["sampling_s"],
            "quality": timings["quality"], "warned": warned,
            "stderr": process.stderr[-3000:] if warned else ""}  # fmt: skip


def summary(runs: list[dict]) -> str:
    names = [r["run"] for r in runs]
    lines = [
        "# The README's first example: what it costs, the first time and after",
        "",
        f"Generated by `python -m benchmarks.readme_block`; {platform.machine()}, "
        f"{os.cpu_count()} cores, one run each, in this order. The README's `Fit and predict` "
        "block as written, each run in a fresh interpreter. `first`: PyTensor's compile folder, "
        "numba's cache and ArviZ's stamp empty, as on a new machine; `after`: with the caches "
        "the first run filled; `after, cores=1`: `sample_basins(..., cores=1)`, chains one after "
        "the other. A statement's time includes its compilation.",
        "",
        "| statement | " + " | ".join(f"{n} (s)" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for k, (label, _) in enumerate(runs[0]["statements"]):
        shown = label if len(label) <= 70 else label[:67] + "..."
        cells = " | ".join(f"{r['statements'][k][1]:.1f}" for r in runs)
        lines.append(f"| `{shown}` | {cells} |")
    rows = [
        ("interpreter, start to exit", lambda r: f"{r['wall_s']:.1f}"),
        ("`sample_basins`: the chains' sampling (PyMC's `sampling_time`)",
         lambda r: f"{r['sampling_s']:.1f}"),
        ("`sample_basins`: everything else (mode, curvature, compilation, start)",
         lambda r: f"{r['sampler_fixed_s']:.1f}"),
        ("95 % intervals' coverage of the 100 test points",
         lambda r: f"{r['quality']['coverage']:.2f}"),
        ("RMSE / test values' sd", lambda r: f"{r['quality']['rmse'] / r['quality']['sd']:.2f}"),
        ("largest r-hat, hyperparameters", lambda r: f"{r['quality']['r_hat_max']:.3f}"),
        ("smallest bulk / tail ESS", lambda r: f"{r['quality']['ess_bulk_min']:.0f} / "
         f"{r['quality']['ess_tail_min']:.0f}"),
        ("divergences", lambda r: f"{r['quality']['divergences']}"),
        ("printed a warning", lambda r: "yes" if r["warned"] else "no"),
    ]  # fmt: skip
    for label, cell in rows:
        lines.append(f"| **{label}** | " + " | ".join(cell(r) for r in runs) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one run: the caller's PyTensor and numba caches, ArviZ's stamp "
                        "empty (what tests/test_readme.py runs)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder, caches = Path(tmp), Path(tmp) / "caches"
        if args.quick:
            runs = [measure("first, the caller's caches", folder, None, None)]
        else:
            runs = [measure("first", folder, caches, None),
                    measure("after", folder, caches, None),
                    measure("after, cores=1", folder, caches, 1)]  # fmt: skip
    write_results(args.out, "readme_block", args.quick, {"runs": runs}, summary(runs))


if __name__ == "__main__":
    main()
