"""The snapshot a step's save captures: a bare execution's (no state, no layer state) is
encoded once and reused, and a state that appears mid-run is still captured and restored."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore, snapshot

pytestmark = pytest.mark.anyio


async def test_a_bare_execution_encodes_its_snapshot_once_not_per_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[Any] = []
    encode = snapshot.encode_document

    def counting(value: Any, **kw: Any) -> str:
        if isinstance(value, dict) and "schema_version" in value:
            encoded.append(value)
        return encode(value, **kw)

    monkeypatch.setattr(snapshot, "encode_document", counting)
    graph = nt.loop("agent", [nt.run_code("step", lambda _: "ok")], until=nt.until.max_steps(20))
    store = MemoryCheckpointStore()
    async with nt.AgentHarness("t", agent_graph=graph, storage=store) as h:
        resp = await h.run("go", execution_id="e")
    assert resp.output == "ok"
    # One bare body for every step's save, then the closing capture with the turn's outcome.
    assert [doc.get("outcome") for doc in encoded] == [None, "completed"]
    stored = json.loads(await store.get("execution:e:snapshot") or "{}")
    assert stored["outcome"] == "completed" and stored["state"] is None


async def test_a_state_set_mid_run_is_captured_and_restored_on_resume() -> None:
    crash = {"fail": True}
    seen: list[Any] = []

    def set_state(_: Any, ctx: nt.Context) -> str:
        ctx.state = {"n": 1}
        return "set"

    def flaky(_: Any, ctx: nt.Context) -> str:
        seen.append(ctx.state)
        if crash["fail"]:
            raise RuntimeError("crash")
        return "done"

    graph = nt.sequence(
        "g", [nt.run_code("a", lambda _: "a"), nt.run_code("set", set_state), nt.run_code("crash", flaky)]
    )
    store = MemoryCheckpointStore()
    async with nt.AgentHarness("t", agent_graph=graph, storage=store) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="e")
        stored = json.loads(await store.get("execution:e:snapshot") or "{}")
        assert stored["state"] == {"n": 1}
        crash["fail"] = False
        assert (await h.resume("e")).output == "done"
    assert seen == [{"n": 1}, {"n": 1}]
