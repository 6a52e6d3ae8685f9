"""The Laplace benchmark's data, shared by its sections (``benchmarks/laplace.py``) and its
verification (``benchmarks/_laplace_verify.py``)."""

from __future__ import annotations

import time

import numpy as np


def labelled_mesh(mesh_name: str, n: int, n_test: int = 0, seed: int = 0, sharpness: float = 3.0):
    """Training and held-out vertices, their sparse geodesic distances (rows: training then
    held-out; columns: training), the latent field ``sharpness * sin`` and Bernoulli labels."""
    from benchmarks.scaling import mesh_named
    from pymc_sle.datasets import geodesic_sine_field
    from pymc_sle.distances import geodesic

    mesh = mesh_named(mesh_name)
    rng = np.random.default_rng(seed)
    latent = sharpness * geodesic_sine_field(mesh).f
    labels = (rng.uniform(size=mesh.n_vertices) < 1 / (1 + np.exp(-latent))).astype(float)
    order = rng.permutation(mesh.n_vertices)
    test, rest = np.sort(order[:n_test]), order[n_test:]
    train = np.sort(rest[: min(n, rest.size)])
    began = time.perf_counter()
    rows = np.concatenate([train, test])
    D = geodesic(mesh.vertices, mesh.faces, rows=rows, cols=train, cutoff="auto", n_jobs=2)
    return D, time.perf_counter() - began, train, test, latent, labels
