"""The demo's reference output: ``pymc-sle demo --quiet`` run as a user runs it, its printed
output, ``demo.json`` and ``demo.png`` kept in benchmarks/results/demo/.

The command runs in a subprocess with this interpreter's environment; standard output and
standard error are kept interleaved, as a terminal shows them, after one header line naming the
command and the machine. ``tests/test_cli.py`` fails when the demo's printed columns or its
settings drift from what is kept here: rerun this then.

Run:  python -m benchmarks.demo_reference [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI-sized demo (--quick)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "demo")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    arguments = ["demo", "--quiet", "--out", str(args.out), *(["--quick"] if args.quick else [])]
    run = subprocess.run(
        [sys.executable, "-m", "pymc_sle.cli", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=True,
    )
    shown = " ".join(["pymc-sle", *arguments]).replace(str(args.out), "DIR")
    header = (
        f"# {shown} (DIR: this folder); {platform.machine()}, {os.cpu_count()} cores; "
        "standard output and standard error interleaved as printed\n"
    )
    name = "demo_output_quick.txt" if args.quick else "demo_output.txt"
    (args.out / name).write_text(header + run.stdout.replace(str(args.out), "DIR"))
    print(run.stdout)


if __name__ == "__main__":
    main()
