import numpy as np
import ot
import pytest

from pymc_sle.distances import random_projections, sliced_wasserstein


@pytest.fixture
def images(rng):
    base = rng.gamma(1.0, size=(6, 10, 8))
    base[:, :3, :] *= 5.0  # some structure, so that distances differ
    base[2, 4:, :] = 0.0  # and an image with empty pixels
    return base


def _pot(images, i, j, projections):
    coords = np.indices(images.shape[1:]).reshape(2, -1).T.astype(float)
    a = images[i].ravel() / images[i].sum()
    b = images[j].ravel() / images[j].sum()
    return ot.sliced_wasserstein_distance(coords, coords, a, b, projections=projections)


def test_pairwise_method_equals_pot_with_the_same_projections(images):
    D = sliced_wasserstein(
        images, n_projections=20, seed=3, method="pairwise", n_jobs=1, progress=False
    )
    projections = random_projections(2, 20, seed=3)
    for i, j in [(0, 1), (2, 5), (4, 3)]:
        assert D.values[i, j] == pytest.approx(_pot(images, i, j, projections), rel=1e-12)


@pytest.mark.parametrize("squared", [False, True])
def test_exact_method_equals_pot_for_every_pair(images, squared):
    D = sliced_wasserstein(images, n_projections=20, seed=3, squared=squared, progress=False)
    projections = random_projections(2, 20, seed=3)
    for i in range(6):
        for j in range(6):
            expected = _pot(images, i, j, projections) ** (2 if squared else 1)
            assert D.values[i, j] == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_exact_method_rows_cols_equal_the_symmetric_computation(images):
    full = sliced_wasserstein(images, progress=False).values
    block = sliced_wasserstein(images, rows=[4, 1], cols=[1, 5, 0], progress=False).values
    np.testing.assert_allclose(block, full[np.ix_([4, 1], [1, 5, 0])], rtol=1e-12)


def test_quantiles_method_is_a_converging_lower_bound(images):
    exact = sliced_wasserstein(
        images, method="pairwise", n_jobs=1, progress=False, squared=True
    ).values
    off = ~np.eye(6, dtype=bool)
    errors = []
    for n_quantiles in (64, 512, 4096):
        approx = sliced_wasserstein(
            images, method="quantiles", n_quantiles=n_quantiles, progress=False, squared=True
        ).values
        assert np.all(approx[off] <= exact[off] * (1 + 1e-12))  # within-bin variance is dropped
        errors.append(np.max((exact[off] - approx[off]) / exact[off]))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 2e-3  # measured 1.4e-3 for these 80-pixel images with 4096 bins


def test_quantiles_method_is_exact_for_point_masses():
    images = np.zeros((3, 9, 9))
    images[0, 1, 1] = images[1, 7, 2] = images[2, 4, 8] = 1.0
    fast = sliced_wasserstein(images, method="quantiles", progress=False, n_quantiles=7).values
    exact = sliced_wasserstein(images, method="pairwise", n_jobs=1, progress=False).values
    np.testing.assert_allclose(fast, exact, rtol=1e-12)


def test_rows_cols_block_and_spacing(images):
    full = sliced_wasserstein(images, progress=False).values
    block = sliced_wasserstein(images, rows=[5, 0], cols=[0, 2, 2], spacing=2.0, progress=False)
    np.testing.assert_allclose(block.values, 2.0 * full[np.ix_([5, 0], [0, 2, 2])], rtol=1e-10)
    assert block.values[1, 0] == 0.0


def test_quantile_distance_is_hilbertian(images):
    # Quantile functions embed images in L2: exp(-SW^2 / l^2) is PSD for every l.
    D = sliced_wasserstein(images, method="quantiles", progress=False).values
    for length in (0.3, 1.0, 3.0):
        assert np.linalg.eigvalsh(np.exp(-((D / length) ** 2))).min() > -1e-12


def test_point_clouds_use_pot_per_pair(rng):
    clouds = [(rng.normal(size=(7, 3)), rng.uniform(size=7)) for _ in range(3)]
    D = sliced_wasserstein(clouds, n_projections=15, n_jobs=1, progress=False)
    projections = random_projections(3, 15, seed=0)
    a, b = clouds[0], clouds[2]
    expected = ot.sliced_wasserstein_distance(
        a[0], b[0], a[1] / a[1].sum(), b[1] / b[1].sum(), projections=projections
    )
    assert D.values[0, 2] == pytest.approx(expected, rel=1e-12)
    assert "method=pairwise" in D.metadata["metric"]


def test_rejects_unknown_method(images):
    with pytest.raises(
        ValueError,
        match=r"`method` must be one of \('auto', 'exact', .*\), but got 'fast'",
    ):
        sliced_wasserstein(images, method="fast")


def test_rejects_quantiles_for_point_clouds():
    with pytest.raises(ValueError, match="method='exact' needs images on a shared grid"):
        sliced_wasserstein([(np.zeros((2, 2)), np.ones(2))], method="exact")


def test_rejects_zero_quantiles(images):
    with pytest.raises(ValueError, match="`n_quantiles` must be a positive integer, but got 0"):
        sliced_wasserstein(images, n_quantiles=0)


def test_rejects_zero_projections(images):
    with pytest.raises(ValueError, match="`n_projections` must be a positive integer, but got 0"):
        sliced_wasserstein(images, n_projections=0)


@pytest.mark.parametrize("method", ["exact", "quantiles", "pairwise"])
def test_to_gives_the_new_images_block_without_the_rest(images, method):
    whole = sliced_wasserstein(
        images, rows=[3, 4], cols=[0, 2], method=method, n_jobs=1, progress=False
    )
    new = sliced_wasserstein(images[3:5], to=images[:3], cols=[0, 2], method=method, progress=False)
    np.testing.assert_allclose(new.values, whole.values, rtol=1e-12)
    assert new.metadata["cols"] == [0, 2] and new.metadata["to"] == 3
