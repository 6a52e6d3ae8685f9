"""Regression targets on triangle meshes: the paper's Teddy and Dragon (here: bunny) problems."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from pymc_sle.distances._geodesic import Mesh, geodesic, load_mesh
from pymc_sle.kernels._spectral import laplace_beltrami, matern_spectrum

__all__ = ["MeshField", "geodesic_sine_field", "geodesic_sines_field", "matern_field"]


@dataclass(frozen=True)
class MeshField:
    """A scalar field on the vertices of a mesh, observed with noise.

    Attributes
    ----------
    mesh : Mesh
        One connected component.
    f : numpy.ndarray of shape (n_vertices,)
        The latent field.
    y : numpy.ndarray of shape (n_vertices,)
        Observations ``f + noise``.
    noise_sd : float
        Standard deviation of the observation noise (0 for a noiseless target).
    source : int or None
        The source vertex of a geodesic target.
    sources : tuple of int
        The source vertices of a several-source geodesic target (empty otherwise).
    """

    mesh: Mesh
    f: np.ndarray
    y: np.ndarray
    noise_sd: float
    source: int | None = None
    sources: tuple[int, ...] = ()


def _connected(mesh: Mesh | str | os.PathLike) -> Mesh:
    mesh = mesh if isinstance(mesh, Mesh) else load_mesh(mesh)
    return mesh.largest_component()[0] if mesh.n_components > 1 else mesh


def matern_field(
    mesh: Mesh | str | os.PathLike,
    *,
    ls: float = 6.0,
    nu: float = 2.5,
    sd: float = 50.0,
    noise_sd: float = 1.0,
    seed: int = 0,
) -> MeshField:
    r"""One draw from a Matern GP prior on a mesh (the paper's Teddy target).

    :math:`f = \mathrm{sd} \cdot \sum_j \sqrt{\tilde S_j}\, z_j\, f_j` with every
    Laplace--Beltrami eigenpair of the mesh (:func:`pymc_sle.kernels.laplace_beltrami`,
    GeometricKernels' normalisation, so the prior variance averages ``sd**2`` over the vertices),
    :math:`z_j \sim N(0, 1)`; then ``y = f + noise_sd * N(0, 1)``. Exact for meshes small
    enough for a dense eigendecomposition (Teddy: 1,598 vertices, about a second). The
    eigendecomposition runs on one BLAS thread, so a seed gives one field whatever the thread
    count (on a symmetric mesh the eigenbasis LAPACK returns depends on it).

    Parameters
    ----------
    mesh : Mesh or path
        A mesh or a file :func:`pymc_sle.distances.load_mesh` reads; the largest connected
        component is used.
    ls : float, default 6.0
        Length scale in mesh units (Teddy's geodesic diameter is about 56).
    nu : float, default 2.5
        Matern smoothness.
    sd : float, default 50.0
        Prior standard deviation: the field's scale.
    noise_sd : float, default 1.0
        Observation noise standard deviation (>= 0).
    seed : int, default 0
    """
    mesh = _connected(mesh)
    if not np.isfinite(sd) or sd <= 0:
        raise ValueError(f"`sd` must be > 0, but got {sd!r}")
    if not np.isfinite(noise_sd) or noise_sd < 0:
        raise ValueError(f"`noise_sd` must be >= 0, but got {noise_sd!r}")
    # Within a degenerate eigenvalue cluster (a symmetric mesh: the icosphere) any orthonormal
    # basis is an eigenbasis, and the one LAPACK returns, with the signs of some eigenvectors,
    # changed with the BLAS thread count: so did the "seeded" draw. One thread makes it one.
    with threadpool_limits(limits=1, user_api="blas"):
        pairs = laplace_beltrami(mesh.vertices, mesh.faces, mesh.n_vertices)
    weights = matern_spectrum(pairs.eigenvalues, ls=ls, nu=nu)
    rng = np.random.default_rng(seed)
    f = sd * pairs.eigenvectors @ (np.sqrt(weights) * rng.standard_normal(weights.size))
    y = f + noise_sd * rng.standard_normal(f.size)
    return MeshField(mesh, f, y, float(noise_sd))


def geodesic_sine_field(
    mesh: Mesh | str | os.PathLike,
    *,
    oscillations: float = 3.0,
    source: int | None = None,
    axis: int = 1,
) -> MeshField:
    r"""The sine of the geodesic distance from one extreme vertex (the paper's Dragon target).

    :math:`f(x) = \sin\bigl(2\pi \cdot \mathrm{oscillations} \cdot d(x, s) / \max_x d(x, s)\bigr)`
    with graph geodesics :math:`d` from the source :math:`s`, by default the vertex farthest
    along ``axis`` (the Stanford bunny's ear tip for ``axis=1``, its "up" axis). Noiseless:
    ``y = f``.

    Parameters
    ----------
    mesh : Mesh or path
        The largest connected component is used.
    oscillations : float, default 3.0
        Periods of the sine between the source and the farthest vertex (> 0).
    source : int, optional
        Source vertex index (in the connected component); overrides ``axis``.
    axis : int, default 1
        Coordinate whose maximum picks the source.
    """
    mesh = _connected(mesh)
    if not np.isfinite(oscillations) or oscillations <= 0:
        raise ValueError(f"`oscillations` must be > 0, but got {oscillations!r}")
    if source is None:
        if axis not in (0, 1, 2):
            raise ValueError(f"`axis` must be 0, 1 or 2, but got {axis!r}")
        source = int(np.argmax(mesh.vertices[:, axis]))
    elif not 0 <= source < mesh.n_vertices:
        raise ValueError(f"`source` must be in [0, {mesh.n_vertices}), but got {source!r}")
    d = geodesic(mesh.vertices, mesh.faces, cols=[source]).values[:, 0]
    f = np.sin(2.0 * np.pi * oscillations * d / d.max())
    return MeshField(mesh, f, f.copy(), 0.0, source)


INCOMMENSURATE_OSCILLATIONS = (2.0, 2.0 * float(np.sqrt(2.0)), 2.0 * float(np.sqrt(3.0)))


def geodesic_sines_field(
    mesh: Mesh | str | os.PathLike,
    *,
    oscillations=INCOMMENSURATE_OSCILLATIONS,
    axis: int = 1,
) -> MeshField:
    r"""A sum of sines of geodesic distances from several well-separated sources (the paper's
    Dragon ablation target).

    .. math:: f(x) = \frac{1}{\sqrt{K}} \sum_{k=1}^{K}
        \sin\bigl(2\pi \omega_k\, d(x, s_k) / \max_x d(x, s_k)\bigr)

    with graph geodesics :math:`d`. The first source is the vertex farthest along ``axis``; each
    next one is the vertex farthest (geodesically) from the sources chosen so far. With
    incommensurate periods :math:`\omega_k` (the default: 2, 2 sqrt 2, 2 sqrt 3) the field is
    not a function of the distance to any single point. Noiseless: ``y = f``.

    Parameters
    ----------
    mesh : Mesh or path
        The largest connected component is used.
    oscillations : sequence of float
        :math:`\omega_k`, one per source (at least one, all > 0).
    axis : int, default 1
        Coordinate whose maximum picks the first source.
    """
    mesh = _connected(mesh)
    omega = np.atleast_1d(np.asarray(oscillations, dtype=float))
    if omega.ndim != 1 or omega.size == 0 or not np.all(np.isfinite(omega) & (omega > 0)):
        raise ValueError(
            f"`oscillations` must be a non-empty sequence of numbers > 0, but got {oscillations!r}"
        )
    if axis not in (0, 1, 2):
        raise ValueError(f"`axis` must be 0, 1 or 2, but got {axis!r}")
    sources = [int(np.argmax(mesh.vertices[:, axis]))]
    columns = [geodesic(mesh.vertices, mesh.faces, cols=sources).values[:, 0]]
    while len(sources) < omega.size:
        sources.append(int(np.argmax(np.min(columns, axis=0))))
        columns.append(geodesic(mesh.vertices, mesh.faces, cols=sources[-1:]).values[:, 0])
    f = sum(np.sin(2.0 * np.pi * w * d / d.max()) for w, d in zip(omega, columns, strict=True))
    f = f / np.sqrt(omega.size)
    return MeshField(mesh, f, f.copy(), 0.0, sources=tuple(sources))
