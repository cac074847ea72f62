"""Channels: value, queue and topic modes, parking, timeouts and abort (CH-1..CH-9, CTX-12).

Channels belong to one root execution (CH-13), so contexts that talk to each other here are
children of one root made with `create_context`."""

from __future__ import annotations

from typing import Any

import anyio
import noetic as nt
import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


def contexts(h: nt.AgentHarness, n: int) -> list[nt.Context]:
    """`n` contexts of one root execution (they share its channels)."""
    root = h.create_context()
    return [h.create_context(parent=root) for _ in range(n)]


def make_harness(timeout: float = 30.0) -> nt.AgentHarness:
    return nt.AgentHarness("ch", agent_graph=nt.run_code("x", lambda i: i), channel_timeout=timeout)


async def test_ch_3_4_queue_capacity_one_parks_second_send_until_try_recv() -> None:
    q = nt.channel("q", schema=str, capacity=1)
    async with make_harness() as h:
        producer, consumer = contexts(h, 2)
        await producer.send(q, "a")
        done = anyio.Event()

        async def second() -> None:
            await producer.send(q, "b")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(second)
            await anyio.wait_all_tasks_blocked()
            assert not done.is_set()  # parked at capacity
            assert consumer.try_recv(q) == "a"
            with anyio.fail_after(1):
                await done.wait()
        assert consumer.try_recv(q) == "b"
        assert consumer.try_recv(q) is None


async def test_ch_3_queue_is_fifo_and_hands_values_to_the_oldest_waiting_receiver() -> None:
    q = nt.channel("q", schema=int)
    async with make_harness() as h:
        ctx = h.create_context()
        got: dict[str, int] = {}

        async def receiver(name: str) -> None:
            got[name] = await ctx.recv(q, timeout=5)

        async with anyio.create_task_group() as tg:
            tg.start_soon(receiver, "first")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(receiver, "second")
            await anyio.wait_all_tasks_blocked()
            await ctx.send(q, 1)
            await ctx.send(q, 2)
        assert got == {"first": 1, "second": 2}
        for value in (3, 4, 5):
            await ctx.send(q, value)
        assert [await ctx.recv(q), ctx.try_recv(q), await ctx.recv(q)] == [3, 4, 5]


async def test_ch_5_parked_send_times_out_and_its_value_never_enters_the_queue() -> None:
    q = nt.channel("q", schema=str, capacity=1)
    async with make_harness(timeout=0.05) as h:
        ctx = h.create_context()
        await ctx.send(q, "a")
        with pytest.raises(nt.NoeticError) as err:
            await ctx.send(q, "b")
        assert err.value.code == "channel_timeout" and err.value.channel_name == "q"
        assert ctx.try_recv(q) == "a"
        assert ctx.try_recv(q) is None


async def test_ch_5_parked_send_of_an_aborted_context_raises_cancelled_not_timeout() -> None:
    q = nt.channel("q", schema=str, capacity=1)
    async with make_harness(timeout=10) as h:
        ctx, reader = contexts(h, 2)
        await ctx.send(q, "a")
        errors: list[nt.NoeticError] = []

        async def park() -> None:
            try:
                await ctx.send(q, "b")
            except nt.NoeticError as exc:
                errors.append(exc)

        with anyio.fail_after(2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(park)
                await anyio.wait_all_tasks_blocked()
                ctx.abort("stop")
        assert [e.code for e in errors] == ["cancelled"]
        assert reader.try_recv(q) == "a"
        assert reader.try_recv(q) is None


async def test_ch_6_recv_times_out_with_channel_timeout() -> None:
    q = nt.channel("q", schema=str)
    async with make_harness() as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.create_context().recv(q, timeout=0.05)
        assert err.value.code == "channel_timeout" and err.value.timeout == 0.05


async def test_ctx_12_aborting_one_receiver_leaves_the_other_waiting() -> None:
    q = nt.channel("q", schema=str)
    async with make_harness() as h:
        a, b, c = contexts(h, 3)
        results: dict[str, Any] = {}

        async def recv(name: str, ctx: nt.Context) -> None:
            try:
                results[name] = await ctx.recv(q, timeout=0)
            except nt.NoeticError as exc:
                results[name] = exc.code

        with anyio.fail_after(2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(recv, "a", a)
                tg.start_soon(recv, "b", b)
                await anyio.wait_all_tasks_blocked()
                a.abort("only a")
                await anyio.wait_all_tasks_blocked()
                assert results == {"a": "cancelled"}
                await c.send(q, "x")
        assert results == {"a": "cancelled", "b": "x"}


async def test_ch_2_value_channel_last_write_wins_and_try_recv_does_not_consume() -> None:
    v = nt.channel("v", schema=int, mode="value")
    async with make_harness() as h:
        ctx = h.create_context()
        assert ctx.try_recv(v) is None
        await ctx.send(v, 1)
        await ctx.send(v, 2)
        assert ctx.try_recv(v) == 2 and ctx.try_recv(v) == 2
        assert await ctx.recv(v) == 2


async def test_ch_2_value_send_wakes_every_waiting_receiver() -> None:
    v = nt.channel("v2", schema=int, mode="value")
    async with make_harness() as h:
        ctx = h.create_context()
        got: list[int] = []

        async def wait() -> None:
            got.append(await ctx.recv(v, timeout=5))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            await ctx.send(v, 7)
        assert got == [7, 7, 7]


async def test_ch_7_topic_drops_without_receivers_and_try_recv_is_none() -> None:
    t = nt.channel("t", schema=str, mode="topic")
    async with make_harness() as h:
        ctx = h.create_context()
        await ctx.send(t, "lost")
        assert ctx.try_recv(t) is None
        with pytest.raises(nt.NoeticError) as err:
            await ctx.recv(t, timeout=0.05)
        assert err.value.code == "channel_timeout"


async def test_ch_1_values_are_validated_against_the_channel_schema() -> None:
    class Approval(BaseModel):
        approved: bool

    c = nt.channel("approvals", schema=Approval)
    j = nt.channel(
        "json", schema={"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    )
    async with make_harness() as h:
        ctx = h.create_context()
        await ctx.send(c, {"approved": True})
        assert ctx.try_recv(c) == Approval(approved=True)
        with pytest.raises(nt.NoeticError) as err:
            await ctx.send(c, {"approved": "maybe"})
        assert err.value.code == "channel_invalid_value" and "approved" in err.value.message
        with pytest.raises(nt.NoeticError):
            await ctx.send(j, {"n": "x"})
        assert ctx.try_recv(j) is None


async def test_ch_9_parallel_siblings_share_channels() -> None:
    q = nt.channel("q", schema=str)

    async def receiver(_: Any, ctx: nt.Context) -> str:
        return await ctx.recv(q, timeout=5)

    async def sender(_: Any, ctx: nt.Context) -> str:
        await ctx.send(q, "x")
        return "sent"

    graph = nt.in_parallel("p", [nt.run_code("a", receiver), nt.run_code("b", sender)])
    async with nt.AgentHarness("ch", agent_graph=graph) as h:
        assert (await h.run("")).output == ["x", "sent"]


def test_ch_1_channel_declaration_errors() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.channel("q", schema=str, mode="fifo")  # type: ignore[arg-type]
    assert err.value.code == "INVALID_CHANNEL"
    with pytest.raises(nt.NoeticConfigError):
        nt.channel("q", schema=str, capacity=0)
