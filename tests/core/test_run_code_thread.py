"""`run_code(..., in_thread=True)` and `tool(..., in_thread=True)`: a blocking plain function
runs in a worker thread.

Without it a plain body runs on the event loop's thread and every other turn waits for it;
with it the other turns go on, a cancellation from outside ends the step at once (the body
runs on to its end in its thread, its result discarded), and the body still gets its input,
its context and its retries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio


async def test_a_blocking_body_in_a_thread_lets_another_threads_turn_run() -> None:
    other_turn_ran = threading.Event()

    def blocking(x: str) -> Any:
        if x == "wait":  # blocks until thread B's turn has run (or gives up after 10 s)
            return other_turn_ran.wait(timeout=10)
        other_turn_ran.set()
        return "set"

    results: dict[str, Any] = {}
    graph = nt.run_code("work", blocking, in_thread=True)
    async with nt.AgentHarness("b", agent_graph=graph) as h:

        async def go(x: str, thread: str) -> None:
            results[thread] = (await h.run(x, thread_id=thread)).output

        async with anyio.create_task_group() as tg:
            tg.start_soon(go, "wait", "A")
            await anyio.sleep(0.05)
            tg.start_soon(go, "go", "B")
    assert results == {"A": True, "B": "set"}


async def test_a_deadline_ends_a_thread_step_at_once_and_the_body_runs_to_its_end() -> None:
    release, finished = threading.Event(), threading.Event()

    def blocking(x: int) -> int:
        release.wait(timeout=10)
        finished.set()
        return x

    async with nt.AgentHarness("d", agent_graph=nt.run_code("slow", blocking, in_thread=True)) as h:
        with anyio.move_on_after(0.2) as scope:
            await h.run(1)
        assert scope.cancelled_caught
        assert not finished.is_set()  # the turn ended while the body was still running
        release.set()
        await anyio.to_thread.run_sync(finished.wait, 10)
    assert finished.is_set()


async def test_a_thread_body_gets_its_context_and_its_retries() -> None:
    calls: list[str] = []

    def flaky(x: int, ctx: nt.Context) -> tuple[int, str, bool]:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            raise ValueError("first try fails")
        return x + 1, ctx.thread_id, threading.current_thread() is threading.main_thread()

    async with nt.AgentHarness("r", agent_graph=nt.run_code("flaky", flaky, retry=1, in_thread=True)) as h:
        response = await h.run(1, thread_id="t1")
    assert response.output == (2, "t1", False)
    assert len(calls) == 2


def _generator(x: int) -> Iterator[int]:
    yield x


async def _coroutine(x: int) -> int:
    return x


class _AsyncCallable:
    async def __call__(self, x: int) -> int:
        return x


@pytest.mark.parametrize("body", [_generator, _coroutine, _AsyncCallable()])
def test_in_thread_needs_a_plain_function(body: Any) -> None:
    with pytest.raises(nt.NoeticConfigError) as caught:
        nt.run_code("bad", body, in_thread=True)
    assert caught.value.code == "INVALID_STEP" and "plain function" in str(caught.value)
    with pytest.raises(nt.NoeticConfigError) as caught:
        nt.tool("bad", description="d", input={"type": "object"}, execute=body, in_thread=True)
    assert caught.value.code == "INVALID_TOOL_SCHEMA" and "plain function" in str(caught.value)


async def test_a_blocking_tool_in_a_thread_lets_another_threads_turn_run() -> None:
    other_turn_ran = threading.Event()

    def lookup(args: dict[str, str]) -> bool:
        if args["mode"] == "wait":  # blocks until thread B's tool has run (or 10 s)
            return other_turn_ran.wait(timeout=10)
        other_turn_ran.set()
        return True

    tool = nt.tool(
        "lookup",
        description="look something up",
        input={"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"]},
        execute=lookup,
        in_thread=True,
    )
    # A asks first (its tool blocks), then B asks; who answers first is up to the scheduler
    model = ScriptedModel(
        [
            tool_call_reply("lookup", {"mode": "wait"}),
            tool_call_reply("lookup", {"mode": "set"}),
            text_reply("done"),
            text_reply("done"),
        ]
    )
    responses: dict[str, nt.HarnessResponse] = {}
    async with nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[tool]), model=model) as h:

        async def go(thread: str) -> None:
            responses[thread] = await h.run("go", thread_id=thread)

        async with anyio.create_task_group() as tg:
            tg.start_soon(go, "A")
            await anyio.sleep(0.05)
            tg.start_soon(go, "B")
    assert responses["A"].text == responses["B"].text == "done"
    outputs = [item.output for item in responses["A"].items if isinstance(item, FunctionCallOutputItem)]
    assert outputs == ["true"]  # A's wait saw B's tool run


def test_in_thread_must_be_a_bool() -> None:
    with pytest.raises(nt.NoeticConfigError) as caught:
        nt.run_code("bad", lambda x: x, in_thread="yes")  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_STEP"
