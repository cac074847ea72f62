"""The context-layer contract (guide: docs/layers.md).

A context layer is any object with an `id`, a `slot`, a `scope`, a `budget` and a `placement`,
plus whichever hooks it needs (`async def`, or a plain `def` for one that never waits: it runs
with no cancel scope, so it is cheaper); a hook the layer does not define is never called. The
easiest way to write one is to subclass `ContextLayer`, which supplies the defaults::

    class Clock(ContextLayer):
        id = "clock"
        slot = Slot.REMINDER
        scope = "execution"

        async def init(self, ctx):            # the initial state
            return 0

        async def recall(self, ctx, budget):  # a string becomes one developer message
            return f"This is call {ctx.state} of the run."

        async def store(self, ctx, response): # the new state (None keeps it)
            return ctx.state + 1

Hook signatures (`ctx` is the `LayerContext` of this layer on one execution; `ctx.state` is its
state):

- `init(ctx) -> state` — once per execution, before any recall (LY-1).
- `recall(ctx, budget) -> str | RecallResult | None` — what the model sees (LY-3).
- `store(ctx, response: CallResult) -> state | CLEAR | None` — after each model step (LY-7).
- `on_spawn(ctx, child) -> SpawnResult | None` — None disables the layer in the child (SP-2).
- `on_return(ctx, child_state, result, child) -> state | ReturnResult | None` (SP-3).
- `on_complete(ctx, outcome) -> state | CLEAR | None` with outcome success/failure/aborted (LY-10).
- `dispose(ctx)` (or `dispose()`) — teardown, reverse array order (LY-11).
- `render_delta(ctx, previous, current, budget) -> str | None` — describe a stale pin (AN-8).
- `on_item_append(ctx, items) -> ItemAppendResult | list[Item] | None` — user input and tool
  outputs on their way into the log, a slot-order pipeline (LY-2).
- `project_history(ctx, items) -> list[Item] | None` — the history a model round sees, a
  slot-order pipeline that never touches the log (LY-4).
- `after_model_call(ctx, response: ModelResponse) -> ModelCallDecision | None` — allow, deny
  (`steering_denied`) or guide (retry with guidance) each model response (LY-5).
- `before_tool_call(ctx, call: ToolCallRequest) -> ToolCallDecision | None` — block or rewrite
  each tool call the model asks for (LY-6).
- `on_parent_update(ctx, parent_state, parent) -> state | ParentUpdateResult | None` — a running
  spawn child hears that the parent's state changed in `store` (LY-9).

`provides` maps names to `layer_data(read)` / `layer_function(execute, input=...)`
declarations; they appear as `ctx.context[layer_id]` and, for functions, as model tools named
`"{layer_id}/{name}"` (LY-15). `validate_layer` applies the construction rules of LY-13.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

from noetic.errors import NoeticConfigError
from noetic.items import Item
from noetic.numbers import as_float
from noetic.records import FrozenRecord, set_field
from noetic.schema import Schema, SchemaError
from noetic.usage import RoundUsage

if TYPE_CHECKING:
    from noetic.layers.frame import LayerContext
    from noetic.tools import Tool

__all__ = [
    "CLEAR",
    "DEFAULT_TIMEOUTS",
    "HOOK_NAMES",
    "SCOPES",
    "UNSET",
    "BudgetRange",
    "BudgetSpec",
    "CallResult",
    "ContextLayer",
    "LayerData",
    "LayerFunction",
    "LayerResult",
    "OnInitError",
    "ItemAppendResult",
    "ModelCallDecision",
    "OnBeforeToolCallError",
    "Outcome",
    "ParentUpdateResult",
    "Placement",
    "RecallMode",
    "RecallResult",
    "RerenderScope",
    "ReturnResult",
    "Scope",
    "Slot",
    "SpawnResult",
    "SteeringAction",
    "ToolCallDecision",
    "ToolCallRequest",
    "budget_range",
    "layer_data",
    "layer_function",
    "validate_layer",
]

Scope: TypeAlias = Literal["thread", "resource", "global", "execution"]
Placement: TypeAlias = Literal["anchor", "live", "auto"]
Outcome: TypeAlias = Literal["success", "failure", "aborted"]
OnInitError: TypeAlias = Literal["throw", "disable"]
OnBeforeToolCallError: TypeAlias = Literal["abstain", "deny"]
RecallMode: TypeAlias = Literal["atomic", "eventual"]

SCOPES: Final = ("thread", "resource", "global", "execution")
_PLACEMENTS: Final = ("anchor", "live", "auto")
_INIT_ERRORS: Final = ("throw", "disable")
_TOOL_GUARD_ERRORS: Final = ("abstain", "deny")
_RECALL_MODES: Final = ("atomic", "eventual")

#: Hooks the runtime calls, each with its own timeout.
HOOK_NAMES: Final = (
    "init",
    "recall",
    "store",
    "on_spawn",
    "on_return",
    "on_complete",
    "dispose",
    "render_delta",
    "on_item_append",
    "project_history",
    "after_model_call",
    "before_tool_call",
    "on_parent_update",
)

#: Default hook timeouts in seconds (LY-12); a layer overrides them with `timeouts = {...}`.
DEFAULT_TIMEOUTS: Final[Mapping[str, float]] = {
    "init": 10.0,
    "recall": 5.0,
    "store": 30.0,
    "on_spawn": 10.0,
    "on_return": 10.0,
    "on_complete": 30.0,
    "dispose": 5.0,
    "render_delta": 5.0,
    "on_item_append": 5.0,
    "project_history": 5.0,
    "after_model_call": 10.0,
    "before_tool_call": 5.0,
    "on_parent_update": 10.0,
}


class Slot:
    """Slot constants: where a layer renders within its band (lower slots first)."""

    REMINDER: Final = 80
    STEERING: Final = 90
    SCRATCHPAD: Final = 100
    ENTITY: Final = 150
    OBSERVATIONS: Final = 200
    PROCEDURAL: Final = 250
    EPISODIC: Final = 300
    RAG: Final = 350
    SEMANTIC_RECALL: Final = 400


class BudgetRange(FrozenRecord):
    """A token budget between `min` and `max` (`max` may be `math.inf`)."""

    __slots__ = ("max", "min")
    min: float
    max: float

    def __init__(self, min: float, max: float) -> None:
        set_field(self, "min", min)
        set_field(self, "max", max)


#: A layer budget: a fixed number of tokens, a range, `"auto"` (or None): unbounded headroom.
BudgetSpec: TypeAlias = int | float | BudgetRange | Mapping[str, float] | Literal["auto"] | None


class _Clear:
    """The type of `CLEAR`."""

    _instance: ClassVar[_Clear | None] = None

    def __new__(cls) -> _Clear:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CLEAR"

    def __reduce__(self) -> str:
        return "CLEAR"


#: Returned by `store` / `on_complete` (or as `LayerResult(state=CLEAR)`) to clear the state:
#: the durable key is deleted and the layer stays enabled (LY-7).
CLEAR: Final = _Clear()


class _Unset:
    """Marks a result field that was not given."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


class RecallResult(FrozenRecord):
    """What a layer contributes to the view: items and their self-reported token count.

    Returning `state` commits new state while rendering, which forces the layer into the
    live band (AN-7).
    """

    __slots__ = ("items", "state", "token_count")
    items: Sequence[Item]
    token_count: int
    state: Any

    def __init__(self, items: Sequence[Item], token_count: int, state: Any = UNSET) -> None:
        set_field(self, "items", items)
        set_field(self, "token_count", token_count)
        set_field(self, "state", state)


class SpawnResult(FrozenRecord):
    """`on_spawn`'s answer: the child's state and items to seed the child's log (SP-2)."""

    __slots__ = ("child_state", "items")
    child_state: Any
    items: Sequence[Item]

    def __init__(self, child_state: Any, items: Sequence[Item] = ()) -> None:
        set_field(self, "child_state", child_state)
        set_field(self, "items", items)


class ReturnResult(FrozenRecord):
    """`on_return`'s answer when it also rewrites the child's result for the next layer (SP-3)."""

    __slots__ = ("parent_state", "result")
    parent_state: Any
    result: Any

    def __init__(self, parent_state: Any = UNSET, result: Any = UNSET) -> None:
        set_field(self, "parent_state", parent_state)
        set_field(self, "result", result)


class LayerResult(FrozenRecord):
    """A provided function's answer when it also replaces the layer state (CTX-5)."""

    __slots__ = ("result", "state")
    result: Any
    state: Any

    def __init__(self, result: Any = None, state: Any = UNSET) -> None:
        set_field(self, "result", result)
        set_field(self, "state", state)


class CallResult(FrozenRecord):
    """What `store` learns about the model step that just finished.

    `new_items` are the items the step appended (model output and tool outputs), `rounds` the
    usage of each model round, `text` the last assistant text.
    """

    __slots__ = ("model_id", "new_items", "rounds", "text")
    new_items: tuple[Item, ...]
    rounds: tuple[RoundUsage, ...]
    model_id: str
    text: str

    def __init__(
        self, new_items: tuple[Item, ...], rounds: tuple[RoundUsage, ...], model_id: str, text: str
    ) -> None:
        set_field(self, "new_items", new_items)
        set_field(self, "rounds", rounds)
        set_field(self, "model_id", model_id)
        set_field(self, "text", text)


#: Which layers a re-render recalls: the asking layer, it and every higher slot, or all.
RerenderScope: TypeAlias = Literal["self", "slot-after", "all"]


class ItemAppendResult(FrozenRecord):
    """`on_item_append`'s answer when it also replaces the layer state or asks for a re-render
    (LY-2).

    `items` are what goes on to the next layer (and finally into the log): the same items to
    pass them through, fewer to drop some, others to rewrite or inject. `rerender=True` has the
    layers of `rerender_scope` recalled before the next model round sees the new items.
    """

    __slots__ = ("items", "rerender", "rerender_scope", "state")
    items: Sequence[Item]
    state: Any
    rerender: bool
    rerender_scope: RerenderScope

    def __init__(
        self,
        items: Sequence[Item],
        state: Any = UNSET,
        rerender: bool = False,
        rerender_scope: RerenderScope = "slot-after",
    ) -> None:
        set_field(self, "items", items)
        set_field(self, "state", state)
        set_field(self, "rerender", rerender)
        set_field(self, "rerender_scope", rerender_scope)


class ToolCallRequest(FrozenRecord):
    """A tool call the model asked for, as `before_tool_call` sees it.

    `args` are the decoded JSON arguments (the raw text when they are not JSON), already
    rewritten by any earlier layer's `override_args`.
    """

    __slots__ = ("args", "call_id", "name")
    name: str
    args: Any
    call_id: str

    def __init__(self, name: str, args: Any, call_id: str) -> None:
        set_field(self, "name", name)
        set_field(self, "args", args)
        set_field(self, "call_id", call_id)


class ToolCallDecision(FrozenRecord):
    """`before_tool_call`'s answer (LY-6).

    `block` refuses the call: the message becomes the tool's error output and the model reads
    it. `override_args` replaces the arguments (later layers and the tool see the new ones).
    `state` replaces the layer state.
    """

    __slots__ = ("block", "override_args", "state")
    block: str | None
    override_args: Any
    state: Any

    def __init__(self, block: str | None = None, override_args: Any = UNSET, state: Any = UNSET) -> None:
        set_field(self, "block", block)
        set_field(self, "override_args", override_args)
        set_field(self, "state", state)


#: What `after_model_call` decides about a model response.
SteeringAction: TypeAlias = Literal["allow", "deny", "guide"]


class ModelCallDecision(FrozenRecord):
    """`after_model_call`'s answer (LY-5): build it with `allow`, `deny` or `guide`.

    `deny` fails the step with `steering_denied` (the message is the reason); `guide` drops the
    response, appends the message as a developer message and asks the model again. `state`
    replaces the layer state whatever the action.
    """

    __slots__ = ("action", "message", "state")
    action: SteeringAction
    message: str | None
    state: Any

    def __init__(
        self, action: SteeringAction = "allow", message: str | None = None, state: Any = UNSET
    ) -> None:
        set_field(self, "action", action)
        set_field(self, "message", message)
        set_field(self, "state", state)

    @classmethod
    def allow(cls, *, state: Any = UNSET) -> ModelCallDecision:
        """Accept the response."""
        return cls("allow", None, state)

    @classmethod
    def deny(cls, reason: str, *, state: Any = UNSET) -> ModelCallDecision:
        """Refuse the response: the step fails with `steering_denied`."""
        return cls("deny", reason, state)

    @classmethod
    def guide(cls, guidance: str, *, state: Any = UNSET) -> ModelCallDecision:
        """Refuse the response and retry the round with `guidance` added."""
        return cls("guide", guidance, state)


class ParentUpdateResult(FrozenRecord):
    """`on_parent_update`'s answer when it also injects items into the child's log (LY-9)."""

    __slots__ = ("child_state", "items")
    child_state: Any
    items: Sequence[Item]

    def __init__(self, child_state: Any = UNSET, items: Sequence[Item] = ()) -> None:
        set_field(self, "child_state", child_state)
        set_field(self, "items", items)


# --- provides ------------------------------------------------------------------------------


class LayerData(FrozenRecord):
    """A read-only projection of the layer state; `ctx.context[id].name` reads it live."""

    __slots__ = ("read",)
    read: Callable[[Any], Any]

    def __init__(self, read: Callable[[Any], Any]) -> None:
        set_field(self, "read", read)


class LayerFunction(FrozenRecord):
    """An async function over the layer state, also offered to the model as a tool.

    `execute(args, ctx)` gets the validated input (a pydantic instance, or the value for a
    JSON Schema) and the `LayerContext`; it returns a result, or `LayerResult(result, state)`
    to replace the state as well.
    """

    __slots__ = ("_input_schema", "description", "execute", "input", "tools")
    _derived = ("tools", "_input_schema")
    execute: Callable[[Any, LayerContext], Awaitable[Any]]
    input: Schema
    description: str
    #: The model tool of this function per layer id (built on first use, then reused).
    tools: dict[str, Tool]
    _input_schema: dict[str, Any] | None

    def __init__(
        self, execute: Callable[[Any, LayerContext], Awaitable[Any]], input: Schema, description: str = ""
    ) -> None:
        set_field(self, "execute", execute)
        set_field(self, "input", input)
        set_field(self, "description", description)
        set_field(self, "tools", {})
        set_field(self, "_input_schema", None)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the input, as sent to the model (built on first use)."""
        schema = self._input_schema
        if schema is None:
            schema = self.input.json_schema
            set_field(self, "_input_schema", schema)
        return schema

    def validate(self, args: Any) -> Any:
        """The validated input; raises `SchemaError`."""
        return self.input.validate(args)


def layer_data(read: Callable[[Any], Any]) -> LayerData:
    """Declare a data entry of `provides`: `read(state)` is called on every access."""
    if not callable(read):
        raise NoeticConfigError(
            "INVALID_LAYER", "layer_data(read) needs a function", hint="Pass read=lambda state: ..."
        )
    return LayerData(read)


def layer_function(
    execute: Callable[[Any, LayerContext], Awaitable[Any]], *, input: Any, description: str = ""
) -> LayerFunction:
    """Declare a function entry of `provides`; `input` is a pydantic model or a JSON Schema."""
    if not callable(execute):
        raise NoeticConfigError(
            "INVALID_LAYER",
            "layer_function(execute, input=...) needs an async function",
            hint="Pass execute=async def (args, ctx): ...",
        )
    schema = Schema.of(input)
    try:
        schema.check()
    except SchemaError as exc:
        raise NoeticConfigError(
            "INVALID_LAYER",
            f"layer_function input is not a valid JSON Schema: {exc}",
            hint="Give input a pydantic model or a JSON Schema dict with type 'object'.",
        ) from exc
    return LayerFunction(execute, schema, description)


# --- the base class ------------------------------------------------------------------------


class ContextLayer:
    """Base class for context layers: subclass it, set `id` and `slot`, define hooks.

    Defaults: `scope="thread"`, `budget="auto"`, `placement="auto"`, `on_init_error="throw"`,
    `recall_mode="atomic"`, `on_before_tool_call_error="abstain"` (a failing guard abstains;
    `"deny"` makes it block the call), no timeout overrides, nothing provided. Hooks are looked up on the
    instance, so only the ones a subclass defines run.
    """

    id: str
    slot: float
    scope: Scope = "thread"
    budget: BudgetSpec = "auto"
    placement: Placement = "auto"
    on_init_error: OnInitError = "throw"
    recall_mode: RecallMode = "atomic"
    on_before_tool_call_error: OnBeforeToolCallError = "abstain"
    timeouts: Mapping[str, float] = MappingProxyType({})
    provides: Mapping[str, LayerData | LayerFunction] = MappingProxyType({})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self, 'id', '?')!r} slot={getattr(self, 'slot', '?')}>"


# --- validation (LY-13) --------------------------------------------------------------------


def _invalid(layer: object, field_name: str, message: str, hint: str) -> NoeticConfigError:
    layer_id = getattr(layer, "id", None)
    return NoeticConfigError(
        "INVALID_LAYER",
        f"context layer {layer_id!r}: {message}",
        hint=hint,
        layer_id=layer_id,
        field=field_name,
    )


def budget_range(spec: BudgetSpec) -> BudgetRange:
    """The `{min, max}` of a budget spec (`"auto"`/None: `{0, inf}`; a number: `{0, n}`)."""
    if spec is None or spec == "auto":
        return BudgetRange(0.0, math.inf)
    if isinstance(spec, BudgetRange):
        return spec
    if isinstance(spec, Mapping):
        return BudgetRange(float(spec["min"]), float(spec["max"]))
    return BudgetRange(0.0, float(spec))


def _check_budget(layer: object, spec: Any) -> None:
    hint = "Use an int, {'min': m, 'max': n} with 0 <= m <= n, or 'auto'."
    if spec is None or spec == "auto":
        return
    if isinstance(spec, bool):
        raise _invalid(layer, "budget", f"budget {spec!r} is not a number", hint)
    if isinstance(spec, int | float):
        number = as_float(spec)
        if number is None or math.isnan(number) or number < 0:
            raise _invalid(layer, "budget", f"budget {spec!r} must be a non-negative number", hint)
        return
    if isinstance(spec, Mapping) and set(spec) != {"min", "max"}:
        raise _invalid(layer, "budget", f"budget {dict(spec)!r} needs exactly 'min' and 'max'", hint)
    if not isinstance(spec, Mapping | BudgetRange):
        raise _invalid(layer, "budget", f"budget {spec!r} is not a budget", hint)
    try:
        low, high = budget_range(spec).min, budget_range(spec).max
    except (TypeError, ValueError, OverflowError):
        raise _invalid(layer, "budget", f"budget {spec!r} has non-numeric bounds", hint) from None
    if math.isnan(low) or math.isnan(high) or low < 0 or low > high:
        raise _invalid(
            layer, "budget", f"budget min {low} / max {high} is invalid (min > max or min < 0)", hint
        )


def validate_layer(layer: object) -> None:
    """Apply the construction rules (LY-13) to one layer; raises `NoeticConfigError`."""
    layer_id = getattr(layer, "id", None)
    if not isinstance(layer_id, str) or not layer_id.strip():
        raise _invalid(layer, "id", f"{layer!r} needs a non-empty string id", "Set id = 'my-layer'.")
    slot = getattr(layer, "slot", None)
    position = as_float(slot)
    if position is None or not math.isfinite(position):
        raise _invalid(
            layer, "slot", f"slot {slot!r} is not a finite number", "Use a Slot constant such as Slot.RAG."
        )
    scope = getattr(layer, "scope", "thread")
    if scope not in SCOPES:
        raise _invalid(layer, "scope", f"scope {scope!r} is unknown", f"Use one of {', '.join(SCOPES)}.")
    _check_budget(layer, getattr(layer, "budget", "auto"))
    _check_choice(layer, "placement", _PLACEMENTS, "auto")
    _check_choice(layer, "on_init_error", _INIT_ERRORS, "throw")
    _check_choice(layer, "on_before_tool_call_error", _TOOL_GUARD_ERRORS, "abstain")
    _check_choice(layer, "recall_mode", _RECALL_MODES, "atomic")
    timeouts = getattr(layer, "timeouts", None) or {}
    if not isinstance(timeouts, Mapping):
        raise _invalid(layer, "timeouts", "timeouts must be a mapping", "Use timeouts = {'recall': 2.0}.")
    for hook, seconds in timeouts.items():
        if hook not in HOOK_NAMES:
            raise _invalid(
                layer, "timeouts", f"timeout for unknown hook {hook!r}", f"Hooks: {', '.join(HOOK_NAMES)}."
            )
        limit = as_float(seconds)
        if limit is None or not limit > 0:
            raise _invalid(
                layer,
                "timeouts",
                f"timeout {seconds!r} for {hook} is not a positive number of seconds",
                "Give seconds > 0.",
            )
    provides = getattr(layer, "provides", None) or {}
    if not isinstance(provides, Mapping):
        raise _invalid(
            layer,
            "provides",
            "provides must be a mapping",
            "Map names to layer_data(...) / layer_function(...).",
        )
    for name, decl in provides.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise _invalid(
                layer,
                "provides",
                f"provides name {name!r} is not an identifier",
                "Use names like 'snapshot'.",
            )
        if not isinstance(decl, LayerData | LayerFunction):
            raise _invalid(
                layer,
                "provides",
                f"provides[{name!r}] is {decl!r}",
                "Declare it with layer_data(...) or layer_function(...).",
            )


def _check_choice(layer: object, name: str, allowed: tuple[str, ...], default: str) -> None:
    value = getattr(layer, name, default)
    if value not in allowed:
        raise _invalid(layer, name, f"{name} {value!r} is unknown", f"Use one of {', '.join(allowed)}.")
