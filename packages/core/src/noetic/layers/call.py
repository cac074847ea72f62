"""The layer side of one `call_model` step: recall once, band, assemble each round, store.

`LayeredCall.prepare` runs once per step, before the first round: it splits the projection's
budget across the active layers (BG-1..BG-5), runs `recall` sequentially in slot order, ties
by array index (LY-3; a failing recall is skipped with a warning, an `eventual` layer is
served from the harness cache until its own `store` changes its state), and bands the output
for the prompt cache (`noetic.layers.anchoring`). Every round then assembles the view from
that banded output and the current log (`view`), so tool outputs of earlier rounds are seen
while the layer part stays byte-stable. After round 0 the provider's cache figures are judged
(`note_round`). When the step ends, `usage` gives the `LastLayerUsage` of the last round and
`store` runs every layer's `store` concurrently, all-settled, each on a snapshot of its own
state (LY-7), then tells running spawn children which states changed (LY-9). Each round's
history passes through the layers' `project_history` (LY-4) and the projection's overflow
mode (`noetic.layers.overflow`) before the token pass. Imported by the first step with layers;
what the harness keeps across turns is `noetic.layers.memory`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from noetic.items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    Item,
    MessageItem,
    developer_message,
    parse_item,
)
from noetic.layers.anchoring import LayerOutput, band_outputs, lineage_key
from noetic.layers.budgets import Projection
from noetic.layers.contract import UNSET, CallResult, RecallResult
from noetic.layers.frame import (
    LayerContext,
    LayerEntry,
    LayerFrame,
    is_cancellation,
    layer_of,
    report,
    run_hook,
    run_hooks,
    scope_type_of,
)
from noetic.layers.overflow import summarize_history, truncate_history
from noetic.layers.pipelines import project_history
from noetic.layers.storage import detached
from noetic.layers.usage import CallParts, LazyUsage, with_layers
from noetic.layers.view import assemble_view, strip_orphans
from noetic.tokens import estimate_text

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.anchoring import BandedView
    from noetic.layers.memory import LayerMemory
    from noetic.model import ModelAdapter
    from noetic.usage import LastLayerUsage, RoundUsage

__all__ = ["LayeredCall"]


class _SeenLog:
    """The log as one step's rounds have seen it: system messages, the rest (history), their
    token totals and the call ids of the history — extended by each round's new items only."""

    __slots__ = ("calls", "history", "history_tokens", "outputs", "seen", "system", "system_tokens")

    def __init__(self) -> None:
        self.system: list[Item] = []
        self.history: list[Item] = []
        self.system_tokens = 0
        self.history_tokens = 0
        self.calls: set[str] = set()
        self.outputs: set[str] = set()
        self.seen = 0

    def extend(self, log_items: Sequence[Item], tokens: Callable[[Item], int]) -> None:
        """Take in the items appended since the last call."""
        for item in log_items[self.seen :]:
            if isinstance(item, MessageItem) and item.role == "system":
                self.system.append(item)
                self.system_tokens += tokens(item)
                continue
            self.history.append(item)
            self.history_tokens += tokens(item)
            if isinstance(item, FunctionCallItem):
                self.calls.add(item.call_id)
            elif isinstance(item, FunctionCallOutputItem):
                self.outputs.add(item.call_id)
        self.seen = len(log_items)


class LayeredCall:
    """One model step's layers; see the module docstring."""

    __slots__ = (
        "_budgets",
        "_guidance",
        "_history_tokens",
        "_instructions",
        "_judged",
        "_layer_tokens",
        "_log",
        "_memory",
        "_outputs",
        "_system_tokens",
        "banded",
        "cap",
        "ctx",
        "frame",
        "model",
        "projection",
        "query",
    )

    def __init__(
        self,
        frame: LayerFrame,
        ctx: Context,
        memory: LayerMemory,
        projection: Projection,
        query: str,
        system_tokens: int,
        model: ModelAdapter,
    ):
        self.frame = frame
        self.ctx = ctx
        self.model = model
        self.projection = projection
        self.query = query
        self.cap = projection.token_budget - projection.response_reserve - system_tokens
        self.banded: BandedView | None = None
        self._memory = memory
        self._system_tokens = system_tokens
        self._judged = False
        self._log = _SeenLog()
        self._layer_tokens = 0
        self._history_tokens = 0
        self._budgets: dict[str, float] = {}
        self._outputs: list[LayerOutput] = []
        self._instructions: str | None = None
        self._guidance: list[Item] = []

    @classmethod
    async def prepare(
        cls,
        frame: LayerFrame,
        ctx: Context,
        memory: LayerMemory,
        *,
        instructions: str | None,
        query: str,
        projection: Projection,
        model: ModelAdapter,
    ) -> LayeredCall:
        """Allocate budgets, recall and band the active layers of `frame` for one step
        (`model` is the step's, which `summarize` overflow falls back to)."""
        system_tokens = estimate_text(instructions) if instructions else 0
        call = cls(frame, ctx, memory, projection, query, system_tokens, model)
        entries = frame.active()
        call._budgets = memory.budgets(list(map(layer_of, entries)), projection, system_tokens)
        call._outputs = await call._recall(frame.with_hook("recall"), call._budgets)
        await frame.flush()
        await call._band(instructions, entries)
        return call

    async def _band(self, instructions: str | None, entries: Sequence[LayerEntry]) -> None:
        """Band the current layer outputs for the prompt cache (AN-1..AN-8); `entries` are
        the frame's active ones."""
        memory, ctx, budgets = self._memory, self.ctx, self._budgets

        async def render_delta(
            layer_id: str, previous: tuple[Item, ...], current: tuple[Item, ...]
        ) -> str | None:
            return await self._render_delta(layer_id, previous, current, budgets.get(layer_id, 0))

        self._instructions = instructions
        self.banded = banded = await band_outputs(
            self._outputs,
            {e.id: getattr(e.layer, "placement", "auto") for e in entries},
            store=memory.anchors,
            key=lineage_key(ctx.depth, ctx.thread_id, ctx.id),
            instructions=instructions,
            window=self.cap,
            render_delta=render_delta,
            tokens=memory.item_tokens,
        )
        tokens = memory.item_tokens
        epoch = banded.epoch  # banding counted the anchor band with these very estimates
        anchor_tokens = sum(map(tokens, banded.anchor)) if epoch is None else epoch.anchor_tokens
        self._layer_tokens = anchor_tokens + sum(map(tokens, (*banded.live, *banded.supersedes)))

    async def rerender(self, layer_ids: Collection[str]) -> None:
        """Recall `layer_ids` again and band the result, for the next round (LY-2 re-render).

        The other layers keep this step's output; an anchored layer whose output changed is
        published as a supersede, so the cached prefix stays valid.
        """
        active = self.frame.active()
        entries = [e for e in active if e.id in layer_ids]
        if not entries:
            return
        for entry in entries:
            self._memory.recalls.invalidate(entry.cache_key)  # eventual layers render afresh
        outputs = {o.layer_id: o for o in self._outputs if o.layer_id not in layer_ids}
        recallers = [e for e in self.frame.with_hook("recall") if e.id in layer_ids]
        outputs.update((o.layer_id, o) for o in await self._recall(recallers, self._budgets))
        await self.frame.flush()
        self._outputs = [outputs[e.id] for e in self.frame.with_hook("recall") if e.id in outputs]
        await self._band(self._instructions, active)

    async def _recall(self, recallers: Sequence[LayerEntry], budgets: dict[str, float]) -> list[LayerOutput]:
        """The outputs of `recallers` (active entries defining `recall`, slot ascending,
        `LayerFrame.with_hook`), in that order (LY-3)."""
        cache = self._memory.recalls
        found: dict[str, LayerOutput] = {}
        called: list[LayerEntry] = []
        eventual: set[str] = set()
        for entry in recallers:
            if getattr(entry.layer, "recall_mode", "atomic") == "eventual":
                eventual.add(entry.id)
                cached = cache.get(entry.cache_key)
                if cached is not None:
                    found[entry.id] = cached
                    continue
            called.append(entry)

        memory = self._memory
        renders = memory.renders

        def recalled(entry: LayerEntry, value: Any) -> None:
            output: LayerOutput | None
            layer_id = entry.id
            if type(value) is str:  # most recalls return one: its render, reused while unchanged
                last = renders.get(layer_id)
                if last is not None and last.text == value:
                    output = last  # `LayerMemory.render_text`'s hit, inline
                else:
                    output = memory.render_text(layer_id, value) if value else None
            else:
                output = _output(entry, value, memory)
            if output is not None:
                if layer_id in eventual:
                    cache.put(entry.cache_key, output)
                found[layer_id] = output

        def failed(entry: LayerEntry, exc: Exception) -> None:
            if is_cancellation(exc):
                raise exc
            report(entry, "recall", exc)

        ctx, query = self.ctx, self.query
        await run_hooks(
            called,
            "recall",
            lambda entry: (LayerContext(entry, ctx, query), budgets.get(entry.id, 0)),
            recalled,
            failed,
            scope_type_of(ctx),
        )
        if not eventual:  # then `found` was filled in `recallers` order
            return list(found.values())
        return [found[e.id] for e in recallers if e.id in found]

    async def _render_delta(
        self, layer_id: str, previous: tuple[Item, ...], current: tuple[Item, ...], budget: float
    ) -> str | None:
        entry = self.frame.get(layer_id)
        if entry is None or entry.hook("render_delta") is None:
            return None
        context = LayerContext(entry, self.ctx, query=self.query)
        try:
            text = await run_hook(entry, "render_delta", context, previous, current, budget)
        except Exception as exc:  # noqa: BLE001 - AN-8: fall back to the full content
            report(entry, "render_delta", exc)
            return None
        return text if isinstance(text, str) and text else None

    async def view(self, log_items: Sequence[Item]) -> tuple[Item, ...]:
        """The items of one round's request (AN-1, BG-6): system messages of the log first,
        then the bands around the history — the history as `project_history` leaves it (LY-4),
        fitted to the window by the projection's overflow mode (`noetic.layers.overflow`);
        the token pass is skipped when everything fits."""
        banded = self.banded
        assert banded is not None
        tokens = self._memory.item_tokens
        log = self._log
        log.extend(log_items, tokens)
        history: Sequence[Item] = log.history
        history_tokens = log.history_tokens
        balanced = log.calls == log.outputs
        projectors = self.frame.with_hook("project_history")
        if projectors:
            history = await project_history(projectors, self.ctx, history)
        tail = self._guidance
        if tail:  # steering guidance goes last, not where the log has it
            guided = {i.id for i in tail}
            history = [i for i in history if i.id not in guided]
        if projectors or tail:
            history_tokens = sum(map(tokens, history))
            balanced = len(strip_orphans(history)) == len(history)
        tail_tokens = sum(map(tokens, tail))
        if (
            self.projection.window_size is None
            and balanced
            and log.system_tokens + history_tokens + self._layer_tokens + tail_tokens <= self.cap
        ):
            self._history_tokens = log.system_tokens + history_tokens  # what the request carries (LU-4)
            return (*log.system, *banded.anchor, *history, *banded.live, *banded.supersedes, *tail)
        if self.projection.window_size is not None:
            window = self.projection.window_size
            history = history[-window:] if window > 0 else ()
        room = self.cap - log.system_tokens - self._layer_tokens - tail_tokens
        if self.projection.overflow == "truncate":
            history = truncate_history(history, room, tokens)
        elif self.projection.overflow == "summarize":
            history = await summarize_history(
                history, room, tokens, model=self._summarizer(), ctx=self.ctx, memory=self._memory.summaries
            )
        view = assemble_view(
            system=log.system,
            anchor=banded.anchor,
            history=history,
            live=banded.live,
            supersedes=banded.supersedes,
            tail=tail,
            token_budget=self.cap,
            tokens=tokens,
        )
        self._history_tokens = log.system_tokens + sum(map(tokens, view.history))
        return view.items

    def guide(self, guidance: str) -> None:
        """Log `guidance` (from `after_model_call`) as a developer message; this step's later
        rounds send it at the very end of the view, after the layers (LY-5)."""
        item = developer_message(guidance)
        self.ctx.item_log.append(item)
        self._guidance.append(item)

    def _summarizer(self) -> ModelAdapter:
        """The model `summarize` overflow calls: `overflow_model`, else the step's model."""
        chosen = self.projection.overflow_model
        return self.model if chosen is None else self.ctx._exec.harness.resolve_model(chosen)

    def note_round(self, usage: RoundUsage) -> None:
        """Judge the first round's cache figures against the anchored prefix (AN-5)."""
        banded = self.banded
        if self._judged or banded is None or banded.key is None or banded.epoch is None:
            return
        self._judged = True
        expected = self._system_tokens + banded.epoch.anchor_tokens
        self._memory.anchors.note_cache_outcome(banded.key, usage, expected)

    def usage(self, base: LastLayerUsage) -> LastLayerUsage:
        """`base` (the system and tools buckets) with the last round's history and the layers."""
        assert self.banded is not None
        return with_layers(base.model_copy(update={"history_tokens": self._history_tokens}), self.banded)

    def usage_later(self, parts: CallParts, execution_id: str) -> LazyUsage:
        """`usage` of the step's window, measured only when called: most runs never read it.
        It keeps the banded layer part and a count, not this call (nor its context)."""
        assert self.banded is not None
        return LazyUsage.of_layers(parts, execution_id, self._history_tokens, self.banded)

    @property
    def stores(self) -> bool:
        """Whether some layer of the frame defines `store` (else the step builds no
        `CallResult` for it)."""
        return bool(self.frame.defining("store"))

    async def store(self, result: CallResult) -> None:
        """Run every active layer's `store` concurrently, all-settled (LY-7); the step calls
        it only when some layer defines one (`stores`)."""
        entries = [e for e in self.frame.active() if e.hooks.get("store") is not None]
        if not entries:
            return
        recalls = self._memory.recalls
        changed: list[LayerEntry] = []

        def args(entry: LayerEntry) -> tuple[Any, ...]:
            snapshot = detached(entry.state)
            return LayerContext(entry, self.ctx, self.query, snapshot), result

        def stored(entry: LayerEntry, value: Any) -> None:
            if value is not None:
                entry.set_state(value)
                recalls.invalidate(entry.cache_key)
                changed.append(entry)

        def failed(entry: LayerEntry, exc: Exception) -> None:
            report(entry, "store", exc)  # one layer's failure never affects the others

        scope_type = scope_type_of(self.ctx)

        async def one(entry: LayerEntry) -> None:
            await run_hooks((entry,), "store", args, stored, failed, scope_type)

        if len(entries) == 1:
            await one(entries[0])
        else:
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(one, entry)
        await self.frame.flush()
        if changed:  # running spawn children hear of it (LY-9)
            await self.ctx._exec.layers.parent_updated(self.ctx, changed)


def _output(entry: LayerEntry, value: Any, memory: LayerMemory) -> LayerOutput | None:
    """A recall hook's return value as layer output (LY-3); the string form becomes one
    developer message."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return memory.render_text(entry.id, value)
    if not isinstance(value, RecallResult):
        raise TypeError(f"recall returned {type(value).__name__}; return a str, a RecallResult or None")
    items = tuple(parse_item(i) for i in value.items)
    mutated = value.state is not UNSET
    if mutated:
        entry.set_state(value.state)
    return LayerOutput(entry.id, items, int(value.token_count), mutated_state=mutated)
