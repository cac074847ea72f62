"""Test support for the OpenRouter adapter: cassette replay, wire builders, a loopback server.

- `cassettes` opens a recorded fixture (see `fixtures/README.md`) as an `httpx.MockTransport`
  that checks each request against the recording and answers with the recorded response,
  streaming SSE bodies in chunks of a chosen size (mid-line, mid-UTF-8 splits).
- `wire` builds OpenRouter-shaped SSE streams and usage objects for hand-written scenarios.
- `loopback` is a raw HTTP/1.1 server on 127.0.0.1 started inside the test, for faults that
  need a real socket (cut connections, client disconnects, timeouts).

No real key is used anywhere: `TEST_KEY` is a placeholder.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest
import yaml
from anyio.abc import SocketAttribute
from noetic.usage import RoundUsage

FIXTURES = Path(__file__).parent / "fixtures"
TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
_DROPPED_HEADERS = {"content-length", "transfer-encoding", "content-encoding"}


# --- cassette replay ------------------------------------------------------------------------


def chunked(body: bytes, size: int | None) -> bytes | AsyncIterator[bytes]:
    """`body` whole (`size` None) or as an async stream of `size`-byte chunks."""
    if size is None:
        return body

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), size):
            yield body[start : start + size]

    return chunks()


class Cassette:
    """One recorded fixture replayed in order through `httpx.MockTransport`."""

    def __init__(self, name: str, chunk: int | None):
        data = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
        self.name = name
        self.chunk = chunk
        self.interactions: list[dict[str, Any]] = data["interactions"]
        self.sent: list[dict[str, Any]] = []
        self.client = httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def recorded_body(self, index: int) -> dict[str, Any]:
        """The request body recorded for interaction `index`."""
        body: dict[str, Any] = self.interactions[index]["request"]["parsed_body"]
        return body

    def _handle(self, request: httpx.Request) -> httpx.Response:
        index = len(self.sent)
        assert index < len(self.interactions), f"{self.name}: request {index + 1} was never recorded"
        recorded = self.interactions[index]
        assert request.method == recorded["request"]["method"]
        assert str(request.url) == recorded["request"]["uri"], f"{self.name}: wrong URL {request.url}"
        assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
        self.sent.append(json.loads(request.content))
        response = recorded["response"]
        headers = {k: v[0] for k, v in response["headers"].items() if k.lower() not in _DROPPED_HEADERS}
        if "parsed_body" in response:
            body = json.dumps(response["parsed_body"]).encode()
        else:
            body = response["body"]["string"].encode("utf-8")
        return httpx.Response(response["status"]["code"], headers=headers, content=chunked(body, self.chunk))

    def assert_consumed(self) -> None:
        """Every recorded interaction was requested."""
        assert len(self.sent) == len(self.interactions), (
            f"{self.name}: {len(self.sent)} of {len(self.interactions)} interactions used"
        )


@pytest.fixture
async def cassettes() -> AsyncIterator[Callable[..., Cassette]]:
    """Open cassettes by file name; their clients are closed after the test."""
    opened: list[Cassette] = []

    def open_cassette(name: str, chunk: int | None = None) -> Cassette:
        cassette = Cassette(name, chunk)
        opened.append(cassette)
        return cassette

    yield open_cassette
    for cassette in opened:
        await cassette.client.aclose()


# --- wire builders --------------------------------------------------------------------------


class Wire:
    """Builders for OpenRouter wire data in hand-written scenarios."""

    @staticmethod
    def sse(events: Sequence[Mapping[str, Any]], *, done: bool = True, keepalive: bool = True) -> bytes:
        """An event stream: keep-alive comments, one `data:` event per payload, `[DONE]`."""
        out = ": OPENROUTER PROCESSING\n\n" if keepalive else ""
        out += "".join(f"data: {json.dumps(e)}\n\n" for e in events)
        if done:
            out += "data: [DONE]\n\n"
        return out.encode()

    @staticmethod
    def pieces(text: str, size: int = 4) -> list[str]:
        """`text` cut into delta-sized pieces."""
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]

    @staticmethod
    def responses_usage(usage: RoundUsage, cost: float | None) -> dict[str, Any]:
        """A Responses `usage` object that carries exactly the figures that are set."""
        return _wire_usage(usage, cost, ("input_tokens", "output_tokens", "input_tokens_details"))

    @staticmethod
    def chat_usage(usage: RoundUsage, cost: float | None) -> dict[str, Any]:
        """A Chat Completions `usage` object that carries exactly the figures that are set."""
        return _wire_usage(usage, cost, ("prompt_tokens", "completion_tokens", "prompt_tokens_details"))

    @staticmethod
    def responses_head(gen_id: str) -> list[dict[str, Any]]:
        """`response.created` and the opening of an assistant message."""
        return [
            {"type": "response.created", "response": {"id": gen_id, "status": "in_progress", "output": []}},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "type": "message",
                    "id": "msg_tmp_1",
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                },
            },
        ]

    @staticmethod
    def responses_text(text: str, usage: Mapping[str, Any] | None, gen_id: str) -> list[dict[str, Any]]:
        """A whole Responses round answering `text`."""
        final = {
            "type": "message",
            "id": "msg_final_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        deltas = [
            {"type": "response.output_text.delta", "item_id": "msg_tmp_1", "output_index": 0, "delta": p}
            for p in Wire.pieces(text)
        ]
        return [
            *Wire.responses_head(gen_id),
            *deltas,
            {"type": "response.output_item.done", "output_index": 0, "item": final},
            {
                "type": "response.completed",
                "response": {"id": gen_id, "status": "completed", "output": [final], "usage": usage},
            },
        ]

    @staticmethod
    def responses_call(
        name: str, arguments: str, call_id: str, usage: Mapping[str, Any] | None, gen_id: str
    ) -> list[dict[str, Any]]:
        """A whole Responses round calling one function tool (arguments streamed in pieces)."""
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }
        deltas = [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": p,
            }
            for p in Wire.pieces(arguments)
        ]
        return [
            {"type": "response.created", "response": {"id": gen_id, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
            *deltas,
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {
                "type": "response.completed",
                "response": {"id": gen_id, "status": "completed", "output": [item], "usage": usage},
            },
        ]

    @staticmethod
    def chat_chunk(gen_id: str, delta: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
        """One Chat Completions stream chunk."""
        choices = (
            []
            if delta is None
            else [{"index": 0, "delta": dict(delta), "finish_reason": extra.pop("finish", None)}]
        )
        return {
            "id": gen_id,
            "object": "chat.completion.chunk",
            "model": "test/model",
            "choices": choices,
            **extra,
        }

    @staticmethod
    def chat_text(text: str, usage: Mapping[str, Any] | None, gen_id: str) -> list[dict[str, Any]]:
        """A whole Chat Completions round answering `text`, usage in a final choice-less chunk."""
        chunks = [Wire.chat_chunk(gen_id, {"role": "assistant", "content": p}) for p in Wire.pieces(text)]
        chunks.append(Wire.chat_chunk(gen_id, {"content": ""}, finish="stop"))
        if usage is not None:
            chunks.append(Wire.chat_chunk(gen_id, None, usage=usage))
        return chunks

    @staticmethod
    def chat_call(
        name: str, arguments: str, call_id: str, usage: Mapping[str, Any] | None, gen_id: str
    ) -> list[dict[str, Any]]:
        """A whole Chat Completions round calling one tool, arguments appended by index."""
        first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        chunks = [Wire.chat_chunk(gen_id, {"role": "assistant", "content": None, "tool_calls": [first]})]
        chunks += [
            Wire.chat_chunk(gen_id, {"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
            for p in Wire.pieces(arguments)
        ]
        chunks.append(Wire.chat_chunk(gen_id, {}, finish="tool_calls"))
        if usage is not None:
            chunks.append(Wire.chat_chunk(gen_id, None, usage=usage))
        return chunks

    @staticmethod
    def models(model_id: str, prompt: str = "0.000003", completion: str = "0.000015") -> dict[str, Any]:
        """A `/models` answer listing one priced model."""
        return {
            "data": [
                {
                    "id": model_id,
                    "context_length": 200000,
                    "pricing": {
                        "prompt": prompt,
                        "completion": completion,
                        "request": "0",
                        "web_search": "0.004",
                    },
                    "top_provider": {"max_completion_tokens": 64000},
                },
                {"id": "free/model:free", "pricing": {"prompt": "0", "completion": "0"}},
            ]
        }

    @staticmethod
    def generation(gen_id: str, total_cost: float) -> dict[str, Any]:
        """A `/generation` answer."""
        return {"data": {"id": gen_id, "total_cost": total_cost, "cancelled": True, "is_byok": False}}


@pytest.fixture
def wire() -> type[Wire]:
    """The wire builders."""
    return Wire


# --- loopback server ------------------------------------------------------------------------


@dataclass
class RawRequest:
    """One request the loopback server received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


Route = Callable[[RawRequest, anyio.abc.ByteStream], Awaitable[None]]


async def _read_request(stream: anyio.abc.ByteStream) -> RawRequest | None:
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive()
    path, _, query = target.partition("?")
    return RawRequest(method, path, query, headers, body)


async def respond(
    stream: anyio.abc.ByteStream, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> None:
    """Send a whole JSON response and let the connection close."""
    body = json.dumps(payload).encode()
    head = [f"HTTP/1.1 {status} {httpx.codes.get_reason_phrase(status)}", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    head += [f"Content-Length: {len(body)}", "Connection: close"]
    await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)


async def start_sse(stream: anyio.abc.ByteStream, gen_id: str, *, chunked_encoding: bool = False) -> None:
    """Send the head of a streamed answer; the body is sent raw (or chunked) afterwards."""
    head = [
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream",
        f"X-Generation-Id: {gen_id}",
        "Connection: close",
    ]
    if chunked_encoding:
        head.append("Transfer-Encoding: chunked")
    await stream.send(("\r\n".join(head) + "\r\n\r\n").encode())


def http_chunk(data: bytes) -> bytes:
    """`data` framed as one HTTP/1.1 chunk."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def wait_closed(stream: anyio.abc.ByteStream) -> None:
    """Return once the client has closed its side of the connection."""
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return


@dataclass
class LoopbackServer:
    """A raw HTTP/1.1 server on 127.0.0.1: one request per connection, routed by path."""

    port: int = 0
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[RawRequest] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The base URL, shaped like OpenRouter's (`…/api/v1`)."""
        return f"http://127.0.0.1:{self.port}/api/v1"

    # raw-response helpers, for routes written inside tests
    respond = staticmethod(respond)
    start_sse = staticmethod(start_sse)
    http_chunk = staticmethod(http_chunk)
    wait_closed = staticmethod(wait_closed)

    def hits(self, path: str) -> list[RawRequest]:
        """Requests received on `path` (e.g. `/api/v1/responses`)."""
        return [r for r in self.requests if r.path == path]

    async def handle(self, stream: anyio.abc.ByteStream) -> None:
        """Serve one connection."""
        async with stream:
            request = await _read_request(stream)
            if request is None:
                return
            self.requests.append(request)
            route = self.routes.get(request.path)
            if route is None:
                await respond(stream, 404, {"error": {"code": 404, "message": "no such route"}})
                return
            await route(request, stream)


@pytest.fixture
async def loopback() -> AsyncIterator[LoopbackServer]:
    """A `LoopbackServer` listening on 127.0.0.1 for the duration of the test."""
    server = LoopbackServer()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.handle)
        yield server
        tg.cancel_scope.cancel()
    await listener.aclose()


def _wire_usage(usage: RoundUsage, cost: float | None, names: tuple[str, str, str]) -> dict[str, Any]:
    """A wire `usage` object under the endpoint's field `names` (input, output, details)."""
    input_name, output_name, details_name = names
    wire: dict[str, Any] = {
        input_name: usage.input_tokens,
        output_name: usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    details = {
        k: v
        for k, v in (("cached_tokens", usage.cached_tokens), ("cache_write_tokens", usage.cache_write_tokens))
        if v is not None
    }
    if details:
        wire[details_name] = details
    if cost is not None:
        wire["cost"] = cost
    return wire
