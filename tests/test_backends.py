"""The library's Ops run BLAS on one thread in worker processes, and on all of them otherwise."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from pymc_sle._backends import one_blas_thread_in_workers, source_closure, worker_blas_limit
from pymc_sle.gp import GaussianLogDensity, SparseSLELogDensity
from pymc_sle.kernels import _bump_ops, _embedding_ops
from tests.support import PACKAGE, module_name


def blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def _report(queue) -> None:
    """In the child: the BLAS threads before, inside the limit, inside a decorated call, after."""
    before = blas_threads()
    with worker_blas_limit():
        inside = blas_threads()
    during = one_blas_thread_in_workers(blas_threads)()
    queue.put((before, inside, during, blas_threads()))


def test_main_process_keeps_its_blas_threads():
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and max(before) == 2
        with worker_blas_limit():
            assert blas_threads() == before
        assert one_blas_thread_in_workers(blas_threads)() == before


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_process_runs_one_blas_thread_and_restores(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method!r} start method here")
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    # With fork the child inherits two threads, as PyMC's chains do (it sets no limit then).
    with threadpool_limits(limits=2, user_api="blas"):
        child = context.Process(target=_report, args=(queue,))
        child.start()
        before, inside, during, after = queue.get(timeout=120)
        child.join(timeout=60)
    assert child.exitcode == 0
    if method == "fork":
        assert max(before) == 2  # inherited: the limit has something to do
    assert before and inside == [1] * len(before) and during == inside
    assert after == before


@pytest.mark.parametrize(
    "op_class",
    [
        GaussianLogDensity,
        SparseSLELogDensity,
        _embedding_ops._DenseSquaredDistances,
        _embedding_ops._CrossSquaredDistances,
        _bump_ops._BumpSquaredDistances,
        _bump_ops._BumpEmbeddingGrad,
    ],
)
def test_blas_heavy_ops_are_limited_in_workers(op_class):
    assert op_class.perform.__wrapped__.__qualname__ == f"{op_class.__name__}.perform"


def test_decorated_perform_still_computes():
    cov, residual = pt.dmatrix("cov"), pt.dvector("residual")
    value = GaussianLogDensity(with_gradients=False)(cov, residual)
    value = value[0] if isinstance(value, list) else value
    f = pytensor.function([cov, residual], value)
    k = np.array([[2.0, 0.5], [0.5, 1.0]])
    r = np.array([0.3, -0.2])
    expected = -0.5 * r @ np.linalg.solve(k, r) - 0.5 * np.log(np.linalg.det(k)) - np.log(2 * np.pi)
    np.testing.assert_allclose(f(k, r), expected, rtol=1e-12)


def _numba_cache_key(outputs, inputs=()):
    """PyTensor's numba cache key of the compiled graph of ``outputs`` (None: not cached)."""
    basic = pytest.importorskip("pytensor.link.numba.dispatch.basic")
    if not hasattr(basic, "numba_funcify_and_cache_key"):
        pytest.skip("this PyTensor caches no numba function")
    function = pytensor.function(list(inputs), outputs, mode="NUMBA")
    return basic.numba_funcify_and_cache_key(function.maker.fgraph)[1]


@pytest.mark.parametrize("inner", ["rbf", "matern32"])
def test_a_dense_sle_marginal_compiles_to_a_cached_numba_function(graph_distances, inner):
    """Every Op of the dense model's log density and gradient has a numba cache key, so the
    compiled graph is cached on disk: nutpie loads it the next time instead of compiling."""
    import pymc as pm

    from pymc_sle import SLE
    from pymc_sle import gp as sle_gp

    X = np.arange(30)[:, None]
    with pm.Model() as model:
        ls = pm.LogNormal("ls", 0.0, 0.5)
        radius = pm.LogNormal("radius", 0.0, 0.5)
        cov = SLE(graph_distances, radius=radius, ls=ls, inner=inner)
        sle_gp.Marginal(cov_func=cov).marginal_likelihood("y", X=X, y=np.zeros(30), sigma=0.3)
    logp = model.logp()
    key = _numba_cache_key([logp, *pytensor.grad(logp, model.value_vars)], model.value_vars)
    assert key is not None


def test_the_gaussian_density_has_one_cache_key_per_residual_ndim():
    cov, vector, matrix = pt.matrix("cov"), pt.vector("r"), pt.matrix("r")
    single = _numba_cache_key(GaussianLogDensity(False)(cov, vector), [cov, vector])
    batched = _numba_cache_key(GaussianLogDensity(False)(cov, matrix), [cov, matrix])
    assert None not in (single, batched) and single != batched


def test_the_cache_keys_change_with_the_package_source(monkeypatch):
    """A cached graph holds the machine code of the kernels it calls: an edited or upgraded
    package must not load it."""
    import pymc_sle._backends

    cov, residual = pt.matrix("cov"), pt.vector("r")
    density = GaussianLogDensity(True)(cov, residual)[0]
    before = _numba_cache_key(density, [cov, residual])
    monkeypatch.setattr(pymc_sle._backends, "_source_digest", lambda module: "another source")
    assert _numba_cache_key(density, [cov, residual]) != before


#: The modules that register a NUMBA implementation under a cache key.
NUMBA_MODULES = sorted(
    module_name(path) for path in PACKAGE.rglob("*.py") if "@register_numba(" in path.read_text()
)


def test_the_numba_implementations_are_the_ones_expected():
    kernels = [f"pymc_sle.kernels.{name}" for name in ("_bump_ops", "_embedding_ops", "_inputs")]
    assert NUMBA_MODULES == ["pymc_sle.gp._log_density", *kernels]


@pytest.mark.parametrize("module", NUMBA_MODULES)
def test_every_numba_function_a_keyed_module_reaches_is_in_its_source_closure(module):
    """The digest covers the code a cached graph carries: every numba function named by a
    module of the closure is defined in the closure, and the closure holds the kernels."""
    import importlib

    import numba

    closure = source_closure(module)
    reached = {
        value.py_func.__module__
        for name in closure
        for value in vars(importlib.import_module(name)).values()
        if isinstance(value, numba.core.dispatcher.Dispatcher)
    }
    assert reached and reached <= set(closure)
    assert module in closure and "pymc_sle._backends" in closure
    assert not {"pymc_sle", "pymc_sle.inference", "pymc_sle.gp"} & set(closure)


def test_the_digest_follows_the_closure_only(monkeypatch, tmp_path):
    """An edit inside a module's closure changes its digest; one outside keeps it."""
    import pymc_sle._backends as backends

    module = "pymc_sle.gp._log_density"
    original = backends._module_path

    def edited(target):
        def module_path(name):
            path = original(name)
            if name != target:
                return path
            copy = tmp_path / f"{name}.py"
            copy.write_text(path.read_text() + "\n# an edit\n")
            return copy

        return module_path

    digests = {}
    try:
        for target in (None, "pymc_sle._linalg._lapack", "pymc_sle.inference._priors"):
            monkeypatch.setattr(backends, "_module_path", edited(target))
            backends._source_digest.cache_clear()
            digests[target] = backends._source_digest(module)
    finally:
        backends._source_digest.cache_clear()  # no digest of an edited copy stays cached
    assert "pymc_sle._linalg._lapack" in source_closure(module)
    assert digests["pymc_sle._linalg._lapack"] != digests[None]
    assert digests["pymc_sle.inference._priors"] == digests[None]


def test_the_closure_follows_absolute_relative_and_local_imports(monkeypatch, tmp_path):
    import pymc_sle._backends as backends

    source = (
        "import numpy\n"
        "from pymc_sle._linalg import _lapack\n"
        "from ._validation import check_one_of\n"
        "def f():\n"
        "    import pymc_sle._data_numbers\n"
    )
    fake = tmp_path / "fake.py"
    fake.write_text(source)
    original = backends._module_path
    monkeypatch.setattr(
        backends, "_module_path", lambda name: fake if name == "pymc_sle.fake" else original(name)
    )
    assert backends._imported_modules("pymc_sle.fake") == {
        "pymc_sle._linalg._lapack", "pymc_sle._validation", "pymc_sle._data_numbers"
    }  # fmt: skip
