"""SAXS images with exact W2 (the paper's Table 3): SLE on W2 vs Matern on sliced W2.

Data: 500 simulated 64 x 64 SAXS images of multi-domain lamellar films
(`pymc_sle.datasets.saxs_images`, seed 2024; the physics is in its docstring); y is the effective
Young's modulus along the measurement axis (GPa), which falls with the inter-harmonic coupling
disorder. A fixed test set of 100 images; training draws from the other 400.

Distances (cached under ``benchmarks/paper/cache/``):
- ``W2``: exact Wasserstein-2 (POT network simplex). Exact W2 between full 64 x 64 images costs
  ~10 s per pair here (124,750 pairs: ~350 CPU hours; the paper spent 32 CPU hours), so every
  distance is computed on the detector binned 4 x 4 (16 x 16 pixels, ~4 ms per pair, 11 min on
  one core), in fine-pixel units. Binning moves mass by at most 2.1 fine pixels per image, so
  W2 changes by at most 4.2 fine pixels (`pymc_sle.datasets.coarsen`).
- ``SW2``: sliced W2, 50 projections, on the same binned images -- the paper's baseline distance.
- ``SW2-full``: sliced W2 on the full 64 x 64 images, so the baseline also gets full resolution.

Models (Matern-3/2 inner/outer kernels; the paper's Appendix D.3 bounds, flat on the log
scale): signal variance [1, 1e10], radius [smallest, 2 x largest] training distance, amplitude
[0.01, 10], ls [1e-4, 100], noise variance [1e-5, 10], constant mean [0, 10].
- ``SLE - W2``, ``SLE - sliced W2``: the paper's two SLE rows.
- ``Matern - sliced W2``: the paper's baseline (PSD: sliced W2 is Hilbertian).
- ``Matern - sliced W2 (64x64)``: the baseline at full resolution.
- ``Matern - W2``: Matern of exact W2, not PSD in general; checked at the fit.
- ``Raw-distance embedding - W2``: the ablation.

Run:  `python -m benchmarks.paper.saxs [--quick] [--draws 30] [--nuts-draws 5] [--jobs 2]`
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchmarks.paper.models import Hyper, distance_matern_spec, fixed, raw_embedding_spec, sle_spec
from benchmarks.paper.problem import Problem
from benchmarks.paper.runner import experiment, parser
from pymc_sle import DistanceMatrix
from pymc_sle.datasets import coarsen, saxs_images
from pymc_sle.distances import sliced_wasserstein, wasserstein

BINNING = 4
N_IMAGES, N_TEST = 500, 100


def images(quick: bool) -> tuple[np.ndarray, np.ndarray]:
    data = saxs_images(n_images=60 if quick else N_IMAGES, seed=2024)
    return data.images, data.y


def distance_matrices(quick: bool, cache: Path, n_jobs: int = -1) -> dict[str, DistanceMatrix]:
    """Exact W2 and sliced W2 (50 projections) in fine-pixel units, cached under ``cache``."""
    raw, _ = images(quick)
    binned = coarsen(raw, BINNING)
    tag = "quick" if quick else "full"
    common = dict(n_jobs=n_jobs, progress=not quick, chunk_size=50)
    out = {}
    path = cache / f"saxs-{tag}-w2.npz"
    cache.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        w2 = wasserstein(binned, spacing=BINNING, store=cache / f"saxs-{tag}-w2-store", **common)
        w2.save(path)
    out["W2"] = DistanceMatrix.load(path)
    for name, measures, spacing in (("SW2", binned, BINNING), ("SW2-full", raw, 1.0)):
        path = cache / f"saxs-{tag}-{name}.npz"
        if not path.exists():
            sliced_wasserstein(measures, n_projections=50, seed=0, spacing=spacing, **common).save(
                path
            )
        out[name] = DistanceMatrix.load(path)
    return out


#: The title of the experiment's tables.
TITLE = "SAXS images: SLE on exact W2 vs Matern on sliced W2 (paper Table 3)"
TABLE_SIZES = (150, 200, 250)
NUTS_MODELS = ("SLE - W2", "Matern - sliced W2")


def figure_images(path: Path, quick: bool) -> None:
    """Three simulated images (log counts) at full resolution and binned as W2 sees them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = saxs_images(n_images=60 if quick else N_IMAGES, seed=2024)
    chosen = np.argsort(data.sigma_coupling)[[0, data.y.size // 2, -1]]
    fig, axes = plt.subplots(2, 3, figsize=(10, 6.8))
    for column, index in enumerate(chosen):
        for row, image in enumerate(
            (data.images[index], coarsen(data.images[[index]], BINNING)[0])
        ):
            axes[row, column].imshow(np.log1p(image), cmap="magma")
            axes[row, column].set_axis_off()
        axes[0, column].set_title(
            f"sigma_coup = {data.sigma_coupling[index]:.2f} rad, y = {data.y[index]:.2f} GPa",
            fontsize=9,
        )
    axes[1, 0].set_title(f"binned {BINNING} x {BINNING} (the W2 input)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def problem(quick: bool, cache: Path, seed: int = 3345) -> Problem:
    _, y = images(quick)
    matrices = {k: v.values for k, v in distance_matrices(quick, cache).items()}
    rng = np.random.default_rng(seed)
    order = rng.permutation(y.size)
    n_test = 20 if quick else N_TEST
    test, pool = np.sort(order[:n_test]), np.sort(order[n_test:])

    def distances(points, cols, kind):
        return matrices[kind][np.ix_(points, cols)]

    return Problem("saxs", y, test, pool, distances)


def specs() -> list:
    hyper = fixed(Hyper(signal_var=(1.0, 1e10), noise_var=(1e-5, 10.0), mean=(0.0, 10.0)))
    ls, amplitude = (1e-4, 100.0), (0.01, 10.0)
    sle = dict(ls=ls, amplitude=amplitude, radius_upper_factor=2.0)
    return [
        sle_spec("SLE - W2", "W2", "matern32", hyper, **sle),
        distance_matern_spec("Matern - sliced W2", "SW2", "matern32", hyper, ls=ls),
        sle_spec("SLE - sliced W2", "SW2", "matern32", hyper, **sle),
        distance_matern_spec("Matern - sliced W2 (64x64)", "SW2-full", "matern32", hyper, ls=ls),
        distance_matern_spec("Matern - W2", "W2", "matern32", hyper, ls=ls),
        raw_embedding_spec("Raw-distance embedding - W2", "W2", "matern32", hyper),
    ]


def main(argv=None) -> None:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    experiment(args, problem(args.quick, args.cache), sys.modules[__name__], quick_size=30)
    if args.render:
        figure_images(args.out / "saxs_images.png", args.quick)


if __name__ == "__main__":
    main()
