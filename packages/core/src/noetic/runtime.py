"""Per-execution runtime services shared by every context of one root execution.

An `Execution` is created by the harness for each turn (or resume). Contexts reach the harness
through it, publish stream events through it, create children through it, and account paid
calls through the `Billing` it hands to model adapters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from noetic.execution_context import Context, to_decimal
from noetic.items import Item, ItemLog
from noetic.layers.runtime import LayerRuntime
from noetic.model import ReasoningDelta, TextDelta
from noetic.streams import StreamEvent, TurnStream

if TYPE_CHECKING:
    from noetic.channels import ChannelStore
    from noetic.durable.ledger import LedgerWrite, StepLedger
    from noetic.durable.recorder import Recorder
    from noetic.harness import AgentHarness

__all__ = ["Execution", "RuntimeBilling"]

_TEXT_DELTA = "response.output_text.delta"
_REASONING_DELTA = "response.reasoning_text.delta"


class _Hold:
    """A ceiling held on the root's `held_cost` for one paid call (see `noetic.model`)."""

    __slots__ = ("_ctx", "_open", "amount")

    def __init__(self, ctx: Context, amount: float):
        self._ctx = ctx
        self.amount = amount
        self._open = True
        ctx.root._held += to_decimal(amount)

    def _close(self) -> bool:
        if not self._open:
            return False
        self._open = False
        self._ctx.root._held -= to_decimal(self.amount)
        return True

    def settle(self, cost: float, billed_cost: float) -> None:
        if self._close():
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
        "_stream",
        "harness",
        "layers",
        "ledger",
        "recorder",
        "resource_id",
        "root",
        "thread_id",
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
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.turn_id = turn_id
        self.root: Context | None = None
        #: The step ledger and the recorder persisting it; None without a checkpoint store.
        self.ledger: StepLedger | None = None
        self.recorder: Recorder | None = None
        #: The layer lifecycle of this execution (init, teardown, children, cancel, state
        #: export/import for checkpoints).
        self.layers = LayerRuntime(self)
        self._channels: ChannelStore | None = None

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
        self._stream.publish(StreamEvent("framework", self._prefix + event, data))

    def publish_delta(self, delta: TextDelta | ReasoningDelta) -> None:
        """Publish a model delta on the full stream."""
        kind = _TEXT_DELTA if type(delta) is TextDelta else _REASONING_DELTA
        self._stream.deliver(StreamEvent("sdk", kind, delta))

    def watch_log(self, ctx: Context) -> None:
        """Publish `item_appended` for every item appended to `ctx.item_log`."""
        emit = self.emit
        ctx_id = ctx.id

        def appended(item: Item) -> None:
            emit("item_appended", {"item": item, "execution_id": ctx_id})

        ctx.item_log._listeners.append(appended)

    # --- contexts ---------------------------------------------------------------------------

    def child_context(self, parent: Context, *, item_log: ItemLog, state: Any) -> Context:
        """A child of `parent` (spawn child or parallel path) whose appends are streamed."""
        child = Context(self, parent=parent, item_log=item_log, state=state)
        self.watch_log(child)
        return child

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
