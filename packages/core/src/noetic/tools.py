"""Tools a model can call, and `invoke_tool`, the step that calls one directly.

`tool(name, description=..., input=..., execute=...)` wraps a function. `input` is a pydantic
model (the function gets a validated instance) or a JSON Schema dict (it gets the validated
dict). The return value is JSON-encoded into the `function_call_output` item. Bad arguments, an
unknown tool or a raising tool become an error output the model can read and recover from; only
cancellation ends the model step. A plain function that blocks (a synchronous HTTP client) can
run in a worker thread with `in_thread=True`, as for `run_code`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from noetic.assembled import assembled
from noetic.errors import NoeticConfigError, NoeticError
from noetic.ids import new_item_id
from noetic.items import FunctionCallItem, FunctionCallOutputItem
from noetic.model import ToolDefinition
from noetic.schema import Schema, SchemaError, to_jsonable
from noetic.steps.base import Step, check_in_thread, takes_ctx

if TYPE_CHECKING:
    import json

    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = [
    "InvokeTool",
    "Tool",
    "cancelled_output",
    "error_output",
    "invoke_tool",
    "run_tool_call",
    "tool",
    "tool_output",
]


#: Result types that are never awaitable (exact types: a subclass may define `__await__`).
_PLAIN_VALUES = frozenset({str, int, float, bool, dict, list, type(None)})


class Tool:
    """A function the model may call by `name`."""

    def __init__(
        self, name: str, *, description: str, input: Any, execute: Callable[..., Any], in_thread: bool = False
    ):
        if not isinstance(name, str) or not name.strip():
            raise NoeticConfigError(
                "EMPTY_TOOL_NAME",
                f"a tool needs a non-empty name, got {name!r}",
                hint="Name tools with letters, digits, '_' or '-', such as 'get_weather'.",
            )
        if not callable(execute):
            raise NoeticConfigError(
                "INVALID_TOOL_SCHEMA",
                f"tool {name!r}: execute must be a function",
                hint="Pass execute=lambda args, ctx: ... (plain or async).",
            )
        check_in_thread(f"tool {name!r}", execute, in_thread, "INVALID_TOOL_SCHEMA")
        schema = Schema.of(input)
        try:
            schema.check()
        except SchemaError as exc:
            raise NoeticConfigError(
                "INVALID_TOOL_SCHEMA",
                f"tool {name!r}: input is not a valid JSON Schema: {exc}",
                hint="Give input a pydantic model or a JSON Schema dict with type 'object'.",
            ) from exc
        self.name = name
        self.description = description
        self.input = schema
        self.execute = execute
        #: Whether `execute` runs in a worker thread (a blocking plain function).
        self.in_thread = in_thread
        self._with_ctx = takes_ctx(execute)

    @cached_property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return ToolDefinition(self.name, self.description, self.input.json_schema)

    async def call(self, args: Any, ctx: Context) -> Any:
        """Run the tool with already validated arguments (abort never interrupts it, CTX-17)."""
        if self.in_thread:  # a cancellation from outside leaves the thread running (steps.md)
            import anyio.to_thread  # worker threads cost 7 M instructions to import; few tools use them

            call_args = (args, ctx) if self._with_ctx else (args,)
            return await anyio.to_thread.run_sync(self.execute, *call_args, abandon_on_cancel=True)
        result = self.execute(args, ctx) if self._with_ctx else self.execute(args)
        # `call_user`, inlined (one await less per tool call); plain JSON values skip the
        # awaitable check, whose `Awaitable` ABC test is the slow part for them
        if type(result) not in _PLAIN_VALUES and inspect.isawaitable(result):
            result = await result
        return result

    def __repr__(self) -> str:
        return f"tool({self.name!r})"


def tool(
    name: str, *, description: str, input: Any, execute: Callable[..., Any], in_thread: bool = False
) -> Tool:
    """Declare a tool; see the module docstring."""
    return Tool(name, description=description, input=input, execute=execute, in_thread=in_thread)


def encode_output(value: Any) -> str:
    """JSON-encode a tool result for a `function_call_output`: what
    `json.dumps(value, ensure_ascii=False, default=str)` gives, pydantic models dumped first."""
    if type(value) is int:  # what the encoder writes for an exact int, without starting it
        return int.__repr__(value)
    return _encoder().encode(to_jsonable(value))


@cache
def _encoder() -> json.JSONEncoder:
    """One encoder for every tool result (`json.dumps` with options builds one per call)."""
    import json  # on first use: `import json` compiles its regexes (5 M instructions)

    return json.JSONEncoder(ensure_ascii=False, default=str)


async def run_tool_call(
    call: FunctionCallItem, tools: Mapping[str, Tool], ctx: Context
) -> tuple[FunctionCallOutputItem, bool]:
    """Run one model-requested call; returns the output item and whether it is an error."""
    found = tools.get(call.name)
    if found is None:
        message = f"unknown tool {call.name!r}; available: {', '.join(sorted(tools)) or 'none'}"
        return error_output(call, message), True
    try:
        args = found.input.validate_json(call.arguments)
    except SchemaError as exc:
        return error_output(call, f"invalid arguments for tool {call.name!r}: {exc}"), True
    try:
        result = await found.call(args, ctx)
    except NoeticError as exc:
        if exc.code == "cancelled":
            raise
        return error_output(call, str(exc)), True
    except Exception as exc:  # noqa: BLE001 - the model reads the error and may recover
        return error_output(call, f"tool {call.name!r} raised {type(exc).__name__}: {exc}"), True
    return tool_output(call.call_id, encode_output(result)), False


def tool_output(call_id: str, output: str) -> FunctionCallOutputItem:
    """The completed `function_call_output` of `call_id` carrying `output`."""
    if type(call_id) is str and type(output) is str:  # as validation leaves them: no need to run it
        values = {
            "id": new_item_id("fco"),
            "status": "completed",
            "type": "function_call_output",
            "call_id": call_id,
            "output": output,
        }
        return assembled(FunctionCallOutputItem, values, {"call_id", "output"}, {})
    return FunctionCallOutputItem(call_id=call_id, output=output)


def cancelled_output(call: FunctionCallItem, reason: str) -> FunctionCallOutputItem:
    """The output recorded for a call that was cancelled before it finished (IL-8).

    Status `incomplete`, and an `error` the model can read on the next turn.
    """
    import json

    body = {"error": "cancelled", "reason": reason}
    return FunctionCallOutputItem(call_id=call.call_id, output=json.dumps(body), status="incomplete")


def error_output(call: FunctionCallItem, message: str) -> FunctionCallOutputItem:
    """The output item telling the model its call failed: `{"error": message}`."""
    import json

    return FunctionCallOutputItem(call_id=call.call_id, output=json.dumps({"error": message}))


class InvokeTool(Step):
    """Calls a tool directly: arguments are the input merged with `args` (args win), or —
    with `merge_input=False` — `args` alone (a document's `invokeTool` node)."""

    kind = "invoke_tool"
    __slots__ = ("args", "merge_input", "tool")

    def __init__(
        self,
        id: str,
        tool: Tool,
        args: Mapping[str, Any] | None = None,
        *,
        merge_input: bool = True,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        if not isinstance(tool, Tool):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"invoke_tool {id!r}: tool must come from noetic.tool(...), got {type(tool).__name__}",
                hint="Declare the tool with nt.tool(name, description=..., input=..., execute=...).",
            )
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.tool = tool
        self.args = dict(args) if args is not None else None
        self.merge_input = merge_input

    async def run(self, input: Any, ctx: Context) -> Any:
        raw: Any = to_jsonable(input) if self.merge_input else {}
        if self.args is not None:
            raw = {**raw, **self.args} if isinstance(raw, Mapping) else dict(self.args)
        raw = await self._guarded(raw, ctx)
        try:
            args = self.tool.input.validate(raw)
        except SchemaError as exc:
            raise NoeticError(
                "step_failed",
                f"invoke_tool {self.id!r}: invalid arguments for tool {self.tool.name!r}: {exc}",
                cause=exc,
                step_id=self.id,
                retries_exhausted=False,
            ) from None
        return await self.tool.call(args, ctx)

    async def _guarded(self, raw: Any, ctx: Context) -> Any:
        """The arguments the layers' `before_tool_call` guards leave (LY-6); a block fails the
        step with `steering_denied`."""
        # imported here: the layers package imports this module
        from noetic.layers.contract import ToolCallRequest
        from noetic.layers.steering import guard_tool_call

        verdict = await guard_tool_call(ctx, ToolCallRequest(self.tool.name, raw, self.id))
        if isinstance(verdict, str):
            raise NoeticError(
                "steering_denied", f"invoke_tool {self.id!r}: {verdict}", guidance=verdict, step_id=self.id
            )
        return verdict.args


def invoke_tool(
    id: str,
    tool: Tool,
    args: Mapping[str, Any] | None = None,
    *,
    merge_input: bool = True,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> InvokeTool:
    """A step that calls `tool` with the step input merged with `args` (`args` alone with
    `merge_input=False`)."""
    return InvokeTool(
        id, tool, args, merge_input=merge_input, custom_items=custom_items, emit_items=emit_items
    )
