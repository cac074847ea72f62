"""Hostile checkpoint rows (issue 18 item 16 and our own attempts to break it again): a forged
record — with a valid checksum, written through the store — ends a resume with a clean
`CHECKPOINT_CORRUPT` (or `CHECKPOINT_SCHEMA_MISMATCH`) in bounded time, never a raw Python error,
an `ExceptionGroup` out of `async with AgentHarness`, or a resume that runs on forged data.

Each case runs on the memory and the SQLite store, on both anyio backends, in a capped child
process (the `child` fixture): the forgery and the resume happen in the same child, so the
memory store is one instance across both."""

from __future__ import annotations

from typing import Any

import pytest

EID = "target"
LEDGER = f"execution:{EID}:ledger:00000000"
START = f"execution:{EID}:start"
SNAPSHOT = f"execution:{EID}:snapshot"

#: What every case's snippet starts with (after its `STORE = ...` line): the store under test,
#: a graph that crashes after one paid model call, and the forgery and resume steps.
ROWS = """
import json

import anyio
import noetic as nt
from noetic.durable import MemoryCheckpointStore, SqliteCheckpointStore
from noetic.testing import ScriptedModel, text_reply

EID = "target"
LEDGER = f"execution:{EID}:ledger:00000000"
memory = MemoryCheckpointStore()


def open_store():
    # the memory store is one shared instance; SQLite reopens its file in the case's directory
    return memory if STORE == "memory" else SqliteCheckpointStore("rows.db")


def graph():
    def crash(_, ctx):
        if ctx.state["crash"]:
            raise RuntimeError("simulated crash")
        return "done"

    return nt.sequence("g", [nt.call_model("ask"), nt.run_code("crash", crash)])


def field(name, raw):
    # a forgery replacing the top-level field `name` with the JSON text `raw`
    def change(text):
        doc = json.loads(text)
        doc[name] = "@@raw@@"
        return json.dumps(doc, separators=(",", ":")).replace('"@@raw@@"', raw)

    return change


async def forge(key, forged):
    # run until the crash, then replace the record at `key` (its text, or a function of it)
    store = open_store()
    model = ScriptedModel([text_reply("A", cost=0.01)])
    async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
        try:
            await h.run("hi", execution_id=EID, state={"crash": True})
        except nt.NoeticError:
            pass
        else:
            raise AssertionError("the first run did not crash")
        text = await store.get(key)
        assert text is not None, key
        await store.set(key, forged(text) if callable(forged) else forged)
    await store.aclose()


async def resume():
    # resume under a wall clock, then check the harness is still usable
    store = open_store()
    model = ScriptedModel([text_reply("B")])
    error = None
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
            with anyio.fail_after(20):
                try:
                    await h.resume(EID)
                except nt.NoeticError as exc:
                    error = {"code": exc.code, "message": exc.message}
            healthy = await h.run("x", execution_id="after", state={"crash": False})
    finally:
        await store.aclose()
    return {"error": error, "healthy": healthy.output, "calls": len(model.calls)}
"""


def snippet(store: str, body: str) -> str:
    """A case's snippet: `STORE = store`, then `ROWS`, then `body` (defines `main`)."""
    return f"STORE = {store!r}\n" + ROWS + body


def run_case(child: Any, store: str, body: str, **limits: float) -> dict[str, Any]:
    """Run a case's snippet in a capped child; returns the JSON it returned."""
    result: dict[str, Any] = child.run(snippet(store, body), **limits).returned()
    return result


def assert_resume_failed_cleanly(result: dict[str, Any], code: str) -> dict[str, Any]:
    """The resume raised `code`; the harness still ran a healthy execution afterwards, and
    only that one may have called the model."""
    assert result["error"] is not None, result
    assert result["error"]["code"] == code, result
    assert result["healthy"] == "done"
    assert result["calls"] in (0, 1)
    error: dict[str, Any] = result["error"]
    return error


stores = pytest.mark.parametrize("store", ["memory", "sqlite"])

FORGED_RECORD = """
async def main():
    spec = SPEC
    await forge(spec["key"], spec["text"] if "text" in spec else field(*spec["field"]))
    return await resume()
"""


def replace_field(name: str, raw: str) -> dict[str, Any]:
    """A forgery replacing the top-level field `name` with the JSON text `raw`."""
    return {"field": [name, raw]}


def replace_record(text: str) -> dict[str, Any]:
    """A forgery replacing the whole record with `text`."""
    return {"text": text}


@stores
@pytest.mark.parametrize(
    ("key", "forged"),
    [
        pytest.param(LEDGER, replace_field("cost", '"1E+999999999"'), id="cost-overflows-to-infinity"),
        pytest.param(LEDGER, replace_field("cost", '"Infinity"'), id="cost-infinity"),
        pytest.param(
            LEDGER, replace_field("usage", "[" + "9" * 5000 + ",0,null]"), id="usage-5000-digit-int"
        ),
        pytest.param(LEDGER, replace_field("usage", "[1e400,0,null]"), id="usage-float-overflow"),
        pytest.param(
            LEDGER, replace_field("items", '{"items":[],"custom":[99999999]}'), id="custom-index-out-of-range"
        ),
        pytest.param(LEDGER, replace_record('{"parts":2,"length":10}'), id="head-without-parts"),
        pytest.param(LEDGER, replace_record("{" * 50_000), id="unterminated-50k-deep"),
        pytest.param(LEDGER, replace_record('"' + "\\ud800" * 10 + '"'), id="lone-surrogates"),
        pytest.param(START, replace_field("first_item", "1e400"), id="first-item-infinite"),
        pytest.param(
            START, replace_field("thread_id", "[" * 150_000 + "]" * 150_000), id="thread-id-150k-deep"
        ),
        pytest.param(
            SNAPSHOT, replace_field("layers", '{"layers":{"x":{"disabled":1}}}'), id="layer-disabled-int"
        ),
        pytest.param(SNAPSHOT, replace_field("completed", '"true"'), id="completed-string"),
    ],
)
def test_a_forged_record_is_corrupt(child: Any, store: str, key: str, forged: dict[str, Any]) -> None:
    spec = {"key": key, **forged}
    error = assert_resume_failed_cleanly(
        run_case(child, store, f"SPEC = {spec!r}\n" + FORGED_RECORD), "CHECKPOINT_CORRUPT"
    )
    assert EID in error["message"]


DEEP_PART = """
async def main():
    deep = "[" * 100_000 + "]" * 100_000
    body = json.dumps(deep)  # the part's text: one JSON string holding the whole record
    await forge(LEDGER, json.dumps({"parts": 1, "length": len(deep)}))
    store = open_store()
    await store.set(f"{LEDGER}:part:000000", body)
    await store.aclose()
    return await resume()
"""


@stores
def test_a_forged_part_that_decodes_to_deep_json_is_corrupt(child: Any, store: str) -> None:
    error = assert_resume_failed_cleanly(run_case(child, store, DEEP_PART), "CHECKPOINT_CORRUPT")
    assert LEDGER in error["message"]


FUTURE_VERSION = """
async def main():
    await forge(LEDGER, field("v", "3"))
    store = open_store()
    error = None
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), storage=store) as h:
            try:
                await h.resume(EID)
            except nt.NoeticError as exc:
                error = exc  # raised after the harness closed: its exit must not wrap the error
    finally:
        await store.aclose()
    if error is not None:
        raise error
"""


@stores
def test_a_forged_entry_of_a_future_version_is_a_schema_mismatch(child: Any, store: str) -> None:
    outcome = child.run(snippet(store, FUTURE_VERSION))
    outcome.raised("CHECKPOINT_SCHEMA_MISMATCH")
    assert outcome.data["raised"]["type"] == "NoeticConfigError"


MANY_ROWS = """
async def main():
    await forge(LEDGER, lambda text: text)
    store = open_store()
    entry = json.loads(await store.get(LEDGER) or "{}")
    rows = {}
    for i in range(1, 20_000):  # twenty thousand entries at one path: the last wins, none replays twice
        rows[f"execution:{EID}:ledger:{i:08d}"] = json.dumps({**entry, "output": f"forged-{i}"})
    await store.write(rows)
    await store.aclose()
    store = open_store()
    model = ScriptedModel([])
    code = None
    try:
        async with nt.AgentHarness("t", agent_graph=graph(), model=model, storage=store) as h:
            with anyio.fail_after(60):
                try:
                    await h.resume(EID)  # the crash step still fails: its state says so
                except nt.NoeticError as exc:
                    code = exc.code
    finally:
        await store.aclose()
    return {"code": code, "calls": len(model.calls)}
"""


@stores
def test_many_forged_rows_load_in_bounded_time(child: Any, store: str) -> None:
    result = run_case(child, store, MANY_ROWS, wall_clock=90)
    assert result["code"] == "step_failed"
    assert result["calls"] == 0  # the forged (but well-formed) entry replayed, nothing was paid
