"""Items in checkpoint records: JSON out, the same items back — final custom items included.

A final custom item (`noetic.custom_items.CustomItem`) is an extension item to the wire
format, so its position is listed under `custom` next to the item list. On the way back it is
rebuilt as a `CustomItem` bound to its declaration, found by type among the declarations of the
agent graph (`declarations_of`); `is_custom_item(item, decl)` then holds for a restored item as
it did for the original.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from noetic.custom_items import CustomItem, CustomItemDecl
from noetic.items import Item, dump_item, parse_item
from noetic.schema import SchemaError

if TYPE_CHECKING:
    from noetic.steps.base import Step

__all__ = ["Declarations", "declarations_of", "dump_items", "load_items"]

#: Custom-item declarations by item type.
Declarations = Mapping[str, CustomItemDecl[Any, Any]]


def declarations_of(graph: Step | None, extra: Iterable[CustomItemDecl[Any, Any]] = ()) -> Declarations:
    """Every declaration in scope somewhere in `graph`, by type (plus `extra`)."""
    found: dict[str, CustomItemDecl[Any, Any]] = {decl.type: decl for decl in extra}
    pending = [graph] if graph is not None else []
    while pending:
        step = pending.pop()
        for decl in step.custom_items.values():
            found.setdefault(decl.type, decl)
        pending.extend(step.children())
    return found


def dump_items(items: Sequence[Item]) -> dict[str, Any]:
    """`{"items": [...], "custom": [positions of final custom items]}`."""
    return {
        "items": [dump_item(item) for item in items],
        "custom": [i for i, item in enumerate(items) if isinstance(item, CustomItem)],
    }


def load_items(data: Mapping[str, Any], declarations: Declarations) -> list[Item]:
    """The items of a `dump_items` record (a bad shape raises `INVALID_ITEM`)."""
    custom = set(data.get("custom", ()))
    return [
        _custom(raw, declarations) if i in custom else parse_item(raw)
        for i, raw in enumerate(data.get("items", ()))
    ]


def _custom(raw: Mapping[str, Any], declarations: Declarations) -> Item:
    if not (isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and ":" in str(raw.get("type"))):
        return parse_item(raw)  # not a final custom item's shape: parsed as it is, or INVALID_ITEM
    fields = {k: v for k, v in raw.items() if k not in ("id", "type")}
    decl = declarations.get(raw["type"])
    if decl is not None:  # rows written before final items lost `status` and `data`
        declared = decl.output.property_names()
        for legacy, default in (("status", "completed"), ("data", {})):
            if legacy not in declared and fields.get(legacy) == default:
                del fields[legacy]
    item = CustomItem.final(raw["id"], raw["type"], fields)
    if decl is not None:
        try:
            item._output = decl.output.validate(fields)
        except SchemaError:
            return item  # the declaration changed since the item was recorded: keep it unbound
        item._declaration = decl
    return item
