"""noetic S6: the S1 round trip through context layers, with prompt-cache anchoring on.

Variants (`VARIANTS`), each measured beside the others in the same run:

- `bare` — S1 itself (no layers);
- `scratchpad` — the scratchpad layer (`noetic-layers-scratchpad`, default settings);
- `scratchpad+3` — the scratchpad plus three user-written layers: `Persona` (a fixed anchored
  paragraph), `TurnNotes` (thread-scoped state loaded from storage, rendered `auto`, advanced by
  `store` after every step) and `Retrieval` (an `eventual` layer recalling by the step's query);
- `1-layer` and `10-layers` — the growth scenario's anchored layers, each a fixed paragraph.

Like S1, every run is a turn on a fresh thread of one long-lived harness, so each turn opens
a new anchoring epoch and loads (and writes back) the thread-scoped state of its layers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import noetic as nt
from noetic.layers import CallResult, ContextLayer, LayerContext, Slot

from subjects.common import QUESTION
from subjects.noetic_subject import FakeModel, _agent

NAME = "noetic-layers"


class Persona(ContextLayer):
    """A fixed paragraph, pinned before the history."""

    id = "persona"
    slot = Slot.REMINDER
    placement = "anchor"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "You are a careful arithmetic assistant. Use the add tool for every sum."


class TurnNotes(ContextLayer):
    """Thread-scoped notes: loaded from storage, shown, and advanced after every step."""

    id = "turn-notes"
    slot = Slot.OBSERVATIONS
    placement = "auto"

    async def init(self, ctx: LayerContext) -> dict[str, Any]:
        return await ctx.storage.get("state") or {"steps": 0}

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"Steps taken on this thread so far: {ctx.state['steps']}."

    async def store(self, ctx: LayerContext, response: CallResult) -> dict[str, Any]:
        return {"steps": ctx.state["steps"] + 1}


class Retrieval(ContextLayer):
    """Recalls by the step's query; `eventual`, so its output is cached until its state changes."""

    id = "retrieval"
    slot = Slot.RAG
    recall_mode = "eventual"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"Relevant note for {ctx.query!r}: addition is commutative."


def _fixed(n: int) -> ContextLayer:
    """The growth scenario's anchored layer number `n`."""

    async def recall(self: Any, ctx: Any, budget: Any) -> str:
        return f"Layer {n}: " + "background fact. " * 20

    cls = type(
        f"Layer{n}",
        (ContextLayer,),
        {"id": f"layer{n}", "slot": 100 + n, "placement": "anchor", "recall": recall},
    )
    layer: ContextLayer = cls()
    return layer


def _layers(variant: str) -> list[Any]:
    if variant == "bare":
        return []
    from noetic_layers_scratchpad import scratchpad

    if variant == "scratchpad":
        return [scratchpad()]
    if variant == "scratchpad+3":
        return [scratchpad(), Persona(), TurnNotes(), Retrieval()]
    if variant == "1-layer":
        return [_fixed(0)]
    if variant == "10-layers":
        return [_fixed(n) for n in range(10)]
    raise SystemExit(f"unknown S6 variant {variant!r}")


VARIANTS = ("bare", "scratchpad", "scratchpad+3", "1-layer", "10-layers")


class Variant:
    """One S6 variant, shaped like a subject module for `worker.s1` (it has `session()`)."""

    def __init__(self, name: str):
        self.name = name
        self.count = len(_layers(name))

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Callable[[int], Awaitable[str]]]:
        """One harness with this variant's layers; each run is a turn on its own thread."""
        layers = _layers(self.name)
        async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), layers=layers) as h:

            async def run_once(i: int) -> str:
                response = await h.run(QUESTION, thread_id=f"t{i}")
                if i < 0 and layers:  # warm-up runs check the layered path ran (S1 never reads it)
                    usage = response.last_layer_usage
                    if usage is None or usage.epoch is None:
                        raise AssertionError(f"layers did not run: last_layer_usage={usage!r}")
                return response.text

            yield run_once
