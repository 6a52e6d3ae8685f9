"""The scales NUTS samples on: the radius's capped quantile map, the noise's quantile scale where
it reaches zero, and the ridges (the sampled model has the plain priors' density)."""

import dataclasses
import functools
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_sle import lognormal_between, sle_priors, suggest_bounds
from pymc_sle.inference import DEFAULT_POLICY
from pymc_sle.inference._basins import BasinJump, at_start
from pymc_sle.inference._bounds import target_scale
from pymc_sle.inference._scales import _radius_map
from pymc_sle.inference._search import (
    SearchResult,
    _holding_mode,
)
from pymc_sle.inference._transforms import CenteredLog, OnRidge, QuantileLog, Ridge
from tests.support import (
    NOISE_AT_ZERO,
    backend_cases,
    searched_priors,
    sine_on_a_line,
    synthetic_grid,
    two_basins,
)


def _bumps_grid(radius, masses, centres):
    """A synthetic grid whose radius marginal has narrow bumps of ``masses`` at ``centres``
    (log radius), behind dips far deeper than the basin barrier."""
    t = np.log(radius)
    density = sum(
        m * np.exp(-0.5 * ((t - c) / 0.1) ** 2) for m, c in zip(masses, centres, strict=True)
    )
    return synthetic_grid(np.log(density + 1e-300), radius)


def _search_of(coarse, fine):
    """What the grid search would find for these grids (no zoom)."""
    deep = DEFAULT_POLICY.deep_basins(fine)
    start = _holding_mode(fine, deep)
    return SearchResult(coarse, fine, [], deep, start, True, False, None, start)


@pytest.mark.parametrize(("masses", "capped"), [((0.998, 0.002), True), ((0.994, 0.006), False)])
def test_radius_cap_lies_before_a_light_basin_above_the_start_and_counts_its_mass(masses, capped):
    radius = np.geomspace(1.0, 100.0, 81)
    grid = _bumps_grid(radius, masses, (1.0, 3.0))
    radius_map, cap, truncated = _radius_map(_search_of(grid, grid), DEFAULT_POLICY, cap=True)
    if not capped:  # 0.6 % above: sample_basins samples it, the cap would cut it off
        assert (radius_map.u_cap, cap, truncated) == (None, None, 0.0)
        return
    home, above = DEFAULT_POLICY.deep_basins(grid)
    assert cap == radius_map.bound
    assert cap == pytest.approx(np.sqrt(home.high * above.low), rel=1e-3)  # the map's inverse
    assert np.exp(1.5) < cap < np.exp(2.5)
    assert truncated == pytest.approx(masses[1], rel=1e-3)
    assert _radius_map(_search_of(grid, grid), DEFAULT_POLICY, cap=False)[1:] == (None, 0.0)


def test_radius_cap_without_a_basin_above_is_at_the_maps_last_knot():
    """Without a basin above, the cap is where u = 6 (the map's last knot); the coarse grid's
    light far basin beyond the fine grid is what it cuts off."""
    coarse = _bumps_grid(np.geomspace(1.0, 1000.0, 64), (0.997, 0.003), (1.0, 5.0))
    fine = _bumps_grid(np.geomspace(1.0, 20.0, 32), (1.0,), (1.0,))  # spans the start's basin
    radius_map, cap, truncated = _radius_map(_search_of(coarse, fine), DEFAULT_POLICY, cap=True)
    assert radius_map.u_cap == 6.0
    assert cap == pytest.approx(np.exp(radius_map._g.numpy(6.0)))
    # the map's tail: the widening normal (twice the bump's sd of 0.1) reaches log r ~ 2.1 at u = 6
    assert np.exp(1.9) < cap < np.exp(2.2)
    assert truncated == pytest.approx(0.003, rel=1e-3)


@pytest.mark.parametrize(("masses", "capped"), [((0.998, 0.002), True), ((0.993, 0.007), False)])
def test_sle_priors_caps_the_radius_below_a_light_far_basin_and_says_so(masses, capped):
    """The reshaped grids put a light basin above the start's on the coarse grid, outside the
    fine grid's span (on the fine grid the second bump is too light to make a dip): 0.2 % of the
    mass is cut off with a warning; 0.7 % is not, and the far basin stays for sample_basins."""
    D, y = sine_on_a_line()

    def reshape(grid):
        return two_basins(grid, masses)

    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priors, _ = searched_priors(D, np.arange(y.size), y, reshape=reshape)
    said = [str(w.message) for w in caught if "The radius is capped" in str(w.message)]
    transform = model.rvs_to_transforms[priors["radius"]]
    if not capped:
        assert (priors.radius_cap, priors.truncated_mass, transform.u_cap, said) == (
            None,
            0.0,
            None,
            [],
        )
        assert len(priors.basins) == 2
        assert priors.scales["radius"] == "quantile"
        return
    assert priors.scales["radius"] == "capped quantile"
    assert priors.truncated_mass == pytest.approx(masses[1], rel=0.01)
    assert len(said) == 1 and f"r = {priors.radius_cap:.3g}" in said[0]
    assert "cap_radius=False" in said[0]
    assert priors.basins and all(b.radius < priors.radius_cap for b in priors.basins)
    # far beyond the cap, u rounds to the cap and x to the bound (the map's value at the knot)
    assert transform.backward(np.float64(transform.u_cap + 50.0)).eval() <= priors.radius_cap
    # cap_radius=False: the model of the previous release, with the far basin kept
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priors, _ = searched_priors(D, np.arange(y.size), y, reshape=reshape, cap_radius=False)
    assert (priors.radius_cap, model.rvs_to_transforms[priors["radius"]].u_cap) == (None, None)


@pytest.mark.parametrize("scale_ridges", [True, False])
def test_noise_that_reaches_zero_is_sampled_on_its_quantile_scale_from_finer_cells(scale_ridges):
    """The fine grid gets 96 noise cells over the coarse grid's range, and sigma (relative to
    its ridge) a quantile map of the fine grid's marginal; the other variables keep theirs."""
    from pymc_sle.inference._transforms import CenteredLog, OnRidge, QuantileLog

    D, y = sine_on_a_line()
    with pm.Model() as model:
        policy = dataclasses.replace(NOISE_AT_ZERO, widenings=0)  # the coarse pass as it comes
        priors, passes = searched_priors(D, np.arange(y.size), y, policy=policy,
                                         scale_ridges=scale_ridges)  # fmt: skip
    calls, grids = passes.calls, passes.grids
    assert "sigma" not in calls[0] and len(calls[1]["sigma"]) == 96
    scale = float(np.std(y))
    np.testing.assert_allclose(calls[1]["sigma"][[0, -1]], [1e-3 * scale, 3.0 * scale])
    transform = model.rvs_to_transforms[model["sigma"]]
    assert isinstance(transform, OnRidge) is scale_ridges
    if scale_ridges:
        transform = transform.inner
    assert isinstance(transform, QuantileLog)
    # the map of the fine grid's marginal (relative to the floored ridge), cut above, not below
    fine = grids[-1]
    if scale_ridges:
        ridge = Ridge(fine, "sigma", floored=True)
        expected = QuantileLog.from_grid(*ridge.residual_marginal(), walls=("upper",))
    else:
        expected = QuantileLog.from_grid(np.log(fine.sigma), fine.marginal("sigma"),
                                         walls=("upper",))  # fmt: skip
    np.testing.assert_allclose(transform._g.values, expected._g.values, rtol=1e-12)
    for other in ("ls", "eta"):
        transform = model.rvs_to_transforms[model[other]]
        on_ridge = other == "ls" or scale_ridges
        assert isinstance(transform, OnRidge) is on_ridge
        assert isinstance(transform.inner if on_ridge else transform, CenteredLog)
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    assert sorted(priors) == ["eta", "ls", "radius", "sigma"]
    assert priors.scales["sigma"] == ("floored ridge, quantile" if scale_ridges else "quantile")


#: What NUTS samples relative to a ridge: ``ls``, and with ``scale_ridges=True`` (the default)
#: also the signal and noise scales.
ON_RIDGES = {False: ("ls",), True: ("ls", "eta", "sigma")}


#: The models' configurations: (scale_ridges, across_dips, noise_at_zero).
CONFIGURATIONS = {"default": (True, False, False), "plain_scales": (False, False, False),
                  "across_dips": (False, True, False), "noise_at_zero": (True, False, True),
                  "noise_at_zero_across_dips": (False, True, True)}  # fmt: skip
#: The configurations checked on NUMBA too, which compiles each graph anew: between them they
#: hold every transform, with what it wraps (tested).
ON_NUMBA = ("plain_scales", "noise_at_zero", "noise_at_zero_across_dips")


@functools.cache
def _models(scale_ridges, across_dips, noise_at_zero):
    """The sampled model, the plain one (``start="prior"``), the priors, the bounds and what is
    on ridges; ``across_dips``: a grid with two basins behind a deep dip, where the radius is on
    a centred log scale and ``ls`` still on its ridge (``scale_ridges`` does not apply there);
    ``noise_at_zero``: the noise on its quantile scale (relative to its ridge where it has one)."""
    D, y = sine_on_a_line()
    rows = np.arange(y.size)
    policy = dataclasses.replace(DEFAULT_POLICY, noise_at_zero=0.0 if noise_at_zero else 2.0)
    with pm.Model() as mode:
        reshape = two_basins if across_dips else None
        priors, _ = searched_priors(
            D, rows, y, reshape=reshape, policy=policy, inner="rbf", scale_ridges=scale_ridges
        )
    with pm.Model() as prior:
        sle_priors(D, rows, y, start="prior")
    return mode, prior, priors, suggest_bounds(D, rows, y), ON_RIDGES[scale_ridges]


@pytest.fixture(scope="module", params=list(CONFIGURATIONS.values()), ids=list(CONFIGURATIONS))
def models(request):
    """:func:`_models` of each configuration."""
    return _models(*request.param)


def test_variables_on_ridges_keep_their_names_and_priors(models):
    mode, _, priors, bounds, on_ridges = models
    # the model's variables are the four, in this order: the ridges are transforms; across
    # dips, the basin label that moves the radius comes after them (pymc_sle.inference._basins)
    jumps = isinstance(mode.rvs_to_transforms[mode["radius"]], BasinJump)
    label = ["radius_basin"] if jumps else []
    assert [rv.name for rv in mode.free_RVs] == ["radius", "ls", "eta", "sigma", *label]
    assert mode.deterministics == []
    for name in ("ls", "eta", "sigma"):
        transform = mode.rvs_to_transforms[mode[name]]
        assert isinstance(transform, OnRidge) is (name in on_ridges)
    names = ["radius", "ls", "eta", "sigma"]
    radius, ls, eta, sigma = pm.draw([priors[n] for n in names], draws=20_000, random_seed=3)
    params = lognormal_between(*bounds.ls, 0.95)
    reference = stats.norm(params["mu"], params["sigma"])
    # KS tests at 0.001 each; a scale off by 5 % gives p < 1e-6 with 20,000 draws.
    assert stats.kstest(np.log(ls), reference.cdf).pvalue > 0.001
    half_normal = stats.halfnorm(scale=target_scale(sine_on_a_line()[1]))
    for draws in (eta, sigma):
        assert stats.kstest(draws, half_normal.cdf).pvalue > 0.001
    for draws in (ls, eta, sigma):  # 20,000 draws: sd 0.007
        assert abs(np.corrcoef(np.log(radius), np.log(draws))[0, 1]) < 0.03


@pytest.mark.parametrize("scale_ridges", [False, True])
def test_var_names_cover_what_nuts_samples_but_not_later_predictions(scale_ridges):
    D, y = sine_on_a_line()
    with pm.Model() as model:
        priors = sle_priors(D, np.arange(y.size), y, inner="rbf", scale_ridges=scale_ridges)
        pm.Normal("mean", 0.0, 1.0)
    sampled = ["radius", "ls", "eta", "sigma", "mean"]
    assert priors.var_names(model) == sampled
    idata = az.from_dict(posterior={name: np.ones((2, 5)) for name in sampled})
    with model:
        pm.Normal("f_new", 0.0, 1.0)  # what gp.conditional adds after sampling
    assert "f_new" in priors.var_names(model)
    assert priors.var_names(model, idata) == sampled


def test_joint_density_equals_the_plain_priors(models):
    """The density of (r, ls, eta, sigma), Jacobians left out, is the plain priors' at the same
    values, at any point of the sampled space."""
    mode, prior, _, _, _ = models
    names = ["radius", "ls", "eta", "sigma"]
    outputs = mode.replace_rvs_by_values([mode[name] for name in names])
    values = mode.compile_fn(outputs, inputs=mode.value_vars, on_unused_input="ignore")
    logp_mode, logp_prior = mode.compile_logp(jacobian=False), prior.compile_logp(jacobian=False)
    rng = np.random.default_rng(4)
    labels, label_logp = _labels(mode)
    for _ in range(4):  # points in the sampled space, about a posterior sd from the start
        point = _moved(mode.initial_point(), rng, 1.0)
        for label in labels:  # in every basin's frame
            point |= label
            r, ls, eta, sigma = values(point)
            plain = {"radius_log__": np.log(r), "ls_log__": np.log(ls),
                     "eta_log__": np.log(eta), "sigma_log__": np.log(sigma)}  # fmt: skip
            assert logp_mode(point) == pytest.approx(logp_prior(plain) + label_logp, rel=1e-10)


def _labels(model) -> tuple[list[dict], float]:
    """Each value of the model's basin label, as a point's entry, and its log prior (``[{}]``
    and 0 without one)."""
    transform = model.rvs_to_transforms[model["radius"]]
    if not isinstance(transform, BasinJump):
        return [{}], 0.0
    k = transform.means.size
    name = model.rvs_to_values[transform.label].name
    return [{name: np.array(i)} for i in range(k)], -float(np.log(k))


def _moved(point: dict, rng, scale: float) -> dict:
    """``point`` with every continuous coordinate moved by a normal step of ``scale``."""
    return {k: v if v.dtype.kind == "i" else v + rng.normal(0.0, scale) for k, v in point.items()}


def test_log_density_gradient_in_the_sampled_space_matches_finite_differences(models):
    mode = models[0]
    logp, dlogp = mode.compile_logp(), mode.compile_dlogp()
    start = mode.initial_point()
    names = [v.name for v in mode.continuous_value_vars]  # what dlogp differentiates
    rng = np.random.default_rng(5)
    for label in _labels(mode)[0]:
        point = _moved(start, rng, 1.0) | label
        gradient = dlogp(point)
        for i, name in enumerate(names):
            up = {**point, name: point[name] + 1e-6}
            down = {**point, name: point[name] - 1e-6}
            assert gradient[i] == pytest.approx((logp(up) - logp(down)) / 2e-6, rel=1e-4, abs=1e-6)


def test_chains_start_at_the_grid_mode(models):
    mode, _, priors, _, _ = models
    start = mode.initial_point()
    names = ["ls", "eta", "sigma"]
    values = mode.compile_fn(mode.replace_rvs_by_values([mode[n] for n in names]),
                             inputs=mode.value_vars, on_unused_input="ignore")  # fmt: skip
    for name, value in zip(names, values(start), strict=True):
        rv = mode[name]
        transform = at_start(mode.rvs_to_transforms[rv])  # across dips: in the start's frame
        inner = transform.inner if isinstance(transform, OnRidge) else transform
        [sampled] = [k for k in start if k.startswith(f"{name}_")]
        if isinstance(inner, CenteredLog):  # centred at the start
            assert abs(start[sampled]) < 1e-3
        # the grid mode, through the radius's map and back (exact to ~1e-5), and through the
        # noise's quantile map, whose two splines invert each other to ~1e-2 near zero noise
        tolerance = 1e-2 if isinstance(inner, QuantileLog) else 1e-4
        assert float(value) == pytest.approx(mode.rvs_to_initial_values[rv], rel=tolerance)
    radius = mode.rvs_to_initial_values[priors["radius"]]
    transform = mode.rvs_to_transforms[priors["radius"]]
    if isinstance(transform, QuantileLog):
        expected = transform.to_sampled(radius)
        assert start["radius_quantilelog__"] == pytest.approx(expected, abs=1e-9)
    else:  # across dips: centred at the coarse grid's mode, in the start basin's frame
        assert start["radius_basin_index__"] == 0
        assert transform.base.forward(radius).eval() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("models", "mode"),
    [pytest.param(CONFIGURATIONS[name], mode, id=f"{name}-{mode}")
     for (mode, name) in backend_cases([(name,) for name in CONFIGURATIONS],
                                       numba=[(name,) for name in ON_NUMBA])
     if mode != "FAST_RUN"],
    indirect=["models"],
)  # fmt: skip
def test_sampled_model_has_the_same_log_density_on_every_backend(models, mode):
    """What NUTS runs on: nutpie's NUMBA and numpyro's JAX give PyMC's C backend's values. On
    NUMBA (a compilation of its own per graph), the configurations that hold every transform
    between them (:data:`ON_NUMBA`)."""
    model = models[0]
    point = {k: v + 0.3 for k, v in model.initial_point().items()}
    outputs = [model.logp(), model.dlogp()]
    reference = model.compile_fn(outputs)(point)
    ours = model.compile_fn(outputs, mode=mode)(point)
    assert ours[0] == pytest.approx(reference[0], rel=1e-10)
    np.testing.assert_allclose(ours[1], reference[1], rtol=1e-8)


def _transforms(model) -> set[str]:
    """The model's transforms, each with what it wraps: ``"OnRidge(QuantileLog)"``."""

    def kind(transform) -> str:
        wrapped = [getattr(transform, a) for a in ("inner", "base") if hasattr(transform, a)]
        inside = ", ".join(kind(t) for t in wrapped)
        return type(transform).__name__ + (f"({inside})" if inside else "")

    return {kind(model.rvs_to_transforms[rv]) for rv in model.free_RVs}


def test_the_numba_configurations_hold_every_transform():
    every = {name: _transforms(_models(*CONFIGURATIONS[name])[0]) for name in CONFIGURATIONS}
    held = set().union(*(every[name] for name in ON_NUMBA))
    assert set().union(*every.values()) == held, {n: t - held for n, t in every.items()}
