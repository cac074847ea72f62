"""`call_model`: one model step, including the tool loop.

The step appends a non-empty string input as a user message, then runs rounds: it assembles the
view, streams one model round (deltas go to the harness streams), appends the response items
(IL-6), and — when the model asked for tools — validates and runs every requested call of the
round concurrently, appends the `function_call_output` items and calls the model again, until
it answers without tool calls. The output is the last assistant text, or the structured value
validated against `output=`; an answer that fails validation is sent back to the model with
the validation error (a user message) up to `output_retries` times, then `model_parse_error`.
Token and cost figures of every round, once `noetic.accounting` has accepted them, are charged
to the context,
even for a response that is then cut off by abort (the step then raises `cancelled`).

With context layers, the input and the tool outputs reach the log through `on_item_append`,
each response is judged by `after_model_call` (a deny fails the step, a guide retries the
round) before its items are appended, and each requested call passes `before_tool_call`
(`noetic.layers.pipelines`, `noetic.layers.steering`). That machinery is imported by the first
step that has layers: a program whose calls have none never loads it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, overload

# `anyio.lowlevel` (a checkpoint) is only reached inside a running event loop, whose backend
# has imported it by then; `import noetic` leaves it unloaded.
import anyio
from noetic.accounting import accept_round
from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.execution_context import Abortable, to_decimal
from noetic.framework_events import (
    model_call_completed,
    model_call_started,
    tool_call_completed,
    tool_call_started,
)
from noetic.items import FunctionCallItem, FunctionCallOutputItem, Item, MessageItem, user_message
from noetic.layers.budgets import DEFAULT_PROJECTION, Projection
from noetic.layers.contract import CallResult
from noetic.layers.layer_set import LayerSet
from noetic.layers.usage import CallParts, LazyUsage, window_usage
from noetic.model import ModelAdapter, ModelRequest, ModelResponse, ReasoningDelta, TextDelta, ToolDefinition
from noetic.schema import Schema, SchemaError, to_jsonable
from noetic.steps.base import OutT, Step
from noetic.streams import DELTA_BATCH
from noetic.tools import Tool, cancelled_output, error_output, run_tool_call
from noetic.usage import RoundUsage, add_optional

if TYPE_CHECKING:
    import anyio.lowlevel
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context
    from noetic.layers.call import LayeredCall
    from noetic.usage_reports import StepMeta
    from opentelemetry.trace import Tracer

__all__ = ["CallModel", "call_model", "last_assistant_text"]

#: Tool rounds one step may run before it fails (the TypeScript Noetic's limit).
MAX_TOOL_ROUNDS = 32
#: Times an answer that fails `output=` validation is sent back to the model before failing.
DEFAULT_OUTPUT_RETRIES = 2
M = TypeVar("M")
_NO_USAGE = RoundUsage()
_ZERO = to_decimal(None)


def last_assistant_text(items: Sequence[Item]) -> str:
    """The text of the last assistant message in `items` (`""` when there is none)."""
    for item in reversed(items):
        if isinstance(item, MessageItem) and item.role == "assistant":
            return item.text
    return ""


class CallModel(Step[OutT]):
    """Calls a model with the context's view and runs the tools it asks for.

    Without context layers the view is the log. With layers (the harness's, a `with_context`,
    or `layers=` — objects or registered names — added for this step only) they are recalled
    once per step and every round's view is assembled around them (`noetic.layers.call`);
    their provided functions join the tools, and their `store` runs when the step ends.
    `projection` overrides the harness's token budget for this step (BG-5).
    """

    kind = "call_model"
    __slots__ = (
        "_parts",
        "_tools",
        "instructions",
        "layers",
        "max_rounds",
        "model",
        "output",
        "output_retries",
        "params",
        "projection",
        "tools",
    )

    def __init__(
        self,
        id: str,
        *,
        model: str | ModelAdapter | None = None,
        instructions: str | Callable[..., Any] | None = None,
        tools: Sequence[Tool] = (),
        output: Any = None,
        params: Mapping[str, Any] | None = None,
        layers: Sequence[Any] | None = None,
        projection: Projection | Mapping[str, Any] | None = None,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
        max_rounds: int = MAX_TOOL_ROUNDS,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        if not isinstance(output_retries, int) or output_retries < 0:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"call_model {id!r}: output_retries must be a non-negative int, got {output_retries!r}",
                hint="Pass output_retries=2 (the default), or 0 to fail on the first invalid answer.",
            )
        if isinstance(model, str) and not model.strip():
            raise NoeticConfigError(
                "MISSING_MODEL",
                f"call_model {id!r}: model is an empty string",
                hint="Pass a model id such as 'openrouter:anthropic/claude-sonnet-4', an adapter, or None.",
            )
        for t in tools:
            if not isinstance(t, Tool):
                raise NoeticConfigError(
                    "INVALID_STEP",
                    f"call_model {id!r}: {t!r} is not a tool",
                    hint="Declare tools with nt.tool(name, description=..., input=..., execute=...).",
                )
        self.model = model
        self.instructions = instructions
        self.tools = tuple(tools)
        self.output = Schema.of(output) if output is not None else None
        self.params = dict(params or {})
        self.layers = LayerSet.of(layers)
        self.projection = Projection.of(projection)
        self.max_rounds = max_rounds
        self.output_retries = output_retries
        self._parts: CallParts | None = None
        #: `_tool_table`'s tuples and what it made of them, or None before the first run.
        self._tools: (
            tuple[tuple[Tool, ...], tuple[Tool, ...], dict[str, Tool], tuple[ToolDefinition, ...]] | None
        ) = None

    def run(self, input: Any, ctx: Context) -> Coroutine[Any, Any, Any]:
        # A plain function returning the step's coroutine: `execute` awaits it, so without
        # layers of its own the step runs in one coroutine, not two.
        if self.layers is None:
            return self._call(input, ctx)
        return ctx._exec.layers.run_scoped(ctx, self.layers, lambda: self._call(input, ctx))

    async def _call(self, input: Any, ctx: Context) -> Any:
        run = ctx._exec
        adapter = run.harness.resolve_model(self.model)
        if isinstance(input, str) and input:
            if ctx._layers is None:
                ctx.item_log.append(user_message(input))
            else:
                from noetic.layers.pipelines import append_items

                await append_items(ctx, [user_message(input)])  # through on_item_append (LY-2)
        instructions = self.instructions
        if callable(instructions):
            instructions = await self._instructions(ctx)
        layered = (
            None if ctx._layers is None else await self._prepare_layers(ctx, input, instructions, adapter)
        )
        tools, definitions = self._tool_table(run.harness.tools)
        if layered is not None:
            tools = {**layered.frame.tools(), **tools}
            definitions = tuple(t.definition for t in tools.values())
        output_schema = None if self.output is None else self.output.json_schema
        cache_control = run.harness.cache_control
        first_item = len(ctx.item_log)
        cost = billed = _ZERO
        calls: list[FunctionCallItem] = []
        rounds: list[RoundUsage] = []
        tool_rounds = output_attempts = steering_retries = 0
        parsed: Any = None
        round_no = -1
        billing = run.billing(ctx)
        while True:
            round_no += 1
            request = ModelRequest(
                model_id=adapter.model_id,
                items=tuple(ctx.item_log.items)
                if layered is None
                else await layered.view(ctx.item_log.items),
                instructions=instructions,
                tools=definitions,
                output_schema=output_schema,
                params=self.params,
                cache_control=cache_control,
                execution_id=ctx.id,
                thread_id=ctx.thread_id,
                billing=billing,
            )
            response, round_usage, round_cost, round_billed = await (
                self._stream_round(adapter, request, ctx, round_no)
                if run.tracer is None
                else self._traced_round(adapter, request, ctx, round_no, layered)
            )
            rounds.append(round_usage)
            if layered is not None:
                layered.note_round(round_usage)
            cost += round_cost
            billed += round_billed
            if layered is not None:
                from noetic.layers.steering import MAX_STEERING_RETRIES, judge_response

                guidance = await judge_response(ctx, response, self.id)  # after_model_call (LY-5)
                if guidance is not None and steering_retries < MAX_STEERING_RETRIES:
                    steering_retries += 1
                    layered.guide(guidance)
                    continue  # the same round again, the response dropped
            round_calls = []
            for item in response.items:
                ctx.item_log.append(item)
                if isinstance(item, FunctionCallItem):
                    round_calls.append(item)
            if round_calls:
                if tool_rounds == self.max_rounds:
                    raise NoeticError(
                        "step_failed",
                        f"call_model {self.id!r}: the model still asked for tools after {self.max_rounds} rounds",
                        step_id=self.id,
                        retries_exhausted=True,
                    )
                tool_rounds += 1
                calls.extend(round_calls)
                rerender = await self._run_tools(round_calls, tools, ctx)
                if ctx._aborted:  # CTX-17: the tools ran to their end; no further round starts
                    raise cancelled(ctx._abort_reason)
                if rerender and layered is not None:
                    await layered.rerender(rerender)
                continue
            if self.output is None:
                break
            try:
                parsed = self._parse_output(ctx.item_log.items[first_item:], output_attempts)
                break
            except NoeticError as exc:
                if output_attempts >= self.output_retries:
                    raise
                output_attempts += 1
                ctx.item_log.append(user_message(_retry_prompt(exc.details["problems"])))
        response_items = tuple(ctx.item_log.items[first_item:])
        # built on first read (most runs never look at it), from figures that are final now
        ctx._step_meta = partial(
            _step_meta, self.id, self.kind, tuple(calls), rounds, float(cost), float(billed), response_items
        )
        parts = self._call_parts(adapter.model_id, instructions, definitions)
        if layered is None:
            # measured only if someone reads it; it keeps the view, not the context
            ctx._layer_usage = LazyUsage.of_window(parts, ctx.id, request.items)
            return last_assistant_text(response_items) if self.output is None else parsed
        # the history bucket is the layered view's; measured only if someone reads it, or now
        # for a durable run's trace row (IN-1)
        later = layered.usage_later(parts, ctx.id)
        ctx.last_layer_usage = later if run.recorder is None else later()
        if layered.stores:
            text = last_assistant_text(response_items)
            await layered.store(CallResult(response_items, tuple(rounds), adapter.model_id, text))
            return text if self.output is None else parsed
        return last_assistant_text(response_items) if self.output is None else parsed

    def _tool_table(
        self, harness_tools: tuple[Tool, ...]
    ) -> tuple[dict[str, Tool], tuple[ToolDefinition, ...]]:
        """The step's tools by name (the harness's, then its own, which win) and their
        definitions, kept while neither tuple is replaced (both are immutable; a `Tool`'s
        definition is fixed on first use)."""
        table = self._tools
        if table is None or table[0] is not harness_tools or table[1] is not self.tools:
            by_name = {t.name: t for t in (*harness_tools, *self.tools)}
            table = self._tools = (
                harness_tools,
                self.tools,
                by_name,
                tuple(t.definition for t in by_name.values()),
            )
        return table[2], table[3]

    def _call_parts(
        self, model_id: str, instructions: str | None, definitions: tuple[ToolDefinition, ...]
    ) -> CallParts:
        """The model id, instructions and tool definitions of this run, as the same tuple as
        the step's last run when they are equal: the lazy usage of every run refers to it, and
        a packed idle session keeps that reference (SE-5), so one tuple serves them all."""
        parts = self._parts
        if parts is None or parts[0] != model_id or parts[1] != instructions or parts[2] != definitions:
            parts = self._parts = (model_id, instructions, definitions)
        return parts

    async def _prepare_layers(
        self, ctx: Context, input: Any, instructions: str | None, adapter: ModelAdapter
    ) -> LayeredCall:
        """Recall and band the context's layers for this step (they join the view each round)."""
        frame = ctx._layers
        assert frame is not None
        harness = ctx._exec.harness
        projection = self.projection or harness.projection or DEFAULT_PROJECTION
        query = input if isinstance(input, str) else ""
        from noetic.layers.call import LayeredCall

        # Layer hooks are user code: abort lets them finish (CTX-17; their own timeouts bound
        # them), then the step stops before the model is called.
        await frame.start()
        layered = await LayeredCall.prepare(
            frame,
            ctx,
            harness.layer_memory,
            instructions=instructions,
            query=query,
            projection=projection,
            model=adapter,
        )
        if ctx.aborted:
            raise cancelled(ctx.abort_reason)
        return layered

    async def _instructions(self, ctx: Context) -> str | None:
        """The instructions a callable `instructions=` gives for this step (maybe awaited)."""
        assert callable(self.instructions)
        value = self.instructions(ctx)
        if inspect.isawaitable(value):
            value = await value
        return value  # type: ignore[no-any-return]

    def record_output(self, output: Any) -> Any:
        """A structured output is recorded in its JSON form (pydantic models are dumped)."""
        return to_jsonable(output) if self.output is not None else output

    def replay_output(self, data: Any) -> Any:
        """A recorded structured output is validated back through `output=` (a model again)."""
        return self.output.validate(data) if self.output is not None else data

    async def _traced_round(
        self,
        adapter: ModelAdapter,
        request: ModelRequest,
        ctx: Context,
        round_no: int,
        layered: LayeredCall | None,
    ) -> tuple[ModelResponse, RoundUsage, Decimal, Decimal]:
        """`_stream_round` inside a `chat {model}` span carrying the GenAI attributes."""
        from noetic.tracing import (
            end_span,
            layer_attributes,
            open_span,
            round_request_attributes,
            round_response_attributes,
        )
        from opentelemetry.trace import SpanKind

        tracer = ctx._exec.tracer
        assert tracer is not None
        content = ctx._exec.trace_content
        span, token = open_span(tracer, f"chat {request.model_id}", kind=SpanKind.CLIENT)
        try:
            if span.is_recording():
                provider = getattr(adapter, "provider_name", None) or type(adapter).__name__
                round_request_attributes(span, request, provider, round_no, self.id, content)
            response, usage, cost, billed = await self._stream_round(adapter, request, ctx, round_no)
            if span.is_recording():
                calls = any(isinstance(i, FunctionCallItem) for i in response.items)
                held = ctx.root.held_cost
                finish = "tool_calls" if calls else "stop"
                round_response_attributes(
                    span, response, usage, float(cost), float(billed), held, finish, content
                )
                if layered is not None:
                    base = window_usage(
                        ctx.id, adapter.model_id, request.instructions, request.tools, history=()
                    )
                    layer_attributes(span, layered.usage(base))
        except BaseException as exc:
            end_span(span, token, exc)
            raise
        end_span(span, token)
        return response, usage, cost, billed

    async def _stream_round(
        self, adapter: ModelAdapter, request: ModelRequest, ctx: Context, round_no: int
    ) -> tuple[ModelResponse, RoundUsage, Decimal, Decimal]:
        """Stream one round, then charge its figures, once accepted, to the context."""
        run = ctx._exec
        run.emit_later(model_call_started, self.id, request.model_id, round_no)
        response: ModelResponse | None = None
        publish = run._stream.publish_delta
        unread = 0  # deltas since the consumers last had a chance to run
        # The stream is Noetic's own wait: aborting the context cuts it (CTX-13).
        with Abortable(ctx):  # `ctx.abortable()`, one call less per round
            stream = adapter.stream(request, cancel=ctx)
            try:
                async for event in stream:
                    if type(event) is TextDelta or type(event) is ReasoningDelta:
                        publish(event)
                        unread += 1
                        if unread == DELTA_BATCH:  # ST-2
                            unread = 0
                            await anyio.lowlevel.checkpoint()
                    elif isinstance(event, ModelResponse):
                        response = event
            finally:  # what `contextlib.aclosing` does, without its two extra awaits per round
                await stream.aclose()  # type: ignore[attr-defined]
        if response is None:
            raise NoeticError(
                "model_stream_error",
                f"model {request.model_id!r} ended its stream without a final response",
                step_id=self.id,
            )
        usage, cost, billed = accept_round(response, request.model_id)
        ctx._record_round(usage, cost, billed)
        run.emit_later(model_call_completed, self.id, response.model_id or request.model_id, usage)
        return response, usage, cost, billed

    async def _run_tools(
        self, calls: list[FunctionCallItem], tools: Mapping[str, Tool], ctx: Context
    ) -> set[str]:
        """Run a round's calls concurrently and append their outputs in call order.

        Each call first passes the layers' `before_tool_call` guards (one call after another);
        the outputs then reach the log through `on_item_append`, and the ids of the layers a
        re-render asked for are returned (LY-2, LY-6). However the round ends — a tool cut by
        `cancelled`, the turn's task cancelled from outside — every call gets an output: a call
        that did not finish gets a cancelled one, so the log never holds a call without its
        output (IL-8).
        """
        run = ctx._exec
        outputs: list[FunctionCallOutputItem | None] = [None] * len(calls)
        stopped: list[NoeticError] = []
        guarded: list[FunctionCallItem | str] = []

        async def one(index: int, call: FunctionCallItem) -> None:
            run.emit_later(tool_call_started, call.call_id, call.name)
            allowed = guarded[index]
            tracer = run.tracer
            try:
                if isinstance(allowed, str):  # blocked by before_tool_call (LY-6)
                    item, is_error = error_output(call, allowed), True
                elif tracer is None:
                    item, is_error = await run_tool_call(allowed, tools, ctx)
                else:
                    item, is_error = await _traced_tool_call(tracer, allowed, tools, ctx)
            except NoeticError as exc:  # only `cancelled` leaves run_tool_call
                stopped.append(exc)
                return
            outputs[index] = item
            run.emit_later(tool_call_completed, call.call_id, call.name, is_error)

        finished = False
        try:
            if ctx._layers is None:
                guarded.extend(calls)
            else:
                from noetic.layers.steering import guard_tool_calls

                guarded.extend(await guard_tool_calls(ctx, calls))
            if len(calls) == 1:
                await one(0, calls[0])
            else:
                async with anyio.create_task_group() as tg:
                    for index, call in enumerate(calls):
                        tg.start_soon(one, index, call)
            finished = not stopped
        finally:
            if not finished:
                reason = (
                    (stopped[0].reason if stopped else None) or ctx.abort_reason or "the turn was interrupted"
                )
                for call, output in zip(calls, outputs, strict=True):
                    ctx.item_log.append(output if output is not None else cancelled_output(call, reason))
        if stopped:
            raise stopped[0]
        if ctx._layers is None:
            for output in outputs:
                if output is not None:
                    ctx.item_log.append(output)
            return set()
        from noetic.layers.pipelines import append_items

        return await append_items(ctx, [o for o in outputs if o is not None])

    def _parse_output(self, items: Sequence[Item], retries: int) -> Any:
        """The last answer validated against `output=`; `model_parse_error` when it fails."""
        assert self.output is not None
        text = last_assistant_text(items)
        try:
            return self.output.validate_json(text)
        except SchemaError as exc:
            tried = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
            raise NoeticError(
                "model_parse_error",
                f"call_model {self.id!r}: the model's answer does not match output={tried}: {exc}",
                raw=text,
                schema=self.output.json_schema,
                step_id=self.id,
                problems=str(exc),
                retries=retries,
            ) from None


def _retry_prompt(problems: str) -> str:
    """The message that sends an invalid structured answer back to the model."""
    return (
        f"Your last answer does not match the required output schema: {problems}. "
        "Answer again with only a JSON value that matches the schema."
    )


async def _traced_tool_call(
    tracer: Tracer, call: FunctionCallItem, tools: Mapping[str, Tool], ctx: Context
) -> tuple[FunctionCallOutputItem, bool]:
    """`run_tool_call` inside an `execute_tool` span."""
    from noetic.tracing import end_span, open_span, tool_attributes
    from opentelemetry.trace import Status, StatusCode

    content = ctx._exec.trace_content
    span, token = open_span(tracer, f"execute_tool {call.name}")
    try:
        if span.is_recording():
            tool_attributes(span, call.name, call.call_id, call.arguments, content)
        item, is_error = await run_tool_call(call, tools, ctx)
        if span.is_recording():
            if is_error:
                span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
            if content:
                span.set_attribute("gen_ai.tool.call.result", item.output)
    except BaseException as exc:
        end_span(span, token, exc)
        raise
    end_span(span, token)
    return item, is_error


def _step_meta(
    step_id: str,
    kind: str,
    calls: tuple[FunctionCallItem, ...],
    rounds: list[RoundUsage],
    cost: float,
    billed_cost: float,
    response_items: tuple[Item, ...],
) -> StepMeta:
    """The `StepMeta` of a finished model step; its usage sums every round's."""
    from noetic.usage_reports import StepMeta  # defined when first read (see there)

    usage = rounds[0] if rounds else _NO_USAGE
    for round_usage in rounds[1:]:
        usage = _add_usage(usage, round_usage)
    return StepMeta(
        step_id=step_id,
        kind=kind,
        tool_calls=calls,
        last_response_tool_calls=(),  # a model step ends only on an answer without tools
        usage=usage,
        cost=cost,
        billed_cost=billed_cost,
        response_items=response_items,
    )


def _add_usage(a: RoundUsage, b: RoundUsage) -> RoundUsage:
    return RoundUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cached_tokens=add_optional(a.cached_tokens, b.cached_tokens),
        cache_write_tokens=add_optional(a.cache_write_tokens, b.cache_write_tokens),
        reasoning_tokens=add_optional(a.reasoning_tokens, b.reasoning_tokens),
    )


@overload
def call_model(
    id: str,
    *,
    model: str | ModelAdapter | None = None,
    instructions: str | Callable[..., Any] | None = None,
    tools: Sequence[Tool] = (),
    output: None = None,
    params: Mapping[str, Any] | None = None,
    layers: Sequence[Any] | None = None,
    projection: Projection | Mapping[str, Any] | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
) -> CallModel[str]: ...
@overload
def call_model(
    id: str,
    *,
    model: str | ModelAdapter | None = None,
    instructions: str | Callable[..., Any] | None = None,
    tools: Sequence[Tool] = (),
    output: type[M],
    params: Mapping[str, Any] | None = None,
    layers: Sequence[Any] | None = None,
    projection: Projection | Mapping[str, Any] | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
) -> CallModel[M]: ...
@overload
def call_model(
    id: str,
    *,
    model: str | ModelAdapter | None = None,
    instructions: str | Callable[..., Any] | None = None,
    tools: Sequence[Tool] = (),
    output: Any,
    params: Mapping[str, Any] | None = None,
    layers: Sequence[Any] | None = None,
    projection: Projection | Mapping[str, Any] | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
) -> CallModel[Any]: ...
def call_model(
    id: str,
    *,
    model: str | ModelAdapter | None = None,
    instructions: str | Callable[..., Any] | None = None,
    tools: Sequence[Tool] = (),
    output: Any = None,
    params: Mapping[str, Any] | None = None,
    layers: Sequence[Any] | None = None,
    projection: Projection | Mapping[str, Any] | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
) -> CallModel[Any]:
    """A model step: see `CallModel`. `model=None` uses the harness model.

    With `output=Model` the step's output is a validated `Model` (type checkers see
    `CallModel[Model]`, and a harness running it returns `HarnessResponse[Model]`); an answer
    that fails validation is sent back with the validation error up to `output_retries` times.
    """
    return CallModel(
        id,
        model=model,
        instructions=instructions,
        tools=tools,
        output=output,
        params=params,
        layers=layers,
        projection=projection,
        custom_items=custom_items,
        emit_items=emit_items,
        output_retries=output_retries,
    )
