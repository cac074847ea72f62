"""A hostile model provider on 127.0.0.1, as a user meets it: through `AgentHarness` and
`call_model`, with a real socket. It echoes the key into every field, sends costs that are
not costs, streams keep-alives forever and fields of impossible shapes. Every run ends within
its bounds with a `NoeticError` that carries no key, and accounting stays honest.

Each case runs in a capped child process (the `child` fixture): the server runs in the child's
own snippet, inside the run's task group, so it ends with the run (or at the wall clock)."""

from __future__ import annotations

from typing import Any

import pytest

KEY = "sk-or-v1-adversarial-0f1e2d3c4b5a69788796"

#: What every case's snippet starts with: the hostile server, the agent run against it, and
#: `summary(outcome)`, the JSON the child returns for the parent to assert on.
PROVIDER = """
import json
import math
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import noetic as nt
from noetic.errors import NoeticError
from noetic_adapters_openrouter import BillingPolicy, Deadlines, OpenRouterProvider, RetryPolicy

MODEL = "hostile/model"
WALL_CLOCK = 15.0
PRICED = {"data": [{"id": MODEL, "pricing": {"prompt": "0.00001", "completion": "0.00001"}}]}


@asynccontextmanager
async def hostile_server(answer, models=None):
    # One request per connection: `/models` answers `models` (no prices by default),
    # `/generation` never has the record, anything else calls `answer(key, stream)`.

    async def serve(stream):
        async with stream:
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                try:
                    data += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
            head_bytes, _, body = data.partition(b"\\r\\n\\r\\n")
            head = head_bytes.decode("latin-1")
            length = next(
                (int(ln.split(":")[1]) for ln in head.split("\\r\\n") if ln.lower().startswith("content-length:")),
                0,
            )
            while len(body) < length:  # read the whole request: closing on unread data resets the connection
                body += await stream.receive()
            auth = next((ln for ln in head.split("\\r\\n") if ln.lower().startswith("authorization:")), "")
            target = head.split("\\r\\n")[0]
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


async def send(stream, status, kind, body, **headers):
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {kind}", "Connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    if kind == "application/json":
        lines.append(f"Content-Length: {len(body)}")
    await stream.send(("\\r\\n".join(lines) + "\\r\\n\\r\\n").encode() + body)


def sse(*events):
    return b"".join(f"data: {json.dumps(e)}\\n\\n".encode() for e in events) + b"data: [DONE]\\n\\n"


async def run_agent(base_url, graph=None, *, api="chat", **options):
    provider = OpenRouterProvider(
        api_key=KEY,
        base_url=base_url,
        retry=RetryPolicy(max_attempts=2, base_delay=0.0),
        billing=BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0, reconcile_timeout=0.2),
        **options,
    )
    async with provider:
        model = provider.model(MODEL, api=api)
        harness = nt.AgentHarness("hostile", agent_graph=graph or nt.call_model("answer"), model=model)
        with anyio.fail_after(WALL_CLOCK):
            async with harness:
                try:
                    return harness, await harness.run("hi")
                except NoeticError as exc:
                    return harness, exc


def summary(outcome):
    if isinstance(outcome, NoeticError):
        text = str(outcome) + repr(outcome) + json.dumps(outcome.details, default=repr)
        return {"error": {"code": outcome.code, "message": outcome.message, "text": text}}
    return {"text": outcome.text, "input_tokens": outcome.usage.input_tokens}
"""


def run_case(child: Any, body: str, **sources: str) -> dict[str, Any]:
    """Run `PROVIDER`, then `NAME = source` lines (the key and the case's inputs, as Python
    source), then `body` (defines `main`) in a capped child; returns the JSON it returned."""
    assignments = "".join(f"{name} = {source}\n" for name, source in {"KEY": repr(KEY), **sources}.items())
    result: dict[str, Any] = child.run(PROVIDER + assignments + body, wall_clock=45).returned()
    return result


def error_of(result: dict[str, Any]) -> dict[str, Any]:
    """The `NoeticError` the run ended with; fails when it ended with a response."""
    assert "error" in result, result
    error: dict[str, Any] = result["error"]
    return error


ECHO = """
async def answer(key, stream):
    payload = {"error": ERROR(key), "error_type": key}
    if WHERE == "status":
        await send(stream, 400, "application/json", json.dumps(payload).encode(), X_Generation_Id=key)
    else:
        await send(stream, 200, "text/event-stream", sse({"id": key, **payload}), X_Generation_Id=key[:20])

async def main():
    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url)
    return summary(outcome)
"""

#: Error payloads echoing the key `k`, as the source of an expression.
ECHO_SHAPES = [
    pytest.param('{"code": k, "message": k, "type": k, "metadata": {"provider_name": k}}', id="strings"),
    pytest.param('{"code": {"k": [k]}, "metadata": {"limit_source": [k, k], "raw": {"k": k}}}', id="nested"),
    pytest.param(
        '{"code": 400, "message": "x" * 300 + k, "metadata": {"provider_name": "y" * 190 + k}}', id="long"
    ),
]


@pytest.mark.parametrize("error", ECHO_SHAPES)
@pytest.mark.parametrize("where", ["status", "stream"])
def test_an_echoing_proxy_cannot_place_the_key_anywhere(child: Any, error: str, where: str) -> None:
    outcome = error_of(run_case(child, ECHO, ERROR=f"lambda k: {error}", WHERE=repr(where)))
    assert outcome["code"] == "model_error"
    assert KEY not in outcome["text"] and KEY[9:] not in outcome["text"], outcome["text"]


SPEND = """
calls = 0

async def answer(_, stream):
    global calls
    calls += 1
    usage = {"prompt_tokens": -50, "completion_tokens": 5, "cost": COST}
    chunk = {"id": f"g{calls}", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    await send(stream, 200, "text/event-stream", sse(chunk, {"id": f"g{calls}", "choices": [], "usage": usage}))

async def main():
    graph = nt.loop(
        "spend",
        [nt.call_model("answer", params={"max_output_tokens": 1000})],
        until=nt.until.max_cost(0.02),
        max_iterations=25,
    )
    async with hostile_server(answer, PRICED if IS_PRICED else None) as url:
        _, outcome = await run_agent(url, graph)
    return {"calls": calls, **summary(outcome)}
"""


#: Costs that are not costs, as the source of an expression.
BOGUS_COSTS = ["-1000", "math.nan", "math.inf", "-math.inf", "'0'", "'1e-9'", "[0]", "True", "1e400"]


@pytest.mark.parametrize("cost", BOGUS_COSTS)
@pytest.mark.parametrize("priced", [True, False])
def test_no_cost_lets_a_loop_past_max_cost(child: Any, cost: str, priced: bool) -> None:
    """Each answer claims a bogus cost (and negative tokens); the loop still stops at its
    budget, because every such call is held at its ceiling — unbounded without a price list."""
    result = run_case(child, SPEND, COST=cost, IS_PRICED=repr(priced))
    assert "error" not in result, result
    assert result["input_tokens"] == 0  # negative counts clamped, never subtracted
    assert result["calls"] == (2 if priced else 1)  # ~0.01 USD held per priced call; unbounded otherwise


ONE_ANSWER = """
async def answer(_, stream):
    await send(stream, 200, "text/event-stream", sse(EVENT))

async def main():
    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, api=API)
    return summary(outcome)
"""


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
def test_impossible_shapes_never_surface_as_python_errors(child: Any, chunk: dict[str, Any]) -> None:
    result = run_case(child, ONE_ANSWER, EVENT=repr({"id": "g", **chunk}), API=repr("chat"))
    if "error" in result:
        assert result["error"]["code"] == "model_stream_error", result
    else:  # an ignorable oddity: the round still ended with a response
        assert result["text"] == ""


@pytest.mark.parametrize(
    "output",
    [
        [{"type": "function_call", "call_id": "c1", "name": "", "arguments": "{}"}],
        [{"type": "function_call", "call_id": "c1", "name": 5, "arguments": {"a": 1}}],
        [{"type": "message", "role": 5, "content": "x"}, 5, None, "text"],
        [{"type": "reasoning", "summary": 5}],
    ],
)
def test_impossible_responses_output_never_surfaces_as_python_errors(child: Any, output: list[Any]) -> None:
    """A nameless function call would otherwise loop the tool rounds until their limit."""
    final = {"type": "response.completed", "response": {"id": "g", "status": "completed", "output": output}}
    result = run_case(child, ONE_ANSWER, EVENT=repr(final), API=repr("responses"))
    if "error" in result:
        assert result["error"]["code"] == "model_stream_error", result
        assert "has no name" in result["error"]["message"]
    else:  # unreadable items are kept verbatim as extension items; the turn ends normally
        assert result["text"] == ""


KEEPALIVES = """
async def answer(_, stream):
    await send(stream, 200, "text/event-stream", b"")
    while True:  # ends when the server's task group is cancelled, after the run
        await stream.send(b": OPENROUTER PROCESSING\\n\\n")
        await anyio.sleep(0.01)

async def main():
    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, deadlines=Deadlines(idle=None, total=0.5))
    return summary(outcome)
"""


def test_keepalives_forever_end_at_the_deadline(child: Any) -> None:
    outcome = error_of(run_case(child, KEEPALIVES))
    assert outcome["code"] == "model_stream_error"
    assert "total deadline" in outcome["message"]


RAW_ANSWER = """
async def answer(_, stream):
    await send(stream, STATUS, KIND, BODY)

async def main():
    async with hostile_server(answer) as url:
        _, outcome = await run_agent(url, api=API)
    return summary(outcome)
"""


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
def test_json_nested_beyond_the_decoder_is_a_clear_error(
    child: Any, status: int, kind: str, body: bytes, api: str
) -> None:
    """The JSON decoder recurses per level: 100k-deep data must not escape as RecursionError."""
    result = run_case(child, RAW_ANSWER, STATUS=repr(status), KIND=repr(kind), BODY=repr(body), API=repr(api))
    outcome = error_of(result)
    expected = "model_error" if status == 400 else "model_stream_error"
    assert outcome["code"] == expected
    if status == 200:
        assert "nested too deeply" in outcome["message"]


CUT_OFF = """
async def answer(_, stream):
    await send(stream, 200, "text/event-stream", b'data: {"id": "g", "choices": []}\\n\\n')  # no [DONE]

async def main():
    deep_prices = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    async with hostile_server(answer, deep_prices) as url:
        _, outcome = await run_agent(url)
    return summary(outcome)
"""


def test_a_price_list_nested_beyond_the_decoder_leaves_the_stream_error(child: Any) -> None:
    """A cut-off call looks its price up to hold its ceiling; an undecodable price list must
    not replace the stream error with a RecursionError (the call is held without bound)."""
    outcome = error_of(run_case(child, CUT_OFF))
    assert outcome["code"] == "model_stream_error"
    assert "ended before [DONE]" in outcome["message"]
