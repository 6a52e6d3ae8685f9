"""Attributes of a package imported on first use (PEP 562), so that importing it stays cheap.

A package lists its public names once, in a table ``name -> (module, attribute)`` (``attribute``
``None`` for the module itself), and repeats them as imports in an ``if TYPE_CHECKING:`` block
for type checkers and editors; ``tests/test_api.py`` checks that the two agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, table: Mapping[str, tuple[str, str | None]]):
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, whose public names are the
    keys of ``table``. ``dir(package)`` lists those names only.

    The first access to a name imports its module and caches the value in the package's
    namespace, so later lookups are plain attribute reads.
    """
    table = dict(table)

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, attribute = table[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__():  # the public names only, not the ``__init__``'s own imports and helpers
        return sorted(table)

    return __getattr__, __dir__, sorted(table)
