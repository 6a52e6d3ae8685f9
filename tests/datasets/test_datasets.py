"""Built-in data sets: the SAXS simulator, detector binning, mesh targets."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from pymc_sle.datasets import (
    coarsen,
    geodesic_sine_field,
    geodesic_sines_field,
    matern_field,
    saxs_images,
)
from pymc_sle.distances import geodesic, wasserstein

trimesh = pytest.importorskip("trimesh")


def test_saxs_is_deterministic_counts_with_a_beam_stop():
    a, b = saxs_images(n_images=4, size=32, seed=3), saxs_images(n_images=4, size=32, seed=3)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.images, saxs_images(n_images=4, size=32, seed=4).images)
    assert a.images.shape == (4, 32, 32) and a.y.shape == (4,)
    assert (a.images >= 0).all() and np.array_equal(a.images, np.round(a.images))
    centre = a.images[:, 15:17, 15:17]
    assert (centre == 0).all()  # the beam stop
    np.testing.assert_allclose(a.images.sum(axis=(1, 2)), 2e4, rtol=0.05)  # Poisson total


def test_saxs_modulus_falls_with_coupling_disorder():
    data = saxs_images(n_images=300, size=16, seed=0, y_noise_sd=0.0)
    np.testing.assert_array_equal(data.y, data.modulus)
    rho = stats.spearmanr(data.sigma_coupling, data.modulus).statistic
    assert rho < -0.4
    assert ((data.n_domains >= 2) & (data.n_domains <= 5)).all()


def test_saxs_arcs_sit_at_the_fundamental_and_twice_it():
    data = saxs_images(n_images=1, size=64, seed=1, counts=1e7)
    axis = (np.arange(64) + 0.5) / 64 * 2 - 1
    q = np.hypot(*np.meshgrid(axis, axis))
    q_star = data.q_star[0]

    def ring(radius):
        return data.images[0][np.abs(q - radius) < 0.02].mean()

    assert ring(q_star) > 2 * ring(1.5 * q_star)
    assert ring(2 * q_star) > 1.2 * max(ring(1.6 * q_star), ring(2.4 * q_star))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_images": 0}, "`n_images` must be an integer >= 1"),
        ({"size": 4}, "`size` must be an integer >= 8"),
        ({"counts": 0.0}, "`counts` must be > 0"),
        ({"y_noise_sd": -1.0}, "`y_noise_sd` must be >= 0"),
    ],
)
def test_saxs_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        saxs_images(**kwargs)


def test_coarsen_sums_blocks_and_bounds_w2():
    rng = np.random.default_rng(0)
    images = rng.poisson(3.0, (4, 8, 8)).astype(float)
    binned = coarsen(images, 2)
    assert binned.shape == (4, 4, 4)
    np.testing.assert_allclose(binned.sum(axis=(1, 2)), images.sum(axis=(1, 2)))
    np.testing.assert_allclose(binned[0, 0, 0], images[0, :2, :2].sum())
    fine = wasserstein(images, n_jobs=1, progress=False).values
    coarse = wasserstein(binned, spacing=2.0, n_jobs=1, progress=False).values
    assert np.abs(coarse - fine).max() <= np.sqrt(2) * (2 - 1) + 1e-9
    np.testing.assert_array_equal(coarsen(images, 1), images)


def test_coarsen_validates():
    with pytest.raises(ValueError, match="`factor` must be an integer >= 1"):
        coarsen(np.ones((1, 4, 4)), 0)
    with pytest.raises(ValueError, match="multiples of factor=3"):
        coarsen(np.ones((1, 4, 4)), 3)
    with pytest.raises(ValueError, match=r"shape \(n, height, width\)"):
        coarsen(np.ones((4, 4)), 2)


@pytest.fixture(scope="module")
def sphere_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("mesh") / "sphere.obj"
    trimesh.creation.icosphere(subdivisions=3).export(path)
    return path


def test_matern_field_is_a_seeded_gp_draw(sphere_path):
    pytest.importorskip("robust_laplacian")
    a = matern_field(sphere_path, ls=0.5, sd=10.0, noise_sd=0.5, seed=1)
    b = matern_field(sphere_path, ls=0.5, sd=10.0, noise_sd=0.5, seed=1)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.mesh.n_vertices == 642 and a.noise_sd == 0.5
    np.testing.assert_allclose(np.std(a.y - a.f), 0.5, rtol=0.15)
    # The prior variance averages sd**2 over the vertices: check across draws.
    draws = np.array([matern_field(sphere_path, ls=0.5, sd=10.0, seed=s).f for s in range(20)])
    np.testing.assert_allclose(np.mean(draws**2), 100.0, rtol=0.25)


def test_matern_field_on_a_symmetric_mesh_is_the_same_for_any_blas_thread_count(sphere_path):
    """The icosphere's eigenvalues come in degenerate clusters, whose eigenbasis (and some
    eigenvectors' signs) LAPACK returned differently with 1 and 2 threads: a different field."""
    pytest.importorskip("robust_laplacian")
    code = (
        "import sys, numpy as np; from pymc_sle.datasets import matern_field; "
        f"np.save(sys.argv[1], matern_field({str(sphere_path)!r}, ls=0.5, seed=1).f)"
    )
    fields = []
    for threads in ("1", "2"):
        out = sphere_path.parent / f"field_{threads}.npy"
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        subprocess.run([sys.executable, "-c", code, out], env=env, check=True)
        fields.append(np.load(out))
    np.testing.assert_allclose(fields[0], fields[1], atol=1e-8 * np.abs(fields[0]).max())


def test_geodesic_sine_field(sphere_path):
    field = geodesic_sine_field(sphere_path, oscillations=2.0)
    vertices = field.mesh.vertices
    assert field.source == int(np.argmax(vertices[:, 1])) and field.noise_sd == 0.0
    d = geodesic(vertices, field.mesh.faces, cols=[field.source]).values[:, 0]
    np.testing.assert_allclose(field.f, np.sin(2 * np.pi * 2.0 * d / d.max()))
    np.testing.assert_array_equal(field.y, field.f)
    assert field.f[field.source] == 0.0
    other = geodesic_sine_field(sphere_path, source=5)
    assert other.source == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"oscillations": 0.0}, "`oscillations` must be > 0"),
        ({"axis": 3}, "`axis` must be 0, 1 or 2"),
        ({"source": 10_000}, r"`source` must be in \[0, 642\)"),
    ],
)
def test_geodesic_sine_field_validates(sphere_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        geodesic_sine_field(sphere_path, **kwargs)


def test_geodesic_sines_field_sums_separated_sources(sphere_path):
    omega = (1.0, 1.5, 2.5)
    field = geodesic_sines_field(sphere_path, oscillations=omega)
    vertices, faces = field.mesh.vertices, field.mesh.faces
    assert len(set(field.sources)) == 3 and field.sources[0] == int(np.argmax(vertices[:, 1]))
    D = geodesic(vertices, faces, cols=list(field.sources)).values
    # farthest-point sampling: the second source is the antipode of the first on a sphere
    assert D[field.sources[1], 0] == D[:, 0].max()
    expected = sum(np.sin(2 * np.pi * w * D[:, k] / D[:, k].max()) for k, w in enumerate(omega))
    np.testing.assert_allclose(field.f, expected / np.sqrt(3))
    np.testing.assert_array_equal(field.y, field.f)
    single = geodesic_sines_field(sphere_path, oscillations=[2.0])
    np.testing.assert_allclose(single.f, geodesic_sine_field(sphere_path, oscillations=2.0).f)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"oscillations": []}, "`oscillations` must be a non-empty sequence"),
        ({"oscillations": [1.0, -1.0]}, "`oscillations` must be a non-empty sequence"),
        ({"axis": -1}, "`axis` must be 0, 1 or 2"),
    ],
)
def test_geodesic_sines_field_validates(sphere_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        geodesic_sines_field(sphere_path, **kwargs)


def test_matern_field_validates(sphere_path):
    with pytest.raises(ValueError, match="`sd` must be > 0"):
        matern_field(sphere_path, sd=0.0)
    with pytest.raises(ValueError, match="`noise_sd` must be >= 0"):
        matern_field(sphere_path, noise_sd=-1.0)


def test_evolving_sequences_follow_their_tree():
    from pymc_sle.datasets import evolving_sequences
    from pymc_sle.distances import edit_distance

    data = evolving_sequences(n=60, length=20, mutation_rate=2.0, noise_sd=0.2, seed=4)
    again = evolving_sequences(n=60, length=20, mutation_rate=2.0, noise_sd=0.2, seed=4)
    assert data.sequences == again.sequences and np.array_equal(data.y, again.y)
    assert data.parent[0] == -1 and (data.parent[1:] < np.arange(1, 60)).all()
    assert len(data.sequences[0]) == 20 and set("".join(data.sequences)) <= set("ACGT")
    np.testing.assert_allclose([data.f.mean(), data.f.std()], [0.0, 1.0], atol=1e-12)
    for child in range(1, 60):  # each mutation moves the string by at most one edit
        parent = data.parent[child]
        distance = edit_distance(data.sequences[child], data.sequences[parent])
        assert distance <= data.mutations[child]
        if data.mutations[child] == 0:  # no change on the edge: same string, same trait
            assert data.sequences[child] == data.sequences[parent]
            assert data.f[child] == data.f[parent]
    residual = data.y - data.f
    assert 0.1 < residual.std() < 0.3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 1}, "`n` must be an integer >= 2, but got 1"),
        ({"length": 0}, "`length` must be an integer >= 1, but got 0"),
        ({"mutation_rate": 0.0}, "`mutation_rate` must be finite and > 0, but got 0.0"),
        ({"noise_sd": float("nan")}, "`noise_sd` must be finite and > 0, but got nan"),
    ],
)
def test_evolving_sequences_validates(kwargs, message):
    from pymc_sle.datasets import evolving_sequences

    with pytest.raises(ValueError, match=re.escape(message)):
        evolving_sequences(**kwargs)
