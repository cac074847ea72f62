"""Per-execution runtime services shared by every context of one root execution.

An `Execution` is created by the harness for each turn (or resume). Contexts reach the harness
through it, publish stream events through it, create children through it, and account paid
calls through the `Billing` it hands to model adapters.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from noetic.accounting import accept_hold, accept_settlement
from noetic.execution_context import Context, to_decimal
from noetic.framework_events import item_appended
from noetic.items import ItemLog
from noetic.layers.runtime import LayerRuntime
from noetic.model import ReasoningDelta, TextDelta
from noetic.streams import TURN_END_EVENTS, StreamEvent, TurnStream

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext

    from noetic.channels import ChannelStore
    from noetic.durable.ledger import LedgerWrite, StepLedger
    from noetic.durable.recorder import Recorder
    from noetic.harness import AgentHarness

__all__ = ["Execution", "RuntimeBilling"]

#: Builds a `StreamEvent` from a `(source, type, data)` tuple without the Python-level call of
#: the named tuple's own `__new__` (an event is made for every step, round, call and item).
_event = tuple.__new__


class _Hold:
    """A ceiling held on the root's `held_cost` for one paid call (see `noetic.model`)."""

    __slots__ = ("_ctx", "_open", "amount")

    def __init__(self, ctx: Context, amount: float):
        self._ctx = ctx
        self.amount = accept_hold(amount)
        self._open = True
        self._add(1)

    def _add(self, sign: int) -> None:
        root = self._ctx.root
        if self.amount == math.inf:
            root._unbounded_holds += sign
        else:
            root._held += sign * to_decimal(self.amount)

    def _close(self) -> bool:
        if not self._open:
            return False
        self._open = False
        self._add(-1)
        return True

    def settle(self, cost: float, billed_cost: float) -> None:
        if accept_settlement(cost, billed_cost) and self._close():
            self._ctx._charge(to_decimal(cost), to_decimal(billed_cost))

    def release(self) -> None:
        self._close()


class RuntimeBilling:
    """The `Billing` given to model adapters for one context."""

    __slots__ = ("_ctx", "_harness")

    def __init__(self, ctx: Context, harness: AgentHarness):
        self._ctx = ctx
        self._harness = harness

    def hold(self, amount: float) -> _Hold:
        return _Hold(self._ctx, amount)

    def run_in_background(self, job: Callable[[], Awaitable[None]]) -> None:
        self._harness._start_background(job)


class Execution:
    """Services of one root execution: its harness, thread, stream and durability hooks."""

    __slots__ = (
        "_channels",
        "_prefix",
        "_root",
        "_stream",
        "emit_later",
        "harness",
        "layers",
        "ledger",
        "recorder",
        "resource_id",
        "thread_id",
        "trace_content",
        "tracer",
        "turn_id",
    )

    def __init__(
        self,
        harness: AgentHarness,
        stream: TurnStream,
        *,
        thread_id: str,
        resource_id: str | None = None,
        turn_id: str = "",
    ):
        self.harness = harness
        self._stream = stream
        self._prefix = f"{harness.name}:"
        #: `emit_later(build, *values)` publishes the event a `noetic.framework_events` builder
        #: makes from `values`, built only when someone reads it (`TurnStream.deliver_later`).
        self.emit_later = stream.deliver_later
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.turn_id = turn_id
        self._root: weakref.ref[Context] | None = None
        #: The step ledger and the recorder persisting it; None without a checkpoint store.
        self.ledger: StepLedger | None = None
        self.recorder: Recorder | None = None
        #: The layer lifecycle of this execution (init, teardown, children, cancel, state
        #: export/import for checkpoints).
        self.layers = LayerRuntime(harness)
        #: The OpenTelemetry tracer of this execution; None when nothing records (`noetic.tracing`).
        self.tracer = harness._tracing.tracer()
        self.trace_content = harness._tracing.content
        self._channels: ChannelStore | None = None

    @property
    def root(self) -> Context | None:
        """The root context of this execution (None before the harness sets it).

        Held weakly: every context holds its execution, so a strong reference back would make
        each finished turn a reference cycle only the cyclic GC frees. Whoever can reach this
        execution does so through one of its contexts, whose parent chain keeps the root alive.
        """
        ref = self._root
        return None if ref is None else ref()

    @root.setter
    def root(self, ctx: Context | None) -> None:
        self._root = None if ctx is None else weakref.ref(ctx)

    @property
    def channels(self) -> ChannelStore:
        """The channels of this root execution, opened on first use (CH-13)."""
        store = self._channels
        if store is None:
            assert self.root is not None
            store = self._channels = self.harness._channels.for_execution(self.root.id)
        return store

    # --- events -----------------------------------------------------------------------------

    def emit(self, event: str, data: Any) -> None:
        """Publish a framework event `{harness name}:{event}`."""
        record = _event(StreamEvent, ("framework", self._prefix + event, data))
        if event in TURN_END_EVENTS:
            self._stream.publish(record)
        else:  # an event that cannot end the turn: no turn-end check
            self._stream.deliver(record)

    @property
    def publish_delta(self) -> Callable[[TextDelta | ReasoningDelta], None]:
        """Publish a model delta on the full stream (the stream's own method: one call a delta)."""
        return self._stream.publish_delta

    def watch_log(self, ctx: Context) -> None:
        """Publish `item_appended` for every item appended to `ctx.item_log`."""
        ctx.item_log.listen(partial(self._stream.deliver_later, item_appended, ctx.id))

    # --- contexts ---------------------------------------------------------------------------

    def child_context(
        self, parent: Context, *, item_log: ItemLog, state: Any, label: str = "child"
    ) -> Context:
        """A child of `parent` (spawn child or parallel path) whose appends are streamed; when
        tracing, its span `context {label}` opens under the current span (it ends on roll-up)."""
        child = Context(self, parent=parent, item_log=item_log, state=state)
        self.watch_log(child)
        tracer = self.tracer
        if tracer is not None:
            span = child._span = tracer.start_span(f"context {label}")
            if span.is_recording():
                span.set_attributes(
                    {
                        "noetic.context.id": child.id,
                        "noetic.context.parent_id": parent.id,
                        "noetic.context.depth": child.depth,
                    }
                )
        return child

    def open_root_span(self, ctx: Context, parent: OtelContext | None, *, resumed: bool) -> object | None:
        """Start the execution's `invoke_agent` span under `parent` (the caller's context) as
        the root context's span and make it current; returns the token for `end_root_span`
        (None when not tracing)."""
        tracer = self.tracer
        if tracer is None:
            return None
        from noetic.tracing import open_span

        span, token = open_span(tracer, f"invoke_agent {self.harness.name}", context=parent)
        ctx._span = span
        if not span.is_recording():
            # Sampled out: its descendants would be too (parent-based sampling), so this
            # execution opens no further spans. The root stays current for user spans.
            self.tracer = None
        else:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": self.harness.name,
                    "noetic.execution.id": ctx.id,
                    "noetic.thread.id": self.thread_id,
                    "noetic.turn.id": self.turn_id,
                    "noetic.resumed": resumed,
                }
            )
        return token

    def end_root_span(self, ctx: Context, token: object | None, error: BaseException | None) -> None:
        """End the span `open_root_span` started, with the execution's totals."""
        if token is None:
            return
        from noetic.tracing import end_span, total_attributes

        span = ctx.span
        if span.is_recording():
            total_attributes(span, ctx._in, ctx._out, ctx.cost, ctx.billed_cost, ctx.held_cost)
        end_span(span, token, error)

    def billing(self, ctx: Context) -> RuntimeBilling:
        """The paid-call accounting handle for a model call on `ctx`."""
        return RuntimeBilling(ctx, self.harness)

    # --- durability -------------------------------------------------------------------------

    async def checkpoint(
        self, ctx: Context, write: LedgerWrite | None = None, *, step_end: bool = False
    ) -> None:
        """Persist the execution state, with a completed step's ledger rows in the same write
        (`step_end`: the save after a step, which `durability="turn"` holds until the turn ends).

        A no-op without a checkpoint store; a failing save is logged and never raised (CTX-16).
        """
        if self.recorder is not None:
            await self.recorder.save(self, write, flush=not step_end)
