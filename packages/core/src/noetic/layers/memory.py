"""What a harness remembers about its layers across turns (`LayerMemory`).

The memory is made with the harness, so this module is part of `import noetic`; the per-step
layer machinery that reads and fills it (`noetic.layers.call`, with its view assembly,
overflow modes, steering and pipelines) is imported by the first call with layers.
"""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from noetic.items import Item, developer_message
from noetic.layers.budgets import Projection, allocate_budgets
from noetic.layers.frame import HookIndexes, hook_table
from noetic.tokens import estimate_item_tokens, estimate_text

if TYPE_CHECKING:
    from noetic.layers.anchoring import AnchorStore, LayerOutput
    from noetic.layers.cache_config import ContextCacheConfig

__all__ = [
    "MAX_MEMOIZED_ITEMS",
    "MAX_MEMOIZED_SPLITS",
    "LayerMemory",
    "LayerHooks",
    "RecallCache",
    "SummaryMemory",
]

#: Summaries remembered per harness before the memory starts over.
MAX_SUMMARIES = 1000
#: Token estimates (and string renders) kept before the memo starts over.
MAX_MEMOIZED_ITEMS = 100_000
#: Budget splits (and hook tables) kept before the memo starts over.
MAX_MEMOIZED_SPLITS = 1_000
#: A layer's id, read in C (every step's budget split is looked up by its layers' ids).
_layer_id: Callable[[Any], str] = operator.attrgetter("id")


class LayerHooks(NamedTuple):
    """One layer of a tuple of layers with its hooks (`LayerMemory.hooks_of`)."""

    layer: Any
    #: Its hook table (`hook_table`).
    table: dict[str, Callable[..., Any] | None]
    #: Whether it has no `init` hook: its entry starts at once.
    without_init: bool


class RecallCache:
    """Recall output of `recall_mode="eventual"` layers, kept until their `store` changes state,
    by (scope key, layer id); `drop_scope` forgets a scope's outputs (an evicted thread's)."""

    __slots__ = ("_layers", "outputs")

    def __init__(self) -> None:
        self.outputs: dict[tuple[str, str], LayerOutput] = {}
        #: The layer ids with a cached output, by scope key.
        self._layers: dict[str, set[str]] = {}

    def get(self, key: tuple[str, str]) -> LayerOutput | None:
        """The cached output for `key`, if still valid."""
        return self.outputs.get(key)

    def put(self, key: tuple[str, str], output: LayerOutput) -> None:
        """Cache `output` (served later as a plain render: it commits nothing)."""
        self.outputs[key] = replace(output, mutated_state=False)
        self._layers.setdefault(key[0], set()).add(key[1])

    def invalidate(self, key: tuple[str, str]) -> None:
        """Drop `key` so the next recall runs."""
        if self.outputs.pop(key, None) is not None:
            layers = self._layers[key[0]]
            layers.discard(key[1])
            if not layers:
                del self._layers[key[0]]

    def drop_scope(self, scope_key: str) -> None:
        """Forget every output cached under `scope_key` (their next recalls run)."""
        for layer_id in self._layers.pop(scope_key, ()):
            del self.outputs[(scope_key, layer_id)]


class LayerMemory:
    """What a harness remembers about its layers across turns: anchoring (under `config`) and
    recall caches, overflow summaries, token estimates of log items by id (items never change,
    so one estimate each), each layer's last string render, the budget splits of layer sets,
    the hook table of each layer object and the hook index of each list of them.

    The anchoring store is built on first use: a harness whose calls never have layers never
    imports `noetic.layers.anchoring`. `config` None stands for the default settings, made
    only when anchoring first reads them (a harness given none never builds the model)."""

    __slots__ = (
        "_anchors",
        "_config",
        "allocations",
        "hook_indexes",
        "hook_tables",
        "recalls",
        "renders",
        "set_hooks",
        "summaries",
        "tokens",
    )

    def __init__(self, config: ContextCacheConfig | None = None) -> None:
        self._config = config
        self._anchors: AnchorStore | None = None
        self.recalls = RecallCache()
        self.summaries = SummaryMemory()
        self.tokens: dict[str, int] = {}
        self.renders: dict[str, LayerOutput] = {}
        self.allocations: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, float]]] = {}
        self.hook_tables: dict[int, tuple[Any, dict[str, Callable[..., Any] | None]]] = {}
        self.hook_indexes: HookIndexes = {}
        #: `hooks_of`'s memo: by the id of a tuple of layer objects, the tuple (held, so no id
        #: is reused while remembered), its layers' hook tables and which of them have no `init`.
        self.set_hooks: dict[int, tuple[tuple[Any, ...], tuple[LayerHooks, ...]]] = {}

    @property
    def anchors(self) -> AnchorStore:
        """The anchoring memory (epochs per lineage, churn per layer), built on first use."""
        anchors = self._anchors
        if anchors is None:
            from noetic.layers.anchoring import AnchorStore

            anchors = self._anchors = AnchorStore(self.config)
        return anchors

    @property
    def config(self) -> ContextCacheConfig:
        """The anchoring settings (the defaults when the harness was given none)."""
        config = self._config
        if config is None:
            from noetic.layers.cache_config import ContextCacheConfig

            config = self._config = ContextCacheConfig()
        return config

    @property
    def anchoring_enabled(self) -> bool:
        """Whether prompt-cache anchoring is on (it is by default)."""
        return self._config is None or self._config.enabled

    def forget_lineage(self, key: str) -> None:
        """Drop the anchoring state of lineage `key` (a finished child execution)."""
        if self._anchors is not None:
            self._anchors.drop(key)

    def render_text(self, layer_id: str, text: str) -> LayerOutput:
        """The output of a recall of `layer_id` that returned `text` (LY-3: one developer
        message). When the layer returned the same text last time, it is the same output —
        message, token estimate and all — so unchanged content is not rebuilt, re-estimated or
        re-hashed (anchoring compares it by identity)."""
        last = self.renders.get(layer_id)
        if last is not None and last.text == text:
            return last
        if len(self.renders) >= MAX_MEMOIZED_ITEMS:
            self.renders.clear()
        from noetic.layers.anchoring import LayerOutput

        output = LayerOutput(layer_id, (developer_message(text),), estimate_text(text), text=text)
        self.renders[layer_id] = output
        return output

    def hooks_of(self, layers: tuple[Any, ...]) -> tuple[LayerHooks, ...]:
        """Each of `layers` with its hook table (`hooks`) and whether it has no `init` (its
        entry starts at once): worked out once per tuple of layers, which a layer set resolves
        to the same object every turn (`LayerSet.resolve`), instead of per layer per turn."""
        found = self.set_hooks.get(id(layers))
        if found is not None and found[0] is layers:
            return found[1]
        found_hooks = []
        for layer in layers:
            table = self.hooks(layer)
            found_hooks.append(LayerHooks(layer, table, table["init"] is None))
        hooks = tuple(found_hooks)
        if len(self.set_hooks) >= MAX_MEMOIZED_SPLITS:
            self.set_hooks.clear()
        self.set_hooks[id(layers)] = (layers, hooks)
        return hooks

    def hooks(self, layer: Any) -> dict[str, Callable[..., Any] | None]:
        """The hook table of `layer` (`hook_table`), built once per layer object."""
        found = self.hook_tables.get(id(layer))
        if found is not None and found[0] is layer:
            return found[1]
        if len(self.hook_tables) >= MAX_MEMOIZED_SPLITS:
            self.hook_tables.clear()
        table = hook_table(layer)
        self.hook_tables[id(layer)] = (layer, table)
        return table

    def budgets(self, layers: Sequence[Any], projection: Projection, system_tokens: int) -> dict[str, float]:
        """Each layer's token budget for one step, by layer id (BG-1..BG-5). The split only
        changes with the layers (ids and budget specs) and the window, so it is remembered
        for them; the caller must not change the returned dict."""
        specs = tuple([getattr(layer, "budget", "auto") for layer in layers])
        key = (projection.token_budget, projection.response_reserve, system_tokens, *map(_layer_id, layers))
        found = self.allocations.get(key)
        if found is not None and found[0] == specs:
            return found[1]
        allocation = allocate_budgets(
            projection.token_budget,
            layers,
            system_prompt_tokens=system_tokens,
            response_reserve=projection.response_reserve,
        )
        budgets = {layer_id: _budget(a) for layer_id, a in allocation.by_id().items()}
        if len(self.allocations) >= MAX_MEMOIZED_SPLITS:
            self.allocations.clear()
        self.allocations[key] = (copy.deepcopy(specs), budgets)
        return budgets

    def item_tokens(self, item: Item) -> int:
        """The estimated tokens of `item`, memoized by item id (bounded)."""
        count = self.tokens.get(item.id)
        if count is None:
            if len(self.tokens) >= MAX_MEMOIZED_ITEMS:
                self.tokens.clear()
            count = self.tokens[item.id] = estimate_item_tokens(item)
        return count


class SummaryMemory:
    """Summaries already written, by the id of the last item each one covers."""

    __slots__ = ("by_last_item",)

    def __init__(self) -> None:
        self.by_last_item: dict[str, str] = {}

    def find(self, items: Sequence[Item]) -> tuple[int, str | None]:
        """The longest prefix of `items` already summarized: its length and its summary."""
        for end in range(len(items), 0, -1):
            summary = self.by_last_item.get(items[end - 1].id)
            if summary is not None:
                return end, summary
        return 0, None

    def remember(self, last: Item, summary: str) -> None:
        """Keep `summary` as the summary of everything up to `last` (bounded)."""
        if len(self.by_last_item) >= MAX_SUMMARIES:
            self.by_last_item.clear()
        self.by_last_item[last.id] = summary


def _budget(allocation: float) -> float:
    return math.floor(allocation) if math.isfinite(allocation) else math.inf
