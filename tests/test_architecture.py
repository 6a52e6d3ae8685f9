"""The package's shape, as CONTRIBUTING.md describes it: layers that import downwards only, no
circles, no private name imported from another module, few top-level modules, and PyMC's
internals reached from one module."""

import ast
import re
from pathlib import Path

import pytest

from tests.support import PACKAGE, module_name

#: The layers, lowest first: a module imports from its own layer and the ones below only.
LAYERS = {
    "_lazy": 0, "_validation": 0, "_pymc_compat": 0, "_backends": 0, "_linalg": 0,
    "_data_numbers": 0,
    "distances": 1, "kernels": 2, "gp": 3, "inference": 4, "evaluation": 5, "datasets": 6,
    "plotting": 7, "demo": 8, "cli": 8,
}  # fmt: skip

#: PyMC's private methods and the model's internal maps (``pymc_sle/_pymc_compat.py`` wraps them).
PYMC_INTERNALS = re.compile(
    r"\.(rvs_to_transforms|rvs_to_values|values_to_rvs|rvs_to_initial_values|get_a_and_b|"
    r"_build_marginal_likelihood|_build_conditional|_get_given_vals|_factor_list)\b"
)


def _imports(path: Path):
    """``(module, name)`` of every ``from pymc_sle... import name`` in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pymc_sle"):
            for alias in node.names:
                yield node.module, alias.name


def _is_module(module: str, name: str) -> bool:
    base = PACKAGE.parent.joinpath(*module.split("."))
    return (base / f"{name}.py").exists() or (base / name).is_dir()


def _layer(module: str) -> int:
    parts = module.split(".")
    return 9 if len(parts) == 1 else LAYERS[parts[1]]


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_private_name_is_imported_from_another_module(path):
    private = [f"{module}.{name}" for module, name in _imports(path)
               if name.startswith("_") and not name.startswith("__")
               and not _is_module(module, name)]  # fmt: skip
    assert private == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_run_down_the_layers(path):
    own = module_name(path)
    if own == "pymc_sle":
        return  # the front door names everything
    imported = [f"{module}.{name}" if _is_module(module, name) else module
                for module, name in _imports(path)]  # fmt: skip
    upward = [module for module in imported if _layer(module) > _layer(own)]
    assert upward == []


def test_the_imports_have_no_circle():
    graph = {}
    for path in MODULES:
        graph[module_name(path)] = {
            f"{module}.{name}" if _is_module(module, name) else module
            for module, name in _imports(path)
        } - {module_name(path)}
    state: dict[str, int] = {}

    def visit(module, trail):
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            assert state.get(target) != 1, " -> ".join([*trail, module, target])
            if target in graph and not state.get(target):
                visit(target, [*trail, module])
        state[module] = 2

    for module in graph:
        if module != "pymc_sle" and not state.get(module):
            visit(module, [])


def test_at_most_eight_modules_at_the_top_level():
    assert len([p for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]) <= 8


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_pymc_internals_are_reached_from_pymc_compat_alone(path):
    if path.name == "_pymc_compat.py":
        return
    assert PYMC_INTERNALS.findall(path.read_text()) == []
