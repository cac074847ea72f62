"""Default retention never drops what a resume needs (RS-20): long loops replay whole, large
entries are recorded in parts, and compaction keeps storage to what can still replay."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.items import MessageItem
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply
from noetic.testing.scripted import ScriptedReply

pytestmark = pytest.mark.anyio

Flaky = Any


def counting_model() -> ScriptedModel:
    """A model whose n-th answer is `answer-n` (n = answers already in the conversation)."""

    def reply(request: ModelRequest) -> ScriptedReply:
        n = sum(1 for i in request.items if isinstance(i, MessageItem) and i.role == "assistant")
        return text_reply(f"answer-{n}", cost=0.001)

    return ScriptedModel(default=reply)


async def test_rs_20_a_long_loop_resumes_without_paying_again_for_any_completed_call(
    storage: Any, flaky: Flaky
) -> None:
    iterations = 520  # two entries each: past the old default cap of 1000 entries
    crash = {"fail": True}
    loop = nt.loop(
        "l",
        [nt.call_model("m"), nt.run_code("tool", lambda text: text)],
        until=nt.until.max_steps(iterations),
    )
    # The crash comes after the loop finished, inside the still-running root: nothing compacts the
    # loop's children but the loop's own entry, so this holds with or without that entry too.
    graph = nt.sequence("g", [loop, nt.run_code("crash", flaky(crash))])
    model = counting_model()
    fast = storage.spec(synchronous="normal")
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=fast) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="long")
        assert len(model.calls) == iterations
        crash["fail"] = False
        resp = await h.resume("long")
    assert len(model.calls) == iterations  # not one completed, paid call ran again
    assert resp.billed_cost == 0
    assert resp.cost == pytest.approx(iterations * 0.001)


async def test_rs_20_a_long_loop_killed_mid_way_replays_every_finished_iteration(storage: Any) -> None:
    iterations, crash_at = 520, 510
    calls = {"n": 0}

    def tool(text: str) -> str:
        calls["n"] += 1
        if calls["n"] == crash_at:
            raise RuntimeError("simulated crash inside the loop")
        return text

    loop = nt.loop("l", [nt.call_model("m"), nt.run_code("tool", tool)], until=nt.until.max_steps(iterations))
    model = counting_model()
    fast = storage.spec(synchronous="normal")
    async with nt.AgentHarness("t", agent_graph=loop, model=model, storage=fast) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="mid")
        assert len(model.calls) == crash_at
        resp = await h.resume("mid")
    assert len(model.calls) == iterations  # only the unfinished iterations were paid for
    assert resp.output == f"answer-{iterations - 1}"


async def test_rs_20_an_entry_over_128_kib_is_recorded_in_parts_and_replays(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}
    runs: list[int] = []
    big = "x" * 300_000

    def produce(_: Any) -> str:
        runs.append(1)
        return big

    graph = nt.sequence("g", [nt.run_code("big", produce), nt.run_code("crash", flaky(crash))])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="big")
        keys = await storage.keys("execution:big:ledger:")
        assert len(keys) == 4  # the head and three parts
        store = storage.open()
        try:
            rows = await store.get_many(keys)
        finally:
            await store.aclose()
        assert max(len(text) for text in rows.values()) < 140 * 1024  # no value much over a part
        crash["fail"] = False
        resp = await h.resume("big")
    assert runs == [1]  # recorded, so it never ran again
    assert resp.output == "done"


async def test_rs_20_a_large_history_is_stored_in_parts_and_comes_back(storage: Any, flaky: Flaky) -> None:
    crash = {"fail": False}
    graph = nt.sequence("g", [nt.call_model("m"), nt.run_code("crash", flaky(crash))])
    model = ScriptedModel(default=lambda request: text_reply("ok"))
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        for i in range(3):
            await h.run("y" * 300_000 + str(i), thread_id="th")
        crash["fail"] = True
        with pytest.raises(nt.NoeticError):
            await h.run("last", thread_id="th", execution_id="later")
        assert await storage.keys("execution:later:start:part:") == []  # it names the history (HS-1)
        parts = [key for key in await storage.keys("thread:th:items:") if ":part:" in key]
        assert len(parts) >= 3 * 2  # each turn's piece, in parts
    crash["fail"] = False
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        resp = await h.resume("later")
    texts = [i.text for i in resp.items if isinstance(i, MessageItem) and i.role == "user"]
    assert texts == ["y" * 300_000 + str(i) for i in range(3)] + ["last"]
    assert len(model.calls) == 4  # the last turn's model step replayed


async def test_rs_20_superseded_and_compacted_entries_leave_storage(storage: Any) -> None:
    inner = nt.sequence("inner", [nt.run_code("a", lambda x: x), nt.run_code("b", lambda x: x)])
    graph = nt.loop("outer", [inner], until=nt.until.max_steps(50))
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        await h.run("", execution_id="tidy")
    # 50 iterations of a, b and inner took sequence numbers 0..149; the loop's own entry is the
    # only one left.
    assert await storage.keys("execution:tidy:ledger:") == ["execution:tidy:ledger:00000150"]
