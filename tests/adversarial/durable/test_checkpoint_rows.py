"""Hostile checkpoint rows (issue 18 item 16 and our own attempts to break it again): a forged
record — with a valid checksum, written through the store — ends a resume with a clean
`CHECKPOINT_CORRUPT` (or `CHECKPOINT_SCHEMA_MISMATCH`) in bounded time, never a raw Python error,
an `ExceptionGroup` out of `async with AgentHarness`, or a resume that runs on forged data.

Each case runs on the memory and the SQLite store and on both anyio backends, in process under a
wall clock (the suite's child-process runner lives in tests/adversarial/conftest.py once it lands).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable import CheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio

EID = "target"
LEDGER = f"execution:{EID}:ledger:00000000"
START = f"execution:{EID}:start"
SNAPSHOT = f"execution:{EID}:snapshot"


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Opens the backend under test (the memory store is one shared instance)."""
    memory = MemoryCheckpointStore()

    def open_store() -> CheckpointStore:
        return memory if request.param == "memory" else SqliteCheckpointStore(str(tmp_path / "rows.db"))

    return open_store


def graph() -> nt.Step:
    def crash(_: Any, ctx: nt.Context) -> str:
        if ctx.state["crash"]:
            raise RuntimeError("simulated crash")
        return "done"

    return nt.sequence("g", [nt.call_model("ask"), nt.run_code("crash", crash)])


async def forge(store_factory: Any, key: str, forged: Any) -> None:
    """Run until the crash, then replace the record at `key` (its text, or a function of it)."""
    store = store_factory()
    model = ScriptedModel([text_reply("A", cost=0.01)])
    async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("hi", execution_id=EID, state={"crash": True})
        text = await store.get(key)
        assert text is not None
        await store.set(key, forged(text) if callable(forged) else forged)
    await store.aclose()


async def resume(store_factory: Any) -> nt.NoeticError:
    """Resume under a wall clock; the harness must stay usable afterwards."""
    store = store_factory()
    model = ScriptedModel([text_reply("B")])
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
            with anyio.fail_after(20), pytest.raises(nt.NoeticError) as err:
                await h.resume(EID)
            healthy = await h.run("x", execution_id="after", state={"crash": False})
            assert healthy.output == "done"
    finally:
        await store.aclose()
    assert model.calls == [] or len(model.calls) == 1  # only the healthy run may call the model
    return err.value


def field(name: str, raw: str) -> Any:
    """A forgery replacing the top-level field `name` with the JSON text `raw`."""

    def change(text: str) -> str:
        doc = json.loads(text)
        doc[name] = "@@raw@@"
        return json.dumps(doc, separators=(",", ":")).replace('"@@raw@@"', raw)

    return change


@pytest.mark.parametrize(
    ("key", "forged"),
    [
        pytest.param(LEDGER, field("cost", '"1E+999999999"'), id="cost-overflows-to-infinity"),
        pytest.param(LEDGER, field("cost", '"Infinity"'), id="cost-infinity"),
        pytest.param(LEDGER, field("usage", "[" + "9" * 5000 + ",0,null]"), id="usage-5000-digit-int"),
        pytest.param(LEDGER, field("usage", "[1e400,0,null]"), id="usage-float-overflow"),
        pytest.param(
            LEDGER, field("items", '{"items":[],"custom":[99999999]}'), id="custom-index-out-of-range"
        ),
        pytest.param(LEDGER, '{"parts":2,"length":10}', id="head-without-parts"),
        pytest.param(LEDGER, "{" * 50_000, id="unterminated-50k-deep"),
        pytest.param(LEDGER, '"' + "\\ud800" * 10 + '"', id="lone-surrogates"),
        pytest.param(START, field("first_item", "1e400"), id="first-item-infinite"),
        pytest.param(START, field("thread_id", "[" * 150_000 + "]" * 150_000), id="thread-id-150k-deep"),
        pytest.param(SNAPSHOT, field("layers", '{"layers":{"x":{"disabled":1}}}'), id="layer-disabled-int"),
        pytest.param(SNAPSHOT, field("completed", '"true"'), id="completed-string"),
    ],
)
async def test_a_forged_record_is_corrupt(store_factory: Any, key: str, forged: Any) -> None:
    await forge(store_factory, key, forged)
    error = await resume(store_factory)
    assert error.code == "CHECKPOINT_CORRUPT", error
    assert EID in error.message


async def test_a_forged_part_that_decodes_to_deep_json_is_corrupt(store_factory: Any) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = json.dumps(deep)  # the part's text: one JSON string holding the whole record
    await forge(store_factory, LEDGER, json.dumps({"parts": 1, "length": len(deep)}))
    store = store_factory()
    await store.set(f"{LEDGER}:part:000000", body)
    await store.aclose()
    error = await resume(store_factory)
    assert error.code == "CHECKPOINT_CORRUPT"
    assert LEDGER in error.message


async def test_a_forged_entry_of_a_future_version_is_a_schema_mismatch(store_factory: Any) -> None:
    await forge(store_factory, LEDGER, field("v", "3"))
    store = store_factory()
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), storage=store) as h:
            with pytest.raises(nt.NoeticConfigError) as err:
                await h.resume(EID)
    finally:
        await store.aclose()
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"


async def test_many_forged_rows_load_in_bounded_time(store_factory: Any) -> None:
    await forge(store_factory, LEDGER, lambda text: text)
    store = store_factory()
    entry = json.loads(await store.get(LEDGER) or "{}")
    rows = {}
    for i in range(1, 20_000):  # twenty thousand entries at one path: the last wins, none replays twice
        rows[f"execution:{EID}:ledger:{i:08d}"] = json.dumps({**entry, "output": f"forged-{i}"})
    await store.write(rows)
    await store.aclose()
    store = store_factory()
    model = ScriptedModel([])
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
            with anyio.fail_after(60):
                with pytest.raises(nt.NoeticError) as err:
                    await h.resume(EID)  # the crash step still fails: its state says so
            assert err.value.code == "step_failed"
    finally:
        await store.aclose()
    assert model.calls == []  # the forged (but well-formed) entry replayed, nothing was paid
