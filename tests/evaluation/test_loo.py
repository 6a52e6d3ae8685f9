"""``exact_loo``: the closed-form leave-one-out densities against conditioning by hand, the PIT of
a calibrated and of an over-confident model, ``arviz.loo`` on the result, and its validators."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.gp.util import JITTER_DEFAULT
from scipy import stats

import pymc_sle as sle
from pymc_sle import ExactLOO, exact_loo

N = 30


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 10, n))[:, None]
    return X, np.sin(X[:, 0]) + 0.3 * rng.standard_normal(n)


def _matern_model(X, y, gp_class=sle.gp.Marginal, mean=False):
    with pm.Model() as model:
        ls = pm.LogNormal("ls", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        mean_func = pm.gp.mean.Constant(pm.Normal("c", 0.0, 1.0)) if mean else pm.gp.mean.Zero()
        gp = gp_class(mean_func=mean_func, cov_func=pm.gp.cov.Matern32(1, ls=ls))
        gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
    return model, gp


def _posterior(rng, chains=2, draws=3, **fixed):
    """An ``InferenceData`` with draws of ``ls``, ``sigma`` and ``c`` (or ``fixed`` values)."""
    shape = (chains, draws)
    values = {
        "ls": rng.uniform(0.5, 2.0, shape),
        "sigma": rng.uniform(0.2, 0.5, shape),
        "c": rng.normal(0.0, 0.3, shape),
    }
    values.update({k: np.full(shape, v) for k, v in fixed.items()})
    return az.from_dict(posterior=values)


def _by_conditioning(K, y, mean, i):
    """``log p(y_i | y_-i)`` of ``N(mean, K)`` by conditioning on the others."""
    keep = np.delete(np.arange(y.size), i)
    solve = np.linalg.solve(K[np.ix_(keep, keep)], np.column_stack([y[keep] - mean, K[keep, i]]))
    mu = mean + K[i, keep] @ solve[:, 0]
    var = K[i, i] - K[i, keep] @ solve[:, 1]
    return stats.norm.logpdf(y[i], mu, np.sqrt(var))


@pytest.mark.parametrize("gp_class", [pm.gp.Marginal, sle.gp.Marginal])
@pytest.mark.parametrize("mean", [False, True])
def test_loo_densities_equal_conditioning_on_the_other_points(gp_class, mean):
    X, y = _data()
    model, gp = _matern_model(X, y, gp_class, mean)
    idata = _posterior(np.random.default_rng(1))
    with model:  # a prediction added after sampling is not in the posterior, nor needed
        gp.conditional("y_new", X[:3] + 0.5, pred_noise=True)
    loo = exact_loo(idata, gp, var_name="y", model=model)
    assert loo.log_likelihood.dims == ("chain", "draw", "y_dim_0")
    assert idata.log_likelihood["y"].shape == (2, 3, N)
    post = idata.posterior
    for chain, draw in [(0, 0), (1, 2)]:
        ls, sigma = float(post.ls[chain, draw]), float(post.sigma[chain, draw])
        K = pm.gp.cov.Matern32(1, ls=ls)(X).eval()
        K += (sigma**2 + JITTER_DEFAULT) * np.eye(N)
        c = float(post.c[chain, draw]) if mean else 0.0
        for i in (0, 11, N - 1):
            expected = _by_conditioning(K, y, c, i)
            np.testing.assert_allclose(loo.log_likelihood[chain, draw, i], expected, rtol=1e-9)


def test_loo_of_an_sle_gp_on_distances_equals_conditioning():
    """An SLE covariance on a distance matrix (inputs are row indices): the LOO predictive keeps
    every landmark, conditioning on the other observations of the same joint normal."""
    rng = np.random.default_rng(4)
    points = rng.uniform(0, 1, (25, 2))
    D = sle.DistanceMatrix(np.linalg.norm(points[:, None] - points[None], axis=-1))
    y = np.cos(4 * points[:, 0]) + 0.1 * rng.standard_normal(25)
    X = np.arange(25)[:, None]
    with pm.Model() as model:
        radius = pm.LogNormal("radius", np.log(0.6), 0.2)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        gp = sle.gp.Marginal(cov_func=sle.SLE(D, radius=radius, ls=ls, inner="matern52"))
        gp.marginal_likelihood("obs", X=X, y=y, sigma=0.2)
    idata = az.from_dict(posterior={"radius": [[0.5, 0.7]], "ls": [[0.8, 1.3]]})
    loo = exact_loo(idata, gp, var_name="obs", model=model)
    K = sle.SLE(D, radius=0.7, ls=1.3, inner="matern52")(X).eval()
    K += (0.2**2 + JITTER_DEFAULT) * np.eye(25)
    for i in (0, 12, 24):
        np.testing.assert_allclose(loo.log_likelihood[0, 1, i], _by_conditioning(K, y, 0.0, i))


def _prior_draw(ls, sigma, scale, n, seed):
    X = np.linspace(0, 30, n)[:, None]
    K = scale**2 * pm.gp.cov.Matern32(1, ls=ls)(X).eval() + sigma**2 * np.eye(n)
    y = np.random.default_rng(seed).multivariate_normal(np.zeros(n), K)
    return X, y


def test_loo_pit_of_the_generating_model_is_calibrated_and_of_a_narrow_one_is_not():
    """y drawn from the model at known hyperparameters: at them, the 95 % LOO intervals cover
    about 95 % (n = 400: binomial sd 1.1 %); with the signal's scale shrunk 4 times and the noise
    halved, the intervals are too narrow and the coverage drops far below."""
    n = 400
    X, y = _prior_draw(ls=1.5, sigma=0.3, scale=1.0, n=n, seed=5)
    for scale, sigma, low, high in [(1.0, 0.3, 0.92, 0.98), (0.25, 0.15, 0.0, 0.8)]:
        with pm.Model() as model:
            ls = pm.LogNormal("ls", 0.0, 1.0)
            noise = pm.HalfNormal("sigma", 1.0)
            gp = pm.gp.Marginal(cov_func=scale**2 * pm.gp.cov.Matern32(1, ls=ls))
            gp.marginal_likelihood("y", X=X, y=y, sigma=noise)
        idata = _posterior(np.random.default_rng(0), chains=1, draws=2, ls=1.5, sigma=sigma)
        loo = exact_loo(idata, gp, var_name="y", model=model)
        assert low <= loo.coverage(0.95) <= high
        assert np.all((loo.pit >= 0.0) & (loo.pit <= 1.0))
    # One hyperparameter value: equal weights, and the PIT is the normal CDF of the LOO z.
    assert loo.pareto_k.shape == (n,)


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_arviz_loo_reads_the_pointwise_densities():
    """With every draw equal, the importance weights are equal and ``elpd_loo`` is the sum of the
    LOO log densities (equal weights have no Pareto tail to fit: ArviZ warns about its k)."""
    X, y = _data(seed=2)
    model, gp = _matern_model(X, y)
    idata = _posterior(np.random.default_rng(3), chains=2, draws=20, ls=1.2, sigma=0.3, c=0.0)
    loo = exact_loo(idata, gp, var_name="y", model=model)
    result = az.loo(idata)
    np.testing.assert_allclose(result["elpd_loo"], float(loo.log_likelihood[0, 0].sum()))
    assert result["n_data_points"] == N


def test_pointwise_elpd_and_pareto_k_equal_arviz_loo():
    """Autocorrelated draws (each value kept for 5 draws, so the relative efficiency is about
    0.2, which changes the Pareto tail's length): ``elpd_loo`` and ``pareto_k`` are
    ``arviz.loo``'s pointwise ``loo_i`` and ``pareto_k``, the efficiency estimated from the chains
    as ArviZ does (the posterior holds only the GP's variables, so both read the same ones)."""
    X, y = _data(seed=6)
    model, gp = _matern_model(X, y, mean=True)
    thin = _posterior(np.random.default_rng(7), chains=3, draws=20)
    idata = az.from_dict(
        posterior={k: np.repeat(v.values, 5, axis=1) for k, v in thin.posterior.items()}
    )
    loo = exact_loo(idata, gp, var_name="y", model=model)
    result = az.loo(idata, pointwise=True)
    assert 0.1 < loo.reff < 0.4
    np.testing.assert_allclose(loo.elpd_loo, result.loo_i.values, rtol=1e-10)
    np.testing.assert_allclose(loo.pareto_k, result.pareto_k.values, rtol=1e-10)
    _, k_if_independent = az.psislw(-loo.log_likelihood.values.reshape(300, N).T, reff=1.0)
    assert not np.allclose(loo.pareto_k, k_if_independent)


def test_coverage_counts_pit_values_inside_the_central_interval():
    loo = ExactLOO(None, np.array([0.01, 0.03, 0.5, 0.96, 0.99]), np.zeros(5), np.zeros(5), 1.0)
    assert loo.coverage(0.95) == 0.6
    assert loo.coverage(0.9) == 0.2
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=f"`level` must be in \\(0, 1\\), got {level}"):
            loo.coverage(level)


def test_exact_loo_validates_its_arguments():
    X, y = _data()
    model, gp = _matern_model(X, y)
    idata = _posterior(np.random.default_rng(1))
    with pytest.raises(TypeError, match=r"`idata` must be an arviz\.InferenceData"):
        exact_loo({"ls": 1.0}, gp, var_name="y", model=model)
    with pytest.raises(ValueError, match=r"`var_name` must name an observed variable .*'z'"):
        exact_loo(idata, gp, var_name="z", model=model)
    with pytest.raises(ValueError, match=r"`gp` must be a pm\.gp\.Marginal whose marginal_lik"):
        exact_loo(idata, sle.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=1.0)), var_name="y",
                  model=model)  # fmt: skip
    with pytest.raises(TypeError, match=r"`gp` must be a pm\.gp\.Marginal, got Latent"):
        exact_loo(idata, pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls=1.0)), var_name="y",
                  model=model)  # fmt: skip
    missing = az.from_dict(posterior={"ls": np.ones((1, 2))})
    with pytest.raises(ValueError, match=r"`idata.posterior` must hold .*\['sigma'\]"):
        exact_loo(missing, gp, var_name="y", model=model)
    exact_loo(idata, gp, var_name="y", model=model)
    with pytest.raises(ValueError, match="already holds 'y'; pass overwrite=True"):
        exact_loo(idata, gp, var_name="y", model=model)
    exact_loo(idata, gp, var_name="y", model=model, overwrite=True)


@pytest.mark.parametrize("own_landmark", ["keep", "drop"])
def test_exact_loo_needs_two_draws_and_estimates_no_efficiency_from_short_chains(own_landmark):
    """One draw is a ValueError naming the count (ArviZ's smoothing fails on it); two are the
    fewest accepted. Fewer than 4 draws per chain give ArviZ no ESS: the efficiency is then 1,
    as for one chain, not NaN."""
    X, y = _data()
    model, gp = _matern_model(X, y)
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match=r"at least 2 draws \(chains x draws\).* holds 1"):
        exact_loo(_posterior(rng, chains=1, draws=1), gp, var_name="y", model=model,
                  own_landmark=own_landmark)  # fmt: skip
    for chains, draws in ((1, 2), (2, 1), (3, 3)):
        loo = exact_loo(_posterior(rng, chains=chains, draws=draws), gp, var_name="y",
                        model=model, own_landmark=own_landmark)  # fmt: skip
        assert loo.reff == 1.0
        assert np.all(np.isfinite(loo.elpd_loo)) and np.all((loo.pit >= 0) & (loo.pit <= 1))


def test_exact_loo_needs_the_gps_own_one_output_observations():
    X, y = _data()
    with pm.Model() as model:
        gp = sle.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=1.0))
        gp.marginal_likelihood("y", X=X, y=y, sigma=0.3)
        pm.Normal("other", 0.0, 1.0, observed=np.zeros(N))
        two = sle.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=1.0))
        two.marginal_likelihood("y2", X=X, y=np.stack([y, y]), sigma=0.3)
    idata = az.from_dict(posterior={"dummy": np.zeros((1, 2))})
    with pytest.raises(ValueError, match="'other' must be the variable observed by `gp`"):
        exact_loo(idata, gp, var_name="other", model=model)
    with pytest.raises(ValueError, match=r"'y2' must hold one output .* shape \(2, 30\)"):
        exact_loo(idata, two, var_name="y2", model=model)


def _sle_model(points, y, n_train, landmarks=None, embedding="auto", dtype="float64"):
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    D = sle.DistanceMatrix(distances, dtype=dtype)
    with pm.Model() as model:
        radius = pm.LogNormal("radius", np.log(0.6), 0.2)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        cov = 1.5 * sle.SLE(D, radius=radius, ls=ls, landmarks=landmarks, embedding=embedding)
        gp = sle.gp.Marginal(cov_func=cov + pm.gp.cov.WhiteNoise(0.0))
        gp.marginal_likelihood("obs", X=np.arange(n_train)[:, None], y=y, sigma=0.2)
    return model, gp, D


def _sle_points(seed=8, n_points=30, n_train=24):
    rng = np.random.default_rng(seed)
    points = rng.uniform(0, 1, (n_points, 2))
    return points, np.cos(4 * points[:n_train, 0]) + 0.1 * rng.standard_normal(n_train)


def _sle_without(D, landmarks, radius, ls, n_train):
    """The covariance of ``_sle_model`` at one draw with only ``landmarks``, by construction."""
    X = np.arange(n_train)[:, None]
    K = 1.5 * sle.SLE(D, radius=radius, ls=ls, landmarks=landmarks)(X).eval()
    return K + (0.2**2 + JITTER_DEFAULT) * np.eye(n_train)


@pytest.mark.parametrize(
    ("embedding", "landmarks", "dtype"),
    [("auto", None, "float64"), ("dense", None, "float64"),
     ("auto", np.arange(0, 30, 2), "float64"), ("auto", None, "float32")],
    ids=["auto", "dense", "every other point a landmark", "float32 distances"],
)  # fmt: skip
def test_dropping_the_own_landmark_predicts_with_the_sle_built_without_it(
    embedding, landmarks, dtype
):
    """One hyperparameter value (equal weights): each held-out training point's LOO density is
    the conditional of the SLE whose landmarks are the same but for its own, as if it were new
    (points that are not landmarks keep the fitted covariance)."""
    points, y = _sle_points()
    model, gp, D = _sle_model(points, y, 24, landmarks=landmarks, embedding=embedding,
                              dtype=dtype)  # fmt: skip
    idata = az.from_dict(posterior={"radius": np.full((1, 2), 0.7), "ls": np.full((1, 2), 1.3)})
    loo = exact_loo(idata, gp, var_name="obs", model=model, own_landmark="drop")
    assert "log_likelihood" not in idata.groups()  # not ArviZ's importance ratios: not stored
    columns = np.arange(30) if landmarks is None else landmarks
    rtol = 1e-9 if dtype == "float64" else 1e-5  # the reference reads the float32 distances too
    for i in (0, 9, 14, 23):
        K = _sle_without(D, columns[columns != i], 0.7, 1.3, 24)
        expected = _by_conditioning(K, y, 0.0, i)
        np.testing.assert_allclose(loo.log_likelihood[0, 1, i], expected, rtol=rtol)
        np.testing.assert_allclose(loo.elpd_loo[i], expected, rtol=rtol)
    kept = exact_loo(idata, gp, var_name="obs", model=model)
    own = np.isin(np.arange(24), columns)
    assert not np.allclose(kept.log_likelihood.values[..., own], loo.log_likelihood[..., own])
    np.testing.assert_allclose(kept.log_likelihood[..., ~own], loo.log_likelihood[..., ~own])


def test_dropping_the_own_landmark_of_a_block_of_distances_to_the_landmarks():
    """A rectangular matrix (every point against a subset of the training points, in another
    order): a training point's own landmark is the column at distance 0 from it."""
    points, y = _sle_points(seed=16)
    columns = np.array([20, 3, 11, 7, 0, 16, 23, 9])
    full = np.linalg.norm(points[:, None] - points[None], axis=-1)
    block = sle.DistanceMatrix(full[:, columns])
    with pm.Model() as model:
        cov = 1.5 * sle.SLE(block, radius=pm.LogNormal("radius", 0.0, 0.2), ls=1.3)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("obs", X=np.arange(24)[:, None], y=y, sigma=0.2)
    idata = az.from_dict(posterior={"radius": np.full((1, 2), 0.7)})
    loo = exact_loo(idata, gp, var_name="obs", model=model, own_landmark="drop")
    D = sle.DistanceMatrix(full)
    for i in (3, 9, 20, 5):
        K = _sle_without(D, columns[columns != i], 0.7, 1.3, 24)
        np.testing.assert_allclose(loo.log_likelihood[0, 0, i], _by_conditioning(K, y, 0.0, i))


def test_dropping_the_own_landmark_keeps_a_duplicate_inputs_landmark():
    """Training points 3 and 5 share an input: without point 3 the model still has landmark 5,
    at distance 0 from point 3, as a new point at that input would; only column 3 goes."""
    points, y = _sle_points(seed=15)
    points[5] = points[3]
    model, gp, D = _sle_model(points, y, 24)
    idata = az.from_dict(posterior={"radius": np.full((1, 2), 0.7), "ls": np.full((1, 2), 1.3)})
    loo = exact_loo(idata, gp, var_name="obs", model=model, own_landmark="drop")
    for i in (3, 5):
        K = _sle_without(D, np.delete(np.arange(30), i), 0.7, 1.3, 24)
        expected = _by_conditioning(K, y, 0.0, i)
        np.testing.assert_allclose(loo.log_likelihood[0, 0, i], expected, rtol=1e-9)


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_dropping_the_own_landmark_reweights_the_draws_to_the_model_without_the_point():
    """Two draws (too few to smooth a Pareto tail: the weights are the raw ratios): the LOO
    density and PIT average the conditionals of the SLE without the point, weighted by that
    model's likelihood of the other observations over the fitted model's of all of them."""
    points, y = _sle_points(seed=9)
    model, gp, D = _sle_model(points, y, 24)
    draws = {"radius": [[0.5, 0.8]], "ls": [[0.9, 1.6]]}
    loo = exact_loo(az.from_dict(posterior=draws), gp, var_name="obs", model=model,
                    own_landmark="drop")  # fmt: skip
    for i in (2, 17):
        keep = np.delete(np.arange(24), i)
        log_w, log_p, cdf = [], [], []
        for radius, ls in zip(draws["radius"][0], draws["ls"][0], strict=True):
            full = _sle_without(D, np.arange(30), radius, ls, 24)
            dropped = _sle_without(D, np.delete(np.arange(30), i), radius, ls, 24)
            others = stats.multivariate_normal(np.zeros(23), dropped[np.ix_(keep, keep)])
            log_w.append(
                others.logpdf(y[keep]) - stats.multivariate_normal(np.zeros(24), full).logpdf(y)
            )
            log_p.append(_by_conditioning(dropped, y, 0.0, i))
            solve = np.linalg.solve(dropped[np.ix_(keep, keep)], dropped[keep, i])
            mu, var = solve @ y[keep], dropped[i, i] - dropped[i, keep] @ solve
            cdf.append(stats.norm.cdf(y[i], mu, np.sqrt(var)))
        w = np.exp(np.array(log_w) - np.logaddexp.reduce(log_w))
        np.testing.assert_allclose(loo.elpd_loo[i], np.log(w @ np.exp(log_p)), rtol=1e-8)
        np.testing.assert_allclose(loo.pit[i], w @ np.array(cdf), rtol=1e-8)
        np.testing.assert_allclose(loo.log_likelihood[0, :, i], log_p, rtol=1e-9)


@pytest.mark.parametrize("kernel", ["SLE, landmarks apart", "Matern"])
def test_dropping_changes_nothing_without_own_landmarks(kernel):
    """Landmarks apart from the training points, or no landmark kernel at all: no training point
    is its own landmark, so dropping is keeping."""
    if kernel == "Matern":
        X, y = _data(seed=10)
        model, gp = _matern_model(X, y)
        idata, name = _posterior(np.random.default_rng(11), draws=10), "y"
    else:
        points, y = _sle_points(seed=10)
        model, gp, _ = _sle_model(points, y, 24, landmarks=np.arange(24, 30))
        idata, name = _posterior_of_radius_and_ls(np.random.default_rng(11)), "obs"
    dropped = exact_loo(idata, gp, var_name=name, model=model, own_landmark="drop")
    kept = exact_loo(idata, gp, var_name=name, model=model)
    np.testing.assert_allclose(dropped.log_likelihood, kept.log_likelihood, rtol=1e-9)
    np.testing.assert_allclose(dropped.pit, kept.pit, rtol=1e-9)
    np.testing.assert_allclose(dropped.elpd_loo, kept.elpd_loo, rtol=1e-9)


def _posterior_of_radius_and_ls(rng, chains=2, draws=10):
    shape = (chains, draws)
    return az.from_dict(
        posterior={"radius": rng.uniform(0.4, 0.9, shape), "ls": rng.uniform(0.7, 1.6, shape)}
    )


def test_dropping_own_landmarks_needs_landmark_kernels_on_a_distance_matrix():
    """A bad ``own_landmark``, and an SLE on distance features (whose own columns are unknown),
    are errors."""
    X, y = _data(seed=12)
    model, gp = _matern_model(X, y)
    idata = _posterior(np.random.default_rng(13))
    with pytest.raises(ValueError, match="`own_landmark` must be 'keep' or 'drop', got 'remove'"):
        exact_loo(idata, gp, var_name="y", model=model, own_landmark="remove")
    points, y = _sle_points(seed=14)
    features = np.linalg.norm(points[:24, None] - points[None], axis=-1)
    with pm.Model() as features_model:
        cov = sle.SLE(input_dim=30, radius=0.6, ls=1.0)
        features_gp = sle.gp.Marginal(cov_func=cov)
        features_gp.marginal_likelihood("obs", X=features, y=y, sigma=0.2)
    model, gp, _ = _sle_model(points, y, 24)
    with pytest.raises(ValueError, match=r"not positive definite.*increase `jitter`"):
        exact_loo(_posterior_of_radius_and_ls(np.random.default_rng(17)), gp, var_name="obs",
                  model=model, jitter=-5.0, own_landmark="drop")  # fmt: skip
    with pytest.raises(ValueError, match="index mode"):
        exact_loo(az.from_dict(posterior={"x": [[0.0]]}), features_gp, var_name="obs",
                  model=features_model, own_landmark="drop")  # fmt: skip
