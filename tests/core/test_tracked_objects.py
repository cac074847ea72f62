"""What a waiting turn and an idle thread keep for the cyclic GC to walk (GC-2).

A burst of concurrent `run()` calls has every turn waiting at once, and a long-lived harness
keeps a session per thread; each object either holds is walked on every full collection for
as long as it lives. These tests count the objects the collector tracks (never time) and fail
when a waiting turn or an idle session grows again.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem, OutputText
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse
from noetic.usage import RoundUsage

pytestmark = pytest.mark.anyio

_USAGE = RoundUsage(input_tokens=10, output_tokens=5)

#: Objects a turn waiting to start holds itself (the caller's task and coroutine aside): the
#: `run()` coroutine and the generator of its one pass of the event loop on asyncio; on trio
#: `run()` and trio's checkpoint (two coroutines and its yield).
WAITING_TURN = {"asyncio": 2, "trio": 4}
#: Objects an idle thread keeps once packed (SE-5) beyond its encoded history: the session,
#: its stream, its log with the log's list and read-only view, and the packed record.
PACKED_SESSION = 6
#: The same for a thread kept unpacked after one tool round trip: those six less the packed
#: record, plus its four items, the response and their parts.
HOT_SESSION = 29


class ForgetfulModel:
    """Calls `add` once, then answers "3"; keeps nothing of a call."""

    model_id = "forgetful"

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        if type(request.items[-1]) is not FunctionCallOutputItem:
            call = FunctionCallItem(call_id="c1", name="add", arguments='{"a": 1, "b": 2}')
            yield ModelResponse(items=(call,), usage=_USAGE, model_id=self.model_id)
            return
        message = MessageItem(role="assistant", content=[OutputText(text="3")])
        yield ModelResponse(items=(message,), usage=_USAGE, model_id=self.model_id)


def _add(args: dict[str, int]) -> int:
    return args["a"] + args["b"]


def harness(**options: Any) -> nt.AgentHarness:
    add = nt.tool(
        "add",
        description="Add two integers",
        input={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        execute=_add,
    )
    graph = nt.call_model("answer", tools=[add])
    return nt.AgentHarness("objects", agent_graph=graph, model=ForgetfulModel(), **options)


def tracked() -> int:
    """How many objects the cyclic GC tracks after a full collection."""
    gc.collect()
    return len(gc.get_objects())


async def test_gc_2_a_turn_waiting_to_start_holds_only_its_run_and_one_pass(anyio_backend: str) -> None:
    turns = 200
    async with harness() as h:
        await h.run("1 + 2?", thread_id="warm-up")
        before = tracked()
        waiting: list[Coroutine[Any, Any, Any]] = []
        for i in range(turns):
            turn = h.run("1 + 2?", thread_id=f"t{i}")
            turn.send(None)  # up to its first wait: the pass that lets watchers subscribe first
            waiting.append(turn)
        held = tracked() - before - 1  # the list of turns
        for turn in waiting:
            turn.close()  # nothing was queued, so nothing is left behind
        del waiting, turn
        assert held / turns <= WAITING_TURN[anyio_backend]
        assert tracked() - before <= 0
        assert (await h.run("1 + 2?", thread_id="after")).text == "3"


async def test_gc_2_waiting_turns_run_once_the_event_loop_gets_to_them() -> None:
    answers: list[str] = []

    async def one(i: int) -> None:
        answers.append((await h.run("1 + 2?", thread_id=f"t{i}")).text)

    async with harness() as h, anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(one, i)
    assert answers == ["3"] * 50


async def thread_cost(threads: int, **options: Any) -> float:
    """Tracked objects kept per one-turn thread (after a warm-up of as many threads)."""
    async with harness(**options) as h:
        for i in range(threads):
            await h.run("1 + 2?", thread_id=f"warm-up-{i}")
        before = tracked()
        for i in range(threads):
            assert (await h.run("1 + 2?", thread_id=f"t{i}")).text == "3"
        return (tracked() - before) / threads


async def test_gc_2_a_packed_idle_thread_keeps_six_objects() -> None:
    assert await thread_cost(100, hot_sessions=1) <= PACKED_SESSION


async def test_gc_2_an_unpacked_idle_thread_keeps_only_its_history_and_response() -> None:
    assert await thread_cost(50, hot_sessions=None) <= HOT_SESSION


class GatedModel:
    """Answers each request with its last user text, once `gate` is set; records what it saw."""

    model_id = "gated"

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.seen: list[str] = []

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        await self.gate.wait()
        text = "".join(part.text for part in request.items[-1].content)  # type: ignore[union-attr]
        self.seen.append(text)
        message = MessageItem(role="assistant", content=[OutputText(text=text)])
        yield ModelResponse(items=(message,), usage=_USAGE, model_id=self.model_id)


async def test_gc_2_an_input_withdrawn_from_the_queue_never_runs_and_the_thread_goes_on() -> None:
    model = GatedModel()
    graph = nt.call_model("echo")
    async with nt.AgentHarness("queue", agent_graph=graph, model=model) as h:
        await h.execute("first", thread_id="t")
        for _ in range(5):  # the first turn starts and waits in the model
            await anyio.lowlevel.checkpoint()
        with pytest.raises(RuntimeError):
            async with h.stream("second", thread_id="t"):
                raise RuntimeError("the caller leaves before its turn starts")
        model.gate.set()
        assert (await h.get_agent_response(thread_id="t")).text == "first"
        assert (await h.run("third", thread_id="t")).text == "third"
    assert model.seen == ["first", "third"]


async def test_gc_2_a_run_cancelled_while_it_waits_to_start_queues_nothing() -> None:
    model = GatedModel()
    model.gate.set()
    async with nt.AgentHarness("cancel", agent_graph=nt.call_model("echo"), model=model) as h:
        with anyio.CancelScope() as scope:
            scope.cancel()  # delivered at the first wait: the pass before the input is queued
            await h.run("never", thread_id="t")
        assert scope.cancelled_caught
        assert (await h.run("later", thread_id="t")).text == "later"
    assert model.seen == ["later"]  # "never" was not queued: the model never saw it
