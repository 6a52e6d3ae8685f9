"""The ``pymc-sle`` command."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from pymc_sle.demo import DemoSettings, run_demo

    overrides = {
        key: value
        for key, value in {
            "draws": args.draws,
            "tune": args.tune,
            "chains": args.chains,
            "cores": args.cores,
            "seed": args.seed,
            "nuts_sampler": args.sampler,
        }.items()
        if value is not None
    }
    settings = DemoSettings.quick(**overrides) if args.quick else DemoSettings(**overrides)
    run_demo(args.out, settings)
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pymc-sle", description="Gaussian processes on distances with the SLE kernel."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="SLE-Matern vs Matern-3/2 on a 1-D function with NUTS (the paper's Figure 1)",
    )
    demo.add_argument("--out", default="sle-demo", help="output folder (default: %(default)s)")
    demo.add_argument("--quick", action="store_true", help="small data and short chains (CI)")
    demo.add_argument("--draws", type=_positive_int, help="draws per chain (default 1000)")
    demo.add_argument("--tune", type=_positive_int, help="tuning steps per chain (default 1000)")
    demo.add_argument("--chains", type=_positive_int, help="number of chains (default 4)")
    demo.add_argument("--cores", type=_positive_int, help="parallel chains (default 2)")
    demo.add_argument("--seed", type=int, help="random seed (default 0)")
    demo.add_argument(
        "--sampler", choices=["pymc", "nutpie", "numpyro", "blackjax"], help="NUTS implementation"
    )
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
