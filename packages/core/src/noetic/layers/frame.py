"""Layers on one context: entries (a layer, its state, its status), the `LayerContext` hooks
receive, hook calls with their timeouts, and `LayerFrame` — the set active on a context.

A frame's entries are in array order. A frame *owns* the entries it initialized (or received
through `on_spawn`); it tears exactly those down — `on_complete` in array order, then
`dispose` in reverse — once, shielded from cancellation, each hook under its own timeout, one
failure never stopping the others (LY-10, LY-11). A disabled entry (its `init` failed with
`on_init_error="disable"`, or `on_spawn` declined) is skipped by every hook, dispose included.

State an entry loaded from storage in `init` is written back (key `state`) whenever it changes
— coalesced: `flush` writes the latest value once, and writing None deletes the key (LY-14).
Execution-scoped layers and state received through `on_spawn` are never written back.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import math
import operator
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any

import anyio

from noetic.errors import NoeticError
from noetic.layers.contract import CLEAR, DEFAULT_TIMEOUTS, HOOK_NAMES, UNSET, Outcome
from noetic.layers.storage import ScopedStorage, StorageScope
from noetic.logs import logger
from noetic.plain_json import MAX_DEPTH, is_plain_json

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.harness import AgentHarness
    from noetic.items import ItemLog
    from noetic.layers.provides import LayerHandles
    from noetic.tools import Tool

__all__ = [
    "LayerContext",
    "LayerEntry",
    "LayerFrame",
    "commit_state",
    "report",
    "run_hook",
    "run_hooks",
    "scope_type_of",
]

log = logger("noetic.layers")
#: The storage key every layer's state is written through to.
STATE_KEY = "state"
#: How deep a layer's state may nest: an execution's snapshot holds it four levels down
#: (`layers` → `layers` → the layer id → `state`).
STATE_DEPTH = MAX_DEPTH - 4


class LayerEntry:
    """One layer on one execution: its state, whether it started, whether it is disabled."""

    __slots__ = (
        "_disabled",
        "_lock",
        "_started",
        "_storage",
        "active",
        "checked",
        "dirty",
        "durable",
        "hooks",
        "id",
        "layer",
        "scope",
        "state",
    )

    def __init__(
        self,
        layer: Any,
        scope: StorageScope,
        hooks: Mapping[str, Callable[..., Any] | None],
        started: bool,
        durable: bool,
        checked: bool = False,
    ):
        self.layer = layer
        #: The layer id.
        self.id: str = layer.id
        #: The layer's hooks by name (None where it defines none), looked up once (`hook_table`).
        self.hooks = hooks
        #: Where its storage handle points (`storage`, made on first read: most turns never
        #: read or write a layer's stored state).
        self.scope = scope
        self._storage: ScopedStorage | None = None
        self.state: Any = None
        self._started = started
        self._disabled = False
        #: Whether hooks run for this entry: started and not disabled. Kept up to date by
        #: `started` and `disabled` rather than worked out on each read: a frame lists its
        #: active entries several times a step (`LayerFrame.active`, `with_hook`).
        self.active = started
        self.durable = durable
        #: Whether a checkpoint holds this state (the harness has storage): then every new
        #: state must be plain JSON a checkpoint can store (`set_state`).
        self.checked = checked
        self.dirty = False
        self._lock: anyio.Lock | None = None

    @property
    def started(self) -> bool:
        """Whether the entry started (its `init` ran, or it needed none)."""
        return self._started

    @started.setter
    def started(self, value: bool) -> None:
        self._started = value
        self.active = value and not self._disabled

    @property
    def disabled(self) -> bool:
        """Whether the entry is disabled (its `init` failed under `on_init_error="disable"`,
        or `on_spawn` declined it): every hook skips it."""
        return self._disabled

    @disabled.setter
    def disabled(self, value: bool) -> None:
        self._disabled = value
        self.active = self._started and not value

    @property
    def lock(self) -> anyio.Lock:
        """Serializes provided-function calls, so concurrent updates never lose one another."""
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    @property
    def storage(self) -> ScopedStorage:
        """The layer's storage, confined to its scope (`ScopedStorage`)."""
        storage = self._storage
        if storage is None:
            store, key, thread_id = self.scope
            storage = self._storage = ScopedStorage(store, self.id, key, thread_id)
        return storage

    @property
    def cache_key(self) -> tuple[str, str]:
        """The key of this layer's entry in the harness's recall cache (eventual layers):
        its scope key and its id."""
        return (self.scope[1], self.id)

    def hook(self, name: str) -> Callable[..., Any] | None:
        """The layer's hook `name`, or None when it does not define it."""
        hooks = self.hooks
        return hooks[name] if name in hooks else _defined(self.layer, name)

    def timeout(self, name: str) -> float:
        """Seconds the hook `name` may run (LY-12 defaults, overridden by `layer.timeouts`)."""
        overrides = getattr(self.layer, "timeouts", None) or {}
        return float(overrides.get(name, DEFAULT_TIMEOUTS[name]))

    def set_state(self, value: Any) -> None:
        """Replace the state (`CLEAR` clears it); durable entries are written on `flush`.

        On a checkpointed entry (`checked`), a state no checkpoint can store — not plain JSON
        (NaN, a tuple, an object, an `Enum` member) or nested deeper than `STATE_DEPTH` — raises
        `INVALID_LAYER_STATE` and the state stays as it was: refused here, where the layer set
        it, rather than making every later checkpoint of the execution fail.
        """
        state = None if value is CLEAR else value
        self.check_state(state)
        self.state = state
        self.dirty = self.dirty or self.durable

    def check_state(self, state: Any) -> None:
        """Raise `INVALID_LAYER_STATE` when this entry is `checked` and `state` is not one a
        checkpoint can store (see `set_state`)."""
        if self.checked and not is_plain_json(state, max_depth=STATE_DEPTH):
            raise NoeticError(
                "INVALID_LAYER_STATE",
                f"context layer {self.id!r}: its new state cannot be checkpointed (it must be plain "
                f"JSON: dicts with str keys, lists, str, int, bool, None, finite floats, at most "
                f"{STATE_DEPTH} levels deep); the state is unchanged",
                layer_id=self.id,
            )

    async def flush(self) -> None:
        """Write the latest state through to storage if it changed (None deletes the key)."""
        if not self.dirty:
            return
        self.dirty = False
        try:
            if self.state is None:
                await self.storage.delete(STATE_KEY)
            else:
                await self.storage.set(STATE_KEY, self.state)
        except Exception as exc:  # noqa: BLE001 - persistence never breaks the agent
            report(self, "persist", exc)

    def __repr__(self) -> str:
        status = "disabled" if self.disabled else "active" if self.started else "not started"
        return f"<LayerEntry {self.id!r} {status}>"


def _defined(layer: Any, name: str) -> Callable[..., Any] | None:
    hook: Callable[..., Any] | None = getattr(layer, name, None)
    return hook if callable(hook) else None


def hook_table(layer: Any) -> dict[str, Callable[..., Any] | None]:
    """Every hook of `layer` by name (None where it defines none), looked up once: a layer's
    hooks are fixed once it runs, so the runtime need not look them up on every call."""
    return {name: _defined(layer, name) for name in HOOK_NAMES}


#: An entry's layer and a layer's slot, read in C (`hook_index` reads both for every frame).
layer_of: Callable[[LayerEntry], Any] = operator.attrgetter("layer")
_slot: Callable[[Any], float] = operator.attrgetter("slot")
#: Whether an entry has state to write (`LayerEntry.dirty`), read in C.
_dirty: Callable[[LayerEntry], bool] = operator.attrgetter("dirty")
#: A harness's hook indexes (`hook_index`): by the ids and slots of a list of layer objects,
#: the objects (held, so no id is reused while remembered) and the index.
HookIndexes = dict[tuple[Any, ...], tuple[tuple[Any, ...], Mapping[str, tuple[int, ...]]]]
#: Hook indexes kept before the memo starts over.
MAX_HOOK_INDEXES = 1_000


def hook_index(memo: HookIndexes, entries: Sequence[LayerEntry]) -> Mapping[str, tuple[int, ...]]:
    """For every hook name some of `entries` define, the positions of those, slot ascending
    (ties in list order); a name none defines is left out. It depends only on the layer
    objects (their hooks are fixed once they run, `hook_table`) and their slots, so it is
    worked out once per such list and `memo`'d: a harness's frames repeat the same layers
    turn after turn."""
    layers = tuple(map(layer_of, entries))
    key = (tuple(map(id, layers)), tuple(map(_slot, layers)))
    found = memo.get(key)
    if found is not None:
        return found[1]
    by_slot = sorted(range(len(entries)), key=lambda i: entries[i].layer.slot)  # stable
    index = {}
    for name in HOOK_NAMES:
        positions = tuple([i for i in by_slot if entries[i].hooks.get(name) is not None])
        if positions:
            index[name] = positions
    if len(memo) >= MAX_HOOK_INDEXES:
        memo.clear()
    memo[key] = (layers, index)
    return index


class LayerContext:
    """What a layer hook receives: this layer's `state` and `storage` on one execution.

    `execution` is the running `Context` (its item log, ids, harness); `query` is the string
    input of the model step being assembled (`""` otherwise).
    """

    __slots__ = ("_entry", "_snapshot", "execution", "query")

    def __init__(self, entry: LayerEntry, execution: Context, query: str = "", snapshot: Any = UNSET):
        self._entry = entry
        self._snapshot = snapshot
        self.execution = execution
        self.query = query

    @property
    def layer_id(self) -> str:
        """The id of the layer this context belongs to."""
        return self._entry.id

    @property
    def state(self) -> Any:
        """The layer's state (for `store`: a snapshot of it)."""
        return self._entry.state if self._snapshot is UNSET else self._snapshot

    @property
    def storage(self) -> ScopedStorage:
        """The layer's storage, confined to its scope (`await ctx.storage.get("state")`)."""
        return self._entry.storage

    @property
    def scope_key(self) -> str:
        """The scope key: thread id, resource id, `"__global__"` or execution id."""
        return self._entry.scope[1]

    @property
    def execution_id(self) -> str:
        """The id of the execution (`Context.id`)."""
        return self.execution.id

    @property
    def thread_id(self) -> str:
        """The thread of the execution."""
        return self.execution.thread_id

    @property
    def resource_id(self) -> str | None:
        """The resource of the execution, if any."""
        return self.execution.resource_id

    @property
    def depth(self) -> int:
        """0 for a root execution, parent depth + 1 for children."""
        return self.execution.depth

    @property
    def item_log(self) -> ItemLog:
        """The execution's item log (read it; layers never append to it)."""
        return self.execution.item_log

    @property
    def harness(self) -> AgentHarness:
        """The harness running the execution."""
        return self.execution.harness

    def read_layer_state(self, layer_id: str) -> Any:
        """A copy of another active layer's state on this execution, or None."""
        frame = self.execution._layers
        entry = frame.get(layer_id) if frame is not None else None
        return copy.deepcopy(entry.state) if entry is not None else None

    def __repr__(self) -> str:
        return f"<LayerContext {self.layer_id!r} on {self.execution.id}>"


def report(entry: LayerEntry, hook: str, exc: BaseException) -> None:
    """Log a hook failure the runtime recovered from."""
    log.warning("context layer %r: %s failed: %s: %s", entry.id, hook, type(exc).__name__, exc)


async def run_hook(entry: LayerEntry, name: str, *args: Any) -> Any:
    """Call hook `name` with `args` under its timeout; errors and `TimeoutError` propagate."""
    hook = entry.hook(name)
    assert hook is not None
    value = hook(*args)
    if inspect.isawaitable(value):
        with anyio.fail_after(entry.timeout(name)):
            value = await value
    return value


async def run_hooks(
    entries: Sequence[LayerEntry],
    name: str,
    args: Callable[[LayerEntry], tuple[Any, ...]],
    done: Callable[[LayerEntry, Any], None],
    failed: Callable[[LayerEntry, Exception], None],
    scope_type: type[anyio.CancelScope] | None,
) -> None:
    """Call hook `name` of each of `entries` in turn, each under its own timeout, as
    `run_hook` would one by one — but with at most one cancel scope for the whole run.

    `args(entry)` builds a call's arguments just before it; `done(entry, value)` takes its
    result and `failed(entry, exc)` what the hook (or `done`) raised — `TimeoutError` when the
    hook overran. Either may raise to stop the run. Cancellation from outside propagates.

    Entering a cancel scope costs more than a cheap hook itself, and most hooks never suspend.
    Hooks that are plain functions run with no scope at all (they cannot suspend, so no
    timeout can fire in them); the scope opens at the first hook that returns an awaitable,
    before that awaitable has run a step, and the rest of the run shares it. It has no
    deadline while a hook runs up to its first suspension (a timeout can only fire at one); a
    hook that does suspend finishes under the time it has left, counted from its call. After
    an overrun the rest runs in a fresh scope.

    `scope_type` is the running event loop's scope class (`scope_type_of`): `anyio.CancelScope()`
    looks the backend up on every call, which costs about as much as entering the scope.
    """
    calls = _calls(entries, name, args, failed)
    for call in calls:
        entry, value, _ = call
        if type(value) is CoroutineType or inspect.isawaitable(value):
            break
        try:
            done(entry, value)
        except Exception as exc:  # noqa: BLE001 - the caller's `failed` decides
            failed(entry, exc)
    else:
        return
    # The awaitable this call returned has not run yet (a coroutine starts at its first
    # `send`), so a scope the hook opens before its first suspension nests inside ours.
    new_scope = anyio.CancelScope if scope_type is None else scope_type
    pending: Iterator[tuple[LayerEntry, Any, float]] = itertools.chain([call], calls)
    while True:
        with new_scope() as scope:
            for current, value, started in pending:
                try:
                    if type(value) is CoroutineType:  # most hooks are `async def`: no further test
                        # its first step inline: most hooks finish there, with no deadline
                        # set, so no overrun to look for either
                        try:
                            trap = value.send(None)
                        except StopIteration as finished:
                            done(current, finished.value)
                            continue
                        value = await _timed(scope, current, name, _Resumed(value, trap), started)
                    elif inspect.isawaitable(value):
                        value = await _timed(scope, current, name, value, started)
                    done(current, value)
                except Exception as exc:  # noqa: BLE001 - the caller's `failed` decides
                    failed(current, exc)
                if scope.cancel_called:  # the hook outlived its deadline yet returned
                    break
            else:
                return
        if scope.cancelled_caught:
            failed(current, TimeoutError())
        pending = calls


def _calls(
    entries: Sequence[LayerEntry],
    name: str,
    args: Callable[[LayerEntry], tuple[Any, ...]],
    failed: Callable[[LayerEntry, Exception], None],
) -> Iterator[tuple[LayerEntry, Any, float]]:
    """Each entry's call of hook `name` as `(entry, what it returned, when it was called)`;
    a call that raised goes to `failed` instead."""
    for entry in entries:
        started = time.monotonic()
        try:
            value = entry.hooks[name](*args(entry))  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - the caller's `failed` decides
            failed(entry, exc)
            continue
        yield entry, value, started


def scope_type_of(ctx: Context) -> type[anyio.CancelScope] | None:
    """The scope class of the event loop `ctx` runs on, remembered by its harness when it
    started (None before: then `run_hooks` asks anyio)."""
    return ctx._exec.harness._scope_type


async def _timed(
    scope: anyio.CancelScope, entry: LayerEntry, name: str, pending: Awaitable[Any], started: float
) -> Any:
    """The rest of a hook call that suspended, inside `scope` (see `run_hooks`), under the time
    its timeout leaves it, counted from the call (`started`, `time.monotonic()`)."""
    scope.deadline = anyio.current_time() + entry.timeout(name) - (time.monotonic() - started)
    try:
        return await pending
    finally:
        scope.deadline = math.inf


class _Resumed:
    """Awaiting it finishes a coroutine that already ran up to its first suspension, `trap`
    (what it handed the event loop), exactly as awaiting it from the start would have.

    Written by hand: no library resumes an already started coroutine inside another await.
    """

    __slots__ = ("_coro", "_trap")

    def __init__(self, coro: Coroutine[Any, Any, Any], trap: Any):
        self._coro = coro
        self._trap = trap

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, trap = self._coro, self._trap
        while True:
            try:
                sent = yield trap
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in, as `yield from` would
                try:
                    trap = coro.throw(exc)
                except StopIteration as finished:
                    return finished.value
            else:
                try:
                    trap = coro.send(sent)
                except StopIteration as finished:
                    return finished.value


def _takes_argument(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def commit_state(entry: LayerEntry, ctx: Context, value: Any, hook: str) -> None:
    """Give `entry` the state hook `hook` returned (`UNSET` keeps it) and drop its cached
    recall, so an eventual layer renders the new state next time. A state `set_state`
    refuses fails that hook (reported, LY-12): the state stays as it was."""
    if value is UNSET:
        return
    try:
        entry.set_state(value)
    except NoeticError as exc:
        report(entry, hook, exc)
        return
    ctx._exec.harness.layer_memory.recalls.invalidate(entry.cache_key)


def is_cancellation(exc: BaseException) -> bool:
    """True for Noetic's `cancelled` error (a hook unwinding because its context aborted)."""
    return isinstance(exc, NoeticError) and exc.code == "cancelled"


def _started(entry: LayerEntry, state: Any) -> None:
    entry.check_state(state)  # a state no checkpoint can store fails `init` (LY-1)
    entry.state = state
    entry.started = True


def _init_failed(entry: LayerEntry, exc: Exception) -> None:
    """A failing `init` disables its layer under `on_init_error="disable"`, else fails the run."""
    if is_cancellation(exc):
        raise exc
    report(entry, "init", exc)
    if getattr(entry.layer, "on_init_error", "throw") != "disable":
        raise NoeticError(
            "layer_init_failed",
            f"context layer {entry.id!r}: init raised {type(exc).__name__}: {exc}",
            cause=exc,
            layer_id=entry.id,
        ) from exc
    entry.disabled = True


class LayerFrame:
    """The layers active on one context; see the module docstring.

    `outer` is the frame this one was pushed over on the same context (`with_context`,
    `call_model(layers=)`), or None. `handles` is what `ctx.context` shows.
    """

    __slots__ = (
        "_all_started",
        "_closed",
        "_ctx",
        "_handles",
        "_hooked",
        "_teardown",
        "_tools",
        "by_id",
        "entries",
        "merge_lock",
        "outer",
        "owned",
        "teardown_on_abort",
    )

    def __init__(
        self,
        ctx: Context,
        entries: Sequence[LayerEntry],
        *,
        owned: Sequence[LayerEntry],
        outer: LayerFrame | None = None,
    ):
        self._ctx = weakref.ref(ctx)
        self.entries = tuple(entries)
        self.by_id = {e.id: e for e in self.entries}
        self.owned = tuple(owned)
        self.outer = outer
        self.teardown_on_abort = False
        self.merge_lock: anyio.Lock | None = None
        self._teardown: anyio.Event | None = None
        self._closed = False
        self._tools: dict[str, Tool] | None = None
        #: `handles`, held weakly (the handles hold this frame; `ctx.context` keeps them alive).
        self._handles: weakref.ref[LayerHandles] | None = None
        self._hooked: dict[str, tuple[LayerEntry, ...]] | None = None
        #: Whether `start` ran to its end: then every owned entry is started or disabled, and
        #: stays so (nothing un-starts an entry), so a later `start` has nothing to do.
        self._all_started = False

    @property
    def ctx(self) -> Context:
        """The context this frame is on.

        Held weakly: the context holds its frames (`_layers`, `context`), so a strong reference
        back would leave every turn with layers as a cycle only the cyclic GC frees. A frame is
        only reached through its context (or its execution, which a live context keeps).
        """
        ctx = self._ctx()
        assert ctx is not None, "a layer frame outlived its context"
        return ctx

    def get(self, layer_id: str) -> LayerEntry | None:
        """The active entry of `layer_id`, or None."""
        entry = self.by_id.get(layer_id)
        return entry if entry is not None and entry.active else None

    def active(self) -> list[LayerEntry]:
        """Active entries, array order."""
        return [e for e in self.entries if e.active]

    def with_hook(self, name: str) -> list[LayerEntry]:
        """Active entries defining hook `name`, slot ascending, ties in array order."""
        hooked = self._hooked
        found = (self._hook_lists() if hooked is None else hooked).get(name)
        return [e for e in found if e.active] if found else []

    def defining(self, name: str) -> tuple[LayerEntry, ...]:
        """Entries defining hook `name` (active or not), slot ascending, ties in array order."""
        hooked = self._hooked
        return (self._hook_lists() if hooked is None else hooked).get(name, ())

    def _hook_lists(self) -> dict[str, tuple[LayerEntry, ...]]:
        """The entries defining each hook some entry defines, worked out once per frame (from
        the harness's `hook_index` memo): a frame asks for most hook names, and the hooks of a
        layer object do not change."""
        index = hook_index(self.ctx._exec.harness.layer_memory.hook_indexes, self.entries)
        entry_at = self.entries.__getitem__
        hooked = self._hooked = {hook: tuple(map(entry_at, positions)) for hook, positions in index.items()}
        return hooked

    @property
    def handles(self) -> LayerHandles:
        """`ctx.context` for this frame: a handle per active layer."""
        handles = None if self._handles is None else self._handles()
        if handles is None:
            from noetic.layers.provides import LayerHandles

            handles = LayerHandles(self)
            self._handles = weakref.ref(handles)
        return handles

    def tools(self) -> dict[str, Tool]:
        """The model tools the active layers provide, by name (`"{layer_id}/{fn}"`)."""
        if self._tools is None:
            from noetic.layers.provides import layer_tools

            self._tools = layer_tools(self)
        return self._tools

    def bind(self) -> None:
        """Make this the frame of its context (`ctx._layers`, `ctx.context`)."""
        ctx = self.ctx
        ctx._layers = self
        ctx.context = self.handles

    async def start(self) -> None:
        """Run `init` for owned entries not started yet: sequential, array order (LY-1).

        A failing `init` disables its layer under `on_init_error="disable"`; otherwise it
        raises `layer_init_failed` and the execution fails.
        """
        if self._all_started:
            return
        pending = []
        for entry in self.owned:
            if entry.active or entry.disabled:  # started (`active` is a plain slot) or disabled
                continue
            if entry.hooks.get("init") is None:
                entry.started = True
            else:
                pending.append(entry)
        if pending:
            ctx = self.ctx
            await run_hooks(
                pending,
                "init",
                lambda entry: (LayerContext(entry, ctx),),
                _started,
                _init_failed,
                scope_type_of(ctx),
            )
        self._all_started = True

    async def flush(self) -> None:
        """Write changed durable state of every entry through to storage."""
        if not any(map(_dirty, self.entries)):  # most steps change no durable state
            return
        for entry in self.entries:
            if entry.dirty:
                await entry.flush()

    def quiet(self) -> bool:
        """Whether `teardown` has nothing to do: done already, or no owned entry with a
        teardown hook to call or state to write."""
        if self._closed:
            return True
        if self._teardown is not None:
            return False
        owned = self.owned
        if any(map(_dirty, owned)):
            return False
        hooked = self._hooked
        if hooked is None:
            hooked = self._hook_lists()
        if "on_complete" not in hooked and "dispose" not in hooked:  # most layer sets define neither
            return True
        for name in ("on_complete", "dispose"):
            for entry in hooked.get(name, ()):
                if entry.active and entry in owned:
                    return False
        return True

    async def teardown(self, outcome: Outcome) -> None:
        """`on_complete(outcome)` then `dispose` for owned active entries, once (LY-10/11).

        Runs shielded from cancellation; a second caller waits for the first to finish. A
        frame with no such hook and no unwritten state has nothing to wait for: it is done at
        once, without a scope.
        """
        if self._closed:
            return
        if self.quiet():
            self._closed = True
            return
        with anyio.CancelScope(shield=True):
            if self._teardown is not None:
                await self._teardown.wait()
                return
            self._teardown = done = anyio.Event()
            try:
                await self._complete(outcome)
                await self._dispose()
            finally:
                done.set()

    async def _complete(self, outcome: Outcome) -> None:
        for entry in self.owned:
            if not entry.active or entry.hook("on_complete") is None:
                continue
            try:
                value = await run_hook(entry, "on_complete", LayerContext(entry, self.ctx), outcome)
            except Exception as exc:  # noqa: BLE001 - LY-12: log and continue
                report(entry, "on_complete", exc)
                continue
            if value is not None:
                commit_state(entry, self.ctx, value, "on_complete")
            await entry.flush()

    async def _dispose(self) -> None:
        for entry in reversed(self.owned):
            await entry.flush()
            hook = entry.hook("dispose")
            if not entry.active or hook is None:
                continue
            args = (LayerContext(entry, self.ctx),) if _takes_argument(hook) else ()
            try:
                await run_hook(entry, "dispose", *args)
            except Exception as exc:  # noqa: BLE001 - one dispose failing never stops the others
                report(entry, "dispose", exc)

    def __repr__(self) -> str:
        return f"<LayerFrame {[e.id for e in self.entries]} on {self.ctx.id}>"
