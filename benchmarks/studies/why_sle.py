"""Why SLE: kernels applied directly to geodesic and W2 distances are indefinite; SLE is not.

On two real distance matrices -- Teddy's graph geodesics (all 1,598 vertices) and the exact W2
between the 500 SAXS images (`benchmarks/paper/saxs.py`) -- this computes, over a range of length
scales ell, the smallest eigenvalue (relative to the largest) of the Gram matrices of

- the Gaussian kernel exp(-d^2 / (2 ell^2)) (PyMC's ExpQuad of the distance),
- the Matern-3/2 kernel of d / ell,
- the SLE kernel (Matern-3/2 inner, amplitude 1) at two radii: ``local`` (the 25th percentile of
  the pairwise distances) and ``dense`` (the largest distance), with the same ell grid for its
  embedding-space length scale,

all through the library (`pymc_sle.baselines.DistanceCovariance`, `pymc_sle.SLE`). A negative
relative eigenvalue below rounding (-1e-12) means the kernel is not a covariance: a GP built on it
can give negative predictive variances and a Cholesky factorisation that fails.

Run:  `python -m benchmarks.studies.why_sle [--quick] [--mesh PATH]`
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt

import pymc_sle as sle
from benchmarks._paths import SHARED_DATA
from benchmarks.studies.common import (
    embedding_distances,
    markdown_rows,
    parser,
    pyplot,
    save_figure,
    write_json,
    write_markdown,
)
from pymc_sle.distances import geodesic, load_mesh
from pymc_sle.kernels.baselines import DistanceCovariance

ROUNDING = -1e-12
KERNELS = ("Gaussian of d", "Matern-3/2 of d", "SLE (local radius)", "SLE (dense radius)")


def _radius(D: np.ndarray, kernel: str) -> float:
    upper = D[np.triu_indices_from(D, 1)]
    return float(np.quantile(upper, 0.25) if "local" in kernel else upper.max())


def _gram_of_ls(D: np.ndarray, kernel: str):
    """A compiled function ell -> the kernel's Gram matrix over every point of ``D``."""
    ls = pt.dscalar("ls")
    if kernel.startswith("SLE"):
        cov = sle.SLE(D, radius=_radius(D, kernel), ls=ls, inner="matern32")
    else:
        cov = DistanceCovariance(D, ls=ls, inner="rbf" if "Gaussian" in kernel else "matern32")
    return pytensor.function([ls], cov(np.arange(D.shape[0])[:, None]))


def spectra(D: np.ndarray, scales: np.ndarray) -> dict:
    """{kernel: smallest / largest eigenvalue per length scale}. ``scales`` multiply the median
    pairwise distance for the distance kernels and, for SLE, the median embedding distance at
    its radius (its inner kernel acts on ||phi - phi'||)."""
    out = {}
    for kernel in KERNELS:
        if kernel.startswith("SLE"):
            unit = float(np.median(embedding_distances(D, _radius(D, kernel))))
        else:
            unit = float(np.median(D[np.triu_indices_from(D, 1)]))
        gram = _gram_of_ls(D, kernel)
        values = []
        for scale in scales:
            eigenvalues = np.linalg.eigvalsh(gram(scale * unit))
            values.append(float(eigenvalues[0] / eigenvalues[-1]))
        out[kernel] = values
    return out


def figure(results: dict, scales: np.ndarray, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for ax, (name, curves) in zip(axes[0], results.items(), strict=True):
        for kernel, values in curves.items():
            style = "-" if kernel.startswith("SLE") else "--"
            ax.plot(scales, values, style, marker="o", ms=3, label=kernel)
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1e-8)
        ax.set_xlabel("length scale / median distance")
        ax.set_ylabel("smallest / largest eigenvalue")
        ax.set_title(name)
        ax.legend(fontsize=8)
    fig.suptitle("Below zero: not a covariance. Kernels of the distance vs SLE")
    save_figure(fig, path, dpi=120)


def report(results: dict, scales: np.ndarray) -> list[str]:
    lines = [__doc__.split("\n\n", 1)[1].split("Run:")[0].strip(), ""]
    header = ["data", "kernel", "indefinite at", "smallest ratio"]
    rows = []
    for name, curves in results.items():
        for kernel, values in curves.items():
            values = np.array(values)
            bad = scales[values < ROUNDING]
            where = f"{len(bad)} of {len(scales)} scales" + (
                f" ({bad.min():.3g}-{bad.max():.3g} x median)" if bad.size else ""
            )
            rows.append([name, kernel, where, float(values.min())])
    return lines + markdown_rows(header, rows)


def main(argv=None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mesh", type=Path, default=SHARED_DATA / "teddy.obj")
    args = p.parse_args(argv)
    from benchmarks.paper import saxs

    scales = np.geomspace(0.05, 5.0, 6 if args.quick else 17)
    mesh = load_mesh(args.mesh)
    matrices = {
        f"Teddy geodesic ({mesh.n_vertices} vertices)": geodesic(mesh.vertices, mesh.faces).values,
        "SAXS exact W2": saxs.distance_matrices(args.quick, args.cache)["W2"].values,
    }
    results = {name: spectra(D, scales) for name, D in matrices.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "why_sle.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["data", "kernel", "scale", "min_over_max_eigenvalue"])
        for name, curves in results.items():
            for kernel, values in curves.items():
                writer.writerows([name, kernel, s, v] for s, v in zip(scales, values, strict=True))
    write_json(args.out / "why_sle.json", {"scales": scales.tolist(), "results": results})
    write_markdown(args.out / "why_sle.md", __doc__.splitlines()[0], report(results, scales))
    figure(results, scales, args.out / "why_sle.png")
    print((args.out / "why_sle.md").read_text())


if __name__ == "__main__":
    main()
