"""`durability=` (RS-22) and incremental checkpoint writes: a step writes its ledger entry, the
items it appended and the snapshot when it changed — never the history again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import noetic as nt
import pytest
from noetic.durable import MemoryCheckpointStore
from noetic.durable.history import thread_prefix
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


class Spy(MemoryCheckpointStore):
    """A memory store that keeps every batch written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[dict[str, str], list[str]]] = []

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        self.batches.append((dict(sets), list(deletes)))
        await super().write(sets, deletes)


def steps(n: int) -> nt.Step:
    return nt.sequence("g", [nt.run_code(f"s{i}", lambda x: x) for i in range(n)])


async def test_a_step_writes_only_its_entry_whatever_the_history(tmp_path: Any) -> None:
    store = Spy()
    model = ScriptedModel(default=lambda request: text_reply("ok"))
    graph = nt.sequence(
        "g", [nt.call_model("m"), nt.run_code("a", lambda x: x), nt.run_code("b", lambda x: x)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=store) as h:
        for i in range(40):  # 80 items of history, 200 KB of text
            await h.run(f"{i}" + "h" * 5000, thread_id="th")
        store.batches.clear()
        await h.run("now", thread_id="th", execution_id="last")
    first, *rest, leaving = store.batches
    assert "execution:last:start" in first[0]  # the start writes what the log added since the
    assert sum(len(v) for v in first[0].values()) < 8000  # last start (the previous turn's 5 kB, HS-1)
    assert all(key.startswith(thread_prefix("th")) for key in leaving[0])  # and the thread record, on exit
    for sets, _ in rest:
        assert not any(":start" in key for key in sets)
        assert sum(len(v) for v in sets.values()) < 3000  # an entry and its items, not the log
    entries = [k for sets, _ in rest for k in sets if ":ledger:" in k]
    assert len(entries) == 4  # m, a, b and g


async def test_an_unchanged_snapshot_is_not_written_again() -> None:
    store = Spy()
    async with nt.AgentHarness("t", agent_graph=steps(5), storage=store) as h:
        await h.run("x", execution_id="e")
    snapshots = [sets["execution:e:snapshot"] for sets, _ in store.batches if "execution:e:snapshot" in sets]
    # nothing in it changed after the first write until the turn ended and recorded how (IN-1)
    assert len(snapshots) == 2
    assert '"outcome"' not in snapshots[0] and '"outcome":"completed"' in snapshots[1]


async def test_turn_durability_writes_at_turn_end_only() -> None:
    store = Spy()
    async with nt.AgentHarness("t", agent_graph=steps(5), storage=store, durability="turn") as h:
        resp = await h.run("x", execution_id="e")
        assert len(store.batches) == 2  # the start of the execution, then its end
        again = await h.resume("e")
    assert again.output == resp.output == "x"
    assert not [k for sets, _ in store.batches[2:] for k in sets if ":ledger:" in k]  # all replayed


async def test_turn_durability_a_failed_turn_resumes_from_its_completed_steps(flaky: Any) -> None:
    crash = {"fail": True}
    runs: list[str] = []
    graph = nt.sequence(
        "g",
        [nt.run_code("a", lambda x: runs.append("a") or x), nt.run_code("crash", flaky(crash))],
    )
    store = Spy()
    async with nt.AgentHarness("t", agent_graph=graph, storage=store, durability="turn") as h:
        with pytest.raises(nt.NoeticError):
            await h.run("x", execution_id="e")
        crash["fail"] = False
        assert (await h.resume("e")).output == "done"
    assert runs == ["a"]


async def test_turn_durability_ctx_checkpoint_writes_at_once() -> None:
    store = Spy()
    seen: list[int] = []

    async def body(x: Any, ctx: nt.Context) -> Any:
        before = len(store.batches)
        await ctx.checkpoint()
        seen.append(len(store.batches) - before)
        return x

    graph = nt.sequence("g", [nt.run_code("a", lambda x: x), nt.run_code("b", body)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=store, durability="turn") as h:
        await h.run("x", execution_id="e")
    assert seen == [1]  # `a`'s entry went out with the on-demand checkpoint


@pytest.mark.parametrize("value", ["sync", "exit", None, 1, "STEP"])
def test_an_unknown_durability_fails_at_construction(value: Any) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.AgentHarness("t", agent_graph=steps(1), storage="memory://", durability=value)
    assert err.value.code == "DURABILITY_INVALID"
    assert "'step'" in err.value.message


async def test_a_failed_write_is_retried_with_the_next_one(flaky: Any) -> None:
    class FailsOnce(Spy):
        failed = False

        async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
            if not self.failed and any(":ledger:" in k for k in sets):
                self.failed = True
                raise OSError("disk briefly full")
            await super().write(sets, deletes)

    crash = {"fail": True}
    runs: list[str] = []
    graph = nt.sequence(
        "g",
        [
            nt.run_code("a", lambda x: runs.append("a") or x),
            nt.run_code("b", lambda x: runs.append("b") or x),
            nt.run_code("crash", flaky(crash)),
        ],
    )
    store = FailsOnce()
    async with nt.AgentHarness("t", agent_graph=graph, storage=store) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("x", execution_id="e")
        assert store.failed
        crash["fail"] = False
        await h.resume("e")
    assert runs == ["a", "b"]  # `a`'s entry went out with `b`'s write


async def test_rows_a_failed_write_left_are_written_when_the_turn_ends() -> None:
    class FailsOnce(Spy):
        failed = False

        async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
            if not self.failed and any(":ledger:" in k for k in sets):
                self.failed = True
                raise OSError("disk briefly full")
            await super().write(sets, deletes)

    runs: list[str] = []
    graph = nt.run_code("only", lambda x: runs.append(x) or x)  # its write is the turn's last
    store = FailsOnce()
    async with nt.AgentHarness("t", agent_graph=graph, storage=store) as h:
        await h.run("x", execution_id="e")
        assert store.failed
        assert await store.list_prefix("execution:e:ledger:")  # retried when the turn ended
        assert (await h.resume("e")).output == "x"
    assert runs == ["x"]  # the resume replayed it
