"""Resume from the step ledger (RS-1..RS-14, TU-4/TU-5, CI-14, CTX-1, CTX-16), on both stores.

A "crash" here is a step that raises until the test flips its switch: the turn fails with the
earlier steps recorded, and `resume` continues it. Real process crashes are in test_crash.py.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.custom_items import CustomItem
from noetic.items import MessageItem
from noetic.testing import ScriptedModel, text_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio

Flaky = Callable[..., Any]


async def ledger(storage: Any, eid: str) -> list[dict[str, Any]]:
    """The stored ledger entries of `eid`, in sequence order."""
    store = storage.open()
    try:
        keys = await store.list_prefix(f"execution:{eid}:ledger:")
        rows = await store.get_many(keys)
    finally:
        await store.aclose()
    return [json.loads(rows[k]) for k in keys]


def replayed(events: list[nt.StreamEvent], kind: str | None = None) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type.endswith(":step_replayed") and kind in (None, e.data["kind"])]


def started(events: list[nt.StreamEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type.endswith(":step_started")]


# --- RS-1, RS-2, RS-8, TU-4, TU-5 -------------------------------------------------------------


async def test_rs_1_8_tu_5_only_completed_steps_replay_and_billed_cost_is_this_attempt(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}
    model = ScriptedModel(
        [text_reply("A", cost=0.01), text_reply("B", cost=0.02), text_reply("C", cost=0.04)]
    )
    graph = nt.sequence("g", [nt.call_model("a"), nt.run_code("crash", flaky(crash)), nt.call_model("b")])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("hi", execution_id="e1")
        assert err.value.code == "step_failed"
        assert [e["path"] for e in await ledger(storage, "e1")] == ["/g#0/a#0"]  # RS-1: not `crash`
        crash["fail"] = False
        resp = await h.resume("e1")
    assert len(model.calls) == 2  # `a` ran once, in the first attempt
    assert resp.output == "B"
    assert resp.execution_id == "e1"
    assert resp.cost == pytest.approx(0.03)
    assert resp.billed_cost == pytest.approx(0.02)
    assert [m.text for m in resp.items if isinstance(m, MessageItem)] == ["hi", "A", "done", "B"]


async def test_rs_2_path_keys_count_dispatches_per_parent(storage: Any) -> None:
    gates = iter([True, False])

    def gate(text: str) -> str:
        if not next(gates):
            raise RuntimeError("simulated crash in the second iteration")
        return text

    model = ScriptedModel([text_reply("A"), text_reply("B")])
    body = [nt.call_model("llm"), nt.run_code("gate", gate)]
    graph = nt.sequence("g", [nt.loop("review", body, until=nt.until.max_steps(2))])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("x", execution_id="e2")
    assert [e["path"] for e in await ledger(storage, "e2")] == [
        "/g#0/review#0/llm#0",
        "/g#0/review#0/gate#0",
        "/g#0/review#0/llm#1",
    ]


async def test_rs_20_a_completed_composite_compacts_the_entries_beneath_it(storage: Any) -> None:
    model = ScriptedModel([text_reply("A"), text_reply("B")])
    graph = nt.sequence("g", [nt.loop("review", [nt.call_model("llm")], until=nt.until.max_steps(2))])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        first = await h.run("x", execution_id="e2")
        assert [e["path"] for e in await ledger(storage, "e2")] == ["/g#0"]  # it replays whole (RS-6)
        again = await h.resume("e2")
    assert len(model.calls) == 2
    assert again.output == first.output == "B"
    assert [i.id for i in again.items] == [i.id for i in first.items]


async def test_check_19_resuming_a_finished_run_replays_it_whole_at_no_billed_cost(storage: Any) -> None:
    model = ScriptedModel([text_reply("A", cost=0.01), text_reply("B", cost=0.02)])
    graph = nt.sequence("g", [nt.call_model("a"), nt.call_model("b")])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        first = await h.run("hi")
        second = await h.resume(first.execution_id)
    assert len(model.calls) == 2  # zero calls on resume
    assert second.output == first.output == "B"
    assert second.cost == first.cost == pytest.approx(0.03)
    assert first.billed_cost == pytest.approx(0.03)
    assert second.billed_cost == 0
    assert second.cost - second.billed_cost == pytest.approx(0.03)  # what replay saved
    assert [i.id for i in second.items] == [i.id for i in first.items]
    assert second.usage.input_tokens == first.usage.input_tokens


# --- RS-4 (check 54) ------------------------------------------------------------------------


async def test_check_54_rs_4_recorded_model_outputs_replay_without_model_calls(
    storage: Any, collect: Any
) -> None:
    crash = {"fail": True}

    def gate(text: str) -> str:
        if crash["fail"] and text == "B":
            raise RuntimeError("crash in iteration 2")
        return text

    def downstream(_: Any, ctx: nt.Context) -> list[str]:
        return [i.text for i in ctx.item_log.items if isinstance(i, MessageItem) and i.role == "assistant"]

    model = ScriptedModel([text_reply("A"), text_reply("B"), text_reply("C")])
    loop = nt.loop("l", [nt.call_model("m"), nt.run_code("gate", gate)], until=nt.until.max_steps(2))
    graph = nt.sequence("g", [loop, nt.run_code("down", downstream)])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="e54")
        crash["fail"] = False
        resp, events = await collect(h, lambda: h.resume("e54"))
    assert resp.output == ["A", "B"]  # the script would now have said "C"
    assert len(model.calls) == 2
    assert [r["path"] for r in replayed(events, "call_model")] == ["/g#0/l#0/m#0", "/g#0/l#0/m#1"]
    assert not [s for s in started(events) if s["kind"] == "call_model"]


# --- RS-3 (check 55) ------------------------------------------------------------------------


@pytest.mark.parametrize("finish_order", [(0, 2, 4), (4, 2, 0), (2, 4, 0)])
async def test_check_55_rs_3_five_paths_resume_runs_only_the_unfinished_ones(
    storage: Any, finish_order: tuple[int, ...]
) -> None:
    blocking = {"on": True}
    runs: list[list[int]] = [[], []]  # indices dispatched, per attempt
    attempt = {"n": 0}
    released = [anyio.Event() for _ in finish_order]

    def worker(i: int) -> nt.Step:
        async def body(_: Any, ctx: nt.Context) -> str:
            runs[attempt["n"]].append(i)
            if i in finish_order and blocking["on"]:
                k = finish_order.index(i)
                if k:
                    await released[k - 1].wait()
                released[k].set()
            elif blocking["on"]:
                await ctx.wait_aborted()  # abort is cooperative (CTX-17)
            return f"w{i}"

        return nt.run_code("w", body)  # one id for all five: keys come from positions alone

    graph = nt.in_parallel("par", [worker(i) for i in range(5)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:

        async def crash_when_three_are_recorded() -> None:
            with anyio.fail_after(10):  # hang guard
                while len(await ledger(storage, "e55")) < 3:  # noqa: ASYNC110 - polls what the run wrote
                    await anyio.sleep(0.005)
            h.abort(reason="crash")

        async with anyio.create_task_group() as tg:
            tg.start_soon(crash_when_three_are_recorded)
            with pytest.raises(nt.NoeticError) as err:
                await h.run("", execution_id="e55")
        assert err.value.code == "cancelled"
        assert sorted(e["path"] for e in await ledger(storage, "e55")) == [f"/par#0/w#{i}" for i in (0, 2, 4)]
        blocking["on"], attempt["n"] = False, 1
        resp = await h.resume("e55")
    assert sorted(runs[1]) == [1, 3]
    assert resp.output == [f"w{i}" for i in range(5)]


# --- RS-5, RS-6, RS-10 (check 56) -----------------------------------------------------------


async def test_check_56_rs_5_a_changed_step_and_its_subtree_rerun_while_a_sibling_replays(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}
    runs: dict[str, int] = {"a": 0, "c": 0}

    def count(name: str) -> Callable[[Any], str]:
        def body(_: Any) -> str:
            runs[name] += 1
            return name

        return body

    old = nt.sequence(
        "g",
        [
            nt.sequence("x", [nt.run_code("a", count("a"))]),
            nt.run_code("c", count("c")),
            nt.run_code("crash", flaky(crash)),
        ],
    )
    async with nt.AgentHarness("t", agent_graph=old, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e56")
    assert runs == {"a": 1, "c": 1}
    # `x` becomes a loop over the same child: same path, another kind. Its old entry and the old
    # entry of `a` beneath it (/g#0/x#0/a#0, the path the loop's `a` takes again) are discarded.
    new = nt.sequence(
        "g",
        [
            nt.loop("x", [nt.run_code("a", count("a"))], until=nt.until.max_steps(1)),
            nt.run_code("c", count("c")),
            nt.run_code("crash", flaky(crash)),
        ],
    )
    crash["fail"] = False
    async with nt.AgentHarness("t", agent_graph=new, storage=storage.spec()) as h:
        await h.resume("e56")
    assert runs == {"a": 2, "c": 1}


async def test_rs_6_a_completed_parent_replays_whole_until_the_checkpoint_is_cleared(storage: Any) -> None:
    crash = {"fail": True}

    def gate(value: str) -> str:
        if crash["fail"]:
            raise RuntimeError("simulated crash")
        return value

    def graph(inner: str) -> nt.Step:
        return nt.sequence(
            "g", [nt.sequence("x", [nt.run_code("a", lambda _: inner)]), nt.run_code("gate", gate)]
        )

    async with nt.AgentHarness("t", agent_graph=graph("v1"), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e6")
    crash["fail"] = False
    async with nt.AgentHarness("t", agent_graph=graph("v2"), storage=storage.spec()) as h:
        assert (await h.resume("e6")).output == "v1"  # the edit beneath completed `x` is not seen
        await h.clear_checkpoint("e6")
        assert (await h.run("", execution_id="e6")).output == "v2"


async def test_rs_10_the_later_entry_at_a_path_wins(storage: Any, flaky: Flaky) -> None:
    crash = {"fail": True}
    runs = {"new": 0}

    def new_body(_: Any) -> str:
        runs["new"] += 1
        return "new"

    def graph(x: nt.Step) -> nt.Step:
        return nt.sequence("g", [x, nt.run_code("crash", flaky(crash))])

    async with nt.AgentHarness(
        "t", agent_graph=graph(nt.run_code("x", lambda _: "old")), storage=storage.spec()
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e10")
    new = graph(nt.sequence("x", [nt.run_code("inner", new_body)]))
    async with nt.AgentHarness("t", agent_graph=new, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):  # diverges at /g#0/x#0, records the new entry there
            await h.resume("e10")
        crash["fail"] = False
        await h.resume("e10")  # the newer entry at /g#0/x#0 replays; the older one is gone
    assert runs == {"new": 1}
    assert [e["kind"] for e in await ledger(storage, "e10")] == ["sequence"]  # all is compacted


# --- RS-11, RS-12 (checks 57, 58) -----------------------------------------------------------


async def test_rs_11_concurrent_paths_record_under_distinct_keys() -> None:
    from noetic.durable import MemoryCheckpointStore

    written: list[str] = []

    class Spy(MemoryCheckpointStore):
        async def write(self, sets: Any, deletes: Any = ()) -> None:
            written.extend(k for k in sets if ":ledger:" in k)
            await super().write(sets, deletes)

    async def path(_: Any) -> str:
        await anyio.lowlevel.checkpoint()
        return "p"

    graph = nt.in_parallel("par", [nt.run_code(f"p{i}", path) for i in range(8)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=Spy()) as h:
        await h.run("", execution_id="e11")
    assert len(written) == len(set(written)) == 9  # eight paths and the parallel step itself


@pytest.mark.parametrize(
    "retention",
    [
        {"max_entries": 0},
        {"max_entries": -1},
        {"max_entry_bytes": math.nan},
        {"max_entries": 0.5},
        {"max_entries": True},
        {"max_entries": "10"},
        {"max_entrys": 10},
        5,
    ],
)
def test_check_57_rs_12_invalid_retention_fails_at_construction(retention: Any) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness(
            "t",
            agent_graph=nt.run_code("a", lambda _: 1),
            storage="memory://",
            step_ledger_retention=retention,
        )
    assert err.value.code == "STEP_LEDGER_RETENTION_INVALID"


def test_rs_12_infinity_disables_a_cap() -> None:
    from noetic.durable import StepLedgerRetention

    retention = StepLedgerRetention.of({"max_entries": math.inf, "max_entry_bytes": math.inf})
    assert retention.max_entries == math.inf
    assert StepLedgerRetention() == StepLedgerRetention(max_entry_bytes=math.inf, max_entries=math.inf)


async def test_check_57_rs_12_past_max_entries_the_oldest_rerun_and_the_newest_replay(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}
    runs: list[str] = []
    stats: list[Any] = []

    def step(name: str) -> nt.Step:
        def body(_: Any, ctx: nt.Context) -> str:
            runs.append(name)
            return name

        return nt.run_code(name, body)

    def crash_body(_: Any, ctx: nt.Context) -> str:
        stats.append(ctx._exec.ledger.stats if ctx._exec.ledger else None)
        return str(flaky(crash)(None))

    graph = nt.sequence(
        "g", [step("s1"), step("s2"), step("s3"), step("s4"), nt.run_code("crash", crash_body)]
    )
    async with nt.AgentHarness(
        "t", agent_graph=graph, storage=storage.spec(), step_ledger_retention={"max_entries": 2}
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e57")
        assert (stats[0].recorded, stats[0].evicted) == (4, 2)
        assert [e["step_id"] for e in await ledger(storage, "e57")] == ["s3", "s4"]
        crash["fail"] = False
        await h.resume("e57")
    assert runs == ["s1", "s2", "s3", "s4", "s1", "s2"]


@pytest.mark.parametrize("bad_output", ["x" * 5000, (1, 2), {1: "int key"}, {"a": {"b"}}, math.inf])
async def test_check_58_rs_12_an_oversized_or_unserialisable_output_reruns_its_neighbours_replay(
    storage: Any, flaky: Flaky, bad_output: Any
) -> None:
    crash = {"fail": True}
    runs: list[str] = []

    def step(name: str, value: Any) -> nt.Step:
        def body(_: Any) -> Any:
            runs.append(name)
            return value

        return nt.run_code(name, body)

    graph = nt.sequence(
        "g",
        [step("a", "small"), step("bad", bad_output), step("c", "small"), nt.run_code("crash", flaky(crash))],
    )
    async with nt.AgentHarness(
        "t", agent_graph=graph, storage=storage.spec(), step_ledger_retention={"max_entry_bytes": 4000}
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e58")
        crash["fail"] = False
        await h.resume("e58")
    assert runs == ["a", "bad", "c", "bad"]


# --- RS-13, RS-14 (checks 59, 61), CTX-1 ----------------------------------------------------


async def test_check_59_rs_13_clear_checkpoint_removes_the_snapshot_and_every_shard(storage: Any) -> None:
    graph = nt.sequence("g", [nt.run_code("a", lambda _: 1), nt.run_code("b", lambda _: 2)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        await h.run("", execution_id="e59")
        await h.run("", execution_id="other")
        assert await storage.keys("execution:e59:ledger:")
        await h.clear_checkpoint("e59")
        assert await storage.keys("execution:e59:") == []
        assert await storage.keys("execution:other:")  # another execution is untouched
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("e59")
    assert err.value.code == "UNKNOWN_EXECUTION"


async def test_check_61_rs_14_an_unknown_snapshot_version_is_refused(storage: Any) -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1), storage=storage.spec()) as h:
        await h.run("", execution_id="e61")
        await storage.edit(
            "execution:e61:snapshot", lambda text: text.replace('"schema_version":2', '"schema_version":99')
        )
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.resume("e61")
        assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
        assert "clear_checkpoint" in err.value.hint
        await h.clear_checkpoint("e61")  # and the execution is not left claimed


async def test_check_61_ctx_1_rs_14_the_restored_context_keeps_its_id_thread_resource_and_state(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}
    seen: list[tuple[str, str, str | None, Any]] = []

    def look(_: Any, ctx: nt.Context) -> str:
        ctx.state["visits"] += 1
        seen.append((ctx.id, ctx.thread_id, ctx.resource_id, dict(ctx.state)))
        return "ok"

    graph = nt.sequence(
        "g", [nt.run_code("look", look), nt.run_code("crash", flaky(crash)), nt.run_code("again", look)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", thread_id="th", resource_id="res", state={"visits": 0})
        crash["fail"] = False
        original = seen[0][0]
        resp = await h.resume(original)
    assert resp.execution_id == original
    assert resp.thread_id == "th"
    assert seen == [(original, "th", "res", {"visits": 1}), (original, "th", "res", {"visits": 2})]


async def test_resume_without_storage_and_unknown_ids() -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1)) as h:
        for call in (h.resume("x"), h.clear_checkpoint("x")):
            with pytest.raises(nt.NoeticConfigError) as err:
                await call
            assert err.value.code == "NO_CHECKPOINT_STORE"
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1), storage="memory://") as h:
        with pytest.raises(nt.NoeticError) as err2:
            await h.resume("never-ran")
        assert err2.value.code == "UNKNOWN_EXECUTION"


async def test_an_id_with_a_checkpoint_cannot_start_over_without_clearing(storage: Any) -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda x: x), storage=storage.spec()) as h:
        await h.run("one", execution_id="e")
        with pytest.raises(nt.NoeticError) as err:
            await h.run("two", execution_id="e")
        assert err.value.code == "EXECUTION_EXISTS"
        assert "resume" in err.value.message
        await h.clear_checkpoint("e")
        assert (await h.run("two", execution_id="e")).output == "two"


async def test_one_attempt_at_a_time_in_process(storage: Any, flaky: Flaky) -> None:
    crash = {"fail": True}
    entered, leave = anyio.Event(), anyio.Event()

    async def hold(_: Any) -> str:
        entered.set()
        await leave.wait()
        return "held"

    graph = nt.sequence("g", [nt.run_code("crash", flaky(crash)), nt.run_code("hold", hold)])
    async with (
        nt.AgentHarness("a", agent_graph=graph, storage=storage.spec()) as first,
        nt.AgentHarness("b", agent_graph=graph, storage=storage.spec()) as second,
    ):
        with pytest.raises(nt.NoeticError):
            await first.run("", execution_id="e")
        crash["fail"] = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(first.resume, "e")
            await entered.wait()
            for call in (second.resume("e"), second.clear_checkpoint("e")):
                with pytest.raises(nt.NoeticError) as err:
                    await call
                assert err.value.code == "EXECUTION_LOCKED"
            leave.set()
        assert (await second.resume("e")).output == "held"  # free again once the attempt ended


# --- CI-14 / RS-9 (check 47) ----------------------------------------------------------------


class ProgressEvent(BaseModel):
    done: int


class Progress(BaseModel):
    done: int
    of: int


progress = nt.custom_item("myapp:progress", event=ProgressEvent, output=Progress)


def crawl_step() -> nt.Step:
    async def crawl(urls: list[str]) -> AsyncIterator[Any]:
        for i in range(len(urls)):
            yield {"done": i + 1}
        yield nt.Return(len(urls))

    return nt.run_code(
        "crawl",
        crawl,
        custom_items={"progress": progress},
        emit_items={"item": "progress", "on_done": lambda n: {"done": n, "of": n}},
    )


@pytest.mark.parametrize("emit_on_replay", [False, True])
async def test_check_47_ci_14_final_items_come_back_quietly_or_stream_once(
    storage: Any, flaky: Flaky, collect: Any, emit_on_replay: bool
) -> None:
    crash = {"fail": True}
    graph = nt.sequence("g", [crawl_step(), nt.run_code("crash", flaky(crash))])
    async with nt.AgentHarness(
        "jobs", agent_graph=graph, storage=storage.spec(), emit_items_on_replay=emit_on_replay
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run(["a", "b", "c"], execution_id="e47")
        crash["fail"] = False
        resp, events = await collect(h, lambda: h.resume("e47"))
    finals = [i for i in resp.items if isinstance(i, CustomItem)]
    assert len(finals) == 1
    assert nt.is_custom_item(finals[0], progress)
    assert finals[0].output == Progress(done=3, of=3)
    assert not [e for e in events if nt.is_custom_item_event(e, progress)]  # events never replay
    streamed = [e.data["item"] for e in events if e.type == "jobs:item_appended"]
    if emit_on_replay:
        assert [i.id for i in streamed] == [finals[0].id]
        assert nt.is_custom_item(streamed[0], progress)
    else:
        assert streamed == []


# --- typed outputs, complete(), on-demand checkpoints, CTX-16 ------------------------------


class Answer(BaseModel):
    verdict: str


async def test_a_structured_output_replays_as_its_model(storage: Any) -> None:
    crash = {"fail": True}
    seen: list[Any] = []

    def gate(answer: Any) -> Any:
        if crash["fail"]:
            raise RuntimeError("simulated crash")
        return answer

    model = ScriptedModel([text_reply('{"verdict": "yes"}')])
    graph = nt.sequence(
        "g", [nt.call_model("ask", output=Answer), nt.run_code("gate", gate), nt.run_code("use", seen.append)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("?", execution_id="e")
        crash["fail"] = False
        await h.resume("e")
    assert len(model.calls) == 1
    assert seen == [Answer(verdict="yes")]
    assert isinstance(seen[0], Answer)


async def test_ctx_8_complete_survives_a_resume(storage: Any, flaky: Flaky) -> None:
    crash = {"fail": True}

    def finish(_: Any, ctx: nt.Context) -> str:
        ctx.complete({"answer": 42})
        return "ignored"

    graph = nt.sequence("g", [nt.run_code("finish", finish), nt.run_code("crash", flaky(crash))])
    async with nt.AgentHarness("t", agent_graph=graph, storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e")
        crash["fail"] = False
        assert (await h.resume("e")).output == {"answer": 42}


async def test_ctx_16_checkpoint_on_demand_persists_mid_step(storage: Any) -> None:
    crash = {"fail": True}

    async def long_job(_: Any, ctx: nt.Context) -> str:
        if crash["fail"]:
            ctx.state["progress"] = "half"
            await ctx.checkpoint()
            raise RuntimeError("crash after the on-demand checkpoint")
        return str(ctx.state["progress"])

    async with nt.AgentHarness("t", agent_graph=nt.run_code("job", long_job), storage=storage.spec()) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="e", state={"progress": "none"})
        crash["fail"] = False
        assert (await h.resume("e")).output == "half"


async def test_ctx_16_a_failing_save_is_logged_and_never_fails_the_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from noetic.durable import MemoryCheckpointStore

    class Broken(MemoryCheckpointStore):
        async def write(self, sets: Any, deletes: Any = ()) -> None:
            raise OSError("disk full")

    graph = nt.sequence("g", [nt.run_code("a", lambda _: 1), nt.run_code("b", lambda x: x + 1)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=Broken()) as h:
        resp = await h.run("")
    assert resp.output == 2
    assert "disk full" in caplog.text
    assert "cannot resume from here" in caplog.text


async def test_ctx_16_checkpoint_is_a_no_op_without_storage() -> None:
    async def body(_: Any, ctx: nt.Context) -> str:
        await ctx.checkpoint()
        return "ok"

    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", body)) as h:
        assert (await h.run("")).output == "ok"


async def test_a_plugin_can_register_a_storage_backend() -> None:
    from noetic.durable import MemoryCheckpointStore
    from noetic.plugins import make_plugin_manager

    made: list[str] = []

    class Plugin:
        @nt.hookimpl
        def register_checkpoint_stores(self, register: Any) -> None:
            def factory(url: str) -> MemoryCheckpointStore:
                made.append(url)
                return MemoryCheckpointStore()

            register("dbos", factory)

    pm = make_plugin_manager(plugins=[Plugin()])
    async with nt.AgentHarness(
        "t", agent_graph=nt.run_code("a", lambda _: 1), storage="dbos://pg/agents", plugins=pm
    ) as h:
        resp = await h.run("")
        assert (await h.resume(resp.execution_id)).output == 1
    assert made == ["dbos://pg/agents"]


async def test_storage_urls_are_checked() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness("t", storage=42)
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda _: 1), storage="nope://x") as h:
        with pytest.raises(nt.NoeticConfigError) as err:
            await h.run("")
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"


# --- RS-7 (check 60) ------------------------------------------------------------------------


async def test_check_60_rs_7_replayed_steps_skip_the_layer_lifecycle(storage: Any) -> None:
    from noetic.layers import CallResult, ContextLayer, LayerContext

    crash = {"fail": True}
    hooks: list[str] = []
    counts: list[int] = []

    class Counter(ContextLayer):
        id = "counter"
        slot = 100

        async def init(self, ctx: LayerContext) -> int:
            hooks.append("init")
            return 0

        async def recall(self, ctx: LayerContext, budget: int) -> None:
            hooks.append("recall")

        async def store(self, ctx: LayerContext, response: CallResult) -> int:
            hooks.append("store")
            return int(ctx.state) + 1

    def crash_body(_: Any, ctx: nt.Context) -> str:
        counts.append(ctx._exec.layers.export_state()["layers"]["counter"]["state"])
        if crash["fail"]:
            raise RuntimeError("simulated crash")
        return "done"

    model = ScriptedModel([text_reply("A"), text_reply("B"), text_reply("C")])
    graph = nt.sequence(
        "g", [nt.call_model("a"), nt.call_model("b"), nt.run_code("crash", crash_body), nt.call_model("c")]
    )
    async with nt.AgentHarness(
        "t", agent_graph=graph, model=model, layers=[Counter()], storage=storage.spec()
    ) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go", execution_id="e60")
        assert hooks == ["init", "recall", "store", "recall", "store"]
        crash["fail"] = False
        hooks.clear()
        await h.resume("e60")
    assert counts == [2, 2]  # the same count after resume as before the crash: nothing folded twice
    assert hooks == ["recall", "store"]  # only `c` ran; restored layers are not initialized again


async def test_ci_14_rs_14_final_items_in_the_history_come_back_bound_to_their_declaration(
    storage: Any, flaky: Flaky
) -> None:
    crash = {"fail": True}

    def route(x: Any) -> nt.Step:
        return crawl_step() if isinstance(x, list) else nt.run_code("c", flaky(crash))

    # Declarations are found in the graph; a route building steps on the fly declares them itself.
    graph = nt.conditional("route", route, custom_items={"progress": progress})
    async with nt.AgentHarness("jobs", agent_graph=graph, storage=storage.spec()) as h:
        await h.run(["a", "b"], thread_id="th")  # turn one: a final item lands in the thread's log
        with pytest.raises(nt.NoeticError):
            await h.run("next", thread_id="th", execution_id="turn-2")
    crash["fail"] = False
    async with nt.AgentHarness("jobs", agent_graph=graph, storage=storage.spec()) as h:
        resp = await h.resume("turn-2")
    history = [i for i in resp.items if isinstance(i, CustomItem)]
    assert len(history) == 1
    assert nt.is_custom_item(history[0], progress)
    assert history[0].output == Progress(done=2, of=2)


async def test_rs_13_ids_that_extend_each_other_keep_separate_records(storage: Any) -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda x: x), storage=storage.spec()) as h:
        await h.run("one", execution_id="a")
        await h.run("two", execution_id="a:b")
        await h.clear_checkpoint("a")
        assert (await h.resume("a:b")).output == "two"
        with pytest.raises(nt.NoeticError) as err:
            await h.resume("a")
    assert err.value.code == "UNKNOWN_EXECUTION"
