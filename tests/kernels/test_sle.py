import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph import ancestors

import pymc_sle
from pymc_sle import (
    SLE,
    DistanceMatrix,
    bump,
)
from tests.sle_reference import REFERENCE_INNER, reference_sle
from tests.support import backend_cases, compile_fn

INNERS = ["rbf", "matern12", "matern32", "matern52"]
LANDMARKS = np.arange(0, 40, 2)  # 20 landmarks among 40 points
ROWS = np.array([1, 4, 4, 7, 10, 13, 22, 31, 39])  # train, test and a duplicate


def _params(stationary: bool, symbolic: bool):
    m = LANDMARKS.size
    rng = np.random.default_rng(3)
    if stationary:
        values = {"radius": 0.6, "amplitude": 1.3, "shape": 0.8}
    else:
        values = {
            "radius": rng.uniform(0.4, 0.9, m),
            "amplitude": rng.uniform(0.5, 2.0, m),
            "shape": rng.uniform(0.5, 2.0, m),
        }
    if symbolic:
        values = {k: pt.as_tensor_variable(np.asarray(v)) * 1.0 for k, v in values.items()}
    return values


CONFIGS = [
    pytest.param(
        inner,
        stationary,
        symbolic,
        id=f"{inner}-{'st' if stationary else 'ns'}-{'pt' if symbolic else 'np'}",
    )
    for inner in INNERS
    for stationary in (True, False)
    for symbolic in (False, True)
]


def _numeric(values):
    return {k: v.eval() if isinstance(v, pt.TensorVariable) else v for k, v in values.items()}


@pytest.mark.parametrize("inner, stationary, symbolic", CONFIGS)
def test_full_matches_reference_and_properties(graph_distances, inner, stationary, symbolic):
    params = _params(stationary, symbolic)
    cov = SLE(graph_distances, LANDMARKS, ls=0.7, inner=inner, **params)
    X = ROWS[:, None]
    K = cov(X).eval()
    expected = reference_sle(
        graph_distances, ROWS, ROWS, LANDMARKS, ls=0.7, inner=inner, **_numeric(params)
    )
    np.testing.assert_allclose(K, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(np.diag(K), cov(X, diag=True).eval())
    # full(X) takes the training path (dsyrk or the sparse kernels), full(X, X) the cross-
    # covariance path: the same numbers up to rounding.
    np.testing.assert_allclose(K, cov(X, X).eval(), rtol=1e-13, atol=1e-15)
    # The two copies of row 4 are the same point: identical rows, exact unit correlation.
    np.testing.assert_array_equal(K[1], K[2])
    assert K[1, 2] == 1.0


@pytest.mark.parametrize("inner, stationary, symbolic", CONFIGS)
def test_cross_covariance_matches_reference(graph_distances, inner, stationary, symbolic):
    params = _params(stationary, symbolic)
    cov = SLE(graph_distances, LANDMARKS, ls=0.7, inner=inner, **params)
    Xs = np.array([[0], [5], [22], [38]])
    K = cov(ROWS[:, None], Xs).eval()
    expected = reference_sle(
        graph_distances, ROWS, Xs[:, 0], LANDMARKS, ls=0.7, inner=inner, **_numeric(params)
    )
    np.testing.assert_allclose(K, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("inner", INNERS)
def test_psd_on_a_distance_where_the_plain_kernel_is_indefinite(graph_distances, inner):
    # Plugging the distance straight into a Gaussian kernel gives an indefinite matrix ...
    plain = np.exp(-((graph_distances / 0.5) ** 2))
    assert np.linalg.eigvalsh(plain).min() < -1e-3
    # ... while SLE on the very same distances is PSD for every radius.
    X = np.arange(40)[:, None]
    for radius in (0.2, 0.5, 1.0, 3.0):
        K = SLE(graph_distances, np.arange(40), radius=radius, ls=0.5, inner=inner)(X).eval()
        assert np.linalg.eigvalsh(K).min() > -1e-10  # float64 round-off on a 40 x 40 matrix


def test_embed_is_the_sparse_bump_embedding(graph_distances):
    cov = SLE(graph_distances, LANDMARKS, radius=0.5, ls=1.0, amplitude=2.0, shape=1.5)
    phi = cov.embed(ROWS[:, None]).eval()
    assert phi.shape == (ROWS.size, LANDMARKS.size)
    block = graph_distances[np.ix_(ROWS, LANDMARKS)]
    np.testing.assert_array_equal(phi, bump(block, 0.5, 2.0, 1.5))
    assert np.all(phi[block >= 0.5] == 0.0) and np.all(phi[block < 0.5] > 0.0)


def test_one_hot_limit_makes_distinct_points_equally_correlated(line_distances):
    # A radius below the spacing embeds landmark i as amplitude * e_i: every pair of distinct
    # landmarks is at embedding distance sqrt(2) * amplitude.
    cov = SLE(line_distances, radius=0.05, ls=1.0, amplitude=1.0, inner="rbf")
    K = cov(np.arange(12)[:, None]).eval()
    off = K[~np.eye(12, dtype=bool)]
    np.testing.assert_allclose(off, np.exp(-1.0), rtol=1e-14)  # exp(-(sqrt 2)^2 / 2)


def test_single_landmark_reduces_to_a_kernel_of_bump_differences(line_distances):
    cov = SLE(line_distances, [0], radius=2.0, ls=0.3, inner="matern52")
    K = cov(np.arange(12)[:, None]).eval()
    b = bump(line_distances[:, 0], 2.0)
    h = np.vectorize(REFERENCE_INNER["matern52"])
    np.testing.assert_allclose(K, h(np.abs(b[:, None] - b[None, :]) / 0.3), rtol=1e-12, atol=1e-12)


def test_kernel_depends_on_amplitude_over_ls_only(graph_distances):
    X = ROWS[:, None]
    K1 = SLE(graph_distances, LANDMARKS, radius=0.6, ls=0.5, amplitude=1.0)(X).eval()
    K2 = SLE(graph_distances, LANDMARKS, radius=0.6, ls=1.5, amplitude=3.0)(X).eval()
    np.testing.assert_allclose(K1, K2, rtol=1e-12)


def test_warns_when_amplitude_and_ls_are_both_random(graph_distances):
    with pm.Model():
        a = pm.HalfNormal("a")
        ls = pm.HalfNormal("ls")
        with pytest.warns(UserWarning, match="amplitude / ls only"):
            SLE(graph_distances, LANDMARKS, radius=0.6, ls=ls, amplitude=a)


def _gradient_check(graph_distances, name, value, stationary_other=True):
    """verify_grad of a random projection of K with respect to one parameter."""
    weights = np.random.default_rng(5).standard_normal((ROWS.size, ROWS.size))
    base = {"radius": 0.7, "amplitude": 1.2, "shape": 0.9, "ls": 0.6}

    def projected(theta):
        kwargs = {**base, name: theta}
        cov = SLE(graph_distances, LANDMARKS, inner="matern32", **kwargs)
        return pt.sum(cov(ROWS[:, None]) * weights)

    pytensor.gradient.verify_grad(
        projected, [np.asarray(value, dtype=float)], rng=np.random.default_rng(2)
    )


@pytest.mark.parametrize("name", ["radius", "amplitude", "shape", "ls"])
def test_gradient_matches_finite_differences_scalar(graph_distances, name):
    _gradient_check(
        graph_distances, name, {"radius": 0.7, "amplitude": 1.2, "shape": 0.9, "ls": 0.6}[name]
    )


@pytest.mark.parametrize("name", ["radius", "amplitude", "shape"])
def test_gradient_matches_finite_differences_per_landmark(graph_distances, name):
    value = np.random.default_rng(4).uniform(0.6, 1.2, LANDMARKS.size)
    _gradient_check(graph_distances, name, value)


@pytest.mark.filterwarnings("ignore:Both `amplitude` and `ls` are random")
def test_gradients_finite_at_boundaries():
    # Distances that sit exactly on the radius, at zero, duplicates, and points outside every
    # bump (zero embedding, hence zero embedding distance between them).
    D = np.array(
        [
            [0.0, 1.0, 5.0, 5.0],
            [1.0, 0.0, 5.0, 5.0],
            [5.0, 5.0, 0.0, 0.0],
            [5.0, 5.0, 0.0, 0.0],
        ]
    )
    theta = pt.dvector("theta")
    cov = SLE(D, [0, 1], radius=theta[0], amplitude=theta[1], shape=theta[2], ls=theta[3])
    X = np.array([[0], [1], [1], [2], [3]])
    total = pt.sum(cov(X)) + pt.sum(cov(X, np.array([[2], [0]])))
    grad = pytensor.function([theta], pytensor.grad(total, theta))
    for radius in (1.0, 1.0 + 1e-15, 0.5, 10.0):
        assert np.all(np.isfinite(grad(np.array([radius, 1.0, 1.0, 0.5]))))


def test_composes_with_pymc_covariances(graph_distances):
    X = np.column_stack([ROWS, np.linspace(0, 1, ROWS.size)])
    sle = SLE(graph_distances, LANDMARKS, radius=0.6, ls=0.7, input_dim=2, active_dims=[0])
    other = pm.gp.cov.ExpQuad(2, ls=0.3, active_dims=[1])
    K_sle, K_other = sle(X).eval(), other(X).eval()
    np.testing.assert_allclose((sle + other)(X).eval(), K_sle + K_other, rtol=1e-12)
    np.testing.assert_allclose((sle * other)(X).eval(), K_sle * K_other, rtol=1e-12)
    np.testing.assert_allclose((2.5 * sle)(X).eval(), 2.5 * K_sle, rtol=1e-12)


def test_scaled_cov_gives_a_position_dependent_signal(graph_distances):
    sigma_of_row = np.linspace(0.5, 2.0, 40)

    def sigma(X):
        return pt.as_tensor_variable(sigma_of_row)[pt.cast(X[:, 0], "int64")]

    sle = SLE(graph_distances, LANDMARKS, radius=0.6, ls=0.7)
    scaled = pm.gp.cov.ScaledCov(1, sle, sigma)
    X = ROWS[:, None]
    s = sigma_of_row[ROWS]
    np.testing.assert_allclose(scaled(X).eval(), np.outer(s, s) * sle(X).eval(), rtol=1e-12)
    np.testing.assert_allclose(scaled(X, diag=True).eval(), s**2, rtol=1e-12)


def test_accepts_distance_matrix_float32_and_custom_stationary(graph_distances):
    D32 = DistanceMatrix(graph_distances, dtype="float32")
    cov = SLE(
        D32, LANDMARKS, radius=0.6, ls=0.7, inner=pm.gp.cov.RatQuad, inner_kwargs={"alpha": 2.0}
    )
    K = cov(ROWS[:, None]).eval()
    assert K.dtype == np.float64
    phi = bump(D32.values[np.ix_(ROWS, LANDMARKS)].astype(float), 0.6)
    sq = ((phi[:, None] - phi[None]) ** 2).sum(-1) / 0.7**2
    np.testing.assert_allclose(K, (1 + sq / 4.0) ** -2.0, rtol=1e-10)


def test_symbolic_index_input(graph_distances):
    cov = SLE(graph_distances, LANDMARKS, radius=0.6, ls=0.7)
    X = pytensor.shared(ROWS[:, None].astype(float))
    np.testing.assert_allclose(cov(X).eval(), cov(ROWS[:, None]).eval(), rtol=1e-14)


# --- validators: one call per block -------------------------------------------------------


def test_rejects_duplicate_landmarks(line_distances):
    with pytest.raises(ValueError, match=r"`landmarks` must be unique, but \[3\] appear"):
        SLE(line_distances, [1, 3, 3], radius=0.5, ls=1.0)


def test_rejects_out_of_range_landmarks(line_distances):
    with pytest.raises(
        ValueError, match=r"`landmarks` must index the 12 columns .* \(0 to 11\), but contains 12"
    ):
        SLE(line_distances, [0, 12], radius=0.5, ls=1.0)


def test_rejects_negative_landmarks(line_distances):
    with pytest.raises(ValueError, match="but contains -1"):
        SLE(line_distances, [-1, 2], radius=0.5, ls=1.0)


def test_rejects_non_integral_landmarks(line_distances):
    with pytest.raises(ValueError, match="1 entry is not integral"):
        SLE(line_distances, [0.0, 2.5], radius=0.5, ls=1.0)


def test_rejects_string_landmarks(line_distances):
    with pytest.raises(TypeError, match="`landmarks` must hold integer indices"):
        SLE(line_distances, ["a"], radius=0.5, ls=1.0)


def test_rejects_empty_landmarks(line_distances):
    with pytest.raises(ValueError, match="non-empty 1-D"):
        SLE(line_distances, np.array([], dtype=int), radius=0.5, ls=1.0)


@pytest.mark.parametrize("bad", [0.0, -0.1])
def test_rejects_non_positive_radius(line_distances, bad):
    with pytest.raises(ValueError, match=r"`radius` must be > 0, but got"):
        SLE(line_distances, radius=bad, ls=1.0)


def test_rejects_nan_amplitude(line_distances):
    with pytest.raises(ValueError, match="`amplitude` must be finite, but 1 entry is NaN"):
        SLE(line_distances, radius=0.5, ls=1.0, amplitude=np.nan)


def test_rejects_wrong_length_shape_vector(line_distances):
    with pytest.raises(
        ValueError, match=r"`shape` must be a scalar or a vector of length 12 .* shape \(5,\)"
    ):
        SLE(line_distances, radius=0.5, ls=1.0, shape=np.ones(5))


def test_rejects_matrix_radius(line_distances):
    with pytest.raises(
        ValueError, match=r"`radius` must be a scalar or a vector .* shape \(12, 1\)"
    ):
        SLE(line_distances, radius=np.ones((12, 1)), ls=1.0)


def test_rejects_random_variable_of_wrong_length(line_distances):
    with pm.Model():
        r = pm.HalfNormal("r", shape=3)
        with pytest.raises(
            ValueError, match=r"`radius` must be a scalar or a vector of length 12 .* has length 3"
        ):
            SLE(line_distances, radius=r, ls=1.0)


def test_rejects_vector_length_scale(line_distances):
    with pytest.raises(ValueError, match=r"`ls` must be a scalar, but has shape \(12,\)"):
        SLE(line_distances, radius=0.5, ls=np.ones(12))


def test_rejects_boolean_parameter(line_distances):
    with pytest.raises(TypeError, match="`ls` must be a positive number"):
        SLE(line_distances, radius=0.5, ls=True)


def test_rejects_unknown_inner_name(line_distances):
    with pytest.raises(ValueError, match=r"`inner` must be one of .* but got 'matern72'"):
        SLE(line_distances, radius=0.5, ls=1.0, inner="matern72")


def test_rejects_inner_instance(line_distances):
    with pytest.raises(TypeError, match="the class, not an instance"):
        SLE(line_distances, radius=0.5, ls=1.0, inner=pm.gp.cov.Matern32(1, ls=1.0))


def test_rejects_inner_without_distance_form(line_distances):
    with pytest.raises(TypeError, match="must implement `full_from_distance`"):
        SLE(line_distances, radius=0.5, ls=1.0, inner=pm.gp.cov.Stationary)


def test_rejects_two_active_dims(line_distances):
    with pytest.raises(ValueError, match="`active_dims` must name exactly one column"):
        SLE(line_distances, radius=0.5, ls=1.0, input_dim=2, active_dims=[0, 1])


def test_rejects_invalid_distances():
    with pytest.raises(ValueError, match="`values` must be finite, but 1 entry is NaN"):
        SLE(np.array([[0.0, np.nan], [1.0, 0.0]]), radius=0.5, ls=1.0)


def test_rejects_non_integral_X(line_distances):
    cov = SLE(line_distances, radius=0.5, ls=1.0)
    with pytest.raises(
        ValueError, match=r"`X` must hold integer indices, but 1 entry is not integral \(e.g. 1.5\)"
    ):
        cov(np.array([[0.0], [1.5]]))


def test_rejects_out_of_range_Xs(line_distances):
    cov = SLE(line_distances, radius=0.5, ls=1.0)
    with pytest.raises(
        ValueError, match=r"`Xs` must index the 12 rows of `distances` \(0 to 11\), but contains 40"
    ):
        cov(np.array([[0]]), np.array([[40]]))


def test_rejects_one_dimensional_X(line_distances):
    cov = SLE(line_distances, radius=0.5, ls=1.0)
    with pytest.raises(ValueError, match=r"`X` must be a 2-D array .* shape \(3,\)"):
        cov.diag(np.array([0, 1, 2]))


def _build_sle_gp(radius_prior):
    x = np.linspace(0.0, 1.0, 30)
    D = np.abs(x[:, None] - x[None, :])
    with pm.Model():
        radius = radius_prior(D)
        gp = pymc_sle.gp.Marginal(cov_func=pymc_sle.SLE(D, radius=radius, ls=1.0))
        gp.marginal_likelihood("y", X=np.arange(30)[:, None], y=np.sin(6 * x), sigma=0.1)


@pytest.mark.parametrize(
    ("prior", "message"),
    [
        (
            lambda D: pm.LogNormal("r", np.log(0.01), 1.0),
            r"89 % below the smallest training distance 0\.03448",
        ),
        (lambda D: pm.HalfNormal("r", 5.0), r"84 % above the largest training distance 1 "),
        (lambda D: pm.Uniform("r", 0.0, 0.2), r"17 % below the smallest training distance"),
    ],
)  # fmt: skip
def test_radius_priors_in_degenerate_regions_warn(prior, message):
    with pytest.warns(UserWarning, match=message) as caught:
        _build_sle_gp(prior)
    assert sum("The `radius` prior puts" in str(w.message) for w in caught) == 1  # once


@pytest.mark.parametrize(
    "prior",
    [
        lambda D: pymc_sle.sle_priors(D, np.arange(30), np.sin(D[0]), start="prior")[
            "radius"
        ],
        lambda D: pm.Uniform("r", 0.05, 1.0),
        # a transformed prior, as the paper reproduction's: PyMC derives its CDF
        lambda D: pm.Deterministic("r", pm.math.exp(pm.Uniform("log_r", np.log(0.05), 0.0))),
        lambda D: 0.001,  # fixed: the user's choice, not a prior
    ],
)  # fmt: skip
def test_radius_priors_between_the_distances_do_not_warn(prior):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The `radius` prior puts")
        _build_sle_gp(prior)


@pytest.mark.parametrize(
    ("mode", "inner", "per_landmark"),
    backend_cases([("matern32", False), ("matern32", True), ("rbf", False), ("rbf", True)],
                  numba=[("matern32", False), ("matern32", True)]),  # the inner kernel: Elemwise
)  # fmt: skip
def test_sle_sparse_branch_equals_dense(planar, mode, inner, per_landmark):
    """``auto`` at 7.5 % fill (its sparse products) against ``dense``."""
    X = np.arange(40)[:, None]
    radius, ls = pt.dscalar("radius"), pt.dscalar("ls")
    amplitude = pt.dvector("amplitude") if per_landmark else 1.0
    weights = np.random.default_rng(1).normal(size=(40, 40))
    outputs = []
    for embedding in ("dense", "auto"):
        cov = SLE(
            planar, radius=radius, ls=ls, amplitude=amplitude, radius_max=0.45,
            inner=inner, embedding=embedding,
        )  # fmt: skip
        K = cov(X)
        wrt = [radius, ls] + ([amplitude] if per_landmark else [])
        outputs += [K, *pt.grad((K * weights).sum(), wrt)]
    inputs = [radius, ls] + ([amplitude] if per_landmark else [])
    values = [0.15, 0.8] + ([np.linspace(0.5, 1.5, 40)] if per_landmark else [])
    out = compile_fn(inputs, outputs, mode)(*values)
    half = len(out) // 2
    for dense, sparse in zip(out[:half], out[half:], strict=True):
        np.testing.assert_allclose(sparse, dense, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(  # fill ~3 % (sparse branch), ~95 % (dense branch)
    ("mode", "per_landmark", "radius_value"),
    backend_cases([(True, 0.12), (False, 0.12), (False, 0.9)], numba=[(True, 0.12), (False, 0.9)]),
)
def test_sle_with_an_unbounded_radius_follows_its_support_at_run_time(
    planar, mode, per_landmark, radius_value
):
    """LogNormal radius: no pattern is known in advance, ``auto`` finds it at every evaluation.
    Values and gradients equal the dense path, and the gradient equals finite differences."""
    X = np.arange(40)[:, None]
    with pm.Model():
        radius_rv = pm.LogNormal("radius", 0.0, 1.0)
        auto = SLE(planar, radius=radius_rv, ls=0.7)
    assert auto.radius_max is None
    assert "_BumpSquaredDistances" in {
        type(v.owner.op).__name__ for v in ancestors([auto(X)]) if v.owner is not None
    }
    radius = pt.dvector("radius") if per_landmark else pt.dscalar("radius")
    ls = pt.dscalar("ls")
    weights = np.random.default_rng(1).normal(size=(40, 40))
    outputs = []
    for embedding in ("dense", "auto"):
        K = SLE(planar, radius=radius, ls=ls, embedding=embedding, inner="matern52")(X)
        loss = (K * weights).sum()
        outputs += [K, loss, *pt.grad(loss, [radius, ls])]
    rng = np.random.default_rng(2)
    r0 = radius_value * (rng.uniform(0.8, 1.2, 40) if per_landmark else 1.0)
    f = compile_fn([radius, ls], outputs, mode)
    out = f(r0, 0.7)
    for dense, auto_value in zip(out[:4], out[4:], strict=True):
        np.testing.assert_allclose(auto_value, dense, rtol=1e-10, atol=1e-12)
    step = 1e-6
    direction = rng.normal(size=np.shape(r0))
    numeric = (f(r0 + step * direction, 0.7)[5] - f(r0 - step * direction, 0.7)[5]) / (2 * step)
    np.testing.assert_allclose(np.sum(out[6] * direction), numeric, rtol=1e-5)


def test_each_embedding_takes_its_own_ops(planar):
    """``auto`` finds the support at run time whatever the radius (its branch is chosen at run
    time); ``dense`` does not look for one."""
    X = np.arange(40)[:, None]

    def op_names(cov):
        return {type(v.owner.op).__name__ for v in ancestors([cov(X)]) if v.owner is not None}

    for radius in (0.1, 2.0):
        assert "_BumpSquaredDistances" in op_names(SLE(planar, radius=radius, ls=1.0))
    dense = SLE(planar, radius=2.0, ls=1.0, embedding="dense")
    assert "_BumpSquaredDistances" not in op_names(dense)
    assert "_DenseSquaredDistances" in op_names(dense)


def test_radius_max_is_inferred_from_a_fixed_radius_or_a_bounded_prior(planar):
    assert SLE(planar, radius=np.full(40, 0.2), ls=1.0).radius_max == 0.2
    with pm.Model():
        uniform = pm.Uniform("r", 0.1, 0.6)
        unbounded = pm.LogNormal("r2", 0.0, 1.0)
        assert SLE(planar, radius=uniform, ls=1.0).radius_max == 0.6
        assert SLE(planar, radius=unbounded, ls=1.0).radius_max is None
        assert SLE(planar, radius=unbounded, ls=1.0, radius_max=0.7).radius_max == 0.7


def test_a_random_radius_is_capped_at_radius_max(planar):
    X = np.arange(40)[:, None]
    radius = pt.dscalar("radius")
    capped = pytensor.function([radius], SLE(planar, radius=radius, ls=1.0, radius_max=0.3)(X))
    np.testing.assert_allclose(capped(0.9), SLE(planar, radius=0.3, ls=1.0)(X).eval(), atol=1e-12)


def test_embedding_validators(planar):
    X = np.arange(40)[:, None]
    with pytest.raises(ValueError, match=r"`embedding` must be one of .*'dense'.*, but got 'csr'"):
        SLE(planar, radius=0.3, ls=1.0, embedding="csr")
    with pytest.raises(ValueError, match=r"`radius_max` must be >= `radius`.*0\.2.*0\.3"):
        SLE(planar, radius=0.3, ls=1.0, radius_max=0.2)
    with pytest.raises(ValueError, match="`radius_max` must be"):
        SLE(planar, radius=0.3, ls=1.0, radius_max=-1.0)
    auto = SLE(planar, radius=0.05, ls=1.0)
    with pm.Model():  # inputs that pm.set_data could change: the support is found at run time
        data = pm.Data("X", X.astype(float))
        np.testing.assert_allclose(auto(data).eval(), auto(X).eval(), atol=1e-12)
