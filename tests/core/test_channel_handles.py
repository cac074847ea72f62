"""Channel lifetime per execution (CH-13), per-call timeouts, external handles and streams
(CH-10, CH-11) and topic subscriptions — across tasks, and from outside the harness over HTTP."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx
import noetic as nt
import pytest

pytestmark = pytest.mark.anyio

approvals = nt.channel("approvals", schema=bool)
events = nt.channel("events", schema=int, mode="topic")
results = nt.channel("results", schema=str)


# --- CH-13: channels live as long as their execution -----------------------------------------


async def test_ch_13_a_value_sent_in_an_aborted_turn_never_reaches_the_next_turn() -> None:
    q = nt.channel("q", schema=str)

    async def body(value: str, ctx: nt.Context) -> Any:
        if value == "first":
            await ctx.send(q, "stale")
            ctx.abort("user stop")
            return "aborted"
        if value == "second":
            return ctx.try_recv(q)
        return await ctx.recv(q, timeout=0.05)

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        with pytest.raises(nt.NoeticError) as first:
            await h.run("first")
        assert first.value.code == "cancelled"
        assert (await h.run("second")).output is None
        with pytest.raises(nt.NoeticError) as third:
            await h.run("first", thread_id="other")  # another thread's aborted turn, same harness
        assert third.value.code == "cancelled"
        with anyio.fail_after(5), pytest.raises(nt.NoeticError) as fourth:
            await h.run("third")
    assert fourth.value.code == "channel_timeout"


async def test_ch_13_a_completed_turn_leaves_nothing_behind_for_the_next_one() -> None:
    v = nt.channel("v", schema=int, mode="value")

    async def body(value: int, ctx: nt.Context) -> Any:
        before = ctx.try_recv(v)
        await ctx.send(v, value)
        return before

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        assert (await h.run(1)).output is None
        assert (await h.run(2)).output is None


# --- per-call timeouts ----------------------------------------------------------------------


async def test_send_and_recv_take_a_per_call_timeout_over_the_harness_default() -> None:
    q = nt.channel("q", schema=str, capacity=1)
    async with nt.AgentHarness("h", agent_graph=nt.run_code("x", str), channel_timeout=30) as h:
        ctx = h.create_context()
        await ctx.send(q, "fills the queue")
        with anyio.fail_after(5):
            with pytest.raises(nt.NoeticError) as parked:
                await ctx.send(q, "parks", timeout=0.05)
            assert parked.value.code == "channel_timeout" and parked.value.timeout == 0.05
            assert ctx.try_recv(q) == "fills the queue" and ctx.try_recv(q) is None
            with pytest.raises(nt.NoeticError) as waited:
                await ctx.recv(q, timeout=0.05)
            assert waited.value.code == "channel_timeout"


# --- external handles (CH-10) ----------------------------------------------------------------


async def approve_then_report(_: Any, ctx: nt.Context) -> str:
    approved = await ctx.recv(approvals, timeout=5)
    await ctx.send(results, "shipped" if approved else "held")
    return "approved" if approved else "rejected"


async def test_ch_10_a_handle_sends_into_and_receives_from_a_running_execution() -> None:
    async with nt.AgentHarness("h", agent_graph=nt.run_code("a", approve_then_report)) as h:
        await h.execute("go", execution_id="e1")
        approve = h.get_channel_handle(approvals, "e1")
        out = h.get_channel_handle(results, "e1")
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                got: list[str] = []

                async def reader() -> None:
                    got.append(await out.recv(timeout=5))

                tg.start_soon(reader)
                await anyio.wait_all_tasks_blocked()
                approve.send(True)
            response = await h.get_agent_response()
        assert got == ["shipped"] and response.output == "approved"
        assert approve.closed and out.closed
        with pytest.raises(nt.NoeticError) as err:
            approve.send(False)
        assert err.value.code == "channel_closed"
        assert h.get_channel_handle(approvals, "e1").closed  # a late handle knows it too


async def test_ch_10_a_value_sent_before_the_execution_starts_waits_for_it() -> None:
    async with nt.AgentHarness("h", agent_graph=nt.run_code("a", approve_then_report)) as h:
        h.get_channel_handle(approvals, "early").send(False)
        with anyio.fail_after(5):
            assert (await h.run("go", execution_id="early")).output == "rejected"


async def test_ch_10_an_external_send_to_a_full_queue_drops_the_oldest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    q = nt.channel("q", schema=int, capacity=2)
    async with nt.AgentHarness("h", agent_graph=nt.run_code("x", str)) as h:
        ctx = h.create_context()
        handle = h.get_channel_handle(q, ctx.id)
        with caplog.at_level(logging.WARNING, logger="noetic.channels"):
            for n in (1, 2, 3):
                handle.send(n)
        assert [ctx.try_recv(q), ctx.try_recv(q), ctx.try_recv(q)] == [2, 3, None]
        assert "dropped its oldest value" in caplog.text
        with pytest.raises(nt.NoeticError) as err:
            handle.send("not an int")  # type: ignore[arg-type]
        assert err.value.code == "channel_invalid_value"


async def test_ch_10_an_external_recv_blocked_when_the_execution_ends_gets_channel_closed() -> None:
    release = nt.channel("release", schema=bool)

    async def body(_: Any, ctx: nt.Context) -> str:
        await ctx.recv(release, timeout=5)
        return "done"

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        await h.execute("go", execution_id="e3")
        out = h.get_channel_handle(results, "e3")
        errors: list[str] = []

        async def reader() -> None:
            try:
                await out.recv(timeout=5)
            except nt.NoeticError as exc:
                errors.append(exc.code)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                await anyio.wait_all_tasks_blocked()
                h.get_channel_handle(release, "e3").send(True)
        assert errors == ["channel_closed"]


# --- topic subscriptions and external streams (CH-11) ----------------------------------------


async def test_a_topic_subscription_misses_nothing_sent_while_its_reader_is_busy() -> None:
    async def publisher(_: Any, ctx: nt.Context) -> str:
        await anyio.sleep(0.02)  # let the subscriber subscribe
        for n in range(5):
            await ctx.send(events, n)
        await ctx.send(events, -1)
        return "published"

    async def subscriber(_: Any, ctx: nt.Context) -> list[int]:
        seen: list[int] = []
        async for n in ctx.subscribe(events):
            if n < 0:
                break
            await anyio.sleep(0.001)  # busy between values: a plain recv would miss the rest
            seen.append(n)
        return seen

    graph = nt.in_parallel("p", [nt.run_code("sub", subscriber), nt.run_code("pub", publisher)])
    async with nt.AgentHarness("h", agent_graph=graph) as h:
        with anyio.fail_after(5):
            response = await h.run("")
    assert response.output == [[0, 1, 2, 3, 4], "published"]


async def test_ch_11_an_external_stream_sees_each_event_and_ends_when_the_execution_completes() -> None:
    started = nt.channel("started", schema=bool, mode="value")

    async def body(_: Any, ctx: nt.Context) -> str:
        await ctx.recv(started, timeout=5)  # the outside stream is open by now
        for n in range(3):
            await ctx.send(events, n)
        return "done"

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        seen: list[int] = []

        async def watch() -> None:
            async for n in h.get_channel_stream(events, "e4"):
                seen.append(n)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                await anyio.wait_all_tasks_blocked()
                h.get_channel_handle(started, "e4").send(True)
                assert (await h.run("go", execution_id="e4")).output == "done"
        assert seen == [0, 1, 2]
        assert [n async for n in h.get_channel_stream(events, "e4")] == []  # closed: ends at once


async def test_aborting_a_subscriber_ends_its_iteration_with_cancelled() -> None:
    errors: list[Any] = []

    async def subscriber(_: Any, ctx: nt.Context) -> None:
        try:
            async for _n in ctx.subscribe(events):
                pass
        except nt.NoeticError as exc:
            errors.append((exc.code, exc.reason))
            raise

    async def stopper(_: Any, ctx: nt.Context) -> None:
        await anyio.sleep(0.02)
        assert ctx.parent is not None
        ctx.parent.abort("enough")

    graph = nt.in_parallel("p", [nt.run_code("sub", subscriber), nt.run_code("stop", stopper)])
    async with nt.AgentHarness("h", agent_graph=graph) as h:
        with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
            await h.run("")
    assert err.value.code == "cancelled" and errors == [("cancelled", "enough")]


# --- across a harness boundary: a web handler approves a running step ------------------------


async def test_a_web_handler_on_127_0_0_1_approves_a_step_through_the_harness() -> None:
    """A real HTTP server: its handler only knows the harness and the execution id."""
    async with nt.AgentHarness("h", agent_graph=nt.run_code("a", approve_then_report)) as h:

        async def handle_http(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                request = (await stream.receive(65536)).decode()
                execution_id = request.split(" ")[1].rsplit("/", 1)[-1]
                h.get_channel_handle(approvals, execution_id).send(True)
                await stream.send(
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )

        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(10):
            async with listener, anyio.create_task_group() as server:
                server.start_soon(listener.serve, handle_http)
                await h.execute("ship it?", execution_id="order-7")
                async with httpx.AsyncClient() as client:
                    reply = await client.post(f"http://127.0.0.1:{port}/approve/order-7")
                assert reply.status_code == 204
                response = await h.get_agent_response()
                server.cancel_scope.cancel()
    assert response.output == "approved"


async def test_ch_13_a_resumed_execution_starts_with_empty_channels(tmp_path: Any) -> None:
    q = nt.channel("q", schema=str, mode="value")  # try_recv does not consume a value
    attempts: list[Any] = []

    async def send(value: Any, ctx: nt.Context) -> str:
        await ctx.send(q, "from the first attempt")
        return "sent"

    def check(value: Any, ctx: nt.Context) -> Any:
        attempts.append(ctx.try_recv(q))
        if len(attempts) == 1:
            raise RuntimeError("crash after the send was recorded")
        return attempts[-1]

    graph = nt.sequence("s", [nt.run_code("send", send), nt.run_code("check", check)])
    async with nt.AgentHarness("h", agent_graph=graph, storage=f"sqlite:///{tmp_path / 'c.db'}") as h:
        with pytest.raises(nt.NoeticError):
            await h.run("", execution_id="r1")
        resumed = await h.resume("r1")  # `send` replays from the ledger; nothing is re-sent
    assert attempts == ["from the first attempt", None] and resumed.output is None


async def test_ch_10_handles_for_executions_that_never_start_stay_bounded() -> None:
    from noetic.channels import _PENDING_LIMIT

    async with nt.AgentHarness("h", agent_graph=nt.run_code("x", str)) as h:
        first = h.get_channel_handle(approvals, "never-0")
        for i in range(1, _PENDING_LIMIT + 50):
            h.get_channel_handle(approvals, f"never-{i}").send(True)
        assert first.closed  # the oldest pending store was closed to make room
        assert len(h._channels._pending) == _PENDING_LIMIT
        last = h.get_channel_handle(approvals, f"never-{_PENDING_LIMIT + 48}")
        assert not last.closed and last.try_recv() is True


async def test_ch_11_a_queue_stream_takes_values_in_turn_and_ends_with_its_execution(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = nt.channel("jobs", schema=int)

    async def body(_: Any, ctx: nt.Context) -> str:
        for n in range(3):
            await ctx.send(jobs, n)
        await anyio.sleep(0.02)  # the outside consumer drains the queue meanwhile
        return "queued"

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        taken: list[int] = []

        async def consume() -> None:
            async for n in h.get_channel_stream(jobs, "e5"):
                taken.append(n)

        with caplog.at_level(logging.WARNING, logger="noetic.channels"), anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await anyio.wait_all_tasks_blocked()
                assert (await h.run("go", execution_id="e5")).output == "queued"
    assert taken == [0, 1, 2]
    assert "no timeout" not in caplog.text
