"""The scratchpad layer (SC-1..SC-6): notes the agent reads every turn and updates by tool.

The state is a string (freeform) or, with a `schema`, a dict. It is loaded from storage when
an execution starts, rendered as one `<scratchpad>` developer message while it is non-empty,
and changed through `ctx.context["scratchpad"].update({...})` or the model tool
`scratchpad/update`. An update deep-merges: dicts merge key by key, lists and scalars
replace, `__proto__` / `constructor` keys are dropped at every depth, and a non-empty freeform
string is kept under `_previous`. With a schema the merged state must validate; otherwise the
update raises `INVALID_LAYER_STATE` and the state is unchanged — as does an update that
would make the notes something no checkpoint can store (NaN, Infinity, nesting deeper than
`STATE_DEPTH`): the model sees that as the tool's error. The runtime writes every
change through to storage, so the next turn starts where this one ended.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, cast

from noetic.errors import NoeticConfigError, NoeticError
from noetic.items import FunctionCallItem, FunctionCallOutputItem
from noetic.layers import (
    CallResult,
    ContextLayer,
    LayerContext,
    LayerResult,
    Scope,
    Slot,
    SpawnResult,
    layer_data,
    layer_function,
)
from noetic.layers.frame import STATE_DEPTH
from noetic.plain_json import is_plain_json
from noetic.schema import Schema, SchemaError

__all__ = ["Scratchpad", "ScratchpadState", "deep_merge", "scratchpad"]

ScratchpadState: TypeAlias = str | dict[str, Any]

#: Keys never merged in, at any depth.
UNSAFE_KEYS: Final = frozenset({"__proto__", "constructor"})
#: Deeper than this, an update value replaces instead of merging (a guard against cycles).
MAX_MERGE_DEPTH: Final = 32
#: The tool (and raw function-call) name that updates the scratchpad.
UPDATE_TOOL: Final = "scratchpad/update"

_ANY_OBJECT: Final = {"type": "object", "additionalProperties": True}


def _strip(value: Any, depth: int = 0) -> Any:
    """`value` with unsafe keys removed from every dict inside it."""
    if isinstance(value, Mapping) and depth < MAX_MERGE_DEPTH:
        return {k: _strip(v, depth + 1) for k, v in value.items() if k not in UNSAFE_KEYS}
    if isinstance(value, list) and depth < MAX_MERGE_DEPTH:
        return [_strip(v, depth + 1) for v in value]
    return copy.deepcopy(value)


def deep_merge(target: Mapping[str, Any], update: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """`target` with `update` merged in: dicts recurse, everything else replaces (SC-4)."""
    merged = dict(target)
    for key, value in update.items():
        if key in UNSAFE_KEYS:
            continue
        existing = merged.get(key)
        if isinstance(value, Mapping) and depth < MAX_MERGE_DEPTH:
            merged[key] = deep_merge(existing if isinstance(existing, Mapping) else {}, value, depth + 1)
        else:
            merged[key] = _strip(value, depth + 1)
    return merged


class Scratchpad(ContextLayer):
    """The scratchpad layer; build it with `scratchpad(...)`."""

    id = "scratchpad"
    slot = Slot.SCRATCHPAD
    budget = {"min": 200, "max": 1500}  # noqa: RUF012 - a read-only class-level default

    def __init__(
        self,
        *,
        scope: str = "thread",
        schema: Any = None,
        template: str | None = None,
        read_only: bool = False,
    ):
        if scope not in ("thread", "resource"):
            raise NoeticConfigError(
                "INVALID_LAYER",
                f"scratchpad scope {scope!r} is not supported",
                hint="Use scope='thread' (the default) or scope='resource'.",
                layer_id="scratchpad",
                field="scope",
            )
        if template is not None and schema is not None:
            raise NoeticConfigError(
                "INVALID_LAYER",
                "scratchpad template is the initial freeform text; a schema makes the state a dict",
                hint="Pass either template= (freeform) or schema= (structured), not both.",
                layer_id="scratchpad",
                field="template",
            )
        self.scope = cast(Scope, scope)
        self.schema = Schema.of(schema) if schema is not None else None
        self.template = template
        self.read_only = read_only
        self.provides = {
            "snapshot": layer_data(lambda state: state),
            "update": layer_function(
                self._update,
                input=_ANY_OBJECT,
                description="Merge key/value pairs into your scratchpad: nested objects merge, "
                "lists and values replace. Use it to keep notes, goals and progress across turns.",
            ),
        }

    def _empty(self) -> ScratchpadState:
        if self.schema is not None:
            return {}
        return self.template or ""

    def _valid(self, state: Any) -> bool:
        if self.schema is None:
            return isinstance(state, str | dict)
        try:
            self.schema.validate(state)
        except SchemaError:
            return False
        return True

    def merged(self, state: ScratchpadState, update: Mapping[str, Any]) -> dict[str, Any]:
        """The state after `update`, validated against the schema (raises, changes nothing)."""
        if isinstance(state, dict):
            result = deep_merge(state, update)
        else:
            result = deep_merge({}, update)
            if state:
                result["_previous"] = state
        if not is_plain_json(result, max_depth=STATE_DEPTH):
            raise NoeticError(
                "INVALID_LAYER_STATE",
                "scratchpad update rejected: the notes must be plain JSON (no NaN or Infinity) "
                f"nested at most {STATE_DEPTH} levels deep, so they can be stored; nothing changed",
                layer_id=self.id,
            )
        if self.schema is not None:
            try:
                self.schema.validate(result)
            except SchemaError as exc:
                raise NoeticError(
                    "INVALID_LAYER_STATE",
                    f"scratchpad update rejected by the schema: {exc}",
                    layer_id=self.id,
                    problems=exc.problems,
                ) from None
        return result

    async def _update(self, args: Any, ctx: LayerContext) -> LayerResult:
        return LayerResult(state=self.merged(ctx.state, args))

    async def init(self, ctx: LayerContext) -> ScratchpadState:
        """SC-2: the stored state, or the empty one (stored state failing the schema → `{}`)."""
        saved = await ctx.storage.get("state")
        if saved is None:
            return self._empty()
        return saved if self._valid(saved) else {}

    def recall(self, ctx: LayerContext, budget: float) -> str | None:
        """SC-3: one `<scratchpad>` developer message, or nothing while empty.

        Returned as a string, which the runtime turns into that one message — and, while the
        notes do not change, serves as the very same message again instead of rebuilding it.
        A plain function: it never waits, and the runtime calls a plain hook without a cancel
        scope (the scope would cost more than the rendering).
        """
        state = ctx.state
        if not state:
            return None
        text = state if isinstance(state, str) else json.dumps(state, indent=2, ensure_ascii=False)
        return f"<scratchpad>\n{text}\n</scratchpad>"

    def store(self, ctx: LayerContext, response: CallResult) -> ScratchpadState | None:
        """SC-5: apply raw `scratchpad/update` calls the tool loop did not run (a plain
        function, like `recall`)."""
        if self.read_only:
            return None
        updates = [i for i in response.new_items if isinstance(i, FunctionCallItem) and i.name == UPDATE_TOOL]
        if not updates:  # most steps: nothing to look for among the outputs
            return None
        answered = {i.call_id for i in response.new_items if isinstance(i, FunctionCallOutputItem)}
        state: ScratchpadState = ctx.state if ctx.state is not None else self._empty()
        changed = False
        for item in updates:
            if item.call_id in answered:
                continue
            try:
                args = json.loads(item.arguments or "{}")
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested too deeply to parse
                continue
            if not isinstance(args, dict):
                continue
            try:
                state, changed = self.merged(state, args), True
            except NoeticError:  # a rejected update changes nothing; the others still apply
                continue
        return state if changed else None

    async def on_spawn(self, ctx: LayerContext, child: Any) -> SpawnResult | None:
        """SC-6: a resource-scoped scratchpad is cloned into the child; otherwise none."""
        if self.scope == "resource":
            return SpawnResult(child_state=copy.deepcopy(ctx.state))
        return None


def scratchpad(
    *,
    scope: str = "thread",
    schema: Any = None,
    template: str | None = None,
    read_only: bool = False,
) -> Scratchpad:
    """The scratchpad layer (SC-1): id `scratchpad`, slot 100, budget {200, 1500}.

    `schema` (a pydantic model or a JSON Schema) makes the state a validated dict;
    `template` is the initial freeform text; `read_only` stops `store` from applying raw
    `scratchpad/update` calls.
    """
    return Scratchpad(scope=scope, schema=schema, template=template, read_only=read_only)
