"""``own_landmark_predictive``: each new point predicted by the SLE with it among the landmarks
(against that SLE built by hand), the draws' weights, the predictive's summaries, and the
validators."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.gp.util import JITTER_DEFAULT
from scipy import stats

import pymc_sle as sle
from pymc_sle import OwnLandmarkPredictive, own_landmark_predictive
from pymc_sle.evaluation import _landmark_update
from pymc_sle.evaluation import _new_points as new_points

N_POINTS, N_TRAIN = 30, 24
NEW = np.arange(N_TRAIN, N_POINTS)


def _points(seed=8):
    rng = np.random.default_rng(seed)
    points = rng.uniform(0, 1, (N_POINTS, 2))
    y = np.cos(4 * points[:N_TRAIN, 0]) + 0.1 * rng.standard_normal(N_TRAIN)
    return sle.DistanceMatrix(np.linalg.norm(points[:, None] - points[None], axis=-1)), y


def _sle_model(D, y, embedding="auto", landmarks=None, white=0.0):
    train = np.arange(N_TRAIN)
    landmarks = train if landmarks is None else landmarks
    with pm.Model() as model:
        radius = pm.LogNormal("radius", np.log(0.6), 0.2)
        ls = pm.LogNormal("ls", 0.0, 0.5)
        cov = 1.5 * sle.SLE(D, landmarks=landmarks, radius=radius, ls=ls, embedding=embedding)
        if white:
            cov = cov + pm.gp.cov.WhiteNoise(white)
        gp = sle.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("obs", X=train[:, None], y=y, sigma=0.2)
    return model, gp


def _by_hand(D, y, landmarks, new, radius, ls, pred_noise=True, white=0.0):
    """``(mu, var, log N(y; C))`` of the point ``new`` under the SLE with ``landmarks`` (plus a
    white-noise term of sd ``white``, ``pm.gp.cov.WhiteNoise(white)``)."""
    X = np.r_[np.arange(N_TRAIN), new][:, None]
    K = 1.5 * sle.SLE(D, landmarks=landmarks, radius=radius, ls=ls)(X).eval()
    K += white**2 * np.eye(N_TRAIN + 1)
    C = K[:N_TRAIN, :N_TRAIN] + (0.2**2 + JITTER_DEFAULT) * np.eye(N_TRAIN)
    solve = np.linalg.solve(C, np.column_stack([y, K[:N_TRAIN, -1]]))
    var = K[-1, -1] - K[-1, :N_TRAIN] @ solve[:, 1] + (0.2**2 if pred_noise else 0.0)
    log_density = stats.multivariate_normal(np.zeros(N_TRAIN), C).logpdf(y)
    return K[-1, :N_TRAIN] @ solve[:, 0], var, log_density


def _one_value(radius=0.7, ls=1.3, draws=2):
    return az.from_dict(posterior={"radius": np.full((1, draws), radius),
                                   "ls": np.full((1, draws), ls)})  # fmt: skip


@pytest.mark.parametrize(
    ("embedding", "dtype", "pred_noise", "radius", "low_rank_share", "white"),
    [("auto", "float64", True, 0.7, 0.5, 0.0), ("dense", "float64", True, 0.7, 0.5, 0.0),
     ("auto", "float32", True, 0.7, 0.5, 0.0),
     ("auto", "float64", False, 0.7, 0.5, 0.0), ("auto", "float64", True, 0.3, 0.5, 0.0),
     ("auto", "float64", True, 0.7, 2.0, 0.0), ("auto", "float64", True, 0.7, 0.0, 0.0),
     ("auto", "float64", True, 0.3, 2.0, 0.3)],
    ids=["auto", "dense", "float32 distances", "latent", "small bumps",
         "every point low-rank", "every point refactorised", "a white-noise term"],
)  # fmt: skip
def test_each_new_point_is_predicted_by_the_sle_with_it_among_the_landmarks(
    embedding, dtype, pred_noise, radius, low_rank_share, white, monkeypatch
):
    """One hyperparameter value (equal weights): each new point's predictive is the conditional
    of the SLE whose landmarks are the training points and the new point itself, by the
    rank-2k update of the fitted factorisation and by a new one (``low_rank_share`` 2 and 0
    force each for every point; 0.5, the default, picks per point)."""
    monkeypatch.setattr(new_points, "_LOW_RANK_SHARE", low_rank_share)
    D, y = _points()
    D = sle.DistanceMatrix(D.values, dtype=dtype)
    model, gp = _sle_model(D, y, embedding, white=white)
    new = own_landmark_predictive(_one_value(radius=radius), gp, NEW[:, None], model=model,
                                  pred_noise=pred_noise)  # fmt: skip
    rtol = 1e-9 if dtype == "float64" else 1e-5
    for j, point in enumerate(NEW):
        mu, var, _ = _by_hand(D, y, np.r_[np.arange(N_TRAIN), point], point, radius, 1.3,
                              pred_noise, white)  # fmt: skip
        np.testing.assert_allclose(new.mean[j], mu, rtol=rtol, atol=1e-12)
        np.testing.assert_allclose(new.sd[j], np.sqrt(var), rtol=rtol)
        fitted_mu, fitted_var, _ = _by_hand(D, y, np.arange(N_TRAIN), point, radius, 1.3,
                                            pred_noise, white)  # fmt: skip
        assert abs(new.mean[j] - fitted_mu) + abs(new.sd[j] - np.sqrt(fitted_var)) > 1e-6
    np.testing.assert_array_equal(new.pareto_k, 0.0)  # one value: nothing to weigh


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
@pytest.mark.parametrize("low_rank_share", [2.0, 0.0], ids=["low-rank", "refactorised"])
def test_the_draws_are_weighted_to_the_model_with_the_new_landmark(low_rank_share, monkeypatch):
    """Two draws (too few to smooth a Pareto tail: the weights are the raw ratios): the density
    and CDF at a value average the new landmark model's conditionals, weighted by its
    likelihood of the training data over the fitted model's (the ratio by the determinant
    lemma and by a new factorisation)."""
    monkeypatch.setattr(new_points, "_LOW_RANK_SHARE", low_rank_share)
    D, y = _points(seed=9)
    model, gp = _sle_model(D, y)
    draws = {"radius": [[0.3, 0.8]], "ls": [[0.9, 1.6]]}
    new = own_landmark_predictive(az.from_dict(posterior=draws), gp, NEW[:, None], model=model)
    values = np.linspace(-1.0, 1.0, NEW.size)
    for j, point in enumerate(NEW):
        log_w, mus, sds = [], [], []
        for radius, ls in zip(draws["radius"][0], draws["ls"][0], strict=True):
            mu, var, log_own = _by_hand(D, y, np.r_[np.arange(N_TRAIN), point], point, radius, ls)
            *_, log_fitted = _by_hand(D, y, np.arange(N_TRAIN), point, radius, ls)
            log_w.append(log_own - log_fitted)
            mus.append(mu)
            sds.append(np.sqrt(var))
        w = np.exp(np.array(log_w) - np.logaddexp.reduce(log_w))
        density = w @ stats.norm.pdf(values[j], mus, sds)
        np.testing.assert_allclose(new.logpdf(values)[j], np.log(density), rtol=1e-8)
        np.testing.assert_allclose(new.cdf(values)[j], w @ stats.norm.cdf(values[j], mus, sds),
                                   rtol=1e-8)  # fmt: skip
        np.testing.assert_allclose(new.mean[j], w @ mus, rtol=1e-8)
        second = w @ (np.square(sds) + np.square(mus))
        np.testing.assert_allclose(new.sd[j], np.sqrt(second - (w @ mus) ** 2), rtol=1e-8)


def test_landmarks_and_kernels_without_landmarks_keep_the_fitted_predictive():
    """A new point that is a landmark already (here: training points), every point of an SLE
    whose landmarks are apart from the training points, and every point of a Matérn GP, are
    predicted as ``gp.conditional`` does, with equal weights; some training points among the
    landmarks and not others is an error."""
    D, y = _points(seed=10)
    model, gp = _sle_model(D, y)
    rng = np.random.default_rng(11)
    idata = az.from_dict(posterior={"radius": rng.uniform(0.5, 0.8, (2, 5)),
                                    "ls": rng.uniform(0.9, 1.6, (2, 5))})  # fmt: skip
    rows = np.array([3, 17])
    new = own_landmark_predictive(idata, gp, rows[:, None], model=model)
    np.testing.assert_array_equal(new.pareto_k, 0.0)
    np.testing.assert_allclose(np.exp(new.log_weights), 0.1)
    s = 7  # chain 1, draw 2
    radius, ls = (float(idata.posterior[k][1, 2]) for k in ("radius", "ls"))
    for j, row in enumerate(rows):
        mu, var, _ = _by_hand(D, y, np.arange(N_TRAIN), row, radius, ls)
        np.testing.assert_allclose([new.means[s, j], new.variances[s, j]], [mu, var], rtol=1e-9)

    mixed_model, mixed = _sle_model(D, y, landmarks=np.arange(20, N_POINTS))  # 4 training too
    with pytest.raises(ValueError, match="4 of the 24 training points are landmarks"):
        own_landmark_predictive(idata, mixed, NEW[:, None], model=mixed_model)
    apart_model, apart = _sle_model(D, y, landmarks=NEW[:3])  # no training point a landmark
    kept = own_landmark_predictive(idata, apart, NEW[3:, None], model=apart_model)
    np.testing.assert_array_equal(kept.pareto_k, 0.0)
    for j, row in enumerate(NEW[3:]):
        mu, var, _ = _by_hand(D, y, NEW[:3], row, radius, ls)
        np.testing.assert_allclose([kept.means[s, j], kept.variances[s, j]], [mu, var], rtol=1e-9)

    X = np.linspace(0, 10, N_TRAIN)[:, None]
    with pm.Model() as matern:
        ls_rv = pm.LogNormal("ls", 0.0, 1.0)
        plain = sle.gp.Marginal(cov_func=pm.gp.cov.Matern32(1, ls=ls_rv))
        plain.marginal_likelihood("y", X=X, y=np.sin(X[:, 0]), sigma=0.3)
    draws = az.from_dict(posterior={"ls": rng.uniform(0.5, 2.0, (2, 4))})
    X_new = np.array([[2.5], [11.0]])
    predicted = own_landmark_predictive(draws, plain, X_new, model=matern)
    np.testing.assert_array_equal(predicted.pareto_k, 0.0)
    for s, value in enumerate(draws.posterior["ls"].values.ravel()):
        K = pm.gp.cov.Matern32(1, ls=value)(np.vstack([X, X_new])).eval()
        C = K[:N_TRAIN, :N_TRAIN] + (0.09 + JITTER_DEFAULT) * np.eye(N_TRAIN)
        solve = np.linalg.solve(C, np.column_stack([np.sin(X[:, 0]), K[:N_TRAIN, N_TRAIN:]]))
        mu = K[N_TRAIN:, :N_TRAIN] @ solve[:, 0]
        var = np.diag(K)[N_TRAIN:] - np.sum(K[:N_TRAIN, N_TRAIN:] * solve[:, 1:], axis=0) + 0.09
        np.testing.assert_allclose(predicted.means[s], mu, rtol=1e-9)
        np.testing.assert_allclose(predicted.variances[s], var, rtol=1e-9)


def test_a_rectangular_block_reads_a_new_point_from_its_row():
    """On the (points, training points) block -- the columns the first rows -- a new point's
    distances are its row: the same predictive as on the square matrix, for a symmetric
    distance; an asymmetric one is an error naming the asymmetry."""
    D, y = _points(seed=13)
    idata = _one_value(radius=0.5, ls=1.1)
    square_model, square = _sle_model(D, y)
    block = sle.DistanceMatrix(D.values[:, :N_TRAIN])
    block_model, rectangular = _sle_model(block, y)
    expected = own_landmark_predictive(idata, square, NEW[:, None], model=square_model)
    got = own_landmark_predictive(idata, rectangular, NEW[:, None], model=block_model)
    np.testing.assert_allclose(got.means, expected.means, rtol=1e-10)
    np.testing.assert_allclose(got.variances, expected.variances, rtol=1e-10)

    skewed = D.values[:, :N_TRAIN].copy()
    skewed[0, 1] += 0.05
    skewed_model, asymmetric = _sle_model(sle.DistanceMatrix(skewed), y)
    with pytest.raises(ValueError, match=r"differ from their transpose by up to 0\.05"):
        own_landmark_predictive(idata, asymmetric, NEW[:, None], model=skewed_model)


def _mixture(seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 1.0, (40, 3))
    variances = rng.uniform(0.2, 2.0, (40, 3))
    log_weights = np.log(rng.dirichlet(np.ones(40), 3).T)
    return OwnLandmarkPredictive(means, variances, log_weights, np.zeros(3), 1.0)


def test_interval_sample_and_coverage_read_the_mixture():
    """The interval's ends are the mixture's 2.5 % and 97.5 % quantiles; draws have its mean and
    sd; coverage counts the values inside."""
    mixture = _mixture()
    lower, upper = mixture.interval(0.95)
    np.testing.assert_allclose(mixture.cdf(lower), 0.025, atol=1e-9)
    np.testing.assert_allclose(mixture.cdf(upper), 0.975, atol=1e-9)
    draws = mixture.sample(40_000, seed=1)
    assert draws.shape == (40_000, 3)
    assert np.all(np.abs(draws.mean(axis=0) - mixture.mean) < 4 * mixture.sd / 200)  # 4 SE
    np.testing.assert_allclose(draws.std(axis=0), mixture.sd, rtol=0.02)
    np.testing.assert_array_equal(draws, mixture.sample(40_000, seed=1))  # seeded
    inside = np.array([lower[0] + 1e-6, upper[1] - 1e-6, upper[2] + 1e-6])
    assert mixture.coverage(inside, 0.95) == pytest.approx(2 / 3)
    np.testing.assert_allclose(
        np.exp(mixture.logpdf(inside)),
        np.sum(np.exp(mixture.log_weights)
               * stats.norm.pdf(inside, mixture.means, np.sqrt(mixture.variances)), axis=0),
    )  # fmt: skip


def test_the_predictive_validates_its_arguments():
    mixture = _mixture()
    with pytest.raises(ValueError, match=r"`y` must be finite with shape \(3,\)"):
        mixture.cdf(np.zeros(4))
    with pytest.raises(ValueError, match="`level` must be in"):
        mixture.interval(1.0)
    with pytest.raises(ValueError, match="`level` must be in"):
        mixture.coverage(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="`n_draws` must be an integer >= 1, but got 0"):
        mixture.sample(0)


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
@pytest.mark.parametrize(
    ("low_rank_share", "n_jobs", "block"),
    [(2.0, 2, None), (0.0, 2, None), (0.5, -1, None), (0.5, 1, 1), (0.5, 2, 4)],
    ids=["low-rank in threads", "refactorised in threads", "every CPU", "blocks of 1",
         "blocks of 4 in threads"],
)  # fmt: skip
def test_threads_and_blocks_give_the_same_predictive(low_rank_share, n_jobs, block, monkeypatch):
    """``n_jobs`` runs the points of a draw in threads: the same numbers bit for bit, on both
    paths, over several draws (their weights included). The new points go through in blocks of
    ``_POINTS_PER_BLOCK`` (memory): blocks of 1 and of 4 (6 points: two blocks of 3) give the
    one-block predictive up to rounding."""
    monkeypatch.setattr(new_points, "_LOW_RANK_SHARE", low_rank_share)
    D, y = _points(seed=10)
    model, gp = _sle_model(D, y)
    rng = np.random.default_rng(3)
    idata = az.from_dict(posterior={"radius": rng.uniform(0.4, 0.9, (2, 3)),
                                    "ls": rng.uniform(0.8, 1.6, (2, 3))})  # fmt: skip
    one = own_landmark_predictive(idata, gp, NEW[:, None], model=model)
    if block is not None:
        monkeypatch.setattr(new_points, "_POINTS_PER_BLOCK", block)
    many = own_landmark_predictive(idata, gp, NEW[:, None], model=model, n_jobs=n_jobs)
    for field in ("means", "variances", "log_weights", "pareto_k"):
        if block is None:
            np.testing.assert_array_equal(getattr(many, field), getattr(one, field))
        else:
            np.testing.assert_allclose(getattr(many, field), getattr(one, field), rtol=1e-12)


def test_a_new_factorisation_equals_the_dense_algebra_and_refuses_an_indefinite_one():
    """``refactorised_change`` (compiled, without the GIL) against ``numpy.linalg`` on a random
    covariance whose rows and columns ``K`` change, and a ``LinAlgError`` where the changed
    covariance is not positive definite."""
    rng = np.random.default_rng(5)
    n, K = 12, np.array([2, 5, 9])
    A = rng.standard_normal((n, n))
    C = A @ A.T + n * np.eye(n)
    E = 0.5 * rng.standard_normal((K.size, n))
    E[:, K] = (E[:, K] + E[:, K].T) / 2  # the changed block stays symmetric
    changed = C.copy()
    changed[K] += E
    changed[:, K] = changed[K].T
    residual, k_star = rng.standard_normal(n), rng.standard_normal(n)
    lower = np.linalg.cholesky(C)
    a_hat, w_hat = np.linalg.solve(lower, residual), np.linalg.solve(lower, k_star)
    fitted_log_det = np.linalg.slogdet(C)[1]
    got = _landmark_update.refactorised_change(C, E, K, residual, k_star, fitted_log_det, a_hat,
                                          w_hat)  # fmt: skip
    x = np.linalg.solve(changed, np.column_stack([residual, k_star]))
    log_ratio = (stats.multivariate_normal(np.zeros(n), changed).logpdf(residual)
                 - stats.multivariate_normal(np.zeros(n), C).logpdf(residual))  # fmt: skip
    expected = (k_star @ x[:, 0] - w_hat @ a_hat, w_hat @ w_hat - k_star @ x[:, 1], log_ratio)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    as_float32 = [a.astype(np.float32) for a in (C, E, residual, k_star)]  # cast for LAPACK
    refactorised_change = _landmark_update.refactorised_change
    got32 = refactorised_change(*as_float32[:2], K, *as_float32[2:], fitted_log_det,
                                a_hat, w_hat)  # fmt: skip
    np.testing.assert_allclose(got32, expected, rtol=1e-4, atol=1e-5)
    E[:, K] -= 10 * n * np.eye(K.size)  # pushes the diagonal of C' negative
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        _landmark_update.refactorised_change(
            C, E, K, residual, k_star, fitted_log_det, a_hat, w_hat
        )


def test_own_landmark_predictive_validates_its_arguments():
    D, y = _points(seed=12)
    model, gp = _sle_model(D, y)
    idata = _one_value()
    with pytest.raises(TypeError, match=r"`idata` must be an arviz\.InferenceData"):
        own_landmark_predictive({"radius": 0.7}, gp, NEW[:, None], model=model)
    for n_jobs in (0, -2):
        with pytest.raises(
            ValueError, match=rf"`n_jobs` must be a positive integer or -1, .*{n_jobs}"
        ):
            own_landmark_predictive(idata, gp, NEW[:, None], model=model, n_jobs=n_jobs)
    for n_jobs in (1.5, True, "2"):
        with pytest.raises(TypeError, match="`n_jobs` must be an integer"):
            own_landmark_predictive(idata, gp, NEW[:, None], model=model, n_jobs=n_jobs)
    with pytest.raises(ValueError, match=r"`X_new` must have shape \(n_new >= 1, 1\).*\(6,\)"):
        own_landmark_predictive(idata, gp, NEW, model=model)
    with pytest.raises(ValueError, match=r"`X_new` must hold row numbers .* \[24.5\]"):
        own_landmark_predictive(idata, gp, np.array([[24.5], [25.0]]), model=model)
    for outside in (30, -1):
        with pytest.raises(ValueError, match=rf"`X_new` must index the 30 rows .* \[{outside}\]"):
            own_landmark_predictive(idata, gp, np.array([[25], [outside]]), model=model)
    train = np.arange(N_TRAIN)
    cases = {
        "distances as features": sle.SLE(radius=0.7, ls=1.3, input_dim=N_TRAIN),
        r"\['radius'\] of .* vary per landmark": sle.SLE(
            D, landmarks=train, radius=np.full(N_TRAIN, 0.7), ls=1.3
        ),
    }
    for message, cov in cases.items():
        X = D.values[:N_TRAIN, :N_TRAIN] if "features" in message else train[:, None]
        with pm.Model() as other:
            pm.LogNormal("radius", 0.0, 1.0)  # the posterior's variable; the kernels fix theirs
            fixed = sle.gp.Marginal(cov_func=cov)
            fixed.marginal_likelihood("obs", X=X, y=y, sigma=0.2)
        with pytest.raises(ValueError, match=message):
            own_landmark_predictive(idata, fixed, NEW[:, None], model=other)
    with pm.Model() as noisy:
        pm.LogNormal("radius", 0.0, 1.0)
        landmark_noise = sle.gp.Marginal(cov_func=sle.SLE(D, landmarks=train, radius=0.7, ls=1.3))
        noise = 0.01 * sle.SLE(D, landmarks=train, radius=0.3, ls=1.0)
        landmark_noise.marginal_likelihood("obs", X=train[:, None], y=y, sigma=noise)
    with pytest.raises(ValueError, match="the noise of `gp` holds"):
        own_landmark_predictive(idata, landmark_noise, NEW[:, None], model=noisy)
