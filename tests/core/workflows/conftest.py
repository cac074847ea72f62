"""Helpers for the workflow tests: run a graph for one turn and collect what it streamed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel


@dataclass
class Turn:
    """One finished turn: the response and every full-stream event."""

    response: nt.HarnessResponse
    events: list[nt.StreamEvent] = field(default_factory=list)

    def custom_events(self) -> list[Any]:
        return [e.data for e in self.events if e.type.endswith(":custom_item_event")]

    def custom_finals(self) -> list[Any]:
        return [i for i in self.response.items if isinstance(i, nt.CustomItem)]


RunTurn = Callable[..., Awaitable[Turn]]


@pytest.fixture
def run_turn() -> RunTurn:
    """`await run_turn(graph, input, **harness_options)` runs one turn on an AgentHarness
    (offline echo model unless `model=` is given) and returns a `Turn`."""

    async def run(graph: nt.Step, input: Any = "", **options: Any) -> Turn:
        options.setdefault("model", ScriptedModel.echo())
        events: list[nt.StreamEvent] = []
        async with nt.AgentHarness("wf", agent_graph=graph, **options) as h:
            await h.execute(input)
            async for event in h.get_full_stream():
                events.append(event)
            response = await h.get_agent_response()
        return Turn(response, events)

    return run


@pytest.fixture
def run_graph() -> Callable[..., Awaitable[Any]]:
    """`await run_graph(graph, input)` returns the output of `h.run(input)`."""

    async def run(graph: nt.Step, input: Any = "", **options: Any) -> Any:
        options.setdefault("model", ScriptedModel.echo())
        async with nt.AgentHarness("wf", agent_graph=graph, **options) as h:
            with anyio.fail_after(30):  # hang guard only
                return (await h.run(input)).output

    return run
