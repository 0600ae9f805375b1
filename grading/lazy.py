"""Lazy package interfaces (PEP 562): a package's ``__init__`` lists each public name under the module that
defines it, and that module loads on the name's first use, so importing a package loads none of its modules
(``rubric --help`` does not import the judge backends or the report)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: every package's __init__ loads this
if TYPE_CHECKING:
    from typing import Any


def lazy_interface(
    package: str, public: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> tuple[list[str], dict[str, str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, the module of each name, ``__getattr__`` and ``__dir__`` for ``package``, whose module
    globals are ``namespace``: ``public`` maps a defining module to the names it gives the interface."""
    module_of = {name: module for module, names in public.items() for name in names}
    names = sorted(module_of)

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # the next lookup is a plain module attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return names, module_of, __getattr__, __dir__
