"""The execution Context threaded through every step (rules CTX-1..CTX-16).

A Context carries identity (`id`, `parent`, `depth`), counters (`step_count`, `tokens`,
`elapsed`, `cost`, `billed_cost`, `held_cost`), the `item_log`, user `state`, layer handles
(`context`), channel operations and the lifecycle controls `checkpoint`, `complete` and `abort`.

Abort is a flag plus the rejection of Noetic's own waits: `abort(reason)` is synchronous, first
call wins, sets `aborted`, and rejects every wait Noetic itself holds on this context (a blocked
`recv`, a parked `send`, the model stream) with `NoeticError("cancelled")`; the next step and the
next loop iteration refuse to start. It cascades to every live child, never to the parent.
Abort never raises anyio's cancellation inside user code: a `run_code` body, a tool, a route
or a hook keeps running to its end (it can look at `ctx.aborted` or `await ctx.wait_aborted()`),
and its result is then discarded for `cancelled` (CTX-17).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from decimal import Decimal
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from noetic.errors import cancelled
from noetic.ids import new_execution_id
from noetic.items import ItemLog
from noetic.usage import RoundUsage

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from noetic.channels import Channel
    from noetic.fs.contract import FsAdapter
    from noetic.harness import AgentHarness
    from noetic.layers.frame import LayerFrame
    from noetic.runtime import Execution
    from noetic.usage_reports import LastLayerUsage, StepMeta, TokenUsage

__all__ = ["Context", "to_decimal"]

T = TypeVar("T")
_ZERO = Decimal(0)
_NO_LAYERS: Mapping[str, Any] = MappingProxyType({})


def to_decimal(value: float | Decimal | None) -> Decimal:
    """A USD amount as an exact Decimal (floats go through their shortest repr)."""
    if value is None:
        return _ZERO
    return value if isinstance(value, Decimal) else Decimal(repr(value))


class Abortable:
    """A cancel scope that this context's `abort` cancels; leaving it after such a
    cancellation raises `NoeticError("cancelled")` instead of anyio's cancellation.

    Only Noetic's own waits (channel operations, the model stream) run inside one; user code
    never does, so abort cannot cut a user's `await` (CTX-17).
    """

    __slots__ = ("_ctx", "_scope")

    def __init__(self, ctx: Context):
        self._ctx = ctx
        self._scope: anyio.CancelScope | None = None

    def __enter__(self) -> anyio.CancelScope:
        ctx = self._ctx
        if ctx._aborted:
            raise cancelled(ctx._abort_reason)
        # anyio.CancelScope() looks the backend up on every call; the harness runs on one event
        # loop and remembers that backend's scope class when it starts.
        scope_type = ctx._exec.harness._scope_type
        scope = anyio.CancelScope() if scope_type is None else scope_type()
        self._scope = scope
        scope.__enter__()
        ctx._scopes.add(scope)
        return scope

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        scope = self._scope
        assert scope is not None
        ctx = self._ctx
        ctx._scopes.discard(scope)
        swallowed = scope.__exit__(exc_type, exc, tb)
        if ctx._aborted and (
            scope.cancelled_caught
            or (exc_type is not None and issubclass(exc_type, anyio.get_cancelled_exc_class()))
        ):
            # Nested abortables of one context are cancelled together; the innermost one turns
            # the cancellation into `cancelled` so the code around it (a `recv`, say) sees it.
            raise cancelled(ctx._abort_reason) from None
        return bool(swallowed)


class Context:
    """The execution context passed to every step as its second argument."""

    __slots__ = (
        "__weakref__",
        "_abort_event",
        "_abort_reason",
        "_aborted",
        "_billed",
        "_cached",
        "_children",
        "_completed",
        "_completion_value",
        "_cost",
        "_exec",
        "_held",
        "_in",
        "_layer_usage",
        "_layers",
        "_out",
        "_rolled_up",
        "_scopes",
        "_span",
        "_started",
        "_step_count",
        "_step_meta",
        "_unbounded_holds",
        "context",
        "depth",
        "id",
        "item_log",
        "parent",
        "resource_id",
        "state",
        "thread_id",
    )

    id: str
    parent: Context | None
    depth: int
    item_log: ItemLog
    state: Any
    context: Mapping[str, Any]
    thread_id: str
    resource_id: str | None

    def __init__(
        self,
        execution: Execution,
        *,
        parent: Context | None = None,
        item_log: ItemLog | None = None,
        state: Any = None,
        id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ):
        self.id = id or new_execution_id()
        self.parent = parent
        self._exec = execution
        self.item_log = item_log if item_log is not None else ItemLog()
        self.state = state
        #: The layer frame active on this context (`noetic.layers`); children share the parent's
        #: until `spawn` / `in_parallel` give them their own.
        self._layers: LayerFrame | None
        if parent is None:
            self.depth = 0
            self.context = _NO_LAYERS
            self._layers = None
            self.thread_id = thread_id or execution.thread_id
            self.resource_id = resource_id or execution.resource_id
        else:
            self.depth = parent.depth + 1
            self.context = parent.context
            self._layers = parent._layers
            self.thread_id = thread_id or parent.thread_id
            self.resource_id = resource_id or parent.resource_id
        self._span: Span | None = None  # set when tracing (`span`)
        self._step_meta: StepMeta | Callable[[], StepMeta] | None = None
        self._layer_usage: LastLayerUsage | Callable[[], LastLayerUsage] | None = None
        self._started = time.monotonic()
        self._step_count = 0
        self._in = 0
        self._out = 0
        self._cached: int | None = None
        self._cost = _ZERO
        self._billed = _ZERO
        self._held = _ZERO
        self._unbounded_holds = 0  # holds whose ceiling is unknown (noetic.accounting, AC-3)
        self._completed = False
        self._completion_value: Any = None
        self._aborted = False
        self._abort_reason: str | None = None
        self._abort_event: anyio.Event | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._children: set[Context] = set()
        self._rolled_up = False
        if parent is not None:
            parent._children.add(self)
            if parent._aborted:  # CTX-11: a child of an aborted parent starts aborted
                self.abort(parent._abort_reason or "parent context aborted")

    # --- identity and counters ----------------------------------------------------------------

    @property
    def step_count(self) -> int:
        """Number of steps executed on this context so far."""
        return self._step_count

    @property
    def tokens(self) -> TokenUsage:
        """Token usage accumulated on this context (children roll up on return)."""
        from noetic.usage_reports import TokenUsage  # defined when first read (see there)

        return TokenUsage(input=self._in, output=self._out, total=self._in + self._out, cached=self._cached)

    @property
    def elapsed(self) -> float:
        """Wall-clock milliseconds since this context was created."""
        return (time.monotonic() - self._started) * 1000.0

    @property
    def cost(self) -> float:
        """USD of all work on this context, including spend restored from a checkpoint."""
        return float(self._cost)

    @property
    def billed_cost(self) -> float:
        """USD this context's calls actually paid in this attempt (replays add nothing)."""
        return float(self._billed)

    @property
    def held_cost(self) -> float:
        """USD held at ceiling for cut-off paid calls without a settled bill (root only);
        infinite while a call with an unknown ceiling is held."""
        return math.inf if self._unbounded_holds else float(self._held)

    @property
    def span(self) -> Span:
        """This context's OpenTelemetry span: the turn's for a root, its own for a spawn child
        or parallel path (see `noetic.tracing`); a non-recording span when not tracing."""
        span = self._span
        if span is None:
            from opentelemetry.trace import INVALID_SPAN

            return INVALID_SPAN
        return span

    @property
    def harness(self) -> AgentHarness:
        """The owning harness; params are at `ctx.harness.config.params`."""
        return self._exec.harness

    @property
    def fs(self) -> FsAdapter:
        """The harness filesystem; use it for every file operation inside steps and tools."""
        return self._exec.harness.fs

    @property
    def last_step_meta(self) -> StepMeta | None:
        """Metadata of the last executed step (TU-3; None before one)."""
        meta = self._step_meta
        if callable(meta):  # built on first read: most runs never look at it
            meta = self._step_meta = meta()
        return meta

    @last_step_meta.setter
    def last_step_meta(self, meta: StepMeta | Callable[[], StepMeta] | None) -> None:
        self._step_meta = meta

    @property
    def last_layer_usage(self) -> LastLayerUsage | None:
        """How the most recent model call decomposed the context window (None before one)."""
        usage = self._layer_usage
        if callable(usage):  # computed on first read: most runs never look at it
            usage = self._layer_usage = usage()
        return usage

    @last_layer_usage.setter
    def last_layer_usage(self, usage: LastLayerUsage | Callable[[], LastLayerUsage] | None) -> None:
        self._layer_usage = usage

    @property
    def root(self) -> Context:
        """The root context of this execution tree."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    # --- channels ---------------------------------------------------------------------------

    async def recv(self, channel: Channel[T], *, timeout: float | None = None) -> T:
        """Receive from a channel, blocking up to `timeout` seconds (default: the harness
        channel timeout; 0 waits forever)."""
        value: T = await self._exec.channels.recv(self, channel, timeout)
        return value

    async def send(self, channel: Channel[T], value: T, *, timeout: float | None = None) -> None:
        """Send to a channel; parks while a queue channel is at capacity, up to `timeout`
        seconds (default: the harness channel timeout; 0 waits forever)."""
        await self._exec.channels.send(self, channel, value, timeout)

    def try_recv(self, channel: Channel[T]) -> T | None:
        """Receive without blocking: the value, or None when there is none."""
        value: T | None = self._exec.channels.try_recv(channel)
        return value

    def subscribe(self, channel: Channel[T]) -> AsyncIterator[T]:
        """Every value of `channel` from now until the execution completes (a topic's sends
        are buffered for this subscriber, none missed); see `ChannelStore.subscribe`."""
        return self._exec.channels.subscribe(self, channel)

    # --- lifecycle --------------------------------------------------------------------------

    async def checkpoint(self) -> None:
        """Persist the execution state now (a no-op without a checkpoint store)."""
        await self._exec.checkpoint(self)

    def complete(self, value: Any) -> None:
        """Signal that the execution has a result (a signal only; nothing is stopped)."""
        self._completed = True
        self._completion_value = value

    @property
    def completed(self) -> bool:
        """Whether `complete()` has been called."""
        return self._completed

    @property
    def completion_value(self) -> Any:
        """The value passed to `complete()`."""
        return self._completion_value

    @property
    def aborted(self) -> bool:
        """Whether this context was aborted (directly or by its parent)."""
        return self._aborted

    @property
    def abort_reason(self) -> str | None:
        """The reason of the first `abort` call."""
        return self._abort_reason

    def abort(self, reason: str | None = None) -> None:
        """Abort this context and every live child; the first call wins (CTX-9, CTX-10).

        Noetic's waits in flight on these contexts raise `NoeticError("cancelled")`; user code
        that is running is not interrupted (CTX-17). Layer teardown does not run; use
        `harness.cancel(ctx, reason)` for that.
        """
        if self._aborted:
            return
        self._aborted = True
        self._abort_reason = reason
        if self._abort_event is not None:
            self._abort_event.set()
        for scope in tuple(self._scopes):
            scope.cancel()
        for child in tuple(self._children):
            child.abort(reason if reason is not None else "parent context aborted")

    async def wait_aborted(self) -> None:
        """Return once this context is aborted."""
        if self._aborted:
            return
        if self._abort_event is None:
            self._abort_event = anyio.Event()
        await self._abort_event.wait()

    def abortable(self) -> Abortable:
        """A cancel scope `abort` cancels, converting that cancellation to `cancelled`
        (for the runtime's own waits; never wrap user code in it)."""
        return Abortable(self)

    # --- accounting (runtime-internal) ------------------------------------------------------

    def _record_round(self, usage: RoundUsage, cost: Decimal, billed: Decimal) -> None:
        self._in += usage.input_tokens
        self._out += usage.output_tokens
        if usage.cached_tokens is not None:
            self._cached = (self._cached or 0) + usage.cached_tokens
        if cost is not _ZERO or billed is not _ZERO:  # a round without cost figures adds nothing
            self._charge(cost, billed)

    def _charge(self, cost: Decimal, billed: Decimal) -> None:
        """Add spend here, and to ancestors this context has already rolled up into."""
        node: Context | None = self
        while node is not None:
            node._cost += cost
            node._billed += billed
            if not node._rolled_up:
                break
            node = node.parent

    def _roll_up(self) -> None:
        """TU-7: add this child's tokens and spend to its parent (once, on return); its span ends."""
        parent = self.parent
        if parent is None or self._rolled_up:
            return
        self._rolled_up = True
        if self._span is not None:
            from noetic.tracing import end_context

            end_context(self._span, self)
        parent._children.discard(self)
        parent._in += self._in
        parent._out += self._out
        if self._cached is not None:
            parent._cached = (parent._cached or 0) + self._cached
        parent._charge(self._cost, self._billed)

    def __repr__(self) -> str:
        return f"<Context {self.id} depth={self.depth} steps={self._step_count}>"
