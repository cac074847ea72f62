"""The step trace and the turn outcome the inspector reads (IN-1): one row per completed step,
kept when the ledger compacts; the snapshot's attempt, outcome and times."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.durable.ledger import load_ledger
from noetic.durable.snapshot import MAX_REASON, execution_ids, load_snapshot
from noetic.durable.trace import load_trace
from noetic.layers import ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


class Notes(ContextLayer):
    """A layer adding one fixed note to every model call."""

    id = "notes"
    slot = 100

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "remember this"


async def _read(storage: Any, execution_id: str) -> tuple[Any, list[Any], Any]:
    store = storage.open()
    try:
        snap = await load_snapshot(store, execution_id, {})
        trace = await load_trace(store, execution_id)
        window = await load_ledger(store, execution_id, {})
        return snap, trace, window
    finally:
        await store.aclose()


async def test_in_1_every_completed_step_keeps_a_trace_row_after_compaction(storage: Any) -> None:
    model = ScriptedModel([text_reply("a", cost=0.002), text_reply("b", cost=0.003)])
    graph = nt.sequence("g", [nt.call_model("first"), nt.call_model("second")])
    async with nt.AgentHarness(
        "t", agent_graph=graph, model=model, storage=storage.spec(), layers=[Notes()]
    ) as h:
        response = await h.run("go", execution_id="traced")
    snap, trace, window = await _read(storage, "traced")
    assert list(window.entries) == ["/g#0"]  # the children's ledger entries were compacted
    assert [(row.path, row.kind) for row in trace] == [
        ("/g#0/first#0", "call_model"),
        ("/g#0/second#0", "call_model"),
        ("/g#0", "sequence"),
    ]
    assert [row.cost for row in trace] == ["0.002", "0.003", "0.005"]
    assert float(trace[-1].billed_cost) == response.billed_cost == pytest.approx(0.005)
    assert all(row.duration_ms >= 0 and row.attempt == 1 for row in trace)
    first = trace[0].layer_usage
    assert first is not None and first["execution_id"] == "traced" and first["total_used_tokens"] > 0
    assert [layer["layer_id"] for layer in first["layers"]] == ["notes"]
    assert trace[-1].layer_usage is None  # the sequence made no model call itself
    assert snap.outcome == "completed" and snap.attempt == 1
    assert snap.started_at is not None and snap.ended_at is not None and snap.started_at <= snap.ended_at


async def test_in_1_a_resumed_attempt_is_counted_and_its_replayed_steps_keep_their_rows(
    storage: Any, flaky: Any
) -> None:
    crash = {"fail": True}
    model = ScriptedModel([text_reply("a", cost=0.002)])
    graph = nt.sequence("g", [nt.call_model("paid"), nt.run_code("crash", flaky(crash))])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="again")
        failed, _, _ = await _read(storage, "again")
        crash["fail"] = False
        await h.resume("again")
    snap, trace, _ = await _read(storage, "again")
    assert (failed.outcome, failed.attempt) == ("failed", 1)
    assert failed.reason is not None and "simulated crash" in failed.reason
    assert (snap.outcome, snap.attempt, snap.reason) == ("completed", 2, None)
    assert all(row.layer_usage is None for row in trace)  # no layers: the usage stays unmeasured
    attempts = {row.path: row.attempt for row in trace}
    assert attempts == {"/g#0/paid#0": 1, "/g#0/crash#0": 2, "/g#0": 2}  # `paid` replayed in attempt 2


async def test_in_1_an_aborted_turn_is_recorded_as_aborted(storage: Any) -> None:
    async def stop(value: Any, ctx: nt.Context) -> Any:
        ctx.abort("enough")
        return value

    graph = nt.sequence("g", [nt.run_code("stop", stop), nt.run_code("never", lambda v: v)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="stopped")
    snap, _, _ = await _read(storage, "stopped")
    assert snap.outcome == "aborted" and snap.reason is not None and "enough" in snap.reason


async def test_in_1_execution_ids_lists_each_execution_once_whatever_its_id(storage: Any) -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("c", lambda v: v), storage=storage.spec()) as h:
        for execution_id in ("plain", "with:colon", "a/b c"):
            await h.run("go", execution_id=execution_id)
    store = storage.open()
    try:
        assert sorted(await execution_ids(store)) == sorted(["plain", "with:colon", "a/b c"])
    finally:
        await store.aclose()


async def test_in_1_a_damaged_trace_row_is_checkpoint_corrupt(storage: Any) -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("c", lambda v: v), storage=storage.spec()) as h:
        await h.run("go", execution_id="damaged")
    (key,) = await storage.keys("execution:damaged:trace:")
    await storage.edit(key, lambda text: text.replace('"kind":"run_code"', '"kind":7'))
    store = storage.open()
    try:
        with pytest.raises(nt.NoeticError) as caught:
            await load_trace(store, "damaged")
    finally:
        await store.aclose()
    assert caught.value.code == "CHECKPOINT_CORRUPT" and key in caught.value.message


async def test_in_1_a_long_failure_reason_is_cut_to_its_bound(storage: Any) -> None:
    def fail(value: Any) -> Any:
        raise RuntimeError("x" * 50_000)

    async with nt.AgentHarness("t", agent_graph=nt.run_code("f", fail), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="long-reason")
    snap, _, _ = await _read(storage, "long-reason")
    assert snap.outcome == "failed" and snap.reason is not None and len(snap.reason) == MAX_REASON
