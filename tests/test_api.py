"""The public API: what ``__all__`` promises resolves and is documented, each object has one
public path and one API page under it, and the flat names a modeller types are at ``sle.``."""

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_sle

#: The public namespaces: the package and its subpackages (and the demo, plots and command).
NAMESPACES = [
    "pymc_sle",
    "pymc_sle.distances",
    "pymc_sle.kernels",
    "pymc_sle.gp",
    "pymc_sle.inference",
    "pymc_sle.evaluation",
    "pymc_sle.datasets",
    "pymc_sle.plotting",
    "pymc_sle.demo",
    "pymc_sle.cli",
]
API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.rst"
PACKAGE = Path(pymc_sle.__file__).parent


def _objects(module_name: str):
    """The functions and classes a namespace exports, by name."""
    module = importlib.import_module(module_name)
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            yield name, value


@pytest.mark.parametrize("module_name", NAMESPACES)
def test_every_exported_name_resolves_and_is_documented(module_name):
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no docstring"
    for name in module.__all__:
        assert not name.startswith("_") or name == "__version__", f"{module_name}.{name}"
        value = getattr(module, name)  # AttributeError names the missing export
        if inspect.isfunction(value) or inspect.isclass(value) or inspect.ismodule(value):
            assert inspect.getdoc(value), f"{module_name}.{name} has no docstring"


def test_every_object_has_one_public_path():
    paths: dict[int, list[str]] = {}
    for module_name in NAMESPACES:
        for name, value in _objects(module_name):
            paths.setdefault(id(value), []).append(f"{module_name}.{name}")
    assert [p for p in paths.values() if len(p) > 1] == []


def test_every_module_but_the_namespaces_is_private():
    """A module users import is one of the namespaces; the rest is ``_private``."""
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if name in NAMESPACES:
            continue
        assert any(part.startswith("_") for part in parts[1:]), name


@pytest.mark.parametrize(
    "name",
    ["SLE", "DistanceMatrix", "SparseDistanceMatrix", "sle_priors", "sample_basins", "find_map",
     "exact_loo", "own_landmark_predictive", "evaluate", "rmse", "psd_report"],
)  # fmt: skip
def test_the_names_a_modeller_types_are_at_the_top_level(name):
    assert name in pymc_sle.__all__


@pytest.mark.parametrize("alias", ["priors", "metrics", "diagnostics", "baselines", "spectral"])
def test_the_old_module_aliases_are_gone(alias):
    assert alias not in pymc_sle.__all__
    with pytest.raises(AttributeError, match=f"has no attribute {alias!r}"):
        getattr(pymc_sle, alias)


def _api_entries() -> list[str]:
    """The autosummary entries of docs/api.rst, relative to ``pymc_sle``."""
    return re.findall(r"^   ([A-Za-z_][\w.]*)$", API_PAGE.read_text(), flags=re.MULTILINE)


def test_every_public_function_and_class_has_one_api_page_under_its_path():
    entries = _api_entries()
    assert len(entries) == len(set(entries)), "an object documented twice"
    documented = {}
    for entry in entries:
        value = pymc_sle
        for part in entry.split("."):
            value = getattr(value, part)
        documented[id(value)] = entry
    for module_name in NAMESPACES:
        if module_name == "pymc_sle.cli":
            continue  # the command: documented by its --help and the getting-started page
        prefix = "" if module_name == "pymc_sle" else module_name.removeprefix("pymc_sle.") + "."
        for name, value in _objects(module_name):
            assert documented.get(id(value)) == prefix + name, (
                f"{module_name}.{name} has no page in docs/api.rst under that path"
            )


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


#: The subpackages ``import pymc_sle as sle`` makes reachable as ``sle.<name>``.
PUBLIC_MODULES = ["distances", "kernels", "gp", "inference", "evaluation", "datasets", "plotting",
                  "demo"]  # fmt: skip


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
