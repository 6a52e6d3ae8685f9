"""What the library's Ops need of their backends: one BLAS thread in a worker process, and
their JAX implementations registered where JAX is installed.

``pm.sample(cores=c)`` runs its chains in ``c`` child processes and means each to use one
BLAS thread (its ``blas_cores="auto"``). It enforces that only when the children start by
``spawn`` or ``forkserver``: with ``fork`` (Linux's default before Python 3.14) PyMC applies no
limit (pymc-devs/pymc#8044), so every chain's OpenBLAS keeps a thread per core and the chains
spin against each other (:doc:`/performance`, "One BLAS thread per chain").

:func:`one_blas_thread_in_workers` wraps an Op's ``perform``: in a process that
:mod:`multiprocessing` started (a sampler's chain, a pool worker) the call runs with one BLAS
thread, and the previous count is restored when it returns; in the main process nothing
changes, so a single large fit keeps every BLAS thread. The limit costs a few microseconds per
call.

:func:`object_mode_perform` is the NUMBA backend (nutpie) of an Op whose work is one call of
compiled kernels from Python: ``perform`` runs in object mode. That holds the GIL, but the
kernels it calls release it (``nogil=True``), so nutpie's chains, threads of one process, run
them in parallel (:doc:`/performance`).

:func:`register_value_only` registers the rewrite that swaps a log-density Op whose node also
outputs its gradient for its value-only variant when nothing uses the gradient.

:func:`register_numba` registers an Op's NUMBA implementation, a pure numba function of the
Op's ``__props__`` (and of an integer its funcify may return beside it, e.g. an input's
``ndim``), with a cache key: PyTensor then caches the compiled graph on disk
(``numba__cache``), so a model compiled once for nutpie is loaded, not compiled, the next time.
One Op registered without a key (an object-mode one) leaves its whole graph uncached. The key
also holds a digest of the source of the funcify's module and of every package module it
imports, transitively (:func:`source_closure`): a cached graph carries the machine code of every
kernel it calls, and a kernel calls only numba functions its module imports, so a change to any
of them (an upgrade, an edit) misses the old entries, while a change elsewhere in the package
keeps them.

:func:`register_jax` registers an Op's ``jax_funcify`` implementation beside the Op (its C and
NUMBA implementations are the numba kernels its module compiles): when JAX is not installed it
registers nothing, and the Op runs on the other backends only.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import multiprocessing
import os
from contextlib import nullcontext
from pathlib import Path

from threadpoolctl import ThreadpoolController

__all__ = [
    "object_mode_perform",
    "one_blas_thread_in_workers",
    "register_jax",
    "register_numba",
    "register_value_only",
    "source_closure",
    "worker_blas_limit",
]

#: ``(pid, controller)``: found afresh in each process, as a forked child must not use its
#: parent's.
_controller: tuple[int, ThreadpoolController] | None = None


def worker_blas_limit():
    """A context manager: one BLAS thread in a :mod:`multiprocessing` child, nothing otherwise."""
    global _controller
    if multiprocessing.parent_process() is None:
        return nullcontext()
    if _controller is None or _controller[0] != os.getpid():
        _controller = (os.getpid(), ThreadpoolController())
    return _controller[1].limit(limits=1, user_api="blas")


def one_blas_thread_in_workers(perform):
    """Decorate an Op's ``perform`` to run under :func:`worker_blas_limit`."""

    @functools.wraps(perform)
    def limited(*args, **kwargs):
        with worker_blas_limit():
            return perform(*args, **kwargs)

    return limited


def register_jax(op_class: type):
    """Decorate ``funcify(op, node=None, **kwargs)``, the JAX implementation of ``op_class``, to
    register it with PyTensor's ``jax_funcify``; without JAX it is returned unregistered."""

    def decorate(funcify):
        try:
            from pytensor.link.jax.dispatch import jax_funcify
        except ImportError:  # JAX is optional
            return funcify
        jax_funcify.register(op_class)(funcify)
        return funcify

    return decorate


def register_numba(op_class: type):
    """Decorate ``funcify(op, node=None, **kwargs)``, returning a numba function of the Op's
    ``__props__`` or ``(function, integer)``, to register it with PyTensor's ``numba_funcify``
    under a cache key of ``op_class``, its props and the integer (module notes); PyTensor
    versions without numba caching register it without a key."""
    from pytensor.link.numba.dispatch import basic

    register = getattr(basic, "register_funcify_default_op_cache_key", None)

    def decorate(funcify):
        @functools.wraps(funcify)
        def keyed(*args, **kwargs):
            result = funcify(*args, **kwargs)
            function, extra = result if isinstance(result, tuple) else (result, 0)
            if register is None:  # PyTensor before numba caching: no key
                return function
            digest = _source_digest(funcify.__module__)
            key = hashlib.sha256(f"{digest}:{extra}".encode()).hexdigest()
            return function, int(key[:15], 16)

        (register or basic.numba_funcify.register)(op_class)(keyed)
        return funcify

    return decorate


#: The package's folder: module ``pymc_sle.a.b`` is ``a/b.py`` or ``a/b/__init__.py`` in it.
_PACKAGE = Path(__file__).resolve().parent


def _module_path(module: str) -> Path | None:
    """The source file of package module ``module``, or None for a name that is not one."""
    base = _PACKAGE.parent.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_modules(module: str) -> set[str]:
    """The package modules ``module``'s source imports anywhere (a function's body too): ``import
    pymc_sle.a``, ``from pymc_sle.a import b`` (module ``pymc_sle.a.b`` if there is one, else
    ``pymc_sle.a``) and their relative forms."""
    path = _module_path(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*parent, *([node.module] if node.module else [])])
            else:
                source = node.module
            for alias in node.names:
                child = f"{source}.{alias.name}"
                found.add(child if _module_path(child) else source)
    return {name for name in found if name.split(".")[0] == _PACKAGE.name and _module_path(name)}


def source_closure(module: str) -> list[str]:
    """``module`` and the package modules it imports, transitively, sorted: the code a numba
    function of ``module`` can reach. A package's ``__init__`` that runs only because a module
    inside it is imported is not followed; one imported by name is."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_imported_modules(name))
    return sorted(seen)


@functools.cache
def _source_digest(module: str) -> str:
    """The SHA-256 of the source of :func:`source_closure` of ``module``, in name order."""
    digest = hashlib.sha256()
    for name in source_closure(module):
        digest.update(name.encode())
        digest.update(_module_path(name).read_bytes())
    return digest.hexdigest()


def object_mode_perform(op, node):
    """A numba function that runs ``op.perform`` for ``node`` in object mode (module notes):
    it returns the node's outputs as a tuple, or its only output."""
    import numba
    from pytensor.link.numba.dispatch.basic import get_numba_type

    signature = numba.types.Tuple([get_numba_type(output.type) for output in node.outputs])
    n_outputs = len(node.outputs)

    def python_perform(*inputs):
        storage = [[None] for _ in range(n_outputs)]
        op.perform(node, inputs, storage)
        return tuple(cell[0] for cell in storage)

    @numba.njit
    def perform(*inputs):
        with numba.objmode(result=signature):
            result = python_perform(*inputs)
        return result

    if n_outputs > 1:
        return perform

    @numba.njit
    def value_only(*inputs):
        return perform(*inputs)[0]

    return value_only


def register_value_only(op_class: type, value_only) -> None:
    """Register a specialisation rewrite: a node of ``op_class`` with ``with_gradients`` whose
    gradient outputs (all outputs after the first) have no clients becomes
    ``value_only(op)(*inputs)``, the variant that skips the gradient's work."""
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.rewriting.basic import register_specialize

    def rewrite(fgraph, node):
        if not node.op.with_gradients:
            return None
        if any(fgraph.clients.get(output) for output in node.outputs[1:]):
            return None
        value = value_only(node.op)(*node.inputs)
        return [value] + [None] * (len(node.outputs) - 1)

    rewrite.__name__ = f"local_{op_class.__name__}_value_only"
    register_specialize(node_rewriter([op_class])(rewrite))
