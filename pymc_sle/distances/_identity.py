"""What a metric computes, as a hash: the identity a resumable store records in its manifest.

A name is not enough: a metric edited between two runs, or a closure created with other captured
values, would resume from blocks it did not compute. The identity therefore covers

- a Python function's code (bytecode and constants, nested functions included), its defaults,
  the values it captured (closure cells), and the module-level values and same-module functions
  it refers to, recursively;
- ``functools.partial`` objects (their function, arguments and keywords) and bound methods;
- a callable instance's class (its ``__call__``'s code) and its pickled state;
- a built-in (C) function's qualified name and its package's version.

Anything the hash cannot see through (an unpicklable captured value) is refused: the caller
must pass an explicit ``metric_id``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import sys
import types

import joblib

__all__ = ["metric_identity", "metric_name"]

_MAX_DEPTH = 8


def metric_name(metric) -> str:
    """``module.qualname`` of a metric (or of its class)."""
    name = getattr(metric, "__qualname__", None) or type(metric).__qualname__
    return f"{getattr(metric, '__module__', '')}.{name}"


def _code_state(code: types.CodeType) -> tuple:
    constants = tuple(
        _code_state(c) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return (code.co_code, constants, code.co_names, code.co_varnames)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return names


def _package_version(module_name: str) -> str:
    top = (module_name or "").split(".")[0]
    try:
        return importlib.metadata.version(top)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return getattr(sys.modules.get(top), "__version__", "")


def _value_state(value, depth: int, seen: set[int]):
    if callable(value) and not isinstance(value, type):
        return _callable_state(value, depth + 1, seen)
    if isinstance(value, types.ModuleType | type):
        name = getattr(value, "__qualname__", value.__name__)
        return ("ref", getattr(value, "__module__", ""), name)
    return value


def _function_state(function: types.FunctionType, depth: int, seen: set[int]) -> tuple:
    referenced = {}
    for name in sorted(_global_names(function.__code__)):
        if name in function.__globals__:
            referenced[name] = _value_state(function.__globals__[name], depth, seen)
    closure = tuple(
        _value_state(cell.cell_contents, depth, seen) for cell in function.__closure__ or ()
    )
    return (
        "function",
        metric_name(function),
        _code_state(function.__code__),
        function.__defaults__,
        function.__kwdefaults__,
        closure,
        referenced,
    )


def _callable_state(metric, depth: int, seen: set[int]):
    if id(metric) in seen or depth > _MAX_DEPTH:  # recursion, or a deep chain of helpers
        return ("seen", metric_name(metric))
    seen = seen | {id(metric)}
    if isinstance(metric, functools.partial):
        return ("partial", _callable_state(metric.func, depth, seen), metric.args, metric.keywords)
    if isinstance(metric, types.MethodType):
        return ("method", _callable_state(metric.__func__, depth, seen), metric.__self__)
    if isinstance(metric, types.FunctionType):
        if _is_library(metric.__module__):
            return ("library", metric_name(metric), _package_version(metric.__module__))
        return _function_state(metric, depth, seen)
    if isinstance(metric, types.BuiltinFunctionType | types.BuiltinMethodType):
        version = _package_version(getattr(metric, "__module__", ""))
        return ("builtin", metric_name(metric), version)
    call = inspect.getattr_static(type(metric), "__call__", None)
    call_state = None
    if isinstance(call, types.FunctionType):
        call_state = _function_state(call, depth, seen)
    return ("instance", metric_name(metric), call_state, metric)


def _is_library(module_name: str) -> bool:
    """Installed third-party packages (site-packages) are identified by name and version: their
    code changes only with their version."""
    module = sys.modules.get(module_name or "")
    path = getattr(module, "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path


def metric_identity(metric) -> str:
    """``"module.qualname:hash"`` of everything ``metric`` computes with (module notes).

    Raises
    ------
    TypeError
        If the metric's state cannot be hashed (e.g. a captured lock or open file): pass
        ``metric_id`` to name the computation explicitly.
    """
    try:
        digest = joblib.hash(_callable_state(metric, 0, set()))
    except Exception as err:
        raise TypeError(
            f"cannot tell what `metric` {metric_name(metric)} computes for a resumable `store` "
            f"({type(err).__name__}: {err}); pass `metric_id`, a string that changes whenever the "
            "metric's code or parameters do"
        ) from err
    return f"{metric_name(metric)}:{digest}"
