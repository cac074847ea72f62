"""A broken or hostile provider cannot leak a key, corrupt accounting or hold a call forever.

Each case runs against a fake provider on 127.0.0.1 (the `loopback` fixture) and, where the
socket adds nothing, through `httpx.MockTransport`: every wire-sourced error detail is
scrubbed of an echoed key; unreadable costs are held at the ceiling and reconciled; keep-alive
comments cannot keep a call alive past its idle timeout or total deadline; a field of an
impossible shape is a stream error naming it; 500 and 529 are retried before output.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import httpx
import noetic as nt
import pytest
from noetic.errors import NoeticError
from noetic.items import user_message
from noetic.model import ModelRequest, ModelResponse
from noetic.testing.model_conformance import RecordingBilling, collect_round
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import (
    BillingPolicy,
    Deadlines,
    OpenRouterProvider,
    RetryPolicy,
)
from noetic_adapters_openrouter.billing import ModelPricing, ceiling, prompt_estimate

pytestmark = pytest.mark.anyio

CANARY = "sk-or-v1-canary-echo-5e1f0a9b8c7d6e5f4"
MODEL = "test/loopback-model"
PRICING = ModelPricing(prompt=0.000003, completion=0.000015, web_search=0.004)
HANG_GUARD = 10.0


def provider_for(
    base_url: str | None = None, client: httpx.AsyncClient | None = None, **options: Any
) -> OpenRouterProvider:
    options.setdefault("retry", RetryPolicy(max_attempts=3, base_delay=0.0))
    return OpenRouterProvider(
        api_key=CANARY,
        base_url=base_url,
        http_client=client,
        billing=BillingPolicy(first_poll_delay=0.01, max_poll_delay=0.02),
        **options,
    )


def serve_json(server: Any, path: str, payload: Any, status: int = 200) -> None:
    async def route(_: Any, stream: anyio.abc.ByteStream) -> None:
        await server.respond(stream, status, payload)

    server.routes[path] = route


# --- 10: every wire field is scrubbed -------------------------------------------------------


def echoing_error(echoed: str) -> dict[str, Any]:
    """An error payload with the echoed credential in every field the adapter copies."""
    return {
        "error_type": f"type {echoed}",
        "error": {
            "code": f"code {echoed}",
            "message": f"message {echoed}",
            "type": f"type {echoed}",
            "metadata": {
                "provider_name": f"provider {echoed}",
                "limit_source": {"nested": echoed},
                "raw": [echoed],
            },
        },
    }


@pytest.mark.parametrize("where", ["status", "stream"])
async def test_an_echoed_key_reaches_no_error_detail(loopback: Any, wire: Any, where: str) -> None:
    async def responses(request: Any, stream: anyio.abc.ByteStream) -> None:
        echoed = request.headers["authorization"].removeprefix("Bearer ")  # the bare key
        if where == "status":
            await loopback.respond(stream, 400, echoing_error(echoed), {"X-Generation-Id": echoed})
            return
        head = [
            "HTTP/1.1 200 OK",
            "Content-Type: text/event-stream",
            f"X-Generation-Id: gen {echoed}",
            "Connection: close",
        ]
        await stream.send(("\r\n".join(head) + "\r\n\r\n").encode())
        event = {"type": "error", **echoing_error(echoed)}
        await stream.send(wire.sse([event], done=False))

    loopback.routes["/api/v1/responses"] = responses
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))
    async with provider_for(loopback.url) as provider:
        _, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("hi")]))
    assert error is not None and error.code == "model_error"
    assert loopback.hits("/api/v1/responses")[0].headers["authorization"] == f"Bearer {CANARY}"
    dumped = json.dumps(error.details, default=repr) + str(error)
    assert CANARY not in dumped and CANARY[12:] not in dumped, dumped
    for name in ("provider_code", "error_type", "provider_name", "limit_source", "provider_message"):
        assert "[redacted]" in str(error.details[name]), name
    if where == "stream":
        assert error.details["generation_id"] == "gen [redacted]"


async def test_a_key_not_shaped_like_a_key_is_scrubbed_too() -> None:
    """A proxy key without the `sk-` shape is still masked, by value, in every detail."""
    secret = "proxy-token-0123456789abcdef"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json=echoing_error(secret))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenRouterProvider(api_key=secret, http_client=client)
        _, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("hi")]))
    assert error is not None
    assert secret not in json.dumps(error.details, default=repr) + str(error)


# --- 11: unreadable costs are held, never counted as 0 ---------------------------------------


UNREADABLE_COSTS = [-1000, math.nan, math.inf, "0.0004", "free", {"usd": 1}]


@pytest.mark.parametrize("cost", UNREADABLE_COSTS, ids=repr)
async def test_an_unreadable_cost_is_held_at_the_ceiling_and_reconciled(
    loopback: Any, wire: Any, cost: Any
) -> None:
    gen_id = "gen-cost-1"

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, gen_id)
        usage = wire.responses_usage(RoundUsage(input_tokens=3, output_tokens=2), None)
        usage["cost"] = cost  # json.dumps writes NaN / Infinity literals, as a hostile server may
        await stream.send(wire.sse(wire.responses_text("Hello!", usage, gen_id)))

    loopback.routes["/api/v1/responses"] = responses
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))
    serve_json(loopback, "/api/v1/generation", wire.generation(gen_id, 0.0004))
    billing = RecordingBilling()
    request = ModelRequest(MODEL, [user_message("hi")], params={"max_output_tokens": 100}, billing=billing)
    async with provider_for(loopback.url) as provider:
        events, error = await collect_round(provider.model(MODEL), request)
        assert error is None
        response = events[-1]
        assert isinstance(response, ModelResponse)
        assert response.cost is None and response.billed_cost is None
        assert response.usage.input_tokens == 3
        (hold,) = billing.holds
        assert hold.amount == pytest.approx(ceiling(PRICING, prompt_estimate(request), 100))
        await billing.drain()
        assert hold.settled == (0.0004, 0.0004)


async def test_unreadable_costs_cannot_bypass_max_cost(loopback: Any, wire: Any) -> None:
    """Through the harness: a provider that always sends cost "0" as a string still hits the budget."""
    calls = 0

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        nonlocal calls
        calls += 1
        gen_id = f"gen-{calls}"
        await loopback.start_sse(stream, gen_id)
        usage = wire.responses_usage(RoundUsage(input_tokens=3, output_tokens=2), None)
        usage["cost"] = "0"
        await stream.send(wire.sse(wire.responses_text("more", usage, gen_id)))

    async def generation(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.respond(stream, 404, {"error": {"code": 404, "message": "Generation not found"}})

    loopback.routes["/api/v1/responses"] = responses
    loopback.routes["/api/v1/generation"] = generation
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))
    graph = nt.loop(
        "spend",
        [nt.call_model("answer", params={"max_output_tokens": 1000})],
        until=nt.until.max_cost(0.04),
        max_iterations=30,
    )
    billing = BillingPolicy(first_poll_delay=0.01, max_poll_delay=0.01, reconcile_timeout=0.1)
    provider = OpenRouterProvider(api_key=CANARY, base_url=loopback.url, billing=billing)
    harness = nt.AgentHarness("budget", agent_graph=graph, model=provider.model(MODEL))
    async with provider, harness:
        with anyio.fail_after(HANG_GUARD):
            await harness.run("go")
    assert calls == 3  # each call holds ~0.015 USD: 0.015, 0.030, 0.045 >= 0.04


# --- 12: idle timeout and total deadline -----------------------------------------------------


async def keepalive_forever(loopback: Any, stream: anyio.abc.ByteStream, *, events: bool) -> None:
    await loopback.start_sse(stream, "gen-forever")
    while True:
        line = b'data: {"type": "response.output_text.delta", "delta": "."}\n\n' if events else b": ping\n\n"
        await stream.send(line)
        await anyio.sleep(0.02)


@pytest.mark.parametrize(
    ("deadlines", "events", "expected"),
    [
        (Deadlines(idle=0.3, total=None), False, "no event arrived for 0.3 s"),
        (Deadlines(idle=None, total=0.5), False, "total deadline of 0.5 s"),
        (Deadlines(idle=0.3, total=0.6), True, "total deadline of 0.6 s"),
    ],
)
async def test_a_stream_of_keepalives_ends(
    loopback: Any, wire: Any, deadlines: Deadlines, events: bool, expected: str
) -> None:
    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await keepalive_forever(loopback, stream, events=events)

    loopback.routes["/api/v1/responses"] = responses
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))
    billing = RecordingBilling()
    request = ModelRequest(MODEL, [user_message("hi")], params={"max_output_tokens": 10}, billing=billing)
    async with provider_for(loopback.url, deadlines=deadlines) as provider:
        _, error = await collect_round(provider.model(MODEL), request)  # within HANG_GUARD, or it fails
    assert error is not None
    assert error.code == "model_stream_error"
    assert expected in error.message
    assert error.generation_id == "gen-forever"
    assert len(billing.holds) == 1  # the call may have been billed: held


async def test_the_total_deadline_covers_a_server_that_never_answers(loopback: Any) -> None:
    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.wait_closed(stream)  # accepts the request, never answers

    loopback.routes["/api/v1/responses"] = responses
    async with provider_for(loopback.url, deadlines=Deadlines(total=0.3)) as provider:
        _, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("hi")]))
    assert error is not None
    assert error.code == "model_error"
    assert "total deadline of 0.3 s" in error.message


async def test_keepalives_through_a_mock_transport_end_at_the_idle_timeout() -> None:
    async def body() -> AsyncIterator[bytes]:
        while True:
            yield b": OPENROUTER PROCESSING\n\n"
            await anyio.sleep(0.01)

    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = provider_for(client=client, deadlines=Deadlines(idle=0.2))
        _, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("hi")]))
    assert error is not None and error.code == "model_stream_error"
    assert "no event arrived" in error.message


def test_deadlines_have_sensible_defaults() -> None:
    deadlines = OpenRouterProvider(api_key=CANARY).deadlines
    assert deadlines == Deadlines(idle=180.0, total=600.0)


# --- 13: impossible shapes are stream errors; 500 and 529 are retried ------------------------

BAD_DELTAS = [
    ({"reasoning_details": 5}, "reasoning_details"),
    ({"tool_calls": "call everything"}, "tool_calls"),
    ({"annotations": {"a": 1}}, "annotations"),
]


@pytest.mark.parametrize(("delta", "field"), BAD_DELTAS)
async def test_a_chat_field_of_impossible_shape_is_a_stream_error(
    loopback: Any, wire: Any, delta: dict[str, Any], field: str
) -> None:
    async def completions(_: Any, stream: anyio.abc.ByteStream) -> None:
        await loopback.start_sse(stream, "gen-bad")
        chunks = [
            wire.chat_chunk("gen-bad", {"role": "assistant", "content": "Hi"}),
            wire.chat_chunk("gen-bad", delta),
        ]
        await stream.send(wire.sse(chunks))

    loopback.routes["/api/v1/chat/completions"] = completions
    serve_json(loopback, "/api/v1/models", wire.models(MODEL))
    async with provider_for(loopback.url) as provider:
        _, error = await collect_round(
            provider.model(MODEL, api="chat"), ModelRequest(MODEL, [user_message("hi")])
        )
    assert error is not None
    assert error.code == "model_stream_error"
    assert repr(field) in error.message


async def test_reasoning_details_of_5_through_the_harness_is_not_a_type_error(wire: Any) -> None:
    chunks = [wire.chat_chunk("gen-bad", {"role": "assistant", "reasoning_details": 5})]

    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=wire.sse(chunks))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = provider_for(client=client).model(MODEL, api="chat")
        async with nt.AgentHarness("bad", agent_graph=nt.call_model("answer"), model=model) as harness:
            with pytest.raises(NoeticError) as err:
                await harness.run("hi")
    assert err.value.code == "model_stream_error"
    assert "'reasoning_details' is a number, not a list" in err.value.message


@pytest.mark.parametrize("status", [500, 529])
async def test_500_and_529_are_retried_before_output(loopback: Any, wire: Any, status: int) -> None:
    attempts = 0

    async def responses(_: Any, stream: anyio.abc.ByteStream) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await loopback.respond(stream, status, {"error": {"code": status, "message": "Overloaded"}})
            return
        await loopback.start_sse(stream, "gen-ok")
        usage = wire.responses_usage(RoundUsage(input_tokens=1, output_tokens=1), 0.00001)
        await stream.send(wire.sse(wire.responses_text("ok", usage, "gen-ok")))

    loopback.routes["/api/v1/responses"] = responses
    async with provider_for(loopback.url) as provider:
        events, error = await collect_round(provider.model(MODEL), ModelRequest(MODEL, [user_message("hi")]))
    assert error is None
    assert attempts == 2
    assert isinstance(events[-1], ModelResponse) and events[-1].cost == 0.00001
