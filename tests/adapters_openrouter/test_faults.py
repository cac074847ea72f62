"""Faults on a real socket: a loopback HTTP server started inside each test.

Covered: a stream cut mid-event (clean EOF and broken chunked framing) is a failure that holds
the call's ceiling and reconciles it; a 429 is retried and then succeeds; a 503 arriving after
output is not retried; an abort through a real `AgentHarness` + `call_model` closes the
connection, leaves the root context's `held_cost` at the ceiling (TU-6) and is reconciled from
the generation endpoint before the harness exits; a canary key never shows up in logs, reprs,
exception messages or tracebacks (with locals), whatever goes wrong (check 15).
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc
import noetic as nt
import pytest
from noetic.errors import NoeticError
from noetic.items import user_message
from noetic.model import ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.testing.model_conformance import RecordingBilling, collect_round
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import BillingPolicy, OpenRouterProvider, RetryPolicy
from noetic_adapters_openrouter.billing import ModelPricing, ceiling, prompt_estimate

pytestmark = pytest.mark.anyio

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
MODEL = "test/loopback-model"
PRICING = ModelPricing(prompt=0.000003, completion=0.000015, web_search=0.004)
HANG_GUARD = 10.0


def provider_for(server: Any, *, api_key: str = TEST_KEY, **options: Any) -> OpenRouterProvider:
    return OpenRouterProvider(
        api_key=api_key,
        base_url=server.url,
        retry=RetryPolicy(max_attempts=3, base_delay=0.0),
        billing=BillingPolicy(first_poll_delay=0.01, max_poll_delay=0.02),
        **options,
    )


def serve_json(server: Any, path: str, payload: Any, status: int = 200) -> None:
    async def route(_: Any, stream: anyio.abc.ByteStream) -> None:
        await server.respond(stream, status, payload)

    server.routes[path] = route


def serve_billing(server: Any, wire: Any, gen_id: str, total: float) -> None:
    serve_json(server, "/api/v1/models", wire.models(MODEL))
    serve_json(server, "/api/v1/generation", wire.generation(gen_id, total))


def text_of(events: Sequence[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("framing", ["eof", "chunked"])
async def test_stream_cut_mid_event_fails_and_holds_the_call(loopback: Any, wire: Any, framing: str) -> None:
    """Check 20: a stream cut mid-event is a retriable stream error, never a response; held, then reconciled."""
    gen_id = "gen-cut-1"
    partial = wire.sse(
        [*wire.responses_head(gen_id), {"type": "response.output_text.delta", "delta": "Hel"}], done=False
    )
    partial += b'data: {"type": "response.output_text.delta", "delta": "lo'

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, gen_id, chunked_encoding=framing == "chunked")
        await stream.send(loopback.http_chunk(partial) if framing == "chunked" else partial)
        # returning closes the connection in the middle of an event (and of a chunk)

    loopback.routes["/api/v1/responses"] = responses
    serve_billing(loopback, wire, gen_id, 0.0007)
    billing = RecordingBilling()
    request = ModelRequest(
        MODEL, [user_message("Say hello.")], params={"max_output_tokens": 100}, billing=billing
    )
    async with provider_for(loopback) as provider:
        events, error = await collect_round(provider.model(MODEL), request)
        assert text_of(events) == "Hel"
        assert not any(isinstance(e, ModelResponse) for e in events)
        assert error is not None
        assert error.code == "model_stream_error"
        assert error.retryable is True
        assert error.generation_id == gen_id
        assert len(loopback.hits("/api/v1/responses")) == 1  # output had started: never re-sent
        (hold,) = billing.holds
        assert hold.amount == pytest.approx(ceiling(PRICING, prompt_estimate(request), 100))
        assert not hold.closed
        await billing.drain()
        assert hold.settled == (0.0007, 0.0007)


async def test_429_then_success_is_retried(loopback: Any, wire: Any) -> None:
    """A 429 before any output is re-sent (Retry-After: 0 honoured) and the retry succeeds."""
    gen_id = "gen-retry-1"
    attempts = 0

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            body = {"error": {"code": 429, "message": "Rate limit exceeded: slow down"}}
            await loopback.respond(stream, 429, body, {"Retry-After": "0"})
            return
        await loopback.start_sse(stream, gen_id)
        usage = wire.responses_usage(RoundUsage(input_tokens=3, output_tokens=2), 0.00002)
        await stream.send(wire.sse(wire.responses_text("Hello again!", usage, gen_id)))

    loopback.routes["/api/v1/responses"] = responses
    async with provider_for(loopback) as provider:
        events, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("Hi")]))
    assert error is None
    assert attempts == 2
    assert text_of(events) == "Hello again!"
    response = events[-1]
    assert isinstance(response, ModelResponse)
    assert response.cost == 0.00002
    assert response.generation_id == gen_id


async def test_503_after_partial_output_is_not_retried(loopback: Any, wire: Any) -> None:
    """An error that arrives after output started (HTTP 200, in-band 503) fails the call once
    and releases the connection at once (the server sees it close while the client lives on)."""
    gen_id = "gen-503-1"
    closed = anyio.Event()

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, gen_id)
        events = [
            *wire.responses_head(gen_id),
            {"type": "response.output_text.delta", "delta": "Partial "},
            {"type": "error", "code": 503, "message": "No provider is available right now"},
        ]
        await stream.send(wire.sse(events, done=False))
        await loopback.wait_closed(stream)
        closed.set()

    loopback.routes["/api/v1/responses"] = responses
    serve_billing(loopback, wire, gen_id, 0.0001)
    billing = RecordingBilling()
    async with provider_for(loopback) as provider:
        events, error = await collect_round(
            provider.model(MODEL),
            ModelRequest(MODEL, [user_message("Hi")], params={"max_output_tokens": 50}, billing=billing),
        )
        assert text_of(events) == "Partial "
        assert error is not None
        assert error.code == "model_error"
        assert error.provider_code == 503
        assert error.in_stream is True
        assert "No provider is available right now" in error.message
        assert len(loopback.hits("/api/v1/responses")) == 1
        with anyio.fail_after(HANG_GUARD):
            await closed.wait()
        await billing.drain()  # no usage came with the error: held, then reconciled
        assert [h.settled for h in billing.holds] == [(0.0001, 0.0001)]


async def test_abort_mid_stream_through_the_harness_holds_then_reconciles(loopback: Any, wire: Any) -> None:
    """CTX-10/TU-6: abort closes the connection, holds the ceiling on the root; exit waits for the settle."""
    gen_id = "gen-abort-1"
    streaming, closed, billed = anyio.Event(), anyio.Event(), anyio.Event()
    polls: list[str] = []

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, gen_id)
        head = [*wire.responses_head(gen_id), {"type": "response.output_text.delta", "delta": "Once upon"}]
        await stream.send(wire.sse(head, done=False))
        streaming.set()
        await loopback.wait_closed(stream)
        closed.set()

    async def generation(request: Any, stream: anyio.abc.ByteStream) -> None:
        polls.append(request.query)
        if not billed.is_set():
            await loopback.respond(stream, 404, {"error": {"code": 404, "message": "Generation not found"}})
            return
        await loopback.respond(stream, 200, wire.generation(gen_id, 0.00042))

    loopback.routes["/api/v1/responses"] = responses
    loopback.routes["/api/v1/generation"] = generation
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))

    seen: dict[str, nt.Context] = {}

    def grab(value: Any, ctx: nt.Context) -> Any:
        seen["ctx"] = ctx
        return value

    instructions = "Tell long stories."
    graph = nt.sequence(
        "turn",
        [
            nt.run_code("grab", grab),
            nt.call_model("answer", instructions=instructions, params={"max_output_tokens": 1000}),
        ],
    )
    async with provider_for(loopback) as provider:
        async with nt.AgentHarness("abort-test", agent_graph=graph, model=provider.model(MODEL)) as harness:

            async def abort_when_streaming() -> None:
                await streaming.wait()
                harness.abort(reason="the user pressed stop")

            with anyio.fail_after(HANG_GUARD):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(abort_when_streaming)
                    with pytest.raises(NoeticError) as err:
                        await harness.run("Tell me a story.")
                await closed.wait()  # the server saw the connection close
            assert err.value.code == "cancelled"
            ctx = seen["ctx"]
            assert ctx.parent is None
            request = ModelRequest(MODEL, tuple(ctx.item_log.items), instructions=instructions)
            assert ctx.held_cost == pytest.approx(ceiling(PRICING, prompt_estimate(request), 1000))
            assert ctx.held_cost > 0
            assert (ctx.cost, ctx.billed_cost) == (0.0, 0.0)
            billed.set()  # the generation record appears; the harness exit must wait for the settle
        assert ctx.held_cost == 0
        assert ctx.cost == pytest.approx(0.00042)
        assert ctx.billed_cost == pytest.approx(0.00042)
        assert polls
        assert all(q == f"id={gen_id}" for q in polls)


# --- the canary key ---------------------------------------------------------------------------

CANARY = "sk-or-v1-canary-7d3f9a2b4c6e8f0112345"


def _echo_route(server: Any, kind: str, wire: Any) -> Any:
    async def route(request: Any, stream: anyio.abc.ByteStream) -> None:
        echoed = request.headers.get("authorization", "")  # a hostile provider echoing the key
        if kind == "401":
            await server.respond(
                stream, 401, {"error": {"code": 401, "message": f"Invalid credentials: {echoed}"}}
            )
        elif kind == "500":
            body = {
                "error": {"code": 500, "message": "Internal error", "metadata": {"raw": {"auth": echoed}}}
            }
            await server.respond(stream, 500, body)
        elif kind == "sse_error":
            await server.start_sse(stream, "gen-canary")
            events = [
                *wire.responses_head("gen-canary"),
                {"type": "error", "code": 400, "message": f"bad key {echoed}"},
            ]
            await stream.send(wire.sse(events, done=False))
        else:  # "idle": the answer starts, then nothing (the read timeout fires)
            await server.start_sse(stream, "gen-canary")
            await server.wait_closed(stream)

    return route


@pytest.mark.parametrize("kind", ["401", "500", "sse_error", "idle", "connect"])
async def test_canary_key_never_leaks(
    loopback: Any, wire: Any, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Check 15: the key appears in no log line, repr, message, detail or traceback (with locals)."""
    caplog.set_level(logging.DEBUG)
    loopback.routes["/api/v1/responses"] = _echo_route(loopback, kind, wire)
    serve_billing(loopback, wire, "gen-canary", 0.0)
    base = loopback.url
    if kind == "connect":
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()
        base = f"http://127.0.0.1:{port}/api/v1"
    billing = RecordingBilling()
    provider = OpenRouterProvider(
        api_key=CANARY,
        base_url=base,
        timeout=0.3,
        retry=RetryPolicy(max_attempts=2, base_delay=0.0),
        billing=BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0),
    )
    async with provider:
        model = provider.model(MODEL)
        _, error = await collect_round(model, ModelRequest(MODEL, [user_message("hello")], billing=billing))
        await billing.drain()
    assert error is not None
    expected = {"idle": ("model_stream_error", "ReadTimeout"), "connect": ("model_error", "ConnectError")}
    assert (error.code, error.details.get("transport")) == expected.get(kind, ("model_error", None))
    if kind != "connect":  # the key really was sent, so a leak would be visible
        assert loopback.hits("/api/v1/responses")[0].headers["authorization"] == f"Bearer {CANARY}"
    texts = [
        str(error),
        repr(error),
        json.dumps(error.details, default=repr),
        "".join(traceback.format_exception(error)),
        "".join(traceback.TracebackException.from_exception(error, capture_locals=True).format()),
        repr(provider),
        repr(model),
        repr(provider.auth()),
        caplog.text,
        *(repr(r.args) for r in caplog.records),
    ]
    leaks = [t for t in texts if CANARY in t or CANARY[10:] in t]
    assert not leaks, f"the key leaked ({kind}): " + "\n---\n".join(
        line for t in leaks for line in t.splitlines() if CANARY[10:] in line
    )


async def test_the_canary_test_can_fail(loopback: Any, wire: Any) -> None:
    """Sanity: the echo routes really put the key into the provider's error text."""
    loopback.routes["/api/v1/responses"] = _echo_route(loopback, "401", wire)
    async with (
        provider_for(loopback, api_key=CANARY) as provider,
        provider.client().stream("POST", loopback.url + "/responses", auth=provider.auth()) as response,
    ):
        body = await response.aread()
    assert CANARY in body.decode()
