"""Document-wide bounds of one run (issue 18 item 5): fan-out paths and loop iterations."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.testing import ScriptedModel
from noetic.workflows.limits import WorkflowLimits

pytestmark = pytest.mark.anyio


def nested_fan_out(levels: int, width: int) -> dict[str, Any]:
    node: dict[str, Any] = {"kind": "compute", "id": "leaf", "expr": "1"}
    for n in range(levels):
        node = {
            "kind": "sequence",
            "id": f"s{n}",
            "steps": [
                {"kind": "compute", "id": f"make{n}", "expr": f"[1..{width}]"},
                {"kind": "inParallel", "id": f"fan{n}", "mode": "all", "each": node, "merge": "concat"},
            ],
        }
    return {"version": 1, "root": node}


async def run(doc: dict[str, Any], limits: WorkflowLimits, input: Any = "") -> Any:
    flow = nt.workflow("w", doc, limits=limits)
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        return (await h.run(input)).output


async def test_paths_are_counted_across_nested_fan_outs() -> None:
    limits = WorkflowLimits(max_depth=10, max_paths=12)
    assert len(await run(nested_fan_out(2, 3), limits)) == 9  # 3 + 3 * 3 = 12 paths
    with pytest.raises(nt.NoeticError, match="max_paths") as info:
        await run(nested_fan_out(2, 4), limits)  # 4 + 4 * 4 = 20 paths
    assert info.value.code == "LIMIT_EXCEEDED"
    assert info.value.limit == 12


async def test_each_run_starts_with_a_fresh_budget() -> None:
    flow = nt.workflow("w", nested_fan_out(2, 3), limits=WorkflowLimits(max_depth=10, max_paths=12))
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        for _ in range(3):
            assert len((await h.run("")).output) == 9


async def test_loop_iterations_are_counted_for_the_whole_run() -> None:
    doc = {
        "version": 1,
        "root": {
            "kind": "loop",
            "id": "l",
            "body": {"kind": "compute", "id": "c", "expr": "$ + 1"},
            "until": {"kind": "maxSteps", "n": 50},
        },
    }
    assert await run(doc, WorkflowLimits(max_iterations=49), 0) == 50  # 49 further iterations
    with pytest.raises(nt.NoeticError, match="max_iterations"):
        await run(doc, WorkflowLimits(max_iterations=48), 0)
