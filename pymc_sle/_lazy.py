"""Attributes of a package imported on first use (PEP 562), so that importing it stays cheap.

A package lists its public names once, as imports in an ``if TYPE_CHECKING:`` block: type
checkers, editors and the API documentation read them statically, and :func:`lazy_attributes`
reads the same block to know where each name lives (the idea of ``lazy_loader.attach_stub``,
without a separate stub file).
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

__all__ = ["lazy_attributes"]


def _type_checking_imports(init_file: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` for every ``from module import attribute [as name]`` in
    the ``if TYPE_CHECKING:`` blocks of ``init_file``."""
    table = {}
    for node in ast.parse(Path(init_file).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if not isinstance(statement, ast.ImportFrom) or statement.level:
                    message = "only absolute 'from ... import' statements in TYPE_CHECKING"
                    raise TypeError(f"{init_file}: {message}")
                for alias in statement.names:
                    table[alias.asname or alias.name] = (statement.module, alias.name)
    return table


def lazy_attributes(package: str, init_file: str):
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, whose public names are the
    imports of the ``if TYPE_CHECKING:`` block in its ``__init__.py`` (``init_file``).
    ``dir(package)`` lists those names only.

    The first access to a name imports its module and caches the value in the package's
    namespace; ``from package import submodule`` entries load the submodule.
    """
    table = _type_checking_imports(init_file)

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, attribute = table[name]
        if module_name == package:
            value = importlib.import_module(f"{package}.{attribute}")
        else:
            value = getattr(importlib.import_module(module_name), attribute)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__():  # the public names only, not the ``__init__``'s own imports and helpers
        return sorted(table)

    return __getattr__, __dir__, sorted(table)
