"""The `loop_stopped` event: every loop stop says why, and whether the predicate failed."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def stops(graph: nt.Step, input: Any) -> list[dict[str, Any]]:
    async with nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel.echo()) as h:
        await h.execute(input)
        events = [
            e.data for e in [event async for event in h.get_full_stream()] if e.type == "t:loop_stopped"
        ]
        await h.get_agent_response()
    return events


async def test_a_raising_predicate_is_reported_as_failed() -> None:
    def broken(snap: nt.LoopSnapshot) -> bool:
        raise RuntimeError("oops")

    [event] = await stops(nt.loop("l", nt.run_code("i", lambda i: i + 1), until=broken), 0)
    assert event["step_id"] == "l"
    assert event["failed"] is True
    assert "Predicate error: oops" in event["reason"]


async def test_a_finished_loop_reports_its_reason_and_iterations() -> None:
    [event] = await stops(nt.loop("l", nt.run_code("i", lambda i: i + 1), until=nt.until.max_steps(3)), 0)
    assert (event["failed"], event["iterations"]) == (False, 3)
    assert event["reason"]
