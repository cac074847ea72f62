"""Custom items: declared progress and result shapes that stream while a step works (CI-1..CI-15).

`custom_item(type, event=..., output=...)` declares a shape. A step emits it through
`emit_items`:

- the hook form `{"item": name, "on_start": fn, "on_done": fn}` — `on_start(input, ctx)` and
  `on_done(output, ctx)` may be plain, async, generator or async-generator functions: what they
  yield are events, what they return (or yield last as `Return(fields)`) are the final fields;
  a generator step body's yields are events of the named item too;
- `emit_items=True` — the step output itself is emitted: a dict whose `type` names an item in
  scope becomes that item, a string becomes an assistant message.

One dispatch (one step execution) owns one id, shared by all its events and its final item
(CI-5). Events stream only; the final item lands in the log (CI-7). Every event and the final
item are validated; a mismatch fails the step with `INVALID_CUSTOM_ITEM` (CI-6).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, TypeGuard, TypeVar, overload

from pydantic import BaseModel, PrivateAttr, SerializerFunctionWrapHandler, model_serializer

from noetic.errors import NoeticConfigError, NoeticError
from noetic.ids import new_item_id
from noetic.items import ExtensionItem, assistant_message
from noetic.records import FrozenRecord, set_field
from noetic.schema import Schema, SchemaError, to_jsonable

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.steps.base import Step
    from noetic.streams import StreamEvent

__all__ = [
    "CustomItem",
    "CustomItemDecl",
    "CustomItemEvent",
    "Return",
    "current_dispatch",
    "custom_item",
    "is_custom_item",
    "is_custom_item_event",
]

#: Fields every final item carries itself; an output schema may not declare them (CI-2).
#: A final item is exactly `{id, type, **output}`, so `status` and `data` are free for output.
_RESERVED_FIELDS = frozenset({"id", "type"})

OutT = TypeVar("OutT")
EventT = TypeVar("EventT")
M = TypeVar("M", bound=BaseModel)


class Return:
    """Yield `Return(value)` last from an async-generator body or hook to give its return
    value (async generators cannot `return value`)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"Return({self.value!r})"


class CustomItemDecl(Generic[OutT, EventT]):
    """A declared custom item: its `prefix:name` type, event schema and output schema."""

    __slots__ = ("description", "event", "output", "type")

    def __init__(self, type: str, *, description: str | None, event: Schema | None, output: Schema):
        self.type = type
        self.description = description
        self.event = event
        self.output = output

    def __repr__(self) -> str:
        return f"custom_item({self.type!r})"


@overload
def custom_item(
    type: str, *, description: str | None = None, event: type[M], output: type[OutT]
) -> CustomItemDecl[OutT, M]: ...
@overload
def custom_item(
    type: str, *, description: str | None = None, event: Any = None, output: type[OutT]
) -> CustomItemDecl[OutT, Any]: ...
@overload
def custom_item(
    type: str, *, description: str | None = None, event: Any = None, output: Mapping[str, Any] | Schema
) -> CustomItemDecl[dict[str, Any], Any]: ...
def custom_item(
    type: str, *, description: str | None = None, event: Any = None, output: Any
) -> CustomItemDecl[Any, Any]:
    """Declare a custom item (CI-1, CI-2).

    `type` is `prefix:name`; `event` and `output` are pydantic models or JSON Schema dicts.
    `output` must describe an object and must not declare `id` or `type` (the runtime adds them).
    """
    prefix, colon, name = type.partition(":") if isinstance(type, str) else ("", "", "")
    if not (colon and prefix and name):
        raise NoeticConfigError(
            "INVALID_CUSTOM_ITEM_TYPE",
            f"custom item type {type!r} is not of the form 'prefix:name'",
            hint="Namespace the type with a colon, for example 'myapp:progress'.",
        )
    event_schema = Schema.of(event) if event is not None else None
    output_schema = Schema.of(output)
    for label, schema in (("event", event_schema), ("output", output_schema)):
        if schema is None:
            continue
        try:
            schema.check()
        except SchemaError as exc:
            raise NoeticConfigError(
                "INVALID_CUSTOM_ITEM_OUTPUT",
                f"custom item {type!r}: the {label} schema is not a valid JSON Schema: {exc}",
                hint="Fix the schema; it must be a JSON Schema (draft 2020-12) or a pydantic model.",
            ) from exc
    if not output_schema.describes_object():
        raise NoeticConfigError(
            "INVALID_CUSTOM_ITEM_OUTPUT",
            f"custom item {type!r}: output must describe an object",
            hint="Give output a pydantic model or a JSON Schema with type 'object'.",
        )
    reserved = output_schema.property_names() & _RESERVED_FIELDS
    if reserved:
        raise NoeticConfigError(
            "INVALID_CUSTOM_ITEM_OUTPUT",
            f"custom item {type!r}: output declares {', '.join(sorted(reserved))}, which every item already has",
            hint="Rename those fields: a final item is {id, type, **output}, so its output "
            "fields may not be called 'id' or 'type'.",
        )
    return CustomItemDecl(type, description=description, event=event_schema, output=output_schema)


class CustomItem(ExtensionItem, Generic[OutT, EventT]):
    """A custom item: the final item (`is_complete`, output fields as attributes and in
    `.output`) or an in-progress snapshot on the item stream (`.event` = latest payload).

    A final item is exactly `{id, type, **output}` (CI-2): its wire form and its log entry hold
    the declared fields and nothing else — no `status`, no `data` unless the output declares
    them, in which case `item.status` / `item.data` are those output fields. Build one with
    `CustomItem.final`, a stream snapshot with `CustomItem.snapshot`.
    """

    _declaration: CustomItemDecl[Any, Any] | None = PrivateAttr(default=None)
    _event: Any = PrivateAttr(default=None)
    _output: Any = PrivateAttr(default=None)
    #: The output field names of a final item (None for a snapshot).
    _fields: tuple[str, ...] | None = PrivateAttr(default=None)

    @classmethod
    def final(cls, item_id: str, type: str, fields: Mapping[str, Any]) -> CustomItem[Any, Any]:
        """A final item of `type` whose fields are exactly `fields` (already plain JSON).

        Built without validation on purpose: the output schema, not the generic item shape,
        decides what `status` or `data` may hold.
        """
        item: CustomItem[Any, Any] = cls.model_construct(id=item_id, type=type, **fields)
        item._fields = tuple(fields)
        return item

    @classmethod
    def snapshot(
        cls, item_id: str, type: str, decl: CustomItemDecl[Any, Any], event: Any
    ) -> CustomItem[Any, Any]:
        """An in-progress snapshot carrying the latest event (item stream only, never logged)."""
        item: CustomItem[Any, Any] = cls.model_construct(id=item_id, type=type, status="in_progress")
        item._declaration = decl
        item._event = event
        return item

    @property
    def is_complete(self) -> bool:
        """True for a final item, False for an in-progress snapshot."""
        return self._fields is not None

    @model_serializer(mode="wrap")
    def _wire(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        if self._fields is None:  # a snapshot: {id, type, status: "in_progress"}
            return {"id": self.id, "type": self.type, "status": self.status}
        return {"id": self.id, "type": self.type, **{name: getattr(self, name) for name in self._fields}}

    @property
    def declaration(self) -> CustomItemDecl[OutT, EventT] | None:
        """The declaration this item was emitted from (None for a parsed item)."""
        return self._declaration

    @property
    def event(self) -> EventT | None:
        """The latest event payload (in-progress snapshots only)."""
        event: EventT | None = self._event
        return event

    @property
    def output(self) -> OutT | None:
        """The validated final fields (a model instance for a pydantic output)."""
        output: OutT | None = self._output
        return output


class CustomItemEvent(FrozenRecord, Generic[EventT]):
    """The data of a `custom_item_event` stream event."""

    __slots__ = ("declaration", "event", "id", "name", "type")
    id: str
    type: str
    name: str
    event: EventT
    declaration: CustomItemDecl[Any, EventT]

    def __init__(
        self, id: str, type: str, name: str, event: EventT, declaration: CustomItemDecl[Any, EventT]
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "type", type)
        set_field(self, "name", name)
        set_field(self, "event", event)
        set_field(self, "declaration", declaration)


def is_custom_item(item: object, decl: CustomItemDecl[OutT, EventT]) -> TypeGuard[CustomItem[OutT, EventT]]:
    """True when `item` was emitted from `decl` (a type match alone is not enough, CI-13)."""
    return isinstance(item, CustomItem) and item._declaration is decl


def is_custom_item_event(event: StreamEvent, decl: CustomItemDecl[Any, EventT]) -> TypeGuard[StreamEvent]:
    """True when a full-stream event is an event of an item emitted from `decl`."""
    data = getattr(event, "data", None)
    return isinstance(data, CustomItemEvent) and data.declaration is decl


# --- emitting ---------------------------------------------------------------------------------


def _invalid(name: str, decl: CustomItemDecl[Any, Any], what: str, exc: SchemaError) -> NoeticError:
    first = exc.problems[0]
    return NoeticError(
        "INVALID_CUSTOM_ITEM",
        f"custom item {name!r} ({decl.type}): {what} does not match its schema: {exc}",
        item=name,
        type=decl.type,
        field=first.path,
        expected=first.message,
    )


class Dispatch:
    """One step execution's emission of one custom item: one id, many events, one final."""

    __slots__ = ("ctx", "decl", "final_fields", "has_final", "id", "name", "step")

    def __init__(self, step: Step, name: str, decl: CustomItemDecl[Any, Any], ctx: Context):
        self.step = step
        self.name = name
        self.decl = decl
        self.ctx = ctx
        self.id = new_item_id("ci")
        self.has_final = False
        self.final_fields: Any = None

    def event(self, payload: Any) -> None:
        """Validate and stream one event."""
        decl = self.decl
        if decl.event is None:
            raise NoeticError(
                "INVALID_CUSTOM_ITEM",
                f"custom item {self.name!r} ({decl.type}) declares no event schema, so it cannot stream events",
                item=self.name,
                type=decl.type,
                field="",
                expected="no events",
            )
        try:
            value = decl.event.validate(to_jsonable(payload))
        except SchemaError as exc:
            raise _invalid(self.name, decl, "event", exc) from None
        data = CustomItemEvent(self.id, decl.type, self.name, value, decl)
        self.ctx._exec.emit("custom_item_event", data)

    def final(self, fields: Any) -> None:
        """Record the final fields (at most one final item per dispatch, CI-7)."""
        if self.has_final:
            raise NoeticError(
                "INVALID_CUSTOM_ITEM",
                f"custom item {self.name!r} ({self.decl.type}) got a second final item in one dispatch",
                item=self.name,
                type=self.decl.type,
                field="",
                expected="at most one final item",
            )
        self.has_final = True
        self.final_fields = fields

    def close(self) -> None:
        """Validate the final fields and append the final item to the log."""
        if self.has_final:
            append_final(self.ctx, self.name, self.decl, self.final_fields, item_id=self.id)


def append_final(
    ctx: Context, name: str, decl: CustomItemDecl[Any, Any], fields: Any, *, item_id: str | None = None
) -> CustomItem[Any, Any]:
    """Validate `fields` against `decl.output` and append the final item to the log."""
    raw = to_jsonable(fields)
    try:
        output = decl.output.validate(raw)
    except SchemaError as exc:
        raise _invalid(name, decl, "final item", exc) from None
    dumped = to_jsonable(output)
    clash = sorted(_RESERVED_FIELDS & set(dumped))
    if clash:  # an open output schema let them through; the runtime owns them (CI-2)
        raise NoeticError(
            "INVALID_CUSTOM_ITEM",
            f"custom item {name!r} ({decl.type}): the final item's fields include {', '.join(clash)}, "
            "which the runtime sets itself",
            item=name,
            type=decl.type,
            field=clash[0],
            expected="no 'id' or 'type' field",
        )
    item = CustomItem.final(item_id or new_item_id("ci"), decl.type, dumped)
    item._declaration = decl
    item._output = output
    ctx.item_log.append(item)
    return item


_dispatch: ContextVar[Dispatch | None] = ContextVar("noetic_dispatch", default=None)


def current_dispatch(step: Step) -> Dispatch | None:
    """The dispatch of `step` if it is running in this task and emits a named item."""
    dispatch = _dispatch.get()
    return dispatch if dispatch is not None and dispatch.step is step else None


def check_emit_items(step: Step) -> None:
    """Validate the shape of `step.emit_items` at construction."""
    spec = step.emit_items
    if spec is True:
        return
    if not isinstance(spec, Mapping) or not isinstance(spec.get("item"), str):
        raise NoeticConfigError(
            "UNKNOWN_CUSTOM_ITEM",
            f"step {step.id!r}: emit_items must be True or a dict with an 'item' name, got {spec!r}",
            hint="Write emit_items={'item': 'progress', 'on_done': ...} or emit_items=True.",
        )
    unknown = set(spec) - {"item", "on_start", "on_done"}
    if unknown:
        raise NoeticConfigError(
            "UNKNOWN_CUSTOM_ITEM",
            f"step {step.id!r}: emit_items has unknown keys {sorted(unknown)}",
            hint="emit_items takes only 'item', 'on_start' and 'on_done'.",
        )
    for key in ("on_start", "on_done"):
        if spec.get(key) is not None and not callable(spec[key]):
            raise NoeticConfigError(
                "UNKNOWN_CUSTOM_ITEM",
                f"step {step.id!r}: emit_items[{key!r}] is not callable",
                hint="Pass a function taking (value, ctx).",
            )


def resolve_item(name: str, step: Step, ctx: Context) -> CustomItemDecl[Any, Any]:
    """Find `name` in the step's custom items, then among plugin-registered ones."""
    decl = step.custom_items.get(name)
    if decl is not None:
        return decl
    registry = ctx._exec.harness._registered_custom_items()
    if registry is not None and name in registry:
        found: CustomItemDecl[Any, Any] = registry.resolve(name)
        return found
    raise NoeticConfigError(
        "UNKNOWN_CUSTOM_ITEM",
        f"step {step.id!r} emits custom item {name!r}, which is not in scope",
        hint="Declare it in the step's custom_items={...} (or register it through register_custom_items).",
    )


async def drive_hook(fn: Callable[..., Any], value: Any, ctx: Context, dispatch: Dispatch) -> Any:
    """Run a hook or body of any of the four shapes; yields go to `dispatch.event`.

    Returns the function's return value (or the value of a final `Return`).
    """
    from noetic.steps.base import takes_ctx

    result = fn(value, ctx) if takes_ctx(fn) else fn(value)
    return await drain(result, dispatch.event)


async def drain(result: Any, on_yield: Callable[[Any], None] | None) -> Any:
    """Resolve a call result: await a coroutine, iterate a (async) generator sending each
    yield to `on_yield`, and return the final value."""
    if inspect.isawaitable(result):
        return await result
    if inspect.isgenerator(result):
        while True:
            try:
                yielded = next(result)
            except StopIteration as stop:
                return stop.value
            if isinstance(yielded, Return):
                result.close()
                return yielded.value
            if on_yield is not None:
                on_yield(yielded)
    if inspect.isasyncgen(result):
        try:
            async for yielded in result:
                if isinstance(yielded, Return):
                    return yielded.value
                if on_yield is not None:
                    on_yield(yielded)
        finally:
            await result.aclose()
        return None
    return result


def _emit_output(step: Step, output: Any, ctx: Context) -> None:
    """`emit_items=True`: emit the step output itself (CI-8)."""
    if isinstance(output, str):
        ctx.item_log.append(assistant_message(output))
        return
    raw = to_jsonable(output)
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        return
    for name, decl in step.custom_items.items():
        if decl.type == raw["type"]:
            fields = {k: v for k, v in raw.items() if k not in ("type", "id")}
            append_final(ctx, name, decl, fields, item_id=raw.get("id"))
            return


async def run_with_dispatch(step: Step, input: Any, ctx: Context) -> Any:
    """Run `step` with its `emit_items` (called by the interpreter)."""
    spec = step.emit_items
    if spec is True:
        output = await step.run(input, ctx)
        _emit_output(step, output, ctx)
        return output
    name = spec["item"]
    dispatch = Dispatch(step, name, resolve_item(name, step, ctx), ctx)
    token = _dispatch.set(dispatch)
    try:
        if spec.get("on_start") is not None:
            fields = await drive_hook(spec["on_start"], input, ctx, dispatch)
            if fields is not None:
                dispatch.final(fields)
        output = await step.run(input, ctx)
        if spec.get("on_done") is not None:
            fields = await drive_hook(spec["on_done"], output, ctx, dispatch)
            if fields is not None:
                dispatch.final(fields)
    finally:
        _dispatch.reset(token)
    dispatch.close()
    return output
