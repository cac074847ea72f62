"""Shared fixtures for the context-layer tests: a configurable recording layer (`Probe`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from noetic.layers import CallResult, ContextLayer, LayerContext, SpawnResult


class Probe(ContextLayer):
    """A layer that records every hook call as a tuple in `events`.

    `text` is what recall renders (a callable gets the layer context); `fail` names hooks that
    raise. The state is a counter that `store` increments.
    """

    def __init__(
        self,
        id: str,
        events: list[tuple[Any, ...]],
        *,
        slot: float = 100,
        text: str | Callable[[LayerContext], str | None] | None = None,
        fail: tuple[str, ...] = (),
        scope: str = "execution",
        placement: str = "auto",
        **attributes: Any,
    ):
        self.id = id
        self.slot = slot
        self.scope = scope  # type: ignore[assignment]
        self.placement = placement  # type: ignore[assignment]
        self.events = events
        self.text = text if text is not None else f"{id} notes"
        self.fail = fail
        for name, value in attributes.items():
            setattr(self, name, value)

    def _record(self, hook: str, ctx: LayerContext, *extra: Any) -> None:
        self.events.append((self.id, hook, *extra))
        if hook in self.fail:
            raise RuntimeError(f"{self.id} {hook} failed on purpose")

    async def init(self, ctx: LayerContext) -> int:
        self._record("init", ctx)
        return 0

    async def recall(self, ctx: LayerContext, budget: float) -> str | None:
        self._record("recall", ctx)
        return self.text(ctx) if callable(self.text) else self.text

    async def store(self, ctx: LayerContext, response: CallResult) -> int:
        self._record("store", ctx)
        return int(ctx.state or 0) + 1

    async def on_spawn(self, ctx: LayerContext, child: Any) -> SpawnResult | None:
        self._record("on_spawn", ctx)
        return SpawnResult(child_state=ctx.state)

    async def on_complete(self, ctx: LayerContext, outcome: str) -> None:
        self._record("on_complete", ctx, outcome, ctx.depth)

    async def dispose(self, ctx: LayerContext) -> None:
        self._record("dispose", ctx, ctx.depth)


@pytest.fixture
def events() -> list[tuple[Any, ...]]:
    """The event list the probes of one test share."""
    return []


@pytest.fixture
def probe(events: list[tuple[Any, ...]]) -> Callable[..., Probe]:
    """`probe("id", slot=..., text=..., fail=(...))` makes a recording layer."""

    def make(id: str, **kwargs: Any) -> Probe:
        return Probe(id, events, **kwargs)

    return make
