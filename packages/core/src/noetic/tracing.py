"""OpenTelemetry traces of runs, built on `opentelemetry-api` only.

Spans go to the global tracer provider (`opentelemetry.trace.set_tracer_provider(...)` is all a
user does); `AgentHarness(tracer_provider=...)` sends them elsewhere and `tracing=False`
switches them off. The trace tree mirrors the execution tree:

    invoke_agent {harness}            one per turn or resume; the root context's `ctx.span`
      {kind} {step id}                every step, nested as the steps nest
        context {label}               a spawn child or an `in_parallel` path (its `ctx.span`)
        iteration {n}                 a loop iteration, its verdict as a `noetic.loop.verdict` event
        chat {model}                  a model round, with the GenAI semantic conventions
        execute_tool {name}           a tool call the round asked for (beside its round)

A step replayed from the ledger on resume has a span marked `noetic.replayed` that adds no
billed cost; a step that fails or is cancelled ends with an error status and the reason.
Message content (request and response items, tool arguments and results) is recorded only
with `AgentHarness(trace_content=True)`; no span ever holds a credential.

This module, and with it OpenTelemetry, is imported when the first harness is built, not by
`import noetic`. Cost when nothing records: each execution asks the provider once; with no provider
configured (the API's `ProxyTracerProvider`), a `NoOpTracerProvider`, or `tracing=False`, the
execution has no tracer and every hook below is skipped on a single `is None` test. When the
sampler drops an execution's root span, the execution opens no further spans (their parent
was not sampled); a span that is not recording for another reason gets no attribute computed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.items import Item
    from noetic.model import ModelRequest, ModelResponse
    from noetic.usage import LastLayerUsage, RoundUsage

__all__ = [
    "INVALID_SPAN",
    "IterationSpans",
    "Span",
    "Tracing",
    "end_context",
    "end_span",
    "fail_span",
    "open_span",
]

#: The instrumentation scope name of every Noetic span.
SCOPE = "noetic"
_NOT_TRACING = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def _version() -> str:
    try:
        return version("noetic-core")
    except PackageNotFoundError:
        return "0"


def _global_provider() -> TracerProvider:
    """`trace.get_tracer_provider()`, minus its cost while no provider is set.

    While none is set, that call looks `OTEL_PYTHON_TRACER_PROVIDER` up in the environment
    every time (about 10,000 instructions, most of what a turn spent on tracing checks when
    nothing records). The API offers no cheaper question, so this reads the global it keeps and
    asks the API itself only until the first answer: a provider set later with
    `set_tracer_provider` is seen by the next execution as before; only that environment
    variable set after the first execution is not.
    """
    global _asked
    provider: TracerProvider | None = getattr(trace, "_TRACER_PROVIDER", None)
    if provider is not None:
        return provider
    if not _asked:
        _asked = True
        return trace.get_tracer_provider()
    return _PROXY


_asked = False
_PROXY = trace.ProxyTracerProvider()


class Tracing:
    """A harness's tracing settings: which provider, whether on, whether content is kept."""

    __slots__ = ("_cached", "_provider", "content", "enabled")

    def __init__(
        self, provider: TracerProvider | None = None, *, enabled: bool = True, content: bool = False
    ):
        self._provider = provider
        self.enabled = enabled
        self.content = content
        self._cached: tuple[TracerProvider, Tracer] | None = None

    def caller_context(self) -> otel_context.Context | None:
        """The OpenTelemetry context current in the caller (None when tracing is off)."""
        return otel_context.get_current() if self.enabled else None

    def tracer(self) -> Tracer | None:
        """The tracer for a new execution, or None when no span would be recorded."""
        if not self.enabled:
            return None
        provider = self._provider or _global_provider()
        if isinstance(provider, _NOT_TRACING):
            return None
        cached = self._cached
        if cached is not None and cached[0] is provider:
            return cached[1]
        tracer = provider.get_tracer(SCOPE, _version())
        self._cached = (provider, tracer)
        return tracer


# --- spans ------------------------------------------------------------------------------------


def open_span(
    tracer: Tracer,
    name: str,
    parent: Span | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    context: otel_context.Context | None = None,
) -> tuple[Span, object]:
    """Start `name` as a child of `parent` (else of the span current in `context`, else of
    the current span) and make it current; returns the span and the token `end_span` needs."""
    ctx = trace.set_span_in_context(parent) if parent is not None else context
    span = tracer.start_span(name, ctx, kind)
    return span, otel_context.attach(trace.set_span_in_context(span))


def end_span(span: Span, token: object, error: BaseException | None = None) -> None:
    """Stop `span` being current and end it, with an error status when `error` is given."""
    otel_context.detach(token)  # type: ignore[arg-type]
    if error is not None:
        fail_span(span, error)
    span.end()


def fail_span(span: Span, error: BaseException) -> None:
    """Mark `span` failed: a `NoeticError` by its code and message (`cancelled`: its reason)."""
    code = getattr(error, "code", None)
    if not isinstance(code, str):
        description = "cancelled" if _is_cancellation(error) else type(error).__name__
        span.set_status(Status(StatusCode.ERROR, description))
        return
    if code == "cancelled":
        reason = getattr(error, "details", {}).get("reason")
        span.set_status(Status(StatusCode.ERROR, f"cancelled: {reason}" if reason else "cancelled"))
    else:
        span.set_status(Status(StatusCode.ERROR, f"{code}: {getattr(error, 'message', '')}"[:500]))
    if span.is_recording():
        span.set_attribute("error.type", code)


def _is_cancellation(error: BaseException) -> bool:
    return isinstance(error, anyio.get_cancelled_exc_class())


# --- attributes -------------------------------------------------------------------------------


def step_attributes(span: Span, kind: str, step_id: str, path: str, ctx_id: str) -> None:
    """What every step span carries."""
    span.set_attributes(
        {
            "noetic.step.kind": kind,
            "noetic.step.id": step_id,
            "noetic.step.path": path,
            "noetic.context.id": ctx_id,
        }
    )


def round_request_attributes(
    span: Span, request: ModelRequest, provider: str, round_no: int, step_id: str, content: bool
) -> None:
    """The GenAI request attributes of a model round."""
    span.set_attributes(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": request.model_id,
            "noetic.round": round_no,
            "noetic.step.id": step_id,
        }
    )
    if request.output_schema is not None:
        span.set_attribute("gen_ai.output.type", "json")
    if content:
        span.set_attribute("gen_ai.input.messages", _items_json(request.items))
        if request.instructions:
            span.set_attribute("gen_ai.system_instructions", request.instructions)


def round_response_attributes(
    span: Span,
    response: ModelResponse,
    usage: RoundUsage,
    cost: float,
    billed: float,
    held: float,
    finish: str,
    content: bool,
) -> None:
    """The GenAI response and usage attributes of a model round, with Noetic's costs."""
    attributes: dict[str, Any] = {
        "gen_ai.response.model": response.model_id,
        "gen_ai.response.finish_reasons": (finish,),
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "noetic.cost": cost,
        "noetic.billed_cost": billed,
        "noetic.held_cost": held,
    }
    if response.generation_id:
        attributes["gen_ai.response.id"] = response.generation_id
    if usage.cached_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    if usage.cache_write_tokens is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens is not None:
        attributes["noetic.usage.reasoning_tokens"] = usage.reasoning_tokens
    if content:
        attributes["gen_ai.output.messages"] = _items_json(response.items)
    span.set_attributes(attributes)


def layer_attributes(span: Span, usage: LastLayerUsage) -> None:
    """How the round's context window was composed, layer by layer."""
    attributes: dict[str, Any] = {
        "noetic.layers.system_tokens": usage.system_prompt_tokens,
        "noetic.layers.tools_tokens": usage.tools_tokens,
        "noetic.layers.history_tokens": usage.history_tokens,
        "noetic.layers.total_tokens": usage.total_used_tokens,
        "noetic.layers.ids": tuple(e.layer_id for e in usage.layers),
        "noetic.layers.tokens": tuple(e.token_count for e in usage.layers),
        "noetic.layers.placement": tuple(e.placement for e in usage.layers),
        "noetic.layers.served": tuple(e.served for e in usage.layers),
    }
    epoch = usage.epoch
    if epoch is not None:
        attributes["noetic.layers.epoch"] = epoch.id
        attributes["noetic.layers.anchor_tokens"] = epoch.anchor_tokens
        if epoch.reanchor_reason is not None:
            attributes["noetic.layers.reanchor_reason"] = epoch.reanchor_reason
    span.set_attributes(attributes)


def tool_attributes(span: Span, name: str, call_id: str, arguments: str, content: bool) -> None:
    """The GenAI attributes of a tool call."""
    span.set_attributes(
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id}
    )
    if content:
        span.set_attribute("gen_ai.tool.call.arguments", arguments)


def total_attributes(
    span: Span, tokens_in: int, tokens_out: int, cost: float, billed: float, held: float
) -> None:
    """A context's totals, set on its span as it ends."""
    span.set_attributes(
        {
            "gen_ai.usage.input_tokens": tokens_in,
            "gen_ai.usage.output_tokens": tokens_out,
            "noetic.cost": cost,
            "noetic.billed_cost": billed,
            "noetic.held_cost": held,
        }
    )


def verdict_event(span: Span, stop: bool, reason: str | None) -> None:
    """A loop iteration's verdict as a span event."""
    attributes: dict[str, Any] = {"noetic.loop.stop": stop}
    if reason:
        attributes["noetic.loop.reason"] = reason
    span.add_event("noetic.loop.verdict", attributes)


def end_context(span: Span, ctx: Context) -> None:
    """End a child context's span with its totals (and an error status if it was aborted)."""
    if span.is_recording():
        total_attributes(span, ctx._in, ctx._out, ctx.cost, ctx.billed_cost, ctx.held_cost)
        if ctx.aborted:
            reason = ctx.abort_reason
            span.set_status(Status(StatusCode.ERROR, f"cancelled: {reason}" if reason else "cancelled"))
    span.end()


class IterationSpans:
    """The `iteration {n}` spans of one loop run: each `next` ends the previous one."""

    __slots__ = ("_n", "_span", "_token", "_tracer")

    def __init__(self, tracer: Tracer):
        self._tracer = tracer
        self._span: Span | None = None
        self._token: object = None
        self._n = 0

    def next(self) -> None:
        """End the running iteration's span and start the next one."""
        self.close()
        self._n += 1
        self._span, self._token = open_span(self._tracer, f"iteration {self._n}")
        if self._span.is_recording():
            self._span.set_attribute("noetic.loop.iteration", self._n)

    def verdict(self, stop: bool, reason: str | None) -> None:
        """Record the running iteration's verdict as an event."""
        if self._span is not None and self._span.is_recording():
            verdict_event(self._span, stop, reason)

    def close(self, error: BaseException | None = None) -> None:
        """End the running iteration's span, if any."""
        span, self._span = self._span, None
        if span is not None:
            end_span(span, self._token, error)


def _items_json(items: Sequence[Item]) -> str:
    return json.dumps([i.model_dump(mode="json", exclude_none=True) for i in items], default=str)
