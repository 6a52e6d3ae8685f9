"""The ``pymc-sle`` command."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numpy as np

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
            "progressbar": False if args.quiet else None,
        }.items()
        if value is not None
    }
    settings = DemoSettings.quick(**overrides) if args.quick else DemoSettings.full(**overrides)
    run_demo(args.out, settings)
    return 0


def _integers(values: np.ndarray, source: str) -> list[int]:
    values = np.ravel(values)
    integral = values.dtype.kind == "f" and (values == np.round(values)).all()
    if values.dtype.kind not in "iu" and not integral:
        bad = values if values.dtype.kind != "f" else values[~(values == np.round(values))]
        raise argparse.ArgumentTypeError(
            f"{source} must hold integer indices, but holds {bad[:3].tolist()}"
        )
    return [int(v) for v in values]


def _indices(text: str) -> list[int]:
    """Parse ``--rows``/``--cols``: ``"0:100"``, ``"3,7,9"`` or a ``.npy``/``.txt`` file of
    non-negative integers (range checks against the items follow in the library)."""
    path = Path(text)
    if path.suffix in (".npy", ".txt"):
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"index file {text!r} does not exist")
        try:
            values = np.load(path) if path.suffix == ".npy" else np.loadtxt(path, ndmin=1)
        except (OSError, ValueError) as err:
            raise argparse.ArgumentTypeError(f"cannot read index file {text!r}: {err}") from None
        indices = _integers(values, f"index file {text!r}")
    else:
        try:
            if ":" in text:
                start, stop = (int(part) for part in text.split(":"))
                if stop <= start:
                    raise argparse.ArgumentTypeError(
                        f"'start:stop' needs stop > start, but got {text!r} (an empty selection)"
                    )
                indices = list(range(start, stop))
            else:
                indices = [int(part) for part in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected 'start:stop', a comma-separated list or a .npy/.txt file, got {text!r}"
            ) from None
    negative = [i for i in indices if i < 0]
    if negative:
        raise argparse.ArgumentTypeError(f"indices must be >= 0, but got {negative[:3]}")
    return indices


def _distances(args: argparse.Namespace) -> int:
    from pymc_sle import distances

    common = {"rows": args.rows, "cols": args.cols}
    cutoff = getattr(args, "cutoff", None)  # geodesic and wasserstein only
    if cutoff is not None and not str(args.out).endswith(".npz"):
        raise ValueError(
            f"--cutoff writes a SparseDistanceMatrix, whose --out must end in '.npz', but "
            f"got {args.out!r}"
        )
    if args.kind == "geodesic":
        mesh = distances.load_mesh(args.input)
        result = distances.geodesic(
            mesh.vertices,
            mesh.faces,
            **common,
            method=args.method,
            cutoff=cutoff,
            n_jobs=args.jobs,
            progress=not args.quiet,
        )
    else:
        measures = _load_measures(args.input)
        engine = {
            "n_jobs": args.jobs,
            "store": args.store,
            "client": args.scheduler,
            "progress": not args.quiet,
            "squared": args.squared,
            "spacing": args.spacing,
        }
        if args.kind == "wasserstein":
            result = distances.wasserstein(measures, **common, **engine, cutoff=cutoff)
        else:
            result = distances.sliced_wasserstein(
                measures,
                **common,
                **engine,
                n_projections=args.projections,
                seed=args.seed,
                method=args.method,
                n_quantiles=args.quantiles,
            )
    path = result.save(args.out)
    print(f"wrote {path}: {result.shape[0]} x {result.shape[1]} {result.metadata['metric']}")
    return 0


_NPY_MAGIC = b"\x93NUMPY"


def _load_measures(path: str) -> np.ndarray:
    """The images of ``pymc-sle distances wasserstein|sliced``: a ``.npy`` file (``numpy.save``)
    of shape ``(n, *grid)``; anything else is a ``ValueError`` saying what the file is."""
    with open(path, "rb") as file:
        head = file.read(len(_NPY_MAGIC))
    if head != _NPY_MAGIC:
        kind = "a .npz archive" if head.startswith(b"PK") else "not in NumPy's .npy format"
        raise ValueError(
            f"input {path!r} must be a .npy array of shape (n, *grid) written by numpy.save, "
            f"but the file is {kind} (it starts with {head!r})"
        )
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as err:  # object arrays: NumPy refuses to unpickle them
        raise ValueError(
            f"input {path!r} must be a .npy array of shape (n, *grid) of numbers ({err})"
        ) from err


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(
            f"must be -1 (all cores) or a positive integer, got {text!r}"
        )
    return value


_SCHEDULER = re.compile(r"^([a-z]+://)?[A-Za-z0-9._\-\[\]:]+:\d+$")


def _scheduler(text: str) -> str:
    if not _SCHEDULER.match(text):
        raise argparse.ArgumentTypeError(
            f"expected a Dask scheduler address such as tcp://host:8786, got {text!r}"
        )
    return text


def _output_file(text: str) -> Path:
    """``--out`` of the distance commands, checked before anything is computed."""
    path = Path(text)
    if path.suffix not in (".npz", ".npy"):
        raise argparse.ArgumentTypeError(f"must end in .npz or .npy, got {text!r}")
    _no_file_above(path, text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {str(path.parent)!r} of {text!r} does not exist")
    if path.is_dir() or not os.access(path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}")
    return path


def _no_file_above(path: Path, text: str) -> None:
    """An output path whose folders include a regular file can never be written."""
    for folder in path.parents:
        if folder.is_file():
            raise argparse.ArgumentTypeError(f"{str(folder)!r} in {text!r} is a file, not a folder")


def _output_folder(text: str) -> Path:
    """``--out`` of the demo: a folder that exists or can be created, checked before any work."""
    path = Path(text)
    _no_file_above(path / "x", text)
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(existing, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write into {str(existing)!r} (for {text!r})")
    return path


def _input_file(text: str) -> str:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"input file {text!r} does not exist")
    return text


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, exit status 2 (the full usage is one --help away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's default after its help (unless it has none); examples kept as written."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


_EXAMPLES = {
    "pymc-sle": "examples:\n  pymc-sle demo --quick\n"
    "  pymc-sle distances geodesic mesh.obj --out D.npz",
    "demo": "examples:\n  pymc-sle demo                 # the full demo (4 chains)\n"
    "  pymc-sle demo --quick --out /tmp/sle-demo",
    "distances": "examples:\n  pymc-sle distances geodesic mesh.obj --cols 0:200 --out D.npz\n"
    "  pymc-sle distances wasserstein images.npy --out W2.npz --store w2-store",
    "geodesic": "example:\n"
    "  pymc-sle distances geodesic bunny.obj --cols train.npy --out geodesic.npz",
    "wasserstein": "example:\n  pymc-sle distances wasserstein images.npy --rows 0:500 --cols "
    "train.txt --out w2.npz --store w2-store",
    "sliced": "example:\n  pymc-sle distances sliced images.npy --projections 50 --out sw2.npz",
}


def _command(commands, name: str, help_text: str) -> argparse.ArgumentParser:
    return commands.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        epilog=_EXAMPLES[name],
        formatter_class=_HelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import version

    from pymc_sle.distances._methods import GEODESIC_METHODS, SLICED_METHODS

    parser = _Parser(
        prog="pymc-sle",
        description="Gaussian processes on distances with the SLE kernel.",
        epilog=_EXAMPLES["pymc-sle"],
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('pymc-sle')}")
    commands = parser.add_subparsers(dest="command", required=True, help="what to run")
    demo = _command(
        commands, "demo", "SLE-Matern vs Matern-3/2 on a 1-D function with NUTS (Figure 1)"
    )
    demo.add_argument("--out", type=_output_folder, default="sle-demo", help="output folder")
    demo.add_argument("--quick", action="store_true", help="small data and short chains (CI)")
    demo.add_argument("--quiet", action="store_true", help="no sampling progress bars")
    demo.add_argument("--draws", type=_positive_int, help="draws per chain (full demo: 1000)")
    demo.add_argument("--tune", type=_positive_int, help="tuning steps per chain (full: 1000)")
    demo.add_argument("--chains", type=_positive_int, help="number of chains (full: 4)")
    demo.add_argument("--cores", type=_positive_int, help="parallel chains (full: 2)")
    demo.add_argument("--seed", type=int, help="random seed (full: 0)")
    demo.add_argument(
        "--sampler",
        choices=["pymc", "nutpie", "numpyro", "blackjax"],
        help="NUTS implementation (full: pymc)",
    )
    demo.set_defaults(handler=_demo)

    dist = _command(commands, "distances", "compute a distance matrix and save it")
    kinds = dist.add_subparsers(dest="kind", required=True, help="the kind of distance")
    for kind, help_text, input_help in (
        ("geodesic", "geodesic distances on a triangle mesh", "mesh file (OBJ, PLY, STL, ...)"),
        ("wasserstein", "exact W2 between images", ".npy array of shape (n, *grid)"),
        ("sliced", "sliced W2 between images", ".npy array of shape (n, *grid)"),
    ):
        sub = _command(kinds, kind, help_text)
        sub.add_argument("input", type=_input_file, help=input_help)
        sub.add_argument(
            "--out", type=_output_file, required=True, help="output DistanceMatrix (.npz or .npy)"
        )
        sub.add_argument(
            "--rows", type=_indices, help="row indices: 'a:b', 'i,j,k' or a .npy/.txt file (all)"
        )
        sub.add_argument(
            "--cols", type=_indices, help="column indices (landmarks), same forms (all)"
        )
        sub.add_argument(  # the library's defaults: geodesic() 1, the transport builders -1
            "--jobs",
            type=_jobs,
            default=1 if kind == "geodesic" else -1,
            help="worker processes, -1 for one per core (small jobs run in-process)",
        )
        sub.add_argument("--quiet", action="store_true", help="no progress bar")
        if kind != "sliced":
            sub.add_argument(
                "--cutoff",
                type=_positive_float,
                help="keep only distances below it: a SparseDistanceMatrix (.npz), for large n",
            )
        if kind == "geodesic":
            sub.add_argument(
                "--method", choices=GEODESIC_METHODS, default="graph", help="geodesic solver"
            )
            continue
        sub.add_argument("--squared", action="store_true", help="squared distances")
        sub.add_argument("--spacing", type=float, default=1.0, help="pixel size")
        sub.add_argument("--store", help="directory of finished blocks, to resume a killed run")
        sub.add_argument(
            "--scheduler", type=_scheduler, help="Dask scheduler address, e.g. tcp://host:8786"
        )
        if kind == "sliced":
            sub.add_argument(
                "--projections", type=_positive_int, default=50, help="random directions"
            )
            sub.add_argument("--seed", type=int, default=0, help="seed of the directions")
            sub.add_argument(
                "--method", choices=SLICED_METHODS, default="auto", help="1-D W2 solver"
            )
            sub.add_argument(
                "--quantiles",
                type=_positive_int,
                default=4096,
                help="quantile levels per projection (method 'quantiles')",
            )
    dist.set_defaults(handler=_distances)
    return parser


_INDEX_OPTIONS = ("--rows", "--cols")


def _attach_index_values(argv: list[str]) -> list[str]:
    """``--rows -1,2`` as ``--rows=-1,2``: argparse takes a value that starts with ``-`` for an
    option (unless it is a plain negative number) and would report a missing argument, where
    the user wrote an index list with a negative index, which ``_indices`` names."""
    out = []
    for token in argv:
        if out and out[-1] in _INDEX_OPTIONS and token.startswith("-") and token[1:2].isdigit():
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the ``pymc-sle`` command with ``argv`` (default: the process's arguments); return its
    exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    # --help and usage errors exit here, before heavy imports
    args = parser.parse_args(_attach_index_values(argv))
    from pymc_sle.distances._pairwise import MetricError

    try:
        return args.handler(args)
    except (ValueError, TypeError, OSError, ImportError, MetricError) as err:
        # Bad input reaches the library's validation, which names the argument: one line, not a
        # traceback. Anything else is a bug and keeps its traceback.
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
