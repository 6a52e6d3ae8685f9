import numpy as np
import ot
import pytest

from pymc_sle.distances import MetricError, wasserstein


def _histograms(rng, n, bins):
    weights = rng.gamma(1.0, size=(n, bins))
    weights[:, rng.integers(0, bins, size=3)] = 0.0  # some empty bins, dropped before solving
    return weights


def test_one_dimensional_histograms_match_pot_closed_form(rng):
    hists = _histograms(rng, 5, 30)
    D = wasserstein(hists, n_jobs=1, progress=False).values
    x = np.arange(30, dtype=float)
    for i in range(5):
        for j in range(5):
            a, b = hists[i] / hists[i].sum(), hists[j] / hists[j].sum()
            expected = np.sqrt(ot.wasserstein_1d(x, x, a, b, p=2))
            assert D[i, j] == pytest.approx(expected, abs=1e-10)


def test_translated_point_clouds_are_the_shift_apart(rng):
    cloud = rng.normal(size=(12, 2))
    weights = rng.uniform(0.5, 1.5, size=12)
    shift = np.array([3.0, -4.0])
    D = wasserstein([(cloud, weights), (cloud + shift, weights)], n_jobs=1, progress=False)
    assert D.values[0, 1] == pytest.approx(5.0, rel=1e-12)


@pytest.mark.parametrize("mu, sigma", [(4.0, 1.0), (0.0, 2.5), (-3.0, 0.5)])
def test_discretised_gaussians_match_the_closed_form(mu, sigma):
    x = np.linspace(-20, 20, 801)  # spacing 0.05: discretisation error well below 1e-2
    reference = np.exp(-0.5 * x**2)
    other = np.exp(-0.5 * ((x - mu) / sigma) ** 2)
    clouds = [(x, reference), (x, other)]
    value = wasserstein(clouds, n_jobs=1, progress=False).values[0, 1]
    assert value == pytest.approx(np.hypot(mu, sigma - 1.0), abs=1e-2)


def test_images_equal_their_point_clouds_and_respect_spacing(rng):
    images = rng.gamma(1.0, size=(3, 5, 4))
    images[0, 1:3, :] = 0.0
    coords = np.indices((5, 4)).reshape(2, -1).T.astype(float)
    clouds = [(coords, image.ravel()) for image in images]
    from_images = wasserstein(images, spacing=0.5, n_jobs=1, progress=False).values
    from_clouds = wasserstein(clouds, n_jobs=1, progress=False).values
    np.testing.assert_allclose(from_images, 0.5 * from_clouds, rtol=1e-10)


def test_squared_flag_and_rows_cols_block(rng):
    images = rng.gamma(1.0, size=(6, 4, 4))
    full = wasserstein(images, n_jobs=2, progress=False).values
    block = wasserstein(images, rows=[5, 1], cols=[0, 3, 5], squared=True, n_jobs=1, progress=False)
    np.testing.assert_allclose(block.values, full[np.ix_([5, 1], [0, 3, 5])] ** 2, rtol=1e-10)
    assert "squared=True" in block.metadata["metric"]


def test_non_converged_solve_raises_naming_the_pair(rng):
    images = rng.gamma(2.0, size=(2, 8, 8))
    with pytest.raises(MetricError, match=r"items \(0, 1\).*did not converge within 20 iterations"):
        wasserstein(images, num_iter_max=2, n_jobs=1, progress=False)


def test_rejects_negative_weights(rng):
    images = rng.uniform(size=(3, 4, 4))
    images[2, 0, 0] = -0.1
    with pytest.raises(ValueError, match=r"`measures\[2\]` has negative weights \(smallest -0.1\)"):
        wasserstein(images)


def test_rejects_non_finite_weights():
    with pytest.raises(ValueError, match=r"`measures\[1\]` has non-finite weights"):
        wasserstein([(np.zeros((2, 1)), np.ones(2)), (np.zeros((2, 1)), np.array([1.0, np.inf]))])


def test_rejects_zero_total_mass(rng):
    images = rng.uniform(size=(2, 3, 3))
    images[0] = 0.0
    with pytest.raises(ValueError, match=r"`measures\[0\]` has zero total mass"):
        wasserstein(images)


def test_rejects_mismatched_grids():
    with pytest.raises(
        ValueError, match=r"images must share one grid, but have shapes \[\(3, 3\), \(4, 4\)\]"
    ):
        wasserstein([np.ones((3, 3)), np.ones((4, 4))])


def test_rejects_point_clouds_of_different_dimension():
    with pytest.raises(ValueError, match=r"must share a dimension, but have \[2, 3\]"):
        wasserstein([(np.zeros((2, 2)), np.ones(2)), (np.zeros((2, 3)), np.ones(2))])


def test_rejects_mismatched_weights():
    with pytest.raises(ValueError, match=r"must pair positions \(k, d\) with weights \(k,\)"):
        wasserstein([(np.zeros((2, 2)), np.ones(3))])


def test_rejects_non_positive_spacing():
    with pytest.raises(ValueError, match="`spacing` must be > 0, but got 0"):
        wasserstein(np.ones((2, 2, 2)), spacing=0)


def test_to_gives_the_new_images_block_without_the_rest(rng):
    images = rng.uniform(size=(6, 4, 4))
    whole = wasserstein(images, rows=[4, 5], cols=[0, 2], n_jobs=1, progress=False)
    new = wasserstein(images[4:], to=images[:3], cols=[0, 2], progress=False)
    np.testing.assert_allclose(new.values, whole.values, rtol=1e-12)
    clouds = [(rng.normal(size=(5, 2)), np.ones(5)) for _ in range(3)]
    new = wasserstein(clouds[:1], to=clouds[1:], n_jobs=1, progress=False)
    np.testing.assert_allclose(
        new.values, wasserstein(clouds, rows=[0], cols=[1, 2], n_jobs=1, progress=False).values
    )


def test_to_must_share_the_grid_and_is_named_in_errors(rng):
    images = rng.uniform(size=(2, 4, 4))
    with pytest.raises(ValueError, match=r"`to` must be on the grid of `measures` \(4, 4\)"):
        wasserstein(images, to=rng.uniform(size=(2, 5, 5)), progress=False)
    with pytest.raises(ValueError, match=r"`to\[1\]` has negative weights"):
        wasserstein(images, to=np.stack([images[0], -images[1]]), progress=False)
    with pytest.raises(ValueError, match="`to` point clouds must have the dimension"):
        wasserstein([(np.zeros((2, 2)), np.ones(2))], to=[(np.zeros((2, 3)), np.ones(2))])


# -- the certified lower bound and the cutoff -------------------------------------------------


def _bound(measures, squared=False):
    from pymc_sle.distances._transport import ExactW2, as_measures

    prepared = as_measures(measures)
    metric = ExactW2(prepared.grid_shape, prepared.spacing, squared, 10_000_000)
    return metric.lower_bound(prepared.items, prepared.items)


@pytest.mark.parametrize("squared", [False, True])
@pytest.mark.parametrize("layout", ["images", "clouds"])
def test_lower_bound_never_exceeds_exact_w2(rng, layout, squared):
    if layout == "images":
        measures = rng.gamma(0.3, size=(8, 7, 6))
        measures[:4] += np.linspace(0.0, 2.0, 6)  # two families, some pairs far apart
    else:
        measures = [(rng.normal(size=(9, 3)) * (1 + k), rng.uniform(0.2, 1.0, 9)) for k in range(6)]
    exact = wasserstein(measures, squared=squared, n_jobs=1, progress=False).values
    bound = _bound(measures, squared)
    assert (bound <= exact).all()
    off = ~np.eye(len(exact), dtype=bool)
    assert (bound[off] > 0.3 * exact[off]).all()  # informative, not merely valid


def test_lower_bound_is_exact_for_a_translation_along_an_axis(rng):
    cloud, weights = rng.normal(size=(10, 2)), rng.uniform(0.5, 1.5, size=10)
    measures = [(cloud, weights), (cloud + np.array([2.5, 0.0]), weights)]
    assert _bound(measures)[0, 1] == pytest.approx(2.5, rel=1e-8)
    assert _bound(measures, squared=True)[0, 1] == pytest.approx(6.25, rel=1e-8)


@pytest.mark.parametrize("squared", [False, True])
def test_cutoff_keeps_exactly_the_pairs_below_it(rng, squared):
    images = rng.gamma(0.3, size=(10, 8, 8))
    images[:5] += np.linspace(0.0, 3.0, 8)[None, :, None]
    dense = wasserstein(images, squared=squared, n_jobs=1, progress=False).values
    cutoff = float(np.quantile(dense[np.triu_indices(10, 1)], 0.4))
    sparse = wasserstein(images, squared=squared, n_jobs=1, progress=False, cutoff=cutoff)
    kept = sparse.to_dense()
    below = dense < cutoff
    assert sparse.cutoff == cutoff
    np.testing.assert_allclose(kept[below], dense[below], rtol=1e-12, atol=1e-12)
    assert np.isinf(kept[~below]).all()
    assert (_bound(images, squared) >= cutoff).any()  # some pairs were never solved


def test_cutoff_with_to_keeps_the_block_below_it(rng):
    images = rng.gamma(0.5, size=(6, 5, 5))
    new = rng.gamma(0.5, size=(3, 5, 5))
    dense = wasserstein(new, to=images, n_jobs=1, progress=False).values
    cutoff = float(np.median(dense))
    sparse = wasserstein(new, to=images, n_jobs=1, progress=False, cutoff=cutoff).to_dense()
    below = dense < cutoff
    np.testing.assert_allclose(sparse[below], dense[below], rtol=1e-12)
    assert np.isinf(sparse[~below]).all()
