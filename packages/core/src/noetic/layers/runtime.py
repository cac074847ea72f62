"""The layer lifecycle of one root execution (`Execution.layers`), rules LY-1..LY-15, SP-2..SP-5.

- **Root** (`start_root` / `finish_root`): the harness layers are initialized once, before the
  graph runs, in array order; when the execution ends they get `on_complete` with
  `success`/`failure`, then `dispose` in reverse array order.
- **Scopes** (`run_scoped`, used by `with_context` and `call_model(layers=)`): layers added for
  one step — initialized on entry, torn down on exit; a layer with the id of an inherited one
  replaces it inside the scope.
- **Children** (`open_child`, used by `spawn` and `in_parallel`): a spawn with `layers=` starts
  its own set; otherwise the parent's layers continue in the child through `on_spawn` (array
  order; None or an error disables the layer in the child; the returned items seed a spawn's
  log but never a parallel path's). When the child succeeds, its layers are torn down and
  `on_return` merges its state into the parent as an array-order pipeline, one child at a
  time.
- **Parent updates** (LY-9): while a spawn child runs, every `store` on its parent's context
  that changes a layer's state calls `on_parent_update(ctx, parent_state, parent)` on the
  child's layer of the same id, if it defines the hook — in the parent's task, after the
  parent's state is written, one child after another in spawn order. It returns the child's
  new state, a `ParentUpdateResult` that may also append items to the child's log, or None to
  ignore the update. A failure is logged and leaves the child unchanged. Parallel paths never
  get the hook.
- **Abort and cancel** (CTX-14): `ctx.abort()` alone runs no teardown — an execution whose
  context was aborted skips `on_complete`/`dispose`. `cancel(ctx, reason)` aborts the tree and
  then tears every layer frame down with `outcome="aborted"`, children before parents, once.
  The runtime's own aborts (a spawn timeout, losing parallel paths) go through
  `abort_with_teardown`, so those children are torn down too.

`export_state()` / `import_state(data)` snapshot and restore the root layer states for
durable resume; restored layers are not initialized again.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from noetic.items import parse_item
from noetic.layers.contract import UNSET, ParentUpdateResult, ReturnResult, SpawnResult
from noetic.layers.frame import (
    LayerContext,
    LayerEntry,
    LayerFrame,
    commit_state,
    is_cancellation,
    report,
    run_hook,
)
from noetic.layers.layer_set import LayerSet
from noetic.layers.storage import owning_thread, scope_key

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.harness import AgentHarness
    from noetic.layers.contract import Outcome
    from noetic.layers.memory import LayerMemory
    from noetic.layers.storage import LayerStateStore, StorageScope

__all__ = ["ChildLayers", "LayerRuntime"]

T = TypeVar("T")
_NO_LAYERS: Mapping[str, Any] = MappingProxyType({})
#: Version of the `export_state()` shape.
STATE_VERSION = 1


def _outcome(frame: LayerFrame, error: BaseException | None) -> Outcome | None:
    """How an execution ended for its layers; None when a plain abort ended it (no teardown)."""
    if frame.ctx.aborted:
        return "aborted" if frame.teardown_on_abort else None
    return "success" if error is None else "failure"


async def _close(frame: LayerFrame, error: BaseException | None) -> None:
    outcome = _outcome(frame, error)
    if outcome is not None:
        await frame.teardown(outcome)


def _frames_of(ctx: Context) -> list[LayerFrame]:
    """The frames on `ctx`, innermost first."""
    frames = []
    frame = ctx._layers
    while frame is not None and frame.ctx is ctx:
        frames.append(frame)
        frame = frame.outer
    return frames


def _tree(ctx: Context) -> list[Context]:
    """`ctx` and its live descendants, parents before children."""
    order = [ctx]
    for child in tuple(ctx._children):
        order.extend(_tree(child))
    return order


def abort_with_teardown(ctx: Context, reason: str | None) -> None:
    """Abort `ctx` (and its tree) so that its layers are still torn down as `aborted`.

    The runtime uses this when it aborts a child itself (spawn timeout, a lost race);
    `ctx.abort()` alone leaves the layers alone (CTX-14).
    """
    for node in _tree(ctx):
        for frame in _frames_of(node):
            frame.teardown_on_abort = True
    ctx.abort(reason)


class ChildLayers:
    """The layers of one spawn child or parallel path, until it is closed."""

    __slots__ = ("frame", "parent", "runtime")

    def __init__(self, runtime: LayerRuntime, frame: LayerFrame, parent: LayerFrame | None):
        self.runtime = runtime
        self.frame = frame
        self.parent = parent

    async def succeeded(self, result: Any) -> Any:
        """Tear the child's layers down, then run the `on_return` pipeline (SP-3).

        Returns the child's result as the last `on_return` left it.
        """
        await self._finish(None)
        parent = self.parent
        if parent is None:
            return result
        if parent.merge_lock is None:
            parent.merge_lock = anyio.Lock()
        async with parent.merge_lock:  # parallel paths merge one at a time (SP-5)
            for entry in self.frame.entries:
                target = parent.get(entry.id)
                if (
                    target is None
                    or not entry.active
                    or entry.state is None
                    or entry.hook("on_return") is None
                ):
                    continue  # SP-3: only layers of both sides, and only when the child has state
                result = await self._merge(entry, target, parent.ctx, result)
        return result

    async def failed(self, error: BaseException) -> None:
        """Tear the child's layers down after a failure (no merge)."""
        await self._finish(error)

    async def parent_updated(self, parent: Context, changed: Sequence[LayerEntry]) -> None:
        """Run the child's `on_parent_update` for each parent layer whose state changed (LY-9)."""
        child = self.frame.ctx
        for source in changed:
            entry = self.frame.get(source.id)
            if entry is None or entry.hook("on_parent_update") is None:
                continue
            try:
                context = LayerContext(entry, child)
                value = await run_hook(
                    entry, "on_parent_update", context, copy.deepcopy(source.state), parent
                )
                if isinstance(value, ParentUpdateResult):
                    items = [parse_item(item) for item in value.items]
                    commit_state(entry, child, value.child_state, "on_parent_update")
                    for item in items:
                        child.item_log.append(item)
                elif value is not None:
                    commit_state(entry, child, value, "on_parent_update")
            except Exception as exc:
                if is_cancellation(exc):
                    raise
                report(entry, "on_parent_update", exc)
                continue
            await entry.flush()

    async def _merge(self, child: LayerEntry, target: LayerEntry, parent: Context, result: Any) -> Any:
        try:
            context = LayerContext(target, parent)
            value = await run_hook(child, "on_return", context, child.state, result, self.frame.ctx)
        except Exception as exc:  # noqa: BLE001 - LY-12: parent state unchanged
            report(child, "on_return", exc)
            return result
        if isinstance(value, ReturnResult):
            commit_state(target, parent, value.parent_state, "on_return")
            if value.result is not UNSET:
                result = value.result
        elif value is not None:
            commit_state(target, parent, value, "on_return")
        await target.flush()
        return result

    async def _finish(self, error: BaseException | None) -> None:
        self.runtime.forget_child(self)
        try:
            await _close(self.frame, error)
        finally:
            ctx = self.frame.ctx
            self.runtime.memory.forget_lineage(f"x:{ctx.id}")


class LayerRuntime:
    """The layers of one root execution; see the module docstring."""

    __slots__ = ("_imported", "_spawned", "harness", "root")

    def __init__(self, harness: AgentHarness):
        #: The harness the execution runs on (held rather than the execution itself, which
        #: holds this runtime: no reference cycle for the cyclic GC to find when a turn ends).
        self.harness = harness
        self.root: LayerFrame | None = None
        self._imported: Mapping[str, Any] | None = None
        #: The running spawn children by parent context id, for `on_parent_update`.
        self._spawned: dict[str, list[ChildLayers]] = {}

    @property
    def store(self) -> LayerStateStore:
        """Where layer state is persisted (`harness.layer_store`)."""
        return self.harness.layer_store

    @property
    def memory(self) -> LayerMemory:
        """The harness's anchoring and recall caches."""
        return self.harness.layer_memory

    def resolve(self, layers: LayerSet) -> tuple[Any, ...]:
        """The layer objects of a set (names through the harness's plugin registry)."""
        registry = self.harness.plugin_manager.registries.context_layers if layers.names else None
        return layers.resolve(registry)

    def _entries(self, layers: tuple[Any, ...], ctx: Context) -> list[LayerEntry]:
        entries = []
        store = self.store
        # most layers share a scope: its key and owning thread are worked out once
        scopes: dict[str, StorageScope] = {}
        checked = self.harness.storage is not None  # the snapshot holds the root's layer states
        for layer, table, without_init in self.memory.hooks_of(layers):
            scope = getattr(layer, "scope", "thread")
            shared = scopes.get(scope)
            if shared is None:
                shared = scopes[scope] = (store, scope_key(scope, ctx), owning_thread(scope, ctx))
            entries.append(LayerEntry(layer, shared, table, without_init, scope != "execution", checked))
        return entries

    # --- the root execution -----------------------------------------------------------------

    def attach_root(self, ctx: Context, layers: LayerSet) -> LayerFrame | None:
        """Give `ctx` its frame of `layers` (not initialized yet); None without layers."""
        resolved = self.resolve(layers)
        if not resolved:
            return None
        entries = self._entries(resolved, ctx)
        frame = self.root = LayerFrame(ctx, entries, owned=entries)
        frame.bind()
        if self._imported is not None:
            self._apply(self._imported)
        return frame

    async def start_root(self, ctx: Context, layers: LayerSet) -> None:
        """Initialize the harness layers of a root execution, once, before the graph (LY-1)."""
        frame = self.root if self.root is not None and self.root.ctx is ctx else self.attach_root(ctx, layers)
        if frame is not None:
            await frame.start()

    def quiet_finish(self) -> bool:
        """Whether `finish_root` has nothing to wait for (so needs no shielding): no root
        layers, or none with a teardown hook to call or state to write."""
        return self.root is None or self.root.quiet()

    async def finish_root(self, error: BaseException | None) -> None:
        """Tear the root layers down at the end of the execution (LY-10, LY-11)."""
        if self.root is not None:
            await _close(self.root, error)

    def export_state(self) -> dict[str, Any]:
        """The root layer states as JSON-shaped data, for a checkpoint."""
        frame = self.root
        if frame is None:
            return {}
        return {
            "version": STATE_VERSION,
            "layers": {
                e.id: {"state": copy.deepcopy(e.state), "disabled": e.disabled}
                for e in frame.owned
                if e.started or e.disabled
            },
        }

    def import_state(self, data: Mapping[str, Any]) -> None:
        """Restore root layer states from `export_state()` data; those layers skip `init`."""
        layers = data.get("layers", {}) if data else {}
        if self.root is None:
            self._imported = layers
        else:
            self._apply(layers)

    def _apply(self, layers: Mapping[str, Any]) -> None:
        assert self.root is not None
        for entry in self.root.owned:
            saved = layers.get(entry.id)
            if saved is not None:
                entry.state = copy.deepcopy(saved.get("state"))
                entry.disabled = bool(saved.get("disabled", False))
                entry.started = not entry.disabled

    # --- scopes on one context --------------------------------------------------------------

    async def run_scoped(self, ctx: Context, layers: LayerSet, body: Callable[[], Awaitable[T]]) -> T:
        """Run `body` with `layers` added to `ctx` (init on entry, teardown on exit)."""
        outer = ctx._layers
        previous = ctx.context
        if outer is not None:
            await outer.start()
        resolved = self.resolve(layers)
        added = self._entries(resolved, ctx)
        ids = {e.id for e in added}
        kept = [e for e in outer.entries if e.id not in ids] if outer is not None else []
        frame = LayerFrame(ctx, [*kept, *added], owned=added, outer=outer)
        frame.teardown_on_abort = outer is not None and outer.teardown_on_abort
        frame.bind()
        try:
            await frame.start()
            result = await body()
        except BaseException as exc:
            await self._leave(frame, outer, previous, exc)
            raise
        await self._leave(frame, outer, previous, None)
        return result

    async def _leave(
        self,
        frame: LayerFrame,
        outer: LayerFrame | None,
        previous: Mapping[str, Any],
        error: BaseException | None,
    ) -> None:
        try:
            await _close(frame, error)
        finally:
            frame.ctx._layers = outer
            frame.ctx.context = previous

    # --- children ---------------------------------------------------------------------------

    async def open_child(
        self, parent: Context, child: Context, layers: LayerSet | None, *, fork: bool = False
    ) -> ChildLayers | None:
        """Set up the layers of a spawn child (`fork=False`) or a parallel path (`fork=True`).

        `layers` replaces the inherited set (None inherits). Returns None when the child has
        no layers.
        """
        outer = parent._layers
        if layers is not None:
            children = await self._replaced(child, layers, outer)
        elif outer is None:
            return None
        else:
            await outer.start()
            entries = [await self._inherit(entry, parent, child, fork) for entry in outer.active()]
            frame = LayerFrame(child, entries, owned=entries)
            frame.teardown_on_abort = outer.teardown_on_abort
            frame.bind()
            children = ChildLayers(self, frame, outer)
        if children is not None and not fork and outer is not None:
            self._spawned.setdefault(parent.id, []).append(children)
        return children

    def forget_child(self, child: ChildLayers) -> None:
        """Stop sending parent updates to `child` (it has ended)."""
        for parent_id, running in tuple(self._spawned.items()):
            if child in running:
                running.remove(child)
                if not running:
                    del self._spawned[parent_id]

    async def parent_updated(self, parent: Context, changed: Sequence[LayerEntry]) -> None:
        """Tell the running spawn children of `parent` that layer state changed (LY-9)."""
        for child in tuple(self._spawned.get(parent.id, ())):
            await child.parent_updated(parent, changed)

    async def _replaced(
        self, child: Context, layers: LayerSet, outer: LayerFrame | None
    ) -> ChildLayers | None:
        resolved = self.resolve(layers)
        if not resolved:
            child._layers, child.context = None, _NO_LAYERS
            return None
        entries = self._entries(resolved, child)
        frame = LayerFrame(child, entries, owned=entries)
        frame.bind()
        children = ChildLayers(self, frame, outer)
        try:
            await frame.start()
        except BaseException as exc:
            await children.failed(exc)
            raise
        return children

    async def _inherit(self, entry: LayerEntry, parent: Context, child: Context, fork: bool) -> LayerEntry:
        """The child's entry for an inherited layer, through `on_spawn` (SP-2, LY-8)."""
        inherited = LayerEntry(entry.layer, entry.scope, entry.hooks, started=True, durable=False)
        if entry.hook("on_spawn") is None:
            inherited.disabled = entry.hook("init") is not None  # stateful layers need on_spawn
            return inherited
        try:
            value = await run_hook(entry, "on_spawn", LayerContext(entry, parent), child)
        except Exception as exc:
            if is_cancellation(exc):
                raise
            report(entry, "on_spawn", exc)
            value = None
        if not isinstance(value, SpawnResult):
            if value is not None:
                report(entry, "on_spawn", TypeError(f"returned {type(value).__name__}, not a SpawnResult"))
            inherited.disabled = True
            return inherited
        inherited.state = value.child_state
        if not fork:
            for item in value.items:
                child.item_log.append(item)
        return inherited

    # --- cancel -----------------------------------------------------------------------------

    async def cancel(self, ctx: Context, reason: str | None) -> None:
        """Abort `ctx`'s tree, then tear every layer frame down as `aborted`, children first."""
        tree = _tree(ctx)
        abort_with_teardown(ctx, reason)
        for node in reversed(tree):
            for frame in _frames_of(node):
                await frame.teardown("aborted")
