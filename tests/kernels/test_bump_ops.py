"""The bump embedding's squared distances on its support found at run time: values and
gradients against the dense reference, on every backend, and the validation of their inputs."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_sle import bump
from pymc_sle.kernels._bump_ops import _BumpSquaredDistances, bump_squared_distances
from pymc_sle.kernels._embedding_ops import dense_squared_distances
from tests.support import MODES, backend_cases, compile_fn, planar_distances

BUMP_CASES = [  # (n, m, radius): ~5 % of the block inside the bump, ~70 %, none, all
    (25, 40, 0.12),
    (12, 5, 0.6),
    (9, 4, 1e-3),
    (6, 6, 3.0),
]


def bump_reference_and_support(mode, block_input, support_block, max_fill, **kwargs):
    """``f(D, weights, radius, amplitude, shape)``: the dense reference and the run-time-support
    Op, each with its gradients with respect to the three per-landmark parameters (and to the
    block, when it is the symbolic input)."""
    weights = pt.dmatrix("weights")
    params = [pt.dvector(name) for name in ("radius", "amplitude", "shape")]
    reference = dense_squared_distances(bump(block_input, *params))
    support = bump_squared_distances(support_block, *params, max_fill, **kwargs)
    wrt = [*params, block_input] if support_block is block_input else params
    outputs = []
    for value in (reference, support):
        outputs += [value, *pt.grad((value * weights).sum(), wrt)]
    return compile_fn([block_input, weights, *params], outputs, mode)


def check_bump_support(f, D, radius, seed):
    """Values and gradients of the Op equal the reference, for a symmetric upstream gradient (a
    kernel matrix's, for which the Op skips building ``G + G.T``) and an asymmetric one."""
    n, m = D.shape
    rng = np.random.default_rng(seed)
    params = [radius * rng.uniform(0.8, 1.2, m), rng.uniform(0.5, 2, m), rng.uniform(0.3, 3, m)]
    asymmetric = rng.normal(size=(n, n))
    for weights in (asymmetric + asymmetric.T, asymmetric):
        out = f(D, weights, *params)
        half = len(out) // 2
        scale = max(1.0, *(np.abs(o).max() for o in out[:half]))
        for ref, got in zip(out[:half], out[half:], strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12 * scale)
        assert (np.diag(out[half]) == 0).all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_fill", [0.0, 1.0])  # forces the dense / the sparse branch
def test_bump_distances_of_a_symbolic_block_equal_the_dense_reference(mode, max_fill):
    """The support found by a scan; gradients with respect to the block too."""
    block = pt.dmatrix("block")
    f = bump_reference_and_support(mode, block, block, max_fill)
    for n, m, radius in BUMP_CASES:
        check_bump_support(f, planar_distances(n, m, seed=n + m), radius, seed=n)


BRANCHES = [(1.0, False), (1.0, True), (0.0, False)]  # (max_fill, bounded)


@pytest.mark.parametrize(
    ("mode", "n", "m", "radius", "max_fill", "bounded"),
    backend_cases([(*case, *branch) for case in BUMP_CASES[:2] for branch in BRANCHES],
                  numba=[(*BUMP_CASES[0], *branch) for branch in BRANCHES]),
)  # fmt: skip
def test_bump_distances_of_a_constant_block_equal_the_dense_reference(
    mode, n, m, radius, max_fill, bounded
):
    """The support found from sorted columns, whole or cut at ``radius_max``."""
    D = planar_distances(n, m, seed=n + m)
    radius_max = 1.3 * radius if bounded else None
    f = bump_reference_and_support(mode, pt.dmatrix("block"), D, max_fill, radius_max=radius_max)
    check_bump_support(f, D, radius, seed=n)


@pytest.mark.parametrize("mode", MODES)
def test_bump_distances_gradient_equals_finite_differences(mode):
    D = planar_distances(20, 20, seed=3)
    weights = np.random.default_rng(4).normal(size=(20, 20))
    radius = pt.dvector("radius")
    loss = (bump_squared_distances(D, radius, 1.5, 0.8, max_fill=1.0) * weights).sum()
    f = compile_fn([radius], [loss, pt.grad(loss, radius)], mode)
    r0 = np.random.default_rng(5).uniform(0.15, 0.3, 20)
    direction = np.random.default_rng(6).normal(size=20)
    step = 1e-6
    numeric = (f(r0 + step * direction)[0] - f(r0 - step * direction)[0]) / (2 * step)
    np.testing.assert_allclose(f(r0)[1] @ direction, numeric, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_bump_gradients_share_one_embedding_gradient(mode):
    """With respect to the parameters and a symbolic block at once, the products with the
    upstream gradient (the expensive part of the backward) run once; a constant block has no
    block gradient at all."""
    block, radius = pt.dmatrix("block"), pt.dvector("radius")

    def op_counts(block_input, wrt):
        loss = pt.exp(-bump_squared_distances(block_input, radius, 1.0, 1.0, 0.1)).sum()
        f = pytensor.function([radius, *wrt], pt.grad(loss, [radius, *wrt]), mode=mode)
        names = [type(node.op).__name__ for node in f.maker.fgraph.toposort()]
        return {name: names.count(name) for name in set(names) if name.startswith("_Bump")}

    assert op_counts(block, [block]) == {
        "_BumpSquaredDistances": 1, "_BumpEmbeddingGrad": 1,
        "_BumpSquaredDistancesGrad": 1, "_BumpSquaredDistancesBlockGrad": 1,
    }  # fmt: skip
    assert op_counts(planar_distances(6, 5, seed=0), []) == {
        "_BumpSquaredDistances": 1, "_BumpEmbeddingGrad": 1, "_BumpSquaredDistancesGrad": 1,
    }  # fmt: skip


def test_bump_distances_keep_only_the_candidates_below_radius_max():
    D = planar_distances(30, 30, seed=1)
    out = bump_squared_distances(D, pt.dscalar("r"), 1.0, 1.0, max_fill=0.1, radius_max=0.2)
    order, ordered = (v.data for v in out.owner.inputs[1:3])
    assert order.shape == ordered.shape == (30, (D < 0.2).sum(axis=0).max())
    np.testing.assert_array_equal(ordered, np.take_along_axis(D.T, order, axis=1))
    assert (np.diff(ordered, axis=1) >= 0).all()


@pytest.mark.parametrize("mode", ["FAST_RUN", "NUMBA"])
def test_bump_distances_refuse_parameters_of_another_width_than_the_block(mode):
    """A graph whose block is replaced by a wider one keeps parameters broadcast to the old
    width: an error at run time, not a read past their end."""
    block, radius = pt.dmatrix("block"), pt.dvector("radius")
    out, *_ = _BumpSquaredDistances(1.0)(block, np.empty((0, 0), np.int32), np.empty((0, 0)),
                                         radius, radius, radius)  # fmt: skip
    f = compile_fn([block, radius], [out], mode)
    D = planar_distances(6, 5, seed=2)
    reference = dense_squared_distances(bump(D, 0.5, 0.5, 0.5)).eval()
    np.testing.assert_allclose(f(D, np.full(5, 0.5))[0], reference, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="one value per column of the distance block"):
        f(D, np.full(4, 0.5))


def test_bump_distances_validate_max_fill():
    with pytest.raises(ValueError, match=r"`max_fill` must be in \[0, 1\], but got 1.5"):
        bump_squared_distances(pt.dmatrix("block"), 1.0, 1.0, 1.0, 1.5)


@pytest.mark.parametrize("constant", [True, False])
def test_bump_distances_exclude_a_distance_equal_to_the_radius(constant):
    """The support is ``d < r``, exactly as ``bump`` tests it: at ``d = r`` the embedding is 0."""
    D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    block = pt.dmatrix("block")
    support = bump_squared_distances(D if constant else block, 1.0, 1.0, 1.0, max_fill=1.0)
    value = pytensor.function([block], support, on_unused_input="ignore")(D)
    np.testing.assert_array_equal(value, 2.0 * (1.0 - np.eye(3)))  # one-hot embeddings
