"""The seed's `drain` document end to end (CI-9, CI-10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import noetic as nt
import pytest

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "drain.json"

#: The count-down document of examples/drain.json, verbatim.
DRAIN: dict[str, Any] = {
    "version": 1,
    "customItems": {
        "progress": {
            "type": "myapp:progress",
            "event": {"type": "object", "properties": {"left": {"type": "number"}}, "required": ["left"]},
            "output": {"type": "object", "properties": {"left": {"type": "number"}}, "required": ["left"]},
        }
    },
    "root": {
        "kind": "loop",
        "id": "drain",
        "maxIterations": "infinity",
        "body": {
            "kind": "compute",
            "id": "step",
            "expr": "{ 'n': n - 1 }",
            "emitItems": {"item": "progress", "onStart": "{ 'left': n }", "onDone": "{ 'left': n }"},
        },
        "until": {"kind": "expr", "expr": "n = 0"},
    },
}


def test_the_example_file_is_the_seed_document() -> None:
    assert json.loads(EXAMPLE.read_text()) == DRAIN


async def test_check_48_drain_counts_down_in_three_dispatches(run_turn: Any) -> None:
    turn = await run_turn(nt.workflow("drain", DRAIN), {"n": 3})
    assert turn.response.output == {"n": 0}
    finals = turn.custom_finals()
    assert [f.left for f in finals] == [2, 1, 0]  # onDone read against each iteration's output
    assert all(f.type == "myapp:progress" for f in finals)
    events = turn.custom_events()
    assert [e.event for e in events] == [{"left": 3}, {"left": 2}, {"left": 1}]  # onStart vs input
    ids = [f.id for f in finals]
    assert len(set(ids)) == 3  # CI-10: each iteration is its own dispatch
    assert [e.id for e in events] == ids  # CI-5: one event per dispatch, sharing its final's id


async def test_ci_10_each_event_comes_before_its_own_final_item(run_turn: Any) -> None:
    turn = await run_turn(nt.workflow("drain", EXAMPLE), {"n": 3})
    order = []
    for event in turn.events:
        if event.type.endswith(":custom_item_event"):
            order.append(("event", event.data.id))
        elif event.type.endswith(":item_appended") and isinstance(event.data["item"], nt.CustomItem):
            order.append(("final", event.data["item"].id))
    assert [kind for kind, _ in order] == ["event", "final"] * 3
    assert all(order[i][1] == order[i + 1][1] for i in range(0, 6, 2))


async def test_drain_runs_through_h_run_with_a_dict_input() -> None:
    async with nt.AgentHarness("jobs", agent_graph=nt.workflow("drain", json.dumps(DRAIN))) as h:
        response = await h.run({"n": 3})
    assert response.output == {"n": 0}
    finals = [i for i in response.items if isinstance(i, nt.CustomItem)]
    assert [f.left for f in finals] == [2, 1, 0]
    assert len({f.id for f in finals}) == 3


async def test_drain_streams_in_progress_snapshots_then_complete_items() -> None:
    flow = nt.workflow("drain", DRAIN)
    async with nt.AgentHarness("jobs", agent_graph=flow) as h:
        await h.execute({"n": 2})
        items = [i async for i in h.get_item_stream() if isinstance(i, nt.CustomItem)]
    assert [(i.status, i.event if i.status == "in_progress" else i.left) for i in items] == [
        ("in_progress", {"left": 2}),
        ("completed", 1),
        ("in_progress", {"left": 1}),
        ("completed", 0),
    ]
