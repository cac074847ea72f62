"""A hostile model provider on 127.0.0.1, as a user meets it: through `AgentHarness` and
`call_model`, with a real socket. It echoes the key into every field, sends costs that are
not costs, streams keep-alives forever and fields of impossible shapes. Every run ends within
its bounds with a `NoeticError` that carries no key, and accounting stays honest."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import noetic as nt
import pytest
from noetic.errors import NoeticError
from noetic_adapters_openrouter import BillingPolicy, Deadlines, OpenRouterProvider, RetryPolicy

pytestmark = pytest.mark.anyio

KEY = "sk-or-v1-adversarial-0f1e2d3c4b5a69788796"
MODEL = "hostile/model"
WALL_CLOCK = 15.0
Answer = Callable[[str, anyio.abc.ByteStream], Awaitable[None]]
PRICED = {"data": [{"id": MODEL, "pricing": {"prompt": "0.00001", "completion": "0.00001"}}]}


@asynccontextmanager
async def hostile_server(answer: Answer, models: Any = None) -> AsyncIterator[str]:
    """A one-request-per-connection HTTP server: `/models` answers `models` (no prices by
    default), `/generation` never has the record, anything else calls `answer(key, stream)`."""

    async def serve(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                try:
                    data += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
            head_bytes, _, body = data.partition(b"\r\n\r\n")
            head = head_bytes.decode("latin-1")
            length = next(
                (
                    int(ln.split(":")[1])
                    for ln in head.split("\r\n")
                    if ln.lower().startswith("content-length:")
                ),
                0,
            )
            while len(body) < length:  # read the whole request: closing on unread data resets the connection
                body += await stream.receive()
            auth = next((ln for ln in head.split("\r\n") if ln.lower().startswith("authorization:")), "")
            target = head.split("\r\n")[0]
            if " /api/v1/models" in target:
                raw = models if isinstance(models, bytes) else json.dumps(models or {"data": []}).encode()
                await send(stream, 200, "application/json", raw)
                return
            if " /api/v1/generation" in target:
                await send(stream, 404, "application/json", b'{"error": {"code": 404}}')
                return
            await answer(auth.partition("Bearer ")[2], stream)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield f"http://127.0.0.1:{port}/api/v1"
        tg.cancel_scope.cancel()


async def send(stream: anyio.abc.ByteStream, status: int, kind: str, body: bytes, **headers: str) -> None:
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {kind}", "Connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    if kind == "application/json":
        lines.append(f"Content-Length: {len(body)}")
    await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)


def sse(*events: Any) -> bytes:
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


async def run_agent(
    base_url: str, graph: nt.Step | None = None, *, api: str = "chat", **options: Any
) -> tuple[nt.AgentHarness, Any]:
    provider = OpenRouterProvider(
        api_key=KEY,
        base_url=base_url,
        retry=RetryPolicy(max_attempts=2, base_delay=0.0),
        billing=BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0, reconcile_timeout=0.2),
        **options,
    )
    async with provider:
        model = provider.model(MODEL, api=api)  # type: ignore[arg-type]
        harness = nt.AgentHarness("hostile", agent_graph=graph or nt.call_model("answer"), model=model)
        with anyio.fail_after(WALL_CLOCK):
            async with harness:
                try:
                    return harness, await harness.run("hi")
                except NoeticError as exc:
                    return harness, exc


def assert_no_key(error: NoeticError) -> None:
    text = str(error) + repr(error) + json.dumps(error.details, default=repr)
    assert KEY not in text and KEY[9:] not in text, text


ECHO_SHAPES = [
    pytest.param(
        lambda k: {"code": k, "message": k, "type": k, "metadata": {"provider_name": k}}, id="strings"
    ),
    pytest.param(
        lambda k: {"code": {"k": [k]}, "metadata": {"limit_source": [k, k], "raw": {"k": k}}}, id="nested"
    ),
    pytest.param(
        lambda k: {"code": 400, "message": "x" * 300 + k, "metadata": {"provider_name": "y" * 190 + k}},
        id="long",
    ),
]


@pytest.mark.parametrize("error", ECHO_SHAPES)
@pytest.mark.parametrize("where", ["status", "stream"])
async def test_an_echoing_proxy_cannot_place_the_key_anywhere(error: Any, where: str) -> None:
    async def answer(key: str, stream: anyio.abc.ByteStream) -> None:
        payload = {"error": error(key), "error_type": key}
        if where == "status":
            await send(stream, 400, "application/json", json.dumps(payload).encode(), X_Generation_Id=key)
        else:
            await send(
                stream, 200, "text/event-stream", sse({"id": key, **payload}), X_Generation_Id=key[:20]
            )

    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url)
    assert isinstance(outcome, NoeticError)
    assert outcome.code == "model_error"
    assert_no_key(outcome)


@pytest.mark.parametrize("cost", [-1000, math.nan, math.inf, -math.inf, "0", "1e-9", [0], True, 1e400])
@pytest.mark.parametrize("priced", [True, False])
async def test_no_cost_lets_a_loop_past_max_cost(cost: Any, priced: bool) -> None:
    """Each answer claims a bogus cost (and negative tokens); the loop still stops at its
    budget, because every such call is held at its ceiling — unbounded without a price list."""
    calls = 0

    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        nonlocal calls
        calls += 1
        usage = {"prompt_tokens": -50, "completion_tokens": 5, "cost": cost}
        chunk = {
            "id": f"g{calls}",
            "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}],
        }
        await send(
            stream, 200, "text/event-stream", sse(chunk, {"id": f"g{calls}", "choices": [], "usage": usage})
        )

    graph = nt.loop(
        "spend",
        [nt.call_model("answer", params={"max_output_tokens": 1000})],
        until=nt.until.max_cost(0.02),
        max_iterations=25,
    )
    async with hostile_server(answer, PRICED if priced else None) as url:
        _, outcome = await run_agent(url, graph)
    assert not isinstance(outcome, NoeticError), outcome
    assert outcome.usage.input_tokens == 0  # negative counts clamped, never subtracted
    assert calls == (2 if priced else 1)  # ~0.01 USD held per priced call; unbounded otherwise


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"delta": {"reasoning_details": 5}}]},
        {"choices": [{"delta": {"tool_calls": {"0": {}}}}]},
        {"choices": [{"delta": {"annotations": "x"}}]},
        {"choices": [{"delta": {"reasoning_details": [{"index": "x", "text": 5}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 5, "arguments": [1]}}]}}]},
        {"choices": [5]},
        {"choices": {"a": 1}},
        {"usage": {"prompt_tokens": "many"}, "choices": []},
    ],
)
async def test_impossible_shapes_never_surface_as_python_errors(chunk: dict[str, Any]) -> None:
    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        await send(stream, 200, "text/event-stream", sse({"id": "g", **chunk}))

    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url)
    if isinstance(outcome, NoeticError):
        assert outcome.code == "model_stream_error", outcome
    else:  # an ignorable oddity: the round still ended with a response
        assert outcome.text == ""


@pytest.mark.parametrize(
    "output",
    [
        [{"type": "function_call", "call_id": "c1", "name": "", "arguments": "{}"}],
        [{"type": "function_call", "call_id": "c1", "name": 5, "arguments": {"a": 1}}],
        [{"type": "message", "role": 5, "content": "x"}, 5, None, "text"],
        [{"type": "reasoning", "summary": 5}],
    ],
)
async def test_impossible_responses_output_never_surfaces_as_python_errors(output: list[Any]) -> None:
    """A nameless function call would otherwise loop the tool rounds until their limit."""

    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        final = {
            "type": "response.completed",
            "response": {"id": "g", "status": "completed", "output": output},
        }
        await send(stream, 200, "text/event-stream", sse(final))

    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, api="responses")
    if isinstance(outcome, NoeticError):
        assert outcome.code == "model_stream_error", outcome
        assert "has no name" in outcome.message
    else:  # unreadable items are kept verbatim as extension items; the turn ends normally
        assert outcome.text == ""


async def test_keepalives_forever_end_at_the_deadline() -> None:
    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        await send(stream, 200, "text/event-stream", b"")
        while True:
            await stream.send(b": OPENROUTER PROCESSING\n\n")
            await anyio.sleep(0.01)

    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, deadlines=Deadlines(idle=None, total=0.5))
    assert isinstance(outcome, NoeticError)
    assert outcome.code == "model_stream_error"
    assert "total deadline" in outcome.message


@pytest.mark.parametrize(
    ("status", "kind", "body"),
    [
        (200, "text/event-stream", b"data: " + b"[" * 200_000 + b"\n\n"),
        (200, "application/json", b'{"a":' * 100_000),
        (400, "application/json", b'{"error":' + b"[" * 100_000 + b"}"),
    ],
    ids=["sse-event", "json-body", "error-body"],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_json_nested_beyond_the_decoder_is_a_clear_error(
    status: int, kind: str, body: bytes, api: str
) -> None:
    """The JSON decoder recurses per level: 100k-deep data must not escape as RecursionError."""

    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        await send(stream, status, kind, body)

    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, api=api)
    assert isinstance(outcome, NoeticError), outcome
    expected = "model_error" if status == 400 else "model_stream_error"
    assert outcome.code == expected
    if status == 200:
        assert "nested too deeply" in outcome.message


async def test_a_price_list_nested_beyond_the_decoder_leaves_the_stream_error() -> None:
    """A cut-off call looks its price up to hold its ceiling; an undecodable price list must
    not replace the stream error with a RecursionError (the call is held without bound)."""

    async def answer(_: str, stream: anyio.abc.ByteStream) -> None:
        await send(stream, 200, "text/event-stream", b'data: {"id": "g", "choices": []}\n\n')  # no [DONE]

    deep_prices = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    async with hostile_server(answer, deep_prices) as url:
        _, outcome = await run_agent(url)
    assert isinstance(outcome, NoeticError), outcome
    assert outcome.code == "model_stream_error"
    assert "ended before [DONE]" in outcome.message
