"""Benchmark the distance builders against the targets of the distances issue.

1. Geodesic rows: every vertex of the Stanford bunny (34,834) x 1,000 landmarks, graph method,
   1 and 2 processes; the extrapolated cost of the full N x N matrix.
2. Exact W2 between 64 x 64 SAXS-like images: pairs/s with 1 and 2 processes; agreement with a
   reference solved with a 10x larger iteration limit; what POT's default limit returns.
3. Sliced W2 (50 projections), 500 x 500 images: wall time of the exact (default) and the
   quantile method; the exact method against POT on a subset; the quantile method against the
   exact one on all pairs.
4. Exact W2 with a cutoff, 40 images of 24 x 24: the certified lower bound (max-sliced W2)
   skips the pairs it proves beyond the cutoff; the share of pairs solved, the time against all
   pairs solved, and the kept distances against the dense ones (none lost, all equal).

Writes benchmarks/results/distances.json and distances.md. Timings are ratios measured in one run.

Run:  python -m benchmarks.distances [--mesh PATH] [--quick] [--section geodesic|exact_w2|...]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import ot

from pymc_sle.distances import geodesic, load_mesh, sliced_wasserstein, wasserstein
from pymc_sle.distances._transport import ExactW2, as_measures

HERE = Path(__file__).resolve().parent
DEFAULT_MESH = HERE.parent.parent / "shared" / "data" / "stanford-bunny.obj"


def saxs_like_images(n: int, size: int = 64, seed: int = 0) -> np.ndarray:
    """Oriented two-arc scattering patterns (q* and 2q*) on a background, with counting noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] - (size - 1) / 2
    radius, angle = np.hypot(x, y), np.arctan2(y, x)
    images = np.empty((n, size, size))
    for i in range(n):
        q, orientation, alignment = rng.uniform(8, 14), rng.uniform(0, np.pi), rng.uniform(0.5, 3)
        arcs = np.exp(alignment * np.cos(2 * (angle - orientation)))
        rings = np.exp(-0.5 * ((radius - q) / 1.5) ** 2) + 0.6 * np.exp(
            -0.5 * ((radius - 2 * q) / 1.5) ** 2
        )
        images[i] = rng.poisson(200 * rings * arcs + 5)
    return images


SECTIONS = ("geodesic", "exact_w2", "sliced_w2", "w2_cutoff")


def timed(function, repeats: int = 1):
    """Median wall time over ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def bench_geodesic(mesh_path: Path, n_landmarks: int) -> dict:
    mesh = load_mesh(mesh_path)
    cols = np.random.default_rng(0).choice(mesh.n_vertices, n_landmarks, replace=False)
    geodesic(mesh.vertices, mesh.faces, cols=cols[:4])  # warm-up: imports, graph build
    result = {"n_vertices": mesh.n_vertices, "n_landmarks": n_landmarks}
    for n_jobs in (1, 2):
        seconds, D = timed(
            lambda n=n_jobs: geodesic(mesh.vertices, mesh.faces, cols=cols, n_jobs=n)
        )
        result[f"seconds_{n_jobs}_jobs"] = seconds
    result["speedup_2_jobs"] = result["seconds_1_jobs"] / result["seconds_2_jobs"]
    best = min(result["seconds_1_jobs"], result["seconds_2_jobs"])
    result["full_matrix_seconds_extrapolated"] = best / n_landmarks * mesh.n_vertices
    result["full_matrix_gib_float64"] = mesh.n_vertices**2 * 8 / 2**30
    result["rows_matrix_gib_float64"] = D.values.nbytes / 2**30
    return result


def bench_exact_w2(images: np.ndarray, n_pairs: int) -> dict:
    rows, cols = [0, 1], list(range(2, 2 + n_pairs // 2))
    result = {"image_shape": list(images.shape[1:]), "n_pairs": 2 * len(cols)}
    for n_jobs in (1, 2):
        seconds, D = timed(
            lambda n=n_jobs: wasserstein(images, rows, cols, n_jobs=n, chunk_size=1, progress=False)
        )
        result[f"pairs_per_second_{n_jobs}_jobs"] = result["n_pairs"] / seconds
    result["parallel_speedup"] = (
        result["pairs_per_second_2_jobs"] / result["pairs_per_second_1_jobs"]
    )
    # A reference with 10x the default iteration limit, and what POT's default limit returns.
    prepared = as_measures(images)
    reference = ExactW2(prepared.grid_shape, 1.0, False, 100_000_000)
    errors, pot_default_errors, pot_default_unconverged = [], [], 0
    for i, j in [(rows[0], cols[0]), (rows[1], cols[-1]), (rows[0], cols[-1])]:
        a, b = prepared.items[i], prepared.items[j]
        exact = reference(a, b)
        errors.append(abs(D.values[rows.index(i), cols.index(j)] - exact) / exact)
        value, log = ot.emd2(a[1], b[1], reference.cost(a, b), log=True)
        pot_default_unconverged += int(log["result_code"] != 1)
        pot_default_errors.append(float(np.sqrt(max(value, 0.0))) / exact - 1.0)
    result["max_relative_error_vs_reference"] = float(max(errors))
    result["pot_default_relative_errors"] = pot_default_errors
    result["pot_default_unconverged_pairs"] = f"{pot_default_unconverged} of 3"
    return result


def bench_sliced(images: np.ndarray, n_subset: int) -> dict:
    sliced_wasserstein(images[:4], progress=False)  # warm-up: compiles the exact kernel
    exact_seconds, exact = timed(lambda: sliced_wasserstein(images, progress=False))
    quantile_seconds, fast = timed(
        lambda: sliced_wasserstein(images, method="quantiles", progress=False), repeats=3
    )
    pot = sliced_wasserstein(images[:n_subset], method="pairwise", n_jobs=2, progress=False)
    off = ~np.eye(n_subset, dtype=bool)
    exact_vs_pot = np.abs(exact.values[:n_subset, :n_subset] - pot.values)[off] / pot.values[off]
    everywhere = ~np.eye(images.shape[0], dtype=bool)
    fast_vs_exact = np.abs(fast.values - exact.values)[everywhere] / exact.values[everywhere]
    return {
        "n_images": images.shape[0],
        "n_projections": 50,
        "n_quantiles": 4096,
        "exact_seconds": exact_seconds,
        "quantiles_seconds": quantile_seconds,
        "pot_subset": n_subset,
        "exact_max_relative_error_vs_pot": float(exact_vs_pot.max()),
        "quantiles_max_relative_error_vs_exact": float(fast_vs_exact.max()),
        "quantiles_median_relative_error_vs_exact": float(np.median(fast_vs_exact)),
    }


def bench_w2_cutoff(images: np.ndarray, keep: float) -> dict:
    """All pairs solved, then only those whose lower bound is below the ``keep`` quantile."""
    prepared = as_measures(images)
    metric = ExactW2(prepared.grid_shape, 1.0, False, 10_000_000)
    metric.lower_bound(prepared.items[:2], prepared.items[:2])  # warm-up: compiles the kernel
    dense_seconds, dense = timed(lambda: wasserstein(images, n_jobs=2, progress=False))
    upper = np.triu_indices(images.shape[0], k=1)
    cutoff = float(np.quantile(dense.values[upper], keep))
    bound_seconds, bound = timed(lambda: metric.lower_bound(prepared.items, prepared.items))
    pruned_seconds, pruned = timed(
        lambda: wasserstein(images, n_jobs=2, progress=False, cutoff=cutoff)
    )
    below = dense.values < cutoff
    kept = pruned.to_dense()
    return {
        "n_images": images.shape[0],
        "image_shape": list(images.shape[1:]),
        "cutoff_quantile": keep,
        "cutoff": cutoff,
        "dense_seconds": dense_seconds,
        "bound_seconds": bound_seconds,
        "pruned_seconds": pruned_seconds,
        "speedup": dense_seconds / pruned_seconds,
        "pairs_below_cutoff": float(below[upper].mean()),
        "pairs_solved": float((bound[upper] < cutoff).mean()),
        "bound_over_w2_median": float(np.median(bound[upper] / dense.values[upper])),
        "pairs_lost": int(np.count_nonzero(below & np.isinf(kept))),
        "max_abs_difference": float(np.max(np.abs(kept[below] - dense.values[below]))),
    }


def markdown(results: dict) -> str:
    g, w, s = results["geodesic"], results["exact_w2"], results["sliced_w2"]
    lines = [
        "# Distance builders",
        "",
        f"Machine: {results['machine']}. One run; ratios are within that run.",
        "",
        "| benchmark | measured | target | met |",
        "|---|---|---|---|",
    ]
    if g:
        best = min(g["seconds_1_jobs"], g["seconds_2_jobs"])
        lines += [
            f"| geodesic rows, {g['n_vertices']:,} vertices x {g['n_landmarks']:,} landmarks | "
            f"{g['seconds_1_jobs']:.1f} s (1 job), {g['seconds_2_jobs']:.1f} s (2 jobs) | <= 30 s "
            f"| {'yes' if best <= 30 else 'no'} |",
            "| full N x N geodesics, extrapolated | "
            f"{g['full_matrix_seconds_extrapolated'] / 60:.1f} min, "
            f"{g['full_matrix_gib_float64']:.1f} GiB vs {g['rows_matrix_gib_float64']:.2f} GiB "
            "for the rows | (comparison) | |",
        ]
    lines += [
        f"| exact W2, {w['image_shape'][0]}x{w['image_shape'][1]} images, parallel speed-up | "
        f"{w['parallel_speedup']:.2f}x ({w['pairs_per_second_1_jobs']:.3f} -> "
        f"{w['pairs_per_second_2_jobs']:.3f} pairs/s) | >= 1.9x | "
        f"{'yes' if w['parallel_speedup'] >= 1.9 else 'no'} |",
        f"| exact W2 vs 10x-iteration reference | max rel. error "
        f"{w['max_relative_error_vs_reference']:.1e} | converged | "
        f"{'yes' if w['max_relative_error_vs_reference'] < 1e-9 else 'no'} |",
        f"| POT default numItermax=1e5 | {w['pot_default_unconverged_pairs']} pairs unconverged, "
        f"W2 errors {', '.join(f'{e:+.1%}' for e in w['pot_default_relative_errors'])} | "
        "(why the limit is raised) | |",
        f"| sliced W2, {s['n_images']} x {s['n_images']} images, exact method (default) | "
        f"{s['exact_seconds']:.1f} s | <= 10 s | {'yes' if s['exact_seconds'] <= 10 else 'no'} |",
        f"| sliced W2 exact method vs POT per pair, {s['pot_subset']} images | max rel. error "
        f"{s['exact_max_relative_error_vs_pot']:.1e} | < 1e-6 | "
        f"{'yes' if s['exact_max_relative_error_vs_pot'] < 1e-6 else 'no'} |",
        f"| sliced W2, {s['n_images']} x {s['n_images']} images, quantile method | "
        f"{s['quantiles_seconds']:.1f} s | <= 10 s | "
        f"{'yes' if s['quantiles_seconds'] <= 10 else 'no'} |",
        f"| sliced W2 quantile method vs exact, all pairs | max rel. error "
        f"{s['quantiles_max_relative_error_vs_exact']:.1e} (median "
        f"{s['quantiles_median_relative_error_vs_exact']:.1e}) | < 1e-6 | "
        f"{'yes' if s['quantiles_max_relative_error_vs_exact'] < 1e-6 else 'no'} |",
    ]
    c = results.get("w2_cutoff")
    if c:
        shape = "x".join(str(k) for k in c["image_shape"])
        lines += [
            f"| exact W2 with a cutoff, {c['n_images']} images of {shape}, cutoff at the "
            f"{c['cutoff_quantile']:.0%} quantile | {c['pairs_solved']:.0%} of pairs solved "
            f"({c['pairs_below_cutoff']:.0%} below the cutoff; bound / W2 median "
            f"{c['bound_over_w2_median']:.2f}), {c['pruned_seconds']:.1f} s against "
            f"{c['dense_seconds']:.1f} s for all pairs ({c['speedup']:.1f}x), bounds "
            f"{c['bound_seconds']:.2f} s | certified: none lost | "
            f"{'yes' if c['pairs_lost'] == 0 and c['max_abs_difference'] < 1e-12 else 'no'} |",
        ]
    return "\n".join([*lines, ""])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=Path, default=DEFAULT_MESH)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--section", choices=SECTIONS, action="append",
                        help="rerun these sections only; the others' results are kept")  # fmt: skip
    args = parser.parse_args(argv)
    quick = args.quick
    stem = "distances_quick" if quick else "distances"
    path = args.out / f"{stem}.json"
    results = json.loads(path.read_text()) if args.section and path.exists() else {}
    sections = args.section or SECTIONS
    images = saxs_like_images(40 if quick else 500, size=16 if quick else 64)
    results.update(
        machine=f"{platform.node() or 'unknown'}, {platform.processor() or platform.machine()}, "
        f"{__import__('os').cpu_count()} cores",
        quick=quick,
    )
    if "geodesic" in sections:
        mesh = args.mesh.exists()
        results["geodesic"] = bench_geodesic(args.mesh, 50 if quick else 1000) if mesh else None
    if "exact_w2" in sections:
        results["exact_w2"] = bench_exact_w2(images, 4 if quick else 12)
    if "sliced_w2" in sections:
        results["sliced_w2"] = bench_sliced(images, 6 if quick else 12)
    if "w2_cutoff" in sections:
        small = saxs_like_images(8 if quick else 40, size=10 if quick else 24, seed=1)
        results["w2_cutoff"] = bench_w2_cutoff(small, keep=0.2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (args.out / f"{stem}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
