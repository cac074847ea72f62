"""Names a package exports but imports only when first used (PEP 562 module `__getattr__`).

`import noetic` must stay cheap: features most programs never touch (workflows with their
JSONata engine, the SQLite store, the step ledger) are imported the first time one of their
names is looked up, then cached in the package like an ordinary import. Each lazy package keeps
a `{name: module}` table, imports those names under `TYPE_CHECKING` so type checkers see the
exact types, and defines `__getattr__` and `__dir__` through the two functions here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_attribute", "lazy_dir"]


def lazy_attribute(package: str, table: Mapping[str, str], name: str) -> Any:
    """Import `name` from the module `table` maps it to, and cache it on `package`."""
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    setattr(sys.modules[package], name, value)
    return value


def lazy_dir(namespace: Iterable[str], table: Mapping[str, str]) -> list[str]:
    """The names a lazy package offers: those already bound plus those still to import."""
    return sorted({*namespace, *table})
