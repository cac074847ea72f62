"""Items in checkpoint records: JSON out, the same items back — final custom items included.

A final custom item (`noetic.custom_items.CustomItem`) is an extension item to the wire
format, so its position is listed under `custom` next to the item list. On the way back it is
rebuilt as a `CustomItem` bound to its declaration, found by type among the declarations of the
agent graph (`declarations_of`); `is_custom_item(item, decl)` then holds for a restored item as
it did for the original.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, NonNegativeInt, model_validator

from noetic.custom_items import CustomItem, CustomItemDecl
from noetic.durable.store import MAX_DEPTH, encode_document
from noetic.items import Item, dump_item, parse_item
from noetic.schema import SchemaError

if TYPE_CHECKING:
    from noetic.steps.base import Step

__all__ = [
    "ITEM_DEPTH",
    "Declarations",
    "ItemsRecord",
    "declarations_of",
    "dump_items",
    "item_json",
    "items_json",
    "load_items",
]

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


class ItemsRecord(BaseModel):
    """The stored shape of a list of items (what `items_json` writes), checked on the way back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[dict[str, Any]]
    custom: list[NonNegativeInt] = []

    @model_validator(mode="after")
    def _positions_in_range(self) -> ItemsRecord:
        if any(i >= len(self.items) for i in self.custom):
            raise ValueError("a custom-item position is past the end of the item list")
        return self


#: How deep one item may nest: records hold items three levels down (`{"items": {"items": [...]}}`).
ITEM_DEPTH = MAX_DEPTH - 3


class _ItemRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to a cached item that knows its cache key (lighter than a finalizer)."""

    __slots__ = ("key",)
    key: int


#: Each item's JSON text by item object, dropped when the item is (see `item_json`).
_texts: dict[int, tuple[_ItemRef, str]] = {}


def _drop(ref: _ItemRef) -> None:
    found = _texts.get(ref.key)
    if found is not None and found[0] is ref:
        del _texts[ref.key]


def item_json(item: Item) -> str:
    """The item's JSON text, encoded once per item object.

    Items are frozen values, and an item's text is needed more than once (the ledger entry of
    the step that appended it, the thread's history piece), so caching it keeps the later
    writes to joining strings. An entry is dropped
    when its item is collected. Raises `ValueError` or `TypeError` for an item that is not
    plain JSON or nests deeper than `ITEM_DEPTH`.
    """
    key = id(item)
    found = _texts.get(key)
    if found is not None and found[0]() is item:
        return found[1]
    text = encode_document(dump_item(item), max_depth=ITEM_DEPTH)
    ref = _ItemRef(item, _drop)
    ref.key = key
    _texts[key] = (ref, text)
    return text


def dump_items(items: Sequence[Item]) -> dict[str, Any]:
    """The record of `items` as data: what `items_json` writes as text."""
    record: dict[str, Any] = json.loads(items_json(items))
    return record


def items_json(items: Sequence[Item]) -> str:
    """`{"items": [...], "custom": [positions of final custom items]}` as JSON text."""
    custom = [i for i, item in enumerate(items) if isinstance(item, CustomItem)]
    listed = ",".join(item_json(item) for item in items)
    return f'{{"items":[{listed}],"custom":{json.dumps(custom)}}}'


def load_items(record: ItemsRecord | Mapping[str, Any], declarations: Declarations) -> list[Item]:
    """The items of an `items_json` / `dump_items` record (a record or an item of a bad shape
    raises `INVALID_ITEM` or a `pydantic.ValidationError`)."""
    if not isinstance(record, ItemsRecord):
        record = ItemsRecord.model_validate(record)
    custom = set(record.custom)
    return [
        _custom(raw, declarations) if i in custom else parse_item(raw) for i, raw in enumerate(record.items)
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
