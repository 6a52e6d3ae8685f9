"""The public API: what ``__all__`` promises resolves, is documented, and each module has one
import path."""

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_sle

#: The public namespaces: the package, its stages and their public modules.
NAMESPACES = [
    "pymc_sle",
    "pymc_sle.distances",
    "pymc_sle.kernels",
    "pymc_sle.kernels.baselines",
    "pymc_sle.kernels.spectral",
    "pymc_sle.gp",
    "pymc_sle.inference",
    "pymc_sle.inference.priors",
    "pymc_sle.inference.grid",
    "pymc_sle.evaluation",
    "pymc_sle.evaluation.metrics",
    "pymc_sle.evaluation.diagnostics",
    "pymc_sle.evaluation.holdout",
    "pymc_sle.datasets",
    "pymc_sle.plotting",
    "pymc_sle.demo",
    "pymc_sle.cli",
]
API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.rst"


@pytest.mark.parametrize("module_name", NAMESPACES)
def test_every_exported_name_resolves_and_is_documented(module_name):
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no docstring"
    for name in module.__all__:
        assert not name.startswith("_") or name == "__version__", f"{module_name}.{name}"
        value = getattr(module, name)  # AttributeError names the missing export
        if inspect.isfunction(value) or inspect.isclass(value) or inspect.ismodule(value):
            assert inspect.getdoc(value), f"{module_name}.{name} has no docstring"


def _api_pages() -> list[object]:
    """The objects with a page of their own: the autosummary entries of docs/api.rst, which are
    names relative to ``pymc_sle``."""
    entries = re.findall(r"^   ([A-Za-z_][\w.]*)$", API_PAGE.read_text(), flags=re.MULTILINE)
    objects = []
    for entry in entries:
        value = importlib.import_module("pymc_sle")
        for part in entry.split("."):
            value = getattr(value, part)
        objects.append(value)
    return objects


def test_every_public_function_and_class_has_an_api_page():
    documented = _api_pages()
    for module_name in NAMESPACES:
        module = importlib.import_module(module_name)
        if module_name == "pymc_sle.cli":
            continue  # the command: documented by its --help and the getting-started page
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) or inspect.isclass(value):
                assert any(value is page for page in documented), (
                    f"{module_name}.{name} has no page in docs/api.rst"
                )


@pytest.mark.parametrize(
    "short, module",
    [
        ("priors", "pymc_sle.inference.priors"),
        ("metrics", "pymc_sle.evaluation.metrics"),
        ("diagnostics", "pymc_sle.evaluation.diagnostics"),
        ("baselines", "pymc_sle.kernels.baselines"),
        ("spectral", "pymc_sle.kernels.spectral"),
    ],
)
def test_short_names_are_attributes_of_the_package_not_second_import_paths(short, module):
    assert getattr(pymc_sle, short) is importlib.import_module(module)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"pymc_sle.{short}")


@pytest.mark.parametrize("module_name", ["pymc_sle", "pymc_sle.distances"])
def test_type_checking_imports_name_what_the_package_imports_lazily(module_name):
    """The ``if TYPE_CHECKING:`` block editors read lists the same names, from the same places,
    as the table ``__getattr__`` imports them from."""
    module = importlib.import_module(module_name)
    block = next(
        node
        for node in ast.parse(Path(module.__file__).read_text()).body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    for statement in block.body:
        for alias in statement.names:
            name = alias.asname or alias.name
            assert name in module.__all__
            value = getattr(importlib.import_module(statement.module), alias.name, None)
            if value is None:  # a submodule imported by name
                value = importlib.import_module(f"{statement.module}.{alias.name}")
            assert getattr(module, name) is value, name
    assert len(module.__all__) - (module_name == "pymc_sle") == sum(
        len(statement.names) for statement in block.body
    )


def test_version():
    assert pymc_sle.__version__.count(".") == 2


#: What ``import pymc_sle as sle`` makes reachable as ``sle.<name>``.
PUBLIC_MODULES = ["distances", "kernels", "gp", "inference", "evaluation", "datasets", "plotting",
                  "demo", "priors", "metrics", "diagnostics", "baselines", "spectral"]  # fmt: skip


def test_every_public_module_is_an_attribute_of_a_fresh_import():
    """``import pymc_sle as sle`` then ``sle.plotting.plot_mesh_field`` works in a new interpreter
    (no earlier import of the submodule), and the import itself does not load PyMC."""
    code = (
        "import inspect, sys\n"
        "import pymc_sle as sle\n"
        "assert 'pymc' not in sys.modules\n"
        f"for name in {PUBLIC_MODULES!r}:\n"
        "    assert inspect.ismodule(getattr(sle, name)), name\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.mark.parametrize("module_name", ["pymc_sle", "pymc_sle.distances"])
def test_dir_shows_the_public_api_only(module_name):
    """``dir(pymc_sle)`` is what a user tabs through: no ``sys``, ``importlib``, helpers."""
    module = importlib.import_module(module_name)
    assert sorted(dir(module)) == sorted(module.__all__)
