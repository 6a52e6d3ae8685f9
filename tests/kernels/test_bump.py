import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import optimize

from pymc_sle import bump
from tests.sle_reference import reference_bump


@pytest.mark.parametrize("a, r, beta", [(1.0, 1.0, 1.0), (2.5, 0.3, 0.5), (0.7, 4.0, 5.0)])
def test_numpy_matches_reference(a, r, beta):
    d = np.linspace(0.0, 1.5 * r, 31)
    expected = [reference_bump(v, a, r, beta) for v in d]
    np.testing.assert_allclose(bump(d, r, a, beta), expected, rtol=1e-14, atol=0)


def test_peak_support_and_monotonicity():
    d = np.linspace(0.0, 2.0, 401)
    b = bump(d, radius=1.0, amplitude=3.0, shape=2.0)
    assert b[0] == 3.0
    assert np.all(b[d >= 1.0] == 0.0)
    assert np.all(np.diff(b[d < 1.0]) < 0)


@pytest.mark.parametrize("beta, crossing", [(0.5, 0.76), (5.0, 0.35)])
def test_half_maximum_matches_paper_caption(beta, crossing):
    # Appendix H: half-maximum crossing at d ~ 0.76 r (beta = 0.5) and ~ 0.35 r (beta = 5).
    root = optimize.brentq(lambda d: bump(d, 1.0, 1.0, beta) - 0.5, 0.0, 1.0 - 1e-12)
    assert root == pytest.approx(crossing, abs=0.005)  # the caption rounds to two digits


def test_tensor_matches_numpy_and_broadcasts_per_column(rng):
    d = rng.uniform(0.0, 2.0, size=(5, 3))
    r, a, beta = np.array([0.5, 1.0, 1.5]), np.array([1.0, 2.0, 0.5]), np.array([1.0, 0.3, 4.0])
    symbolic = bump(pt.as_tensor_variable(d), r, a, beta)
    assert isinstance(symbolic, pt.TensorVariable)
    np.testing.assert_allclose(symbolic.eval(), bump(d, r, a, beta), rtol=1e-14)
    for j in range(3):
        expected = [reference_bump(v, a[j], r[j], beta[j]) for v in d[:, j]]
        np.testing.assert_allclose(bump(d, r, a, beta)[:, j], expected, rtol=1e-14)


def _gradient_function():
    d, r, a, beta = pt.dvector("d"), pt.dscalar("r"), pt.dscalar("a"), pt.dscalar("beta")
    total = bump(d, r, a, beta).sum()
    return pytensor.function([d, r, a, beta], pytensor.grad(total, [d, r, a, beta]))


@pytest.mark.parametrize(
    "d",
    [
        [0.0],  # centre
        [1.0],  # exactly on the boundary
        [1.0 - 2**-52],  # last representable value inside
        [1.0 - 1e-9],  # the exponent overflows towards -inf here
        [1.5, 30.0],  # outside
    ],
)
def test_gradients_finite_everywhere(d):
    grads = _gradient_function()(np.array(d), 1.0, 1.3, 0.8)
    for g in grads:
        assert np.all(np.isfinite(g))


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    d = np.array([0.1, 0.4, 0.8, 0.95, 1.4])  # inside and outside the support of r = 1.2

    def f(d_, r_, a_, beta_):
        return bump(d_, r_, a_, beta_)

    pytensor.gradient.verify_grad(f, [d, np.array(1.2), np.array(1.7), np.array(0.6)], rng=rng)


@pytest.mark.parametrize("name", ["radius", "amplitude", "shape"])
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_rejects_non_positive_numeric_parameters(name, bad):
    kwargs = {"radius": 1.0, "amplitude": 1.0, "shape": 1.0, name: bad}
    with pytest.raises(ValueError, match=f"`{name}` must be finite and > 0"):
        bump(np.array([0.5]), **kwargs)
