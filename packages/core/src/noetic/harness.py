"""`AgentHarness`: runs an agent graph turn by turn, per thread, and streams what happens.

The harness is an async context manager that owns a task group. `execute(input)` enqueues
input for a thread and returns once accepted; the thread's worker drains its queue into one
turn (HA-3), creates the root `Context` on the thread's item log (history carries across turns)
and runs the graph. `run(input)` is `execute` plus waiting for that turn. Results come back
through `get_item_stream()` (item snapshots), `get_full_stream()` (every `StreamEvent`) and
`get_agent_response()` (the last turn's `HarnessResponse`; a failed turn raises its error and
the thread stays usable). `stream(input)` runs one turn while its caller reads the events.
Leaving the `async with` block waits for queued turns (or aborts them when the block raised)
and, for at most `background_grace` seconds, for background jobs such as cost
reconciliation, then closes the model adapters it created. The harness never cancels the task
that entered it: the block's own exception is what the caller sees.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

# `import noetic` leaves `anyio.abc` unloaded (it is needed for type checking only).
import anyio

from noetic.channels import Channel, ChannelHandle, ChannelHub
from noetic.empty_lists import MaybeList, added, removed
from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.execution_context import Context
from noetic.framework_events import turn_started
from noetic.ids import checked_id, new_item_id
from noetic.items import Item, ItemLog, is_item, user_message
from noetic.layers.budgets import Projection
from noetic.layers.layer_set import LayerSet
from noetic.layers.memory import LayerMemory
from noetic.layers.storage import LayerStateStore, MemoryLayerStateStore
from noetic.logs import logger
from noetic.model import ModelAdapter
from noetic.numbers import as_float
from noetic.records import FrozenRecord, set_field
from noetic.resumed_turns import catch_up, thread_moved_on
from noetic.runtime import Execution
from noetic.scheduler_pass import SchedulerPass, pass_for
from noetic.sessions import DEFAULT_HOT_SESSIONS, EvictionPolicy, SessionTable, set_chain, stored_point
from noetic.steps.base import OutT, Step, execute, reset_frame, restore_frame
from noetic.steps.model_call import last_assistant_text
from noetic.streams import StreamEvent, TurnStream, items_from_events
from noetic.tools import Tool
from noetic.usage import RoundUsage, counted_usage

if TYPE_CHECKING:
    import anyio.abc
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.trace import TracerProvider

    from noetic.durable.history import StoredPoint
    from noetic.durable.items import Declarations
    from noetic.durable.ledger import StepLedgerRetention
    from noetic.durable.recorder import Durability, Restored
    from noetic.durable.snapshot import Outcome
    from noetic.durable.store import CheckpointStore
    from noetic.fs.contract import FsAdapter
    from noetic.inspect_sink import EventSink
    from noetic.layers.cache_config import ContextCacheConfig
    from noetic.packed_sessions import PackedSession
    from noetic.plugins import NoeticPluginManager
    from noetic.registry import Registry
    from noetic.streamed_turn import StreamedTurn
    from noetic.usage_reports import LastLayerUsage

__all__ = ["AgentHarness", "HarnessConfig", "HarnessResponse"]

log = logger("noetic.harness")
#: `resume(input=...)` left out.
_NOT_GIVEN: Any = object()
DEFAULT_THREAD = "default"
T = TypeVar("T")
#: Seconds a background job (cost reconciliation) may run after its caller is gone.
BACKGROUND_TIMEOUT = 120.0
#: Seconds leaving the harness waits for background jobs before cancelling them.
DEFAULT_BACKGROUND_GRACE = 10.0


class HarnessConfig(FrozenRecord):
    """The harness configuration visible to steps as `ctx.harness.config`."""

    __slots__ = ("name", "params")
    name: str
    params: Mapping[str, Any]

    def __init__(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "params", {} if params is None else params)


class HarnessResponse(FrozenRecord, Generic[OutT]):
    """The outcome of one turn (HA-4); `output` has the type of the graph's output."""

    __slots__ = (
        "_layer_usage",
        "billed_cost",
        "checkpoint_error",
        "cost",
        "execution_id",
        "held_cost",
        "items",
        "output",
        "text",
        "thread_id",
        "usage",
    )
    #: The layer usage (or how to compute it on first read) is not part of the response's value.
    _hidden = ("_layer_usage",)
    output: OutT
    text: str
    items: tuple[Item, ...]
    usage: RoundUsage
    cost: float
    billed_cost: float
    held_cost: float
    execution_id: str
    thread_id: str
    #: Set when the turn's closing checkpoint could not be written: the turn ran to its end,
    #: but its checkpoint does not record that, and resuming the execution would run its
    #: unrecorded steps again (`CHECKPOINT_STORE_FAILED`, or what the store raised).
    checkpoint_error: NoeticError | None
    _layer_usage: LastLayerUsage | Callable[[], LastLayerUsage] | None

    def __init__(
        self,
        output: OutT,
        text: str,
        items: tuple[Item, ...],
        usage: RoundUsage,
        cost: float,
        billed_cost: float,
        held_cost: float,
        execution_id: str,
        thread_id: str,
        checkpoint_error: NoeticError | None = None,
        _layer_usage: LastLayerUsage | Callable[[], LastLayerUsage] | None = None,
    ) -> None:
        set_field(self, "output", output)
        set_field(self, "text", text)
        set_field(self, "items", items)
        set_field(self, "usage", usage)
        set_field(self, "cost", cost)
        set_field(self, "billed_cost", billed_cost)
        set_field(self, "held_cost", held_cost)
        set_field(self, "execution_id", execution_id)
        set_field(self, "thread_id", thread_id)
        set_field(self, "checkpoint_error", checkpoint_error)
        set_field(self, "_layer_usage", _layer_usage)

    @property
    def last_layer_usage(self) -> LastLayerUsage | None:
        """The per-layer breakdown of the turn's last model call (None when it made none)."""
        usage = self._layer_usage
        if callable(usage):  # computed on first read
            usage = usage()
            set_field(self, "_layer_usage", usage)
        return usage


class _Ticket:
    """One accepted input waiting for (or done with) its turn."""

    __slots__ = (
        "_waiter",
        "error",
        "execution_id",
        "finished",
        "input",
        "resource_id",
        "response",
        "restored",
        "state",
        "trace_parent",
        "turn_id",
    )

    def __init__(
        self,
        input: Any,
        execution_id: str | None,
        resource_id: str | None,
        state: Any,
        restored: Restored | None = None,
    ):
        self.input = input
        self.execution_id = execution_id
        self.resource_id = resource_id
        self.state = state
        self.restored = restored
        #: The caller's OpenTelemetry context, when tracing: the turn's span is its child.
        self.trace_parent: OtelContext | None = None
        self.finished = False
        self.turn_id: str | None = None
        self._waiter: anyio.Event | None = None
        self.response: HarnessResponse | None = None
        self.error: NoeticError | None = None

    def finish(self, response: HarnessResponse | None, error: NoeticError | None) -> None:
        """Record the turn's outcome and wake whoever waits for it."""
        self.response, self.error, self.finished = response, error, True
        if self._waiter is not None:
            self._waiter.set()

    async def wait(self) -> None:
        """Return once the turn that took this input has finished."""
        if not self.finished:
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()


#: A thread's queued inputs: a list, or the empty tuple while nothing is queued (GC-2).
_Queue = MaybeList[_Ticket]


class _Session:
    """One thread: its history, queue, stream and last outcome.

    An idle session may be packed (`noetic.packed_sessions`, SE-5): its log's items and its
    last response are then held as bytes, and reading either (`log.items`, `last_response`)
    unpacks both.
    """

    __slots__ = (
        "_last_response",
        "anchor",
        "chain",
        "current",
        "idle",
        "last_error",
        "leaving",
        "log",
        "log_execution",
        "packed",
        "queue",
        "restore_pending",
        "running",
        "stored",
        "stream",
        "thread_id",
    )

    def __init__(self, thread_id: str, harness_name: str):
        self.thread_id = thread_id
        self.log = ItemLog()
        self.stream = TurnStream(harness_name)
        #: The inputs waiting for a turn; `()` when none (an idle thread keeps no empty list).
        self.queue: _Queue = ()
        self.running = False
        self.idle: anyio.Event | None = None
        self.current: Context | None = None
        self._last_response: HarnessResponse | None = None
        self.last_error: NoeticError | None = None
        #: Set while the thread's history is being written out before eviction (`noetic.sessions`).
        self.leaving = False
        #: Set when the thread may have a history in storage to read back before its first turn.
        self.restore_pending = False
        #: The packed log and response while the session is packed (SE-5), else None.
        self.packed: PackedSession | None = None
        #: The log and the point its thread's history record named when last written or read
        #: (`noetic.sessions`): another log, or a shorter point, means the record lags behind.
        self.stored: tuple[ItemLog, StoredPoint] | None = None
        #: The log and how far of it the store's history pieces hold (`noetic.durable.history`):
        #: a turn's start and an eviction write only the items past that point.
        self.chain: tuple[ItemLog, StoredPoint] | None = None
        #: The digest of the oldest history piece this session knows the store held (read back
        #: or written): gone later, the thread's stored history was deleted (TH-2).
        self.anchor: str | None = None
        #: The execution whose turn the thread's log last followed — its log plus only what it
        #: appended — here or as the stored record says; None when unknown or mixed (TH-1).
        self.log_execution: str | None = None

    def enqueue(self, ticket: _Ticket) -> None:
        """Queue an input for the thread's next turn."""
        self.queue = added(self.queue, ticket)

    def withdraw(self, ticket: _Ticket) -> bool:
        """Take a still-queued input out of the queue; False when it is not there."""
        rest = removed(self.queue, ticket)
        if rest is None:
            return False
        self.queue = rest
        return True

    @property
    def last_response(self) -> HarnessResponse | None:
        """The last successful turn's response (unpacked first when the session is packed)."""
        if self.packed is not None:
            self.packed.log.unpack()
        return self._last_response

    @last_response.setter
    def last_response(self, response: HarnessResponse | None) -> None:
        if self.packed is not None:
            self.packed.log.unpack()
        self._last_response = response


class AgentHarness(Generic[OutT]):
    """Runs `agent_graph` for each turn; see the module docstring.

    `AgentHarness[T]` runs a graph whose output is a `T` (inferred from `agent_graph`), so
    `run()` returns a `HarnessResponse[T]`.

    `model`, `fs`, `storage` and `layers` take instances or names/URLs resolved through the
    plugin registry (`plugins`: a plugin manager, or plugin objects to add to a default one).
    `channel_timeout` is the default wait of channel `recv` and parked `send` (seconds).
    `layer_store` is where thread-, resource- and global-scoped layer state lives: by default
    the checkpoint store of `storage=` (so it survives a restart), else memory (LY-16).
    With `storage=`, `durability` says when a completed step is committed: `"step"` (before
    the next step starts) or `"turn"` (when the turn ends); see `noetic.durable.recorder`.
    Without `storage=` nothing is checkpointed, so `durability="turn"` raises
    `DURABILITY_INVALID` and `step_ledger_retention=` raises `STEP_LEDGER_RETENTION_INVALID`.
    `context_cache` configures prompt-cache anchoring (a `ContextCacheConfig` or a dict such as
    `{"enabled": False}`); `projection` is the token budget of model steps that set none.
    `inspect` (default: the `NOETIC_INSPECT` environment variable) is the URL of a running
    `noetic inspect` page that receives every stream event live (`noetic.inspect_sink`).
    `background_grace` bounds how long leaving the block waits for background jobs such as
    cost reconciliation (seconds, default 10); jobs still running then are cancelled and the
    costs they would have settled stay held (`held_cost`), counted in
    `unfinished_background_jobs` and logged as a warning.
    Runs are traced with OpenTelemetry (`noetic.tracing`): to the global tracer provider, or
    `tracer_provider`; `tracing=False` switches spans off and `trace_content=True` records
    message content in them.
    Idle threads' sessions are evicted from memory under `max_idle_sessions` (a count; the
    default `"auto"` keeps 10,000 idle sessions with `storage=` and every one without) and
    `session_idle_timeout` (seconds; default None, no age bound). With `storage=` a thread's
    history is stored piece by piece as its turns start, named by a record written when the
    thread is evicted and when the harness exits, and read back on its next turn in any
    harness on that store (`delete_thread_history` removes it); without it an evicted thread's
    history is lost. Past the `hot_sessions` most recently idle sessions (default 1,000; None: no
    bound), an idle session's history and last response are packed into bytes until its thread
    is used again, invisibly (SE-5). See `noetic.sessions` (SE-1..SE-5) and
    `noetic.durable.history` (HS-1..HS-4).
    """

    def __init__(
        self,
        name: str,
        *,
        agent_graph: Step[OutT] | None = None,
        params: Mapping[str, Any] | None = None,
        model: str | ModelAdapter | None = None,
        layers: Sequence[Any] = (),
        tools: Sequence[Tool] = (),
        fs: str | FsAdapter | None = None,
        storage: Any = None,
        layer_store: LayerStateStore | None = None,
        step_ledger_retention: Any = None,
        durability: Literal["step", "turn"] = "step",
        emit_items_on_replay: bool = False,
        context_cache: Any = None,
        projection: Projection | Mapping[str, Any] | None = None,
        plugins: NoeticPluginManager | Iterable[object] | None = None,
        channel_timeout: float = 30.0,
        inspect: str | None = None,
        background_grace: float = DEFAULT_BACKGROUND_GRACE,
        tracer_provider: TracerProvider | None = None,
        tracing: bool = True,
        trace_content: bool = False,
        max_idle_sessions: int | Literal["auto"] | None = "auto",
        session_idle_timeout: float | None = None,
        hot_sessions: int | None = DEFAULT_HOT_SESSIONS,
    ):
        if not isinstance(name, str) or not name.strip():
            raise NoeticConfigError(
                "INVALID_STEP",
                "an AgentHarness needs a non-empty name",
                hint="Pass a name such as 'assistant'.",
            )
        if agent_graph is not None and not isinstance(agent_graph, Step):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"agent_graph must be a step, got {type(agent_graph).__name__}",
                hint="Build the graph with nt.call_model, nt.loop, nt.sequence, … or nt.workflow.",
            )
        self.name = name
        self.config = HarnessConfig(name, dict(params or {}))
        self.agent_graph = agent_graph
        self.tools = tuple(tools)
        self.emit_items_on_replay = emit_items_on_replay
        #: The harness layers (validated now; registered names resolve on first use).
        self.layer_set = LayerSet(layers)
        #: Where layer state persists between executions (LY-14, LY-16); any `LayerStateStore`.
        self.layer_store: LayerStateStore = _layer_store(layer_store, storage, self._checkpoint_store)
        #: Prompt-cache anchoring and eventual-recall memory, kept across turns.
        self.layer_memory = LayerMemory(_cache_config(context_cache))
        #: The projection policy of model steps that set none (BG-5).
        self.projection = Projection.of(projection)
        self.storage = storage
        self.step_ledger_retention = step_ledger_retention
        self._retention = _ledger_retention(storage, step_ledger_retention)
        self.durability = _durability(durability, storage)
        self._store: CheckpointStore | None = None
        self._owns_store = False
        self._model_spec = model
        self._fs_spec = fs
        self._fs: FsAdapter | None = None
        self._plugins_spec = plugins
        self._plugin_manager: NoeticPluginManager | None = None
        self._channels = ChannelHub(channel_timeout)
        #: The threads' sessions in memory, evicted when idle under the policy (`noetic.sessions`).
        self._sessions = SessionTable(
            EvictionPolicy.of(
                max_idle_sessions, session_idle_timeout, hot_sessions, storage=storage is not None
            ),
            self._new_session,
            storage is not None,
            self._checkpoint_store,
            self._item_declarations,
            self._start_background,
            self._thread_dropped,
        )
        #: The harness's own in-memory layer store (no `storage=`, no `layer_store=`), whose
        #: thread state leaves memory with the thread's session; None otherwise.
        self._own_layer_store = (
            self.layer_store
            if layer_store is None and isinstance(self.layer_store, MemoryLayerStateStore)
            else None
        )
        self._adapters: dict[str, ModelAdapter] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._scope_type: type[anyio.CancelScope] | None = None
        self._yields_to_subscribe = 2
        #: One pass of this event loop at the least cost in objects (`noetic.scheduler_pass`).
        self._scheduler_pass: SchedulerPass = pass_for(None)
        self._background = 0
        self._background_idle: anyio.Event | None = None
        #: Where stream events go live (`inspect=`), or None.
        self.inspect_sink = _event_sink(inspect if inspect is not None else os.environ.get("NOETIC_INSPECT"))
        self._background_scopes: set[anyio.CancelScope] = set()
        self._worker_scopes: set[anyio.CancelScope] = set()
        #: Seconds leaving the `async with` block waits for background jobs (cost
        #: reconciliation) before cancelling them; a cancelled job's hold stays on `held_cost`.
        self.background_grace = _grace(background_grace)
        #: Background jobs cancelled at exit because they outlived `background_grace`.
        self.unfinished_background_jobs = 0
        from noetic.tracing import Tracing  # OpenTelemetry is imported with the first harness

        self._tracing = Tracing(
            tracer_provider, enabled=_flag("tracing", tracing), content=_flag("trace_content", trace_content)
        )

    # --- configuration ----------------------------------------------------------------------

    @property
    def cache_control(self) -> bool:
        """Whether prompt-cache anchoring is on (requests then carry `cache_control`)."""
        return self.layer_memory.anchoring_enabled

    @property
    def plugin_manager(self) -> NoeticPluginManager:
        """The plugin manager (built on first use when none was given)."""
        if self._plugin_manager is None:
            from noetic.plugins import NoeticPluginManager, make_plugin_manager

            spec = self._plugins_spec
            if isinstance(spec, NoeticPluginManager):
                self._plugin_manager = spec
            else:
                self._plugin_manager = make_plugin_manager(plugins=spec or ())
        return self._plugin_manager

    @property
    def fs(self) -> FsAdapter:
        """The filesystem adapter (the in-memory one unless `fs=` says otherwise)."""
        if self._fs is None:
            spec = self._fs_spec
            if spec is None:
                from noetic.fs.memory import MemoryFs

                self._fs = MemoryFs()
            elif isinstance(spec, str):
                self._fs = self._resolve_fs(spec)
            else:
                self._fs = spec
        return self._fs

    def _resolve_fs(self, url: str) -> FsAdapter:
        registry = self.plugin_manager.registries.filesystems
        scheme = url.partition("://")[0] if "://" in url else "file"
        if scheme not in registry and "*" in registry:
            scheme = "*"
        factory = registry.resolve(scheme)
        adapter: FsAdapter = factory(url)
        return adapter

    def resolve_model(self, spec: str | ModelAdapter | None = None) -> ModelAdapter:
        """The adapter for a step's `model=` (falling back to the harness model)."""
        chosen = spec if spec is not None else self._model_spec
        if chosen is None:
            raise NoeticConfigError(
                "MISSING_MODEL",
                f"harness {self.name!r}: no model is configured for this call",
                hint="Pass model= to the AgentHarness or the call_model step, e.g. "
                "'openrouter:anthropic/claude-sonnet-4' or noetic.testing.ScriptedModel([...]).",
            )
        if not isinstance(chosen, str):
            return chosen
        adapter = self._adapters.get(chosen)
        if adapter is None:
            adapter = self._adapters[chosen] = self._adapter_for(chosen)
        return adapter

    def _adapter_for(self, model: str) -> ModelAdapter:
        from noetic.model_routing import adapter_for

        return adapter_for(self.plugin_manager, model)

    def _registered_custom_items(self) -> Registry[Any] | None:
        return self.plugin_manager.registries.custom_items

    def _checkpoint_store(self) -> CheckpointStore | None:
        """The checkpoint store of `storage=` (a URL is resolved on first use), or None."""
        spec = self.storage
        if self._store is None and spec is not None:
            if isinstance(spec, str):
                if "://" not in spec:
                    raise _not_a_storage_url(spec)
                scheme = spec.partition("://")[0]
                self._store = self.plugin_manager.registries.checkpoint_stores.resolve(scheme)(spec)
                self._owns_store = True
            else:
                self._store = spec
        return self._store

    def _item_declarations(self) -> Declarations:
        """Custom-item declarations by type, to rebuild restored final items (CI-14)."""
        from noetic.durable.items import declarations_of

        registered = []
        for registration in self.plugin_manager.registries.custom_items:
            try:
                registered.append(registration.resolve())
            except NoeticConfigError:
                log.warning(
                    "custom item %r cannot be imported; its restored items stay unbound", registration.name
                )
        return declarations_of(self.agent_graph, registered)

    # --- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> AgentHarness[OutT]:
        if self._tg is not None:
            raise NoeticConfigError(
                "HARNESS_NOT_STARTED",
                f"harness {self.name!r} is already running",
                hint="Enter each AgentHarness once with `async with`.",
            )
        for session in self._sessions.values():  # entered again after an exit
            session.stream.closed = False
        self._sessions.stopped = False
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._scope_type = type(anyio.CancelScope())  # this event loop's scope class (see Abortable)
        # asyncio runs ready tasks first in, first out: one yield lets a just-started task run
        self._yields_to_subscribe = 1 if self._scope_type.__module__.endswith("_asyncio") else 2
        self._scheduler_pass = pass_for(self._scope_type)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Leave the harness: wait for queued turns (or, when the block raised, abort them),
        give background jobs up to `background_grace` seconds, then close what it opened.

        The harness never cancels the task it was entered in, so the block's own exception —
        a turn's `NoeticError` included — is the one that propagates, and no cancellation made
        here escapes the block.
        """
        tg = self._tg
        assert tg is not None
        self._sessions.stopped = True  # no eviction starts once leaving has begun
        try:
            if exc_type is None:
                await self._wait_sessions_idle()
        finally:
            with anyio.CancelScope(shield=True):
                self._stop_workers("the harness is shutting down")
                await self._settle_background()
                await self._sessions.save_all()  # the threads' histories, for the next harness
                # Background jobs have ended (finished or cancelled): their HTTP clients can go.
                await self._close_adapters()
                if self._owns_store and self._store is not None:
                    await self._store.aclose()
                    self._store = None
            self._tg = None
            self._channels.close_all()
            for session in self._sessions.values():
                session.stream.close()  # a watcher waiting for a next turn ends instead of hanging
            # Every child runs in its own cancel scope (see `_spawn`), so waiting for the task
            # group cannot raise a cancellation into the caller; only worker bugs surface here.
            await tg.__aexit__(None, None, None)

    async def _wait_sessions_idle(self) -> None:
        for session in list(self._sessions.values()):
            while session.running:
                if session.idle is None:
                    session.idle = anyio.Event()
                await session.idle.wait()

    def _stop_workers(self, reason: str) -> None:
        """Abort running turns and cancel the worker tasks (a no-op once they are idle)."""
        for session in self._sessions.values():
            queued, session.queue = session.queue, ()
            for ticket in queued:
                ticket.finish(None, cancelled(reason))
            if session.current is not None:
                session.current.abort(reason)
        for scope in self._worker_scopes:
            scope.cancel()

    async def _settle_background(self) -> None:
        """Wait up to `background_grace` for background jobs, then cancel the rest.

        A cancelled cost reconciliation leaves its hold on the root context's `held_cost`
        (an upper bound of unsettled spend); the count is in `unfinished_background_jobs`.
        """
        with anyio.move_on_after(self.background_grace):
            await self.wait_background()
        if self._background:
            self.unfinished_background_jobs += self._background
            log.warning(
                "harness %r: %d background job(s) (cost reconciliation) still running after %.1f s; "
                "cancelled, their held costs stay recorded in held_cost",
                self.name,
                self._background,
                self.background_grace,
            )
            for scope in self._background_scopes:
                scope.cancel()
            await self.wait_background()

    async def _close_adapters(self) -> None:
        for adapter in self._adapters.values():
            close = getattr(adapter, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    log.exception("closing model adapter %r failed", adapter)
        self._adapters.clear()

    def _require_started(self) -> anyio.abc.TaskGroup:
        if self._tg is None:
            raise NoeticConfigError(
                "HARNESS_NOT_STARTED",
                f"harness {self.name!r} is not running",
                hint="Use it inside `async with AgentHarness(...) as h:`.",
            )
        return self._tg

    def _spawn(self, work: Callable[[], Awaitable[None]], scopes: set[anyio.CancelScope]) -> None:
        """Start `work` in the harness task group inside its own cancel scope, kept in `scopes`
        while it runs, so the harness can stop it without cancelling its host task."""
        tg = self._require_started()

        async def scoped() -> None:
            with anyio.CancelScope() as scope:
                scopes.add(scope)
                try:
                    await work()
                finally:
                    scopes.discard(scope)

        tg.start_soon(scoped)

    def _start_background(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` shielded from callers' cancellation; `wait_background` awaits it."""
        tg = self._require_started()
        self._background += 1

        async def shielded() -> None:
            try:
                # The shield keeps a caller's timeout from cutting the job; the inner scope
                # is the harness's own way to stop it on exit (`_settle_background`).
                with anyio.CancelScope(shield=True):
                    with anyio.CancelScope() as scope:
                        self._background_scopes.add(scope)
                        try:
                            with anyio.move_on_after(BACKGROUND_TIMEOUT):
                                await job()
                        finally:
                            self._background_scopes.discard(scope)
            except Exception as exc:  # one line at WARNING; the traceback only at DEBUG
                log.warning(
                    "background job %s failed: %s: %s", _job_name(job), type(exc).__name__, str(exc)[:300]
                )
                log.debug("background job %s failed", _job_name(job), exc_info=exc)
            finally:
                self._background -= 1
                if self._background == 0 and self._background_idle is not None:
                    self._background_idle.set()
                    self._background_idle = None

        tg.start_soon(shielded)

    async def wait_background(self) -> None:
        """Wait until background jobs (such as cost reconciliation) have finished."""
        while self._background:
            if self._background_idle is None:
                self._background_idle = anyio.Event()
            await self._background_idle.wait()

    # --- turns ------------------------------------------------------------------------------

    def _session(self, thread_id: str | None) -> _Session:
        if thread_id is not None:  # every call naming a thread comes here first
            checked_id("thread_id", thread_id)
        return self._sessions.get(thread_id or DEFAULT_THREAD)

    def _new_session(self, thread_id: str) -> _Session:
        session = _Session(thread_id, self.name)
        session.stream.tap = self.inspect_sink
        return session

    def _thread_dropped(self, thread_id: str) -> None:
        """An evicted session left memory: so do the layer outputs cached for its thread and,
        without `storage=`, its layer state (the thread starts over, as its history does, SE-3)."""
        self.layer_memory.recalls.drop_scope(thread_id)
        if self._own_layer_store is not None:
            self._own_layer_store.drop_thread(thread_id)

    def _queue_input(
        self,
        input: Any,
        thread_id: str | None,
        execution_id: str | None,
        resource_id: str | None,
        state: Any,
        restored: Restored | None = None,
        start_worker: bool = True,
    ) -> tuple[_Session, _Ticket]:
        """Queue `input` on its thread's session (starting its worker unless `start_worker` is
        False: `run()` drains an idle thread in its own task); the session and the ticket."""
        self._require_started()
        if execution_id is not None:  # refused before a turn is queued, as the thread id is
            checked_id("execution_id", execution_id)
        if self.agent_graph is None:
            raise NoeticConfigError(
                "NO_STEP_CONFIGURED",
                f"harness {self.name!r} has no agent_graph",
                hint="Pass agent_graph= to the AgentHarness.",
            )
        session = self._session(thread_id)
        ticket = _Ticket(input, execution_id, resource_id, state, restored)
        ticket.trace_parent = self._tracing.caller_context()
        session.enqueue(ticket)
        if start_worker and not session.running:
            session.running = True
            self._spawn(partial(self._drain, session), self._worker_scopes)
        return session, ticket

    async def execute(
        self,
        input: Any,
        *,
        thread_id: str | None = None,
        execution_id: str | None = None,
        resource_id: str | None = None,
        state: Any = None,
    ) -> None:
        """Enqueue `input` for a turn on `thread_id` and return once it is accepted (HA-2).

        Tasks started just before (a watcher of `get_item_stream()`) get to subscribe first.
        """
        for _ in range(self._yields_to_subscribe):  # tasks started just before subscribe first
            await self._scheduler_pass()
        self._queue_input(input, thread_id, execution_id, resource_id, state)

    async def run(
        self,
        input: Any,
        *,
        thread_id: str | None = None,
        execution_id: str | None = None,
        resource_id: str | None = None,
        state: Any = None,
    ) -> HarnessResponse[OutT]:
        """Run one turn and return its response (its error is raised).

        With `storage=`, the execution is checkpointed as it goes, under `execution_id` when
        given (an id that already has a checkpoint raises `EXECUTION_EXISTS`). Tasks started
        just before (a watcher of `get_item_stream()`) get to subscribe before the turn starts;
        `stream(input)` is the call that needs no second task.
        """
        # Tasks started just before subscribe first (HA-5): one pass of the event loop on
        # asyncio (first in, first out), two on trio (which may run a new task after the
        # current one within a batch). A turn waiting here (10,000 at once in a burst of
        # concurrent runs) holds only this coroutine and the pass's one generator.
        for _ in range(self._yields_to_subscribe):
            await self._scheduler_pass()
        session, ticket = self._queue_input(input, thread_id, execution_id, resource_id, state, None, False)
        if not session.running:  # an idle thread: run the turn in the caller's task, no worker
            session.running = True
            await self._drain(session)
        if not ticket.finished:
            await ticket.wait()
        return self._answer(ticket)

    def stream(
        self,
        input: Any,
        *,
        thread_id: str | None = None,
        execution_id: str | None = None,
        resource_id: str | None = None,
        state: Any = None,
    ) -> StreamedTurn[OutT]:
        """Run one turn in the background and read its events as they happen.

        `async with h.stream(input) as turn: async for event in turn: ...` then
        `turn.response` (`turn.items()` gives item snapshots instead of events). The
        subscription is made before the input is queued, so nothing is missed and the loop
        ends with the turn; see `noetic.streamed_turn`.
        """
        self._require_started()
        if execution_id is not None:  # refused here, not once the turn is under way
            checked_id("execution_id", execution_id)
        session = self._session(thread_id)

        def queue() -> _Ticket:
            return self._queue_input(input, thread_id, execution_id, resource_id, state)[1]

        from noetic.streamed_turn import StreamedTurn  # only streaming callers need it

        return StreamedTurn(self, session, queue)

    def _withdraw(self, session: _Session, ticket: _Ticket) -> None:
        """Take a still-queued input back: its turn is answered with `cancelled`."""
        if session.withdraw(ticket):
            ticket.finish(None, cancelled("the input was withdrawn before its turn started"))

    def _answer(self, ticket: _Ticket) -> HarnessResponse[OutT]:
        """The response of a finished ticket's turn (its error is raised)."""
        if ticket.error is not None:
            raise ticket.error
        assert ticket.response is not None
        return ticket.response

    async def _drain(self, session: _Session) -> None:
        """Run the thread's queued turns one after the other until its queue is empty."""
        try:
            while session.queue:
                tickets, session.queue = _next_turn(session.queue)
                if session.restore_pending and not await self._restore_history(session, tickets):
                    continue
                await self._turn(session, tickets)
        finally:
            session.running = False
            if session.queue and self._tg is not None:  # interrupted with input still queued
                session.running = True
                self._spawn(partial(self._drain, session), self._worker_scopes)
            else:
                if session.idle is not None:
                    session.idle.set()
                    session.idle = None
                self._sessions.settled(session)

    async def _restore_history(self, session: _Session, tickets: list[_Ticket]) -> bool:
        """Read an evicted thread's history back before its first turn here (SE-2); when
        that fails the turn's tickets get the error and False is returned.

        A resumed execution runs on its own log, but the thread's history is read all the same:
        the thread may have moved on since the execution started, and keeps those turns (TH-1).
        A damaged thread history does not stop the resume (its own history was read and
        checked): the warning says the execution's log becomes the thread's.
        """
        try:
            await self._sessions.restore(session)
        except NoeticError as exc:
            if not (exc.code == "CHECKPOINT_CORRUPT" and tickets[0].restored is not None):
                return await self._not_restored(session, tickets, exc)
            log.warning(
                "thread %r: %s; resuming execution %r, whose history becomes the thread's (TH-1)",
                session.thread_id,
                exc.message,
                tickets[0].execution_id,
            )
            session.restore_pending = False
        except BaseException as exc:
            await self._not_restored(session, tickets, exc)
            raise
        return True

    async def _not_restored(self, session: _Session, tickets: list[_Ticket], exc: BaseException) -> bool:
        """Answer the tickets of a turn whose thread history could not be read (`exc`, or
        `cancelled` for an interruption) and return False."""
        error = exc if isinstance(exc, NoeticError) else cancelled("the turn was interrupted")
        if error is exc:
            session.last_error = error
        for ticket in tickets:
            ticket.finish(None, error)
        with anyio.CancelScope(shield=True):  # a resume that never starts: the next one may claim it
            for ticket in tickets:
                if ticket.restored is not None:
                    await ticket.restored.claim.release()
        return False

    def _turn_input(self, tickets: list[_Ticket], ctx: Context) -> Any:
        """The graph input of a turn; item inputs go to the log (graph input "")."""
        if len(tickets) == 1 and not _is_items(tickets[0].input):
            return tickets[0].input
        for ticket in tickets:
            value = ticket.input
            if isinstance(value, str):
                if value:
                    ctx.item_log.append(user_message(value))
            elif _is_items(value):
                for item in value if isinstance(value, list | tuple) else [value]:
                    ctx.item_log.append(item)
            else:
                raise NoeticConfigError(
                    "INVALID_ITEM",
                    f"queued turn input {value!r} cannot be merged with other inputs",
                    hint="Queue strings or items when several inputs share a turn; run structured inputs alone.",
                )
        return ""

    async def _turn(self, session: _Session, tickets: list[_Ticket]) -> None:
        """Run one turn: build its root context, run the graph, finish and answer the tickets.

        The finish is shielded: a turn whose task is cancelled (the caller of an inline `run`,
        harness shutdown) still tears its layers down, ends its stream and answers its tickets
        with `cancelled` before the cancellation goes on.
        """
        first = tickets[0]
        restored = first.restored
        turn_id = new_item_id("turn")
        for ticket in tickets:
            ticket.turn_id = turn_id
        run = Execution(
            self, session.stream, thread_id=session.thread_id, resource_id=first.resource_id, turn_id=turn_id
        )
        if restored is None:
            ctx = Context(run, item_log=session.log, state=first.state, id=first.execution_id)
            session.log_execution = ctx.id
        else:  # the execution runs on its snapshot's log, its thread's history as it saw it (RS-14)
            try:
                session.log.unpack()  # a packed thread that cannot be read back fails this resume only
            except NoeticError as exc:
                await self._not_restored(session, tickets, exc)
                return
            ctx = restored.context(run)
            if thread_moved_on(session.log, ctx.item_log, ctx.id, session.log_execution):
                # the thread keeps its log, with other executions' turns; the turn's end
                # appends what this one adds (TH-1)
                session.log_execution = None
            else:  # nothing to lose: it becomes the thread's
                session.log, session.log_execution = ctx.item_log, ctx.id
                if restored.snapshot.history is not None:  # its stored pieces go on from there
                    set_chain(session, session.log, restored.snapshot.history)
        run.root = ctx
        session.log.stop_listeners()
        run.watch_log(ctx)
        session.current = ctx
        session.stream.start_turn()
        started = time.monotonic()
        run.emit_later(turn_started, turn_id, session.thread_id, ctx.id)
        first_item = len(session.log) if restored is None else restored.snapshot.first_item
        frame = reset_frame()
        span_token = run.open_root_span(ctx, first.trace_parent, resumed=restored is not None)
        output: Any = None
        error: NoeticError | None = None
        try:
            graph_input = self._turn_input(tickets, ctx) if restored is None else restored.snapshot.input
            if self.storage is not None or self._store is not None:  # else nothing to attach
                await self._make_durable(run, session, graph_input, first_item, restored)
            if self.layer_set.specs or run.layers.root is not None:
                await run.layers.start_root(ctx, self.layer_set)
            output = await execute(self.agent_graph, graph_input, ctx)  # type: ignore[arg-type]
        except NoeticError as exc:
            error = exc
        except BaseException:
            ctx.abort("the turn was interrupted")
            error = cancelled("the turn was interrupted")
            raise
        finally:
            restore_frame(frame)
            try:
                if run.recorder is None and run.layers.root is None:  # nothing in the finish can block
                    self._end_execution(run, session, first_item)
                    self._answer_turn(run, session, tickets, output, error, first_item, started)
                elif run.recorder is None and run.layers.quiet_finish():  # layers with nothing to wait for
                    await self._finish_turn(run, session, tickets, output, error, first_item, started)
                else:
                    with anyio.CancelScope(shield=True):
                        await self._finish_turn(run, session, tickets, output, error, first_item, started)
            finally:
                run.end_root_span(ctx, span_token, error)

    async def _finish_turn(
        self,
        run: Execution,
        session: _Session,
        tickets: list[_Ticket],
        output: Any,
        error: NoeticError | None,
        first_item: int,
        started: float,
    ) -> None:
        """End the turn: close its recorder and tear its root layers down (either may block),
        then answer its tickets."""
        self._end_execution(run, session, first_item)
        if run.recorder is not None:
            outcome: Outcome = (
                "completed" if error is None else "aborted" if error.code == "cancelled" else "failed"
            )
            failure = await run.recorder.close(run, outcome, None if error is None else error.message)
        else:
            failure = None
        if run.layers.root is not None:
            await run.layers.finish_root(error)
        self._answer_turn(run, session, tickets, output, error, first_item, started, failure)

    def _end_execution(self, run: Execution, session: _Session, first_item: int) -> None:
        """Detach the finished execution from its thread and close its channels; a resumed
        execution that ran on its own log hands the thread the items it lacks (TH-1)."""
        ctx = run.root
        assert ctx is not None
        session.current = None
        self._channels.close(ctx.id)  # CH-13: what the turn sent and nobody received ends here
        session.log.stop_listeners()  # the finished execution must not stay reachable from the log
        if ctx.item_log is not session.log:
            ctx.item_log.stop_listeners()
            catch_up(session.log, ctx.item_log.items[first_item:])

    def _answer_turn(
        self,
        run: Execution,
        session: _Session,
        tickets: list[_Ticket],
        output: Any,
        error: NoeticError | None,
        first_item: int,
        started: float,
        checkpoint_error: NoeticError | None = None,
    ) -> None:
        """Build the turn's response, publish its end and answer its tickets."""
        ctx = run.root
        assert ctx is not None
        if ctx.completed:
            output = ctx.completion_value
        response = self._response(ctx, output, first_item, checkpoint_error)
        turn_id = run.turn_id
        if error is None:
            session.last_response, session.last_error = response, None
            run.emit(
                "turn_completed", {"turn_id": turn_id, "duration_ms": (time.monotonic() - started) * 1000}
            )
        else:
            session.last_error = error
            kind = "turn_aborted" if error.code == "cancelled" else "turn_failed"
            run.emit(kind, {"turn_id": turn_id, "reason": error.message, "error": error})
        for ticket in tickets:
            ticket.finish(response, error)

    async def _make_durable(
        self, run: Execution, session: _Session, graph_input: Any, first_item: int, restored: Restored | None
    ) -> None:
        """Attach the ledger and recorder of a resumed or (with storage) a new execution (whose
        start writes only the session's items its thread's stored history lacks, HS-1)."""
        store = self._checkpoint_store()
        if store is None:
            return
        assert self._retention is not None  # validated whenever storage= is set
        if restored is not None:
            await restored.attach(run, self._retention, self.durability)
        else:
            from noetic.durable.recorder import begin

            written = await begin(
                run,
                store,
                self._retention,
                input=graph_input,
                first_item=first_item,
                durability=self.durability,
                stored=stored_point(session),
            )
            if written is not None:
                set_chain(session, session.log, written)

    def _response(
        self, ctx: Context, output: Any, first_item: int, checkpoint_error: NoeticError | None = None
    ) -> HarnessResponse:
        items = tuple(ctx.item_log.items)
        text = output if isinstance(output, str) else last_assistant_text(items[first_item:])
        return HarnessResponse(
            output=output,
            text=text,
            items=items,
            usage=counted_usage(ctx._in, ctx._out, ctx._cached),
            cost=ctx.cost,
            billed_cost=ctx.billed_cost,
            held_cost=ctx.held_cost,
            execution_id=ctx.id,
            thread_id=ctx.thread_id,
            checkpoint_error=checkpoint_error,
            _layer_usage=ctx._layer_usage,
        )

    # --- results ----------------------------------------------------------------------------

    async def get_agent_response(self, *, thread_id: str | None = None) -> HarnessResponse[OutT]:
        """The last turn's response once the thread is idle; a failed turn raises its error."""
        session = self._session(thread_id)
        while session.running:
            if session.idle is None:
                session.idle = anyio.Event()
            await session.idle.wait()
        if session.last_error is not None:
            raise session.last_error
        if session.last_response is None:
            evicts = self._sessions.policy.evicts
            raise NoeticConfigError(
                "NO_STEP_CONFIGURED",
                f"thread {session.thread_id!r} has not run a turn yet"
                + (" in this session: it may have been evicted since its last turn" if evicts else ""),
                hint="Call execute() or run() before get_agent_response()"
                + (", or keep the response run() returns (SE-4)." if evicts else "."),
            )
        return session.last_response

    def get_full_stream(self, *, thread_id: str | None = None) -> AsyncIterator[StreamEvent]:
        """Every event of the running turn (from its start) or the next one, until it ends."""
        return self._session(thread_id).stream.subscribe()

    def get_item_stream(self, *, thread_id: str | None = None) -> AsyncIterator[Item]:
        """Item snapshots of the running or next turn (in-progress ones have `is_complete` False)."""
        return items_from_events(self.get_full_stream(thread_id=thread_id))

    # --- control ----------------------------------------------------------------------------

    def create_context(
        self,
        *,
        parent: Context | None = None,
        items: Sequence[Item] = (),
        state: Any = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> Context:
        """A context outside any turn (HA-8): a root, or a child of `parent`."""
        if parent is not None:
            return parent._exec.child_context(parent, item_log=ItemLog(items), state=state)
        session = self._session(thread_id)
        run = Execution(self, session.stream, thread_id=session.thread_id, resource_id=resource_id)
        ctx = Context(run, item_log=ItemLog(items), state=state)
        run.root = ctx
        run.layers.attach_root(ctx, self.layer_set)
        return ctx

    def abort(self, *, thread_id: str | None = None, reason: str | None = None) -> None:
        """Abort the running turn of a thread (queued input stays queued)."""
        current = self._session(thread_id).current
        if current is not None:
            current.abort(reason)

    def get_channel_handle(self, channel: Channel[T], execution_id: str) -> ChannelHandle[T]:
        """A handle on `channel` of execution `execution_id`, for code outside it (CH-10).

        The execution may be running or not started yet (values sent early wait for it; pass
        the same `execution_id=` to `execute`/`run`); once it completes the handle is `closed`.
        """
        return ChannelHandle(self._channels.for_handle(execution_id), channel, execution_id)

    def get_channel_stream(self, channel: Channel[T], execution_id: str) -> AsyncIterator[T]:
        """Every value of `channel` in execution `execution_id` from now on; the iteration
        ends normally when the execution completes and never times out (CH-11)."""
        return self.get_channel_handle(channel, execution_id).stream()

    async def cancel(self, ctx: Context, reason: str | None = None) -> None:
        """Abort `ctx` and its children, then run their layers' `on_complete(outcome="aborted")`
        and `dispose`, children before parents, once (CTX-14). `ctx.abort()` alone runs neither."""
        await ctx._exec.layers.cancel(ctx, reason)

    async def resume(self, execution_id: str, *, input: Any = _NOT_GIVEN) -> HarnessResponse[OutT]:
        """Continue an execution from its checkpoint (RS-4..RS-9, RS-14).

        `input` is for an execution whose input was not plain JSON (a pydantic model, a tuple,
        a dict with int keys, NaN), which its checkpoint does not store: resuming one without
        it raises `RESUME_INPUT_REQUIRED`; given it again, the steps recorded for that input
        replay. An execution whose input was stored resumes from it, and `input=` then raises
        `RESUME_INPUT_STORED` (a config error) rather than be silently ignored.

        The execution keeps its id, thread and item log; steps the ledger recorded replay
        without running (no model calls, nothing added to `billed_cost`, their spend restored
        into `cost`), the others run. A thread that moved on since the execution started keeps
        its turns: what the execution adds is appended to its history (TH-1). Raises
        `UNKNOWN_EXECUTION` without a checkpoint, `EXECUTION_LOCKED` while another attempt holds
        it, `CHECKPOINT_SCHEMA_MISMATCH` or `CHECKPOINT_CORRUPT` for a checkpoint it cannot trust.
        """
        store = self._checkpoint_store()
        if store is None:
            raise self._no_store("resume")
        self._require_started()
        from noetic.durable.recorder import restore

        restored = await restore(store, execution_id, self._item_declarations())
        snap = restored.snapshot
        try:
            if snap.input_stored != (input is _NOT_GIVEN):
                raise _resume_input_error(execution_id, snap.input_stored)
            if not snap.input_stored:
                restored = replace(restored, snapshot=replace(snap, input=input))
            _, ticket = self._queue_input(
                None, snap.thread_id, execution_id, snap.resource_id, None, restored
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await restored.claim.release()
            raise
        await ticket.wait()
        return self._answer(ticket)

    async def clear_checkpoint(self, execution_id: str) -> None:
        """Remove an execution's snapshot and every ledger entry (RS-13); needed before
        resuming an execution whose workflow changed beneath a completed step (RS-6)."""
        store = self._checkpoint_store()
        if store is None:
            raise self._no_store("clear_checkpoint")
        if self._runs_here(execution_id):  # the store's claim would blame "another process"
            raise NoeticError(
                "EXECUTION_LOCKED",
                f"execution {execution_id!r} is running in this harness: wait for its turn to end "
                "(or harness.abort() its thread), then clear its checkpoint",
                execution_id=execution_id,
            )
        from noetic.durable.recorder import clear

        await clear(store, execution_id)

    def _runs_here(self, execution_id: str) -> bool:
        """Whether a turn of this harness is running or queued for `execution_id`."""
        for session in self._sessions.values():
            current = session.current
            if current is not None and current.id == execution_id:
                return True
            if any(ticket.execution_id == execution_id for ticket in session.queue):
                return True
        return False

    async def delete_thread_history(self, thread_id: str) -> None:
        """Remove the thread's stored history — the record naming it and every piece of it —
        from the checkpoint store, and start the thread over here: its next turn has an empty
        history (HS-4).

        Raises `THREAD_BUSY` while a turn of the thread runs or waits in this harness (no other
        harness may be running one either). Executions of the thread that still have a
        checkpoint can no longer be resumed (their resume raises `CHECKPOINT_CORRUPT` naming
        the missing piece): `clear_checkpoint` them too. Another harness holding the thread in
        memory writes none of it back once it sees the history gone (TH-2).
        """
        store = self._checkpoint_store()
        if store is None:
            raise self._no_store("delete_thread_history")
        from noetic.durable.history import thread_prefix

        self._sessions.check_not_busy(thread_id)
        keys = await store.list_prefix(thread_prefix(thread_id))
        self._sessions.check_not_busy(thread_id)  # a turn may have started while listing
        self._sessions.forget(thread_id)
        if keys:
            await store.write({}, keys)

    def _no_store(self, what: str) -> NoeticConfigError:
        return NoeticConfigError(
            "NO_CHECKPOINT_STORE",
            f"harness {self.name!r} cannot {what}: it has no checkpoint store",
            hint="Pass storage='sqlite:///path/to/run.db' (or a CheckpointStore) to the AgentHarness.",
        )


def _next_turn(queue: _Queue) -> tuple[list[_Ticket], _Queue]:
    """Split a non-empty queue into the next turn's tickets and the rest (`()` when none): a
    resume runs alone."""
    if len(queue) == 1:
        return list(queue), ()
    alone = next((i for i, ticket in enumerate(queue) if ticket.restored is not None), len(queue))
    cut = 1 if alone == 0 else alone
    return list(queue[:cut]), list(queue[cut:]) or ()


def _cache_config(value: Any) -> ContextCacheConfig | None:
    """The harness's `context_cache=` checked now (`INVALID_CONTEXT_CACHE`); None, the default
    settings, stays None so the settings model is built only if anchoring reads it."""
    if value is None:
        return None
    from noetic.layers.cache_config import ContextCacheConfig

    return ContextCacheConfig.of(value)


def _event_sink(value: Any) -> EventSink | None:
    """The inspector sink for `inspect=` (None or "" leaves it off, and its module unloaded)."""
    if value is None or value == "":
        return None
    from noetic.inspect_sink import EventSink, inspect_url

    url = inspect_url(value)
    return EventSink(url) if url is not None else None


def _layer_store(
    given: LayerStateStore | None, storage: Any, checkpoints: Callable[[], CheckpointStore | None]
) -> LayerStateStore:
    """The harness's layer state store: the one given, the checkpoint store's, or memory."""
    if given is not None:
        if not isinstance(given, LayerStateStore):
            raise NoeticConfigError(
                "INVALID_LAYER",
                f"layer_store must be a LayerStateStore, got {type(given).__name__}",
                hint="Give an object with async get(key), set(key, value) and delete(key).",
            )
        return given
    if storage is None:
        return MemoryLayerStateStore()
    from noetic.layers.checkpoint_state import CheckpointLayerStateStore  # with storage= only

    def resolve() -> CheckpointStore:
        store = checkpoints()
        assert store is not None  # storage= is set
        return store

    return CheckpointLayerStateStore(resolve)


def _ledger_retention(storage: Any, retention: Any) -> StepLedgerRetention | None:
    """Validate the durability options at construction (None when neither is set)."""
    if storage is None and retention is None:
        return None
    from noetic.durable.ledger import StepLedgerRetention
    from noetic.durable.store import CheckpointStore

    if storage is not None and not isinstance(storage, str | CheckpointStore):
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage must be a URL or a CheckpointStore, got {type(storage).__name__}",
            hint="Pass storage='sqlite:///run.db', storage='memory://', or a CheckpointStore instance.",
        )
    checked = StepLedgerRetention.of(retention)
    if storage is None:
        raise NoeticConfigError(
            "STEP_LEDGER_RETENTION_INVALID",
            "step_ledger_retention= has no effect without storage=: nothing is checkpointed",
            hint=_NEEDS_STORAGE_HINT.format(option="step_ledger_retention"),
        )
    return checked


def _durability(durability: Any, storage: Any) -> Durability:
    """Validate `durability=` at construction (without importing durability when unused):
    a known mode, and one other than the default only with a store to commit to."""
    if durability == "step":
        return "step"
    from noetic.durable.recorder import durability_of

    mode = durability_of(durability)
    if storage is None:
        raise NoeticConfigError(
            "DURABILITY_INVALID",
            f"durability={mode!r} has no effect without storage=: nothing is checkpointed",
            hint=_NEEDS_STORAGE_HINT.format(option="durability"),
        )
    return mode


#: The hint for a durability option given to a harness without a checkpoint store.
_NEEDS_STORAGE_HINT = (
    "Pass storage='sqlite:///runs.db' (or 'memory://', or a CheckpointStore) with {option}=, "
    "or leave {option}= out."
)


def _resume_input_error(execution_id: str, stored: bool) -> NoeticError:
    """The error for a resume whose `input=` does not fit its checkpoint (see `resume`)."""
    if stored:
        return NoeticConfigError(
            "RESUME_INPUT_STORED",
            f"execution {execution_id!r} stored its input; resume() continues from it",
            hint=f"Leave input= out: resume({execution_id!r}).",
            execution_id=execution_id,
        )
    return NoeticError(
        "RESUME_INPUT_REQUIRED",
        f"execution {execution_id!r} started from an input that is not plain JSON, which its "
        f"checkpoint does not store; pass it again: resume({execution_id!r}, input=...)",
        execution_id=execution_id,
    )


def _job_name(job: Callable[..., Any]) -> str:
    """A background job's name for a log line (`_flush`, `write_out`, …)."""
    return str(getattr(job, "__qualname__", None) or getattr(job, "__name__", None) or type(job).__name__)


def _not_a_storage_url(spec: str) -> NoeticConfigError:
    """The error for a `storage=` string without `scheme://` (`sqlite:run.db`, `run.db`)."""
    scheme, colon, rest = spec.partition(":")
    example = f"{scheme}:///{rest}" if colon and scheme.isalnum() else f"sqlite:///{spec}"
    return NoeticConfigError(
        "UNKNOWN_CHECKPOINT_STORE",
        f"storage={spec!r} is not a storage URL: it needs a scheme followed by '://'",
        hint=f"Did you mean {example!r}? (sqlite:///run.db is a file relative to the current "
        "directory, sqlite:////var/run.db an absolute path, memory:// keeps nothing on disk.)",
    )


def _grace(seconds: Any) -> float:
    """Validate `background_grace=` at construction: a number of seconds, zero or more."""
    grace = as_float(seconds)
    if grace is None or not grace >= 0:
        raise NoeticConfigError(
            "INVALID_HARNESS_OPTION",
            f"background_grace must be a number of seconds, zero or more, got {seconds!r}",
            hint=f"Pass background_grace={DEFAULT_BACKGROUND_GRACE} (the default) or 0 to cancel "
            "background jobs at once on exit.",
        )
    return grace


def _flag(name: str, value: Any) -> bool:
    """Validate an on/off option at construction: only True or False (a string such as "no"
    is truthy, and would silently mean on)."""
    if not isinstance(value, bool):
        raise NoeticConfigError(
            "INVALID_HARNESS_OPTION",
            f"{name} must be True or False, got {value!r}",
            hint=f"Pass {name}=False to switch it off.",
        )
    return value


def _is_items(value: Any) -> bool:
    """True for an item or a non-empty list of items (dicts are plain data, not items)."""
    if is_item(value):
        return True
    return isinstance(value, list | tuple) and bool(value) and all(is_item(v) for v in value)
