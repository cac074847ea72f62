"""A model stream cut inside `async with AgentHarness(...)` (issue 13, point 3).

Against the loopback OpenRouter server on 127.0.0.1, the stream of a harness-created adapter
(`model="openrouter:…"`) is cut in the middle of an event. The caller must get the real
`model_stream_error` (catchable with `except Exception`), never an anyio cancellation; the
cost-reconciliation job must keep its HTTP client until it finishes; and leaving the block
waits at most `background_grace` seconds for it, then leaves the hold recorded.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.abc
import noetic as nt
import pytest

pytestmark = pytest.mark.anyio

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
MODEL = "test/loopback-model"
GEN_ID = "gen-cut-harness"
HANG_GUARD = 20.0


def cut_stream(loopback: Any, wire: Any) -> None:
    partial = wire.sse(
        [*wire.responses_head(GEN_ID), {"type": "response.output_text.delta", "delta": "Hel"}], done=False
    )
    partial += b'data: {"type": "response.output_text.delta", "delta": "lo'

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, GEN_ID)
        await stream.send(partial)  # returning closes the connection in the middle of an event

    async def models(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.respond(stream, 200, wire.models(MODEL))

    loopback.routes["/api/v1/responses"] = responses
    loopback.routes["/api/v1/models"] = models


def serve_generation(loopback: Any, wire: Any, *, answer_after: int | None) -> list[int]:
    """The generation record: 404 until `answer_after` polls have been made (None: never)."""
    polls: list[int] = []

    async def generation(_: Any, stream: anyio.abc.ByteStream) -> None:
        polls.append(len(polls))
        if answer_after is None or len(polls) <= answer_after:
            await loopback.respond(stream, 404, {"error": {"code": 404, "message": "Generation not found"}})
            return
        await loopback.respond(stream, 200, wire.generation(GEN_ID, 0.00042))

    loopback.routes["/api/v1/generation"] = generation
    return polls


@pytest.fixture
def openrouter_env(loopback: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENROUTER_BASE_URL", loopback.url)


def graph(seen: dict[str, nt.Context]) -> nt.Step:
    def grab(value: Any, ctx: nt.Context) -> Any:
        seen["ctx"] = ctx
        return value

    return nt.sequence(
        "turn", [nt.run_code("grab", grab), nt.call_model("answer", params={"max_output_tokens": 100})]
    )


def fast_polls(harness: nt.AgentHarness) -> None:
    """Make the harness-created adapter poll the generation record quickly (test speed only)."""
    from noetic_adapters_openrouter import BillingPolicy

    adapter: Any = harness.resolve_model()
    adapter.provider.billing = BillingPolicy(first_poll_delay=0.01, max_poll_delay=0.05)


async def test_cut_stream_inside_the_harness_raises_the_real_error(
    loopback: Any, wire: Any, openrouter_env: None, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 13, point 3: the caller gets `model_stream_error`, and the reconciliation job
    finishes on a live HTTP client before the harness closes the adapter."""
    cut_stream(loopback, wire)
    polls = serve_generation(loopback, wire, answer_after=2)
    seen: dict[str, nt.Context] = {}
    caught: Exception | None = None
    with anyio.fail_after(HANG_GUARD), caplog.at_level(logging.INFO):
        try:
            async with nt.AgentHarness("cut", agent_graph=graph(seen), model=f"openrouter:{MODEL}") as h:
                fast_polls(h)
                await h.run("Say hello.")
        except Exception as exc:  # what a user writes; an anyio cancellation would escape it
            caught = exc
    assert isinstance(caught, nt.NoeticError)
    assert caught.code == "model_stream_error"
    assert "client has been closed" not in caplog.text
    ctx = seen["ctx"]
    assert len(polls) == 3 and ctx.held_cost == 0
    assert ctx.cost == pytest.approx(0.00042)


async def test_error_raised_in_the_body_after_a_cut_is_the_one_the_caller_sees(
    loopback: Any, wire: Any, openrouter_env: None
) -> None:
    """Issue 13, point 3: the body's own exception leaves the block unchanged (not a
    cancellation), while the pending reconciliation still completes."""
    cut_stream(loopback, wire)
    serve_generation(loopback, wire, answer_after=1)
    seen: dict[str, nt.Context] = {}
    with anyio.fail_after(HANG_GUARD), pytest.raises(KeyError):
        async with nt.AgentHarness("cut", agent_graph=graph(seen), model=f"openrouter:{MODEL}") as h:
            fast_polls(h)
            with pytest.raises(nt.NoeticError):
                await h.run("Say hello.")
            raise KeyError("the caller's own bug")
    assert seen["ctx"].held_cost == 0


async def test_exit_waits_at_most_the_grace_then_leaves_the_hold_recorded(
    loopback: Any, wire: Any, openrouter_env: None, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 13, point 3: a generation record that never appears does not block the exit for
    the reconciliation timeout; after `background_grace` the hold stays on `held_cost` and
    the harness says so."""
    cut_stream(loopback, wire)
    serve_generation(loopback, wire, answer_after=None)
    seen: dict[str, nt.Context] = {}
    started = 0.0
    with anyio.fail_after(HANG_GUARD), caplog.at_level(logging.WARNING, logger="noetic.harness"):
        harness = nt.AgentHarness(
            "cut", agent_graph=graph(seen), model=f"openrouter:{MODEL}", background_grace=0.5
        )
        with pytest.raises(nt.NoeticError) as err:
            async with harness as h:
                fast_polls(h)
                try:
                    await h.run("Say hello.")
                finally:
                    started = time.monotonic()
    elapsed = time.monotonic() - started
    assert err.value.code == "model_stream_error"
    assert 0.4 < elapsed < 5.0
    assert seen["ctx"].held_cost > 0  # still held: an honest upper bound of unsettled spend
    assert harness.unfinished_background_jobs == 1
    assert "still running" in caplog.text and "held_cost" in caplog.text
