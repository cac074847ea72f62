"""Tampered checkpoint rows whose checksums are valid (RS-21): every malformed record is
`CHECKPOINT_CORRUPT` naming the execution and the row, raised by `resume` itself — never a raw
`TypeError`, `RecursionError` or an `ExceptionGroup` out of `async with AgentHarness` — and the
harness goes on serving other executions afterwards. Runs on both embedded stores."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio

EID = "victim"
DEEP = "[" * 100_000 + "]" * 100_000


def set_field(name: str, value: Any = None, *, raw: str | None = None) -> Callable[[str], str]:
    """An edit replacing the top-level field `name` of a stored record (`raw`: verbatim JSON)."""

    def change(text: str) -> str:
        doc = json.loads(text)
        doc[name] = "@@raw@@" if raw is not None else value
        out = json.dumps(doc, separators=(",", ":"))
        return out.replace('"@@raw@@"', raw) if raw is not None else out

    return change


def graph() -> nt.Step:
    def crash(_: Any, ctx: nt.Context) -> str:
        if ctx.state.get("crash", True):
            raise RuntimeError("simulated crash")
        return "done"

    return nt.sequence("g", [nt.call_model("ask"), nt.run_code("crash", crash)])


async def crashed_run(storage: Any) -> str:
    """Run the graph until it fails after its model step; returns the first ledger key."""
    async with nt.AgentHarness(
        "t", agent_graph=graph(), model=ScriptedModel([text_reply("A")]), storage=storage.spec()
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("hi", execution_id=EID, state={"crash": True})
    keys = await storage.keys(f"execution:{EID}:ledger:")
    assert len(keys) == 1
    return str(keys[0])


async def resume_fails_cleanly(storage: Any, key: str) -> nt.NoeticError:
    """Resume the tampered execution: a clean `CHECKPOINT_CORRUPT`, and the harness still works."""
    async with nt.AgentHarness(
        "t", agent_graph=graph(), model=ScriptedModel([text_reply("B")]), storage=storage.spec()
    ) as h:
        with anyio.fail_after(30), pytest.raises(nt.NoeticError) as err:  # hang guard
            await h.resume(EID)
        healthy = await h.run("again", execution_id="healthy", state={"crash": False})
    assert healthy.output == "done"  # the harness survived the damaged checkpoint
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert EID in err.value.message
    assert key in err.value.message
    assert err.value.details["execution_id"] == EID
    assert "clear_checkpoint" in err.value.message
    return err.value


SNAPSHOT = f"execution:{EID}:snapshot"
START = f"execution:{EID}:start"


@pytest.mark.parametrize(
    ("record", "edit"),
    [
        pytest.param(SNAPSHOT, set_field("layers", [1, 2]), id="snapshot-layers-list"),
        pytest.param(SNAPSHOT, set_field("layers", {"layers": 5}), id="snapshot-layers-int"),
        pytest.param(
            SNAPSHOT, set_field("layers", {"layers": {"x": {"disabled": "no"}}}), id="layer-disabled"
        ),
        pytest.param(SNAPSHOT, set_field("state", raw=DEEP), id="snapshot-100k-deep"),
        pytest.param(SNAPSHOT, set_field("has_state", "yes"), id="snapshot-has-state-string"),
        pytest.param(SNAPSHOT, set_field("execution_id", "someone-else"), id="snapshot-other-execution"),
        pytest.param(SNAPSHOT, lambda _: "[1,2]", id="snapshot-not-an-object"),
        pytest.param(START, set_field("items", {"items": 5}), id="start-items-int"),
        pytest.param(START, set_field("items", {"items": [{"type": "nonsense"}]}), id="start-item-bad"),
        pytest.param(START, set_field("first_item", -1), id="start-first-item-negative"),
        pytest.param(START, set_field("first_item", 99), id="start-first-item-past-the-log"),
        pytest.param(START, set_field("input", raw=DEEP), id="start-100k-deep"),
        pytest.param(START, lambda _: '"just a string"', id="start-not-an-object"),
        pytest.param(SNAPSHOT, set_field("state", raw='{"x":Infinity}'), id="snapshot-state-infinity"),
        pytest.param(SNAPSHOT, set_field("state", raw='{"x":NaN}'), id="snapshot-state-nan"),
        pytest.param(SNAPSHOT, set_field("attempt", raw="1e999"), id="snapshot-attempt-overflows"),
        pytest.param(START, set_field("input", raw="[-Infinity]"), id="start-input-infinity"),
    ],
)
async def test_a_tampered_snapshot_or_start_record_is_corrupt(
    storage: Any, record: str, edit: Callable[[str], str]
) -> None:
    await crashed_run(storage)
    await storage.edit(record, edit)
    await resume_fails_cleanly(storage, record)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(set_field("items", {"items": 5}), id="items-int"),
        pytest.param(set_field("items", [1, 2]), id="items-list"),
        pytest.param(set_field("items", {"items": [{"type": "message", "role": 7}]}), id="item-bad"),
        pytest.param(set_field("items", {"items": [], "custom": [-3]}), id="custom-negative"),
        pytest.param(set_field("output", raw=DEEP), id="output-100k-deep"),
        pytest.param(set_field("output", raw="[" * 300 + "]" * 300), id="output-deeper-than-the-bound"),
        pytest.param(set_field("cost", "NaN"), id="cost-nan"),
        pytest.param(set_field("cost", "-1000"), id="cost-negative"),
        pytest.param(set_field("cost", 5), id="cost-number"),
        pytest.param(set_field("usage", [-5, 0, None]), id="usage-negative"),
        pytest.param(set_field("usage", "lots"), id="usage-string"),
        pytest.param(set_field("usage", [2**63, 0, 0]), id="usage-past-the-bound"),
        pytest.param(set_field("usage", [0, 0, 10**4000]), id="usage-thousands-of-digits"),
        pytest.param(set_field("meta", {"usage": {"input_tokens": 2**63}}), id="meta-tokens-past-the-bound"),
        pytest.param(set_field("meta", {"usage": "x"}), id="meta-bad"),
        pytest.param(set_field("output", raw='{"v":NaN}'), id="output-nan"),
        pytest.param(set_field("output", raw="1e999"), id="output-overflows-to-infinity"),
        pytest.param(set_field("meta", raw='{"cost":NaN}'), id="meta-cost-nan"),
        pytest.param(set_field("meta", {"cost": -0.5}), id="meta-cost-negative"),
        pytest.param(set_field("meta", {"usage": {"input_tokens": -5}}), id="meta-tokens-negative"),
        pytest.param(
            set_field("meta", {"usage": {"input_tokens": 1, "cached_tokens": -1}}), id="meta-cached-negative"
        ),
        pytest.param(set_field("path", 12), id="path-int"),
        pytest.param(set_field("surprise", 1), id="extra-field"),
        pytest.param(lambda _: "5", id="not-an-object"),
        pytest.param(lambda _: '{"parts": 3, "length": 10}', id="parts-missing"),
        pytest.param(lambda _: '{"parts": 1000000000, "length": 5}', id="parts-forged-count"),
    ],
)
async def test_a_tampered_ledger_entry_is_corrupt(storage: Any, edit: Callable[[str], str]) -> None:
    key = await crashed_run(storage)
    await storage.edit(key, edit)
    await resume_fails_cleanly(storage, key)


async def test_a_missing_start_record_is_corrupt(storage: Any) -> None:
    await crashed_run(storage)
    store = storage.open()
    try:
        await store.delete(START)
    finally:
        await store.aclose()
    await resume_fails_cleanly(storage, START)


async def test_an_entry_of_another_version_is_a_schema_mismatch(storage: Any) -> None:
    key = await crashed_run(storage)
    await storage.edit(key, set_field("v", 1))
    async with nt.AgentHarness("t", agent_graph=graph(), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.resume(EID)
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
    assert key in err.value.message


@pytest.mark.parametrize(("levels", "reruns"), [(199, False), (200, True), (300, True)])
async def test_outputs_deeper_than_the_bound_are_not_recorded_so_what_is_stored_reads_back(
    storage: Any, levels: int, reruns: bool
) -> None:
    deep: Any = "leaf"
    for _ in range(levels):
        deep = [deep]
    runs: list[str] = []

    def nest(_: Any) -> Any:
        runs.append("nest")
        return deep

    crash = {"fail": True}

    def gate(_: Any) -> str:
        if crash["fail"]:
            raise RuntimeError("simulated crash")
        return "ok"

    g = nt.sequence("g", [nt.run_code("nest", nest), nt.run_code("gate", gate)])
    async with nt.AgentHarness("t", agent_graph=g, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="deep")
        crash["fail"] = False
        assert (await h.resume("deep")).output == "ok"  # no CHECKPOINT_CORRUPT of its own rows
    assert runs == ["nest", "nest"] if reruns else ["nest"]  # an entry holds its output one level down


async def test_a_checkpoint_of_the_previous_layout_is_a_schema_mismatch(storage: Any) -> None:
    await crashed_run(storage)
    store = storage.open()
    try:  # the first layout: one snapshot with the whole log in it, no start record
        await store.write(
            {SNAPSHOT: json.dumps({"schema_version": 1, "execution_id": EID, "items": {"items": []}})},
            [START],
        )
    finally:
        await store.aclose()
    async with nt.AgentHarness("t", agent_graph=graph(), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.resume(EID)
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
    assert "clear_checkpoint" in err.value.hint
