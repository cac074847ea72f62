"""Document-wide bounds of one run (issue 18 item 5): fan-out paths and loop iterations."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.steps.loop import Loop
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


def forever(body_expr: str) -> dict[str, Any]:
    """A loop that never stops on its own, around one compute node."""
    return {
        "version": 1,
        "root": {
            "kind": "loop",
            "id": "l",
            "maxIterations": "infinity",
            "until": {"kind": "never"},
            "body": {"kind": "compute", "id": "c", "expr": body_expr},
        },
    }


async def test_the_cpu_time_of_all_expressions_is_bounded_for_the_whole_run() -> None:
    # each evaluation stays far below its own 500 ms; only the run-wide total can stop it
    slow = "$count([1..20000].($ * 2))"
    with pytest.raises(nt.NoeticError, match="max_run_cpu_ms") as info:
        await run(forever(slow), WorkflowLimits(max_run_cpu_ms=200))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert info.value.limit == 200
    assert info.value.actual > 200


async def test_the_memory_all_expressions_allocate_is_bounded_for_the_whole_run() -> None:
    with pytest.raises(nt.NoeticError, match="max_run_memory_bytes") as info:
        await run(forever("$pad('', 100000, 'x')"), WorkflowLimits(max_run_memory_bytes=2_000_000))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert info.value.actual > 2_000_000


async def test_a_budget_breach_inside_a_settling_fan_out_still_fails_the_run() -> None:
    doc = {
        "version": 1,
        "root": {
            "kind": "sequence",
            "id": "s",
            "steps": [
                {"kind": "compute", "id": "paths", "expr": "[1..4]"},
                {
                    "kind": "inParallel",
                    "id": "p",
                    "mode": "settle",
                    "each": forever("$pad('', 100000, 'x')")["root"],
                },
            ],
        },
    }
    with pytest.raises(nt.NoeticError, match="max_run_memory_bytes") as info:
        await run(doc, WorkflowLimits(max_run_memory_bytes=2_000_000))
    assert info.value.code == "LIMIT_EXCEEDED"


def kept_history(until: dict[str, Any]) -> int:
    """How many outputs the loop of a one-loop document keeps for its predicate."""
    body = {"kind": "compute", "id": "c", "expr": "$ + 1"}
    flow = nt.workflow("w", {"version": 1, "root": {"kind": "loop", "id": "l", "body": body, "until": until}})
    steps: list[nt.Step] = [flow]
    while steps:
        step = steps.pop()
        if isinstance(step, Loop):
            return step.keep_history
        steps.extend(step.children())
    raise AssertionError("no loop step")


def test_a_document_loop_keeps_only_the_outputs_its_predicate_reads() -> None:
    assert kept_history({"kind": "maxSteps", "n": 5}) == 1
    assert kept_history({"kind": "converged"}) == 2
    assert (
        kept_history({"kind": "any", "predicates": [{"kind": "maxSteps", "n": 5}, {"kind": "converged"}]})
        == 2
    )


async def test_a_converging_document_loop_still_sees_the_previous_output() -> None:
    doc = {
        "version": 1,
        "root": {
            "kind": "loop",
            "id": "l",
            "body": {"kind": "compute", "id": "c", "expr": "$ < 3 ? $ + 1 : $"},
            "until": {"kind": "converged"},
        },
    }
    assert await run(doc, WorkflowLimits(), 0) == 3


async def test_the_items_a_run_emits_count_toward_its_memory_budget() -> None:
    doc = {
        "version": 1,
        "customItems": {"tick": {"type": "t:tick", "output": {"type": "object"}}},
        "root": {
            "kind": "loop",
            "id": "l",
            "maxIterations": "infinity",
            "until": {"kind": "never"},
            "body": {
                "kind": "compute",
                "id": "c",
                "expr": "$",
                "emitItems": {"item": "tick", "onDone": "{ 'n': 1 }"},
            },
        },
    }
    # nothing but the items is allocated: 50 of them pass the budget, never the 100,000 iterations
    with pytest.raises(nt.NoeticError, match="max_run_memory_bytes") as info:
        await run(doc, WorkflowLimits(max_run_memory_bytes=50_000), 0)
    assert info.value.code == "LIMIT_EXCEEDED"


async def test_results_built_without_any_builtin_count_toward_the_memory_budget() -> None:
    # `$` allocates through no builtin, but every result is copied out of the evaluator
    doc = {
        "version": 1,
        "root": {
            "kind": "loop",
            "id": "l",
            "body": {"kind": "compute", "id": "same", "expr": "$"},
            "until": {"kind": "maxSteps", "n": 50},
        },
    }
    state = list(range(1000, 2000))  # about 5,000 bytes of JSON
    assert await run(doc, WorkflowLimits(max_run_memory_bytes=1_000_000), state) == state
    with pytest.raises(nt.NoeticError, match="max_run_memory_bytes"):
        await run(doc, WorkflowLimits(max_run_memory_bytes=100_000), state)
