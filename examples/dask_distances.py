"""
Precompute a large distance matrix on a Dask cluster, resumably
===============================================================

Exact distances (W2, edit distance, geodesics on huge meshes) dominate the cost of an SLE model,
and an SLE model needs only the block from every point to the landmarks. ``pymc_sle.distances``
computes such blocks in chunks on a Dask cluster (``client=``) or local processes, and a
``store=`` directory keeps every finished chunk: an interrupted job resumes where it stopped, and
a rerun costs nothing.

This script starts a local cluster (replace it with ``Client("tcp://scheduler:8786")`` for a real
one), computes exact W2 between simulated SAXS images to a set of landmark images, and runs it
twice to show the resume.

Run: ``python examples/dask_distances.py [--quick] [--store DIR]``

Needs ``pip install 'pymc-sle[dask]'``.
"""

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib
import numpy as np
from dask.distributed import Client, LocalCluster

from pymc_sle.datasets import coarsen, saxs_images
from pymc_sle.distances import wasserstein

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer images, for CI")
    parser.add_argument("--store", type=Path, help="chunk store (default: a temporary directory)")
    args = parser.parse_args()
    n_images, n_landmarks = (40, 20) if args.quick else (400, 200)

    images = coarsen(saxs_images(n_images=n_images, seed=0).images, 4)
    landmarks = np.arange(n_landmarks)  # e.g. the training images
    store = args.store or Path(tempfile.mkdtemp()) / "w2-store"

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            print(f"local Dask cluster: {len(client.scheduler_info()['workers'])} workers")
            for attempt in ("first run", "rerun (resumes from the store)"):
                start = time.perf_counter()
                W2 = wasserstein(
                    images,
                    cols=landmarks,
                    spacing=4.0,
                    client=client,
                    store=store,
                    chunk_size=10,
                    progress=False,
                )
                print(f"{attempt}: {W2.values.shape} block in {time.perf_counter() - start:.2f} s")
    print(f"chunks kept in the store: {len(list(store.glob('*.npy')))}")
    W2.save(store.parent / "w2.npz")  # load later with pymc_sle.DistanceMatrix.load
    print("saved w2.npz beside the store")

    # The block: every image (rows) to the landmark images (columns).
    fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
    shown = ax.imshow(W2.values, aspect="auto", cmap="viridis")
    ax.set(xlabel="landmark image", ylabel="image", title="exact W2 to the landmark images")
    fig.colorbar(shown, ax=ax, label="W2")


if __name__ == "__main__":  # Dask's worker processes may re-import this module
    main()
