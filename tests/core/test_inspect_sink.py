"""`inspect=` / `NOETIC_INSPECT`: a harness pushes its stream events to a local inspector."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply, tool_call_reply


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, str, list[Any]]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def inspector() -> Iterator[tuple[str, list[tuple[str, str, list[Any]]]]]:
    """A stand-in inspector on 127.0.0.1 recording every push."""
    received: list[tuple[str, str, list[Any]]] = []
    handler = type("Handler", (_Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _agent() -> tuple[nt.Step, ScriptedModel]:
    tool = nt.tool("echo", description="Echo.", input={"type": "object"}, execute=lambda args: args)
    model = ScriptedModel([tool_call_reply("echo", {"x": "<i>1</i>"}), text_reply("done")])
    return nt.call_model("a", tools=[tool]), model


@pytest.mark.anyio
async def test_every_stream_event_reaches_the_inspector_as_json(inspector: Any) -> None:
    url, received = inspector
    graph, model = _agent()
    async with nt.AgentHarness("h", agent_graph=graph, model=model, inspect=url) as h:
        await h.run("go")
        assert h.inspect_sink is not None
        assert await anyio.to_thread.run_sync(h.inspect_sink.flush)
    assert {(path, kind) for path, kind, _ in received} == {("/api/live", "application/json")}
    events = [event for _, _, batch in received for event in batch]
    types = [event["type"] for event in events]
    assert types[0] == "h:turn_started" and types[-1] == "h:turn_completed"
    outputs = [
        e["data"]["item"]
        for e in events
        if e["type"] == "h:item_appended" and e["data"]["item"]["type"] == "function_call_output"
    ]
    assert json.loads(outputs[0]["output"]) == {"x": "<i>1</i>"}


def test_the_environment_variable_turns_it_on_and_bad_urls_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOETIC_INSPECT", "http://127.0.0.1:8765/")
    harness = nt.AgentHarness("h", agent_graph=nt.run_code("c", lambda v: v))
    assert harness.inspect_sink is not None and harness.inspect_sink.url == "http://127.0.0.1:8765/api/live"
    monkeypatch.delenv("NOETIC_INSPECT")
    assert nt.AgentHarness("h", agent_graph=nt.run_code("c", lambda v: v)).inspect_sink is None
    for bad in ("https://127.0.0.1:8765", "http://example.com:8765", "file:///etc/passwd", 8765):
        with pytest.raises(nt.NoeticConfigError) as caught:
            nt.AgentHarness("h", agent_graph=nt.run_code("c", lambda v: v), inspect=bad)  # type: ignore[arg-type]
        assert caught.value.code == "INSPECT_URL_INVALID"


@pytest.mark.anyio
async def test_an_unreachable_inspector_never_fails_the_run(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    graph, model = _agent()
    with caplog.at_level(logging.WARNING, logger="noetic.inspect"):
        async with nt.AgentHarness(
            "h", agent_graph=graph, model=model, inspect=f"http://127.0.0.1:{port}"
        ) as h:
            response = await h.run("go")
            assert h.inspect_sink is not None
            assert await anyio.to_thread.run_sync(h.inspect_sink.flush)
    assert response.text == "done"
    assert len([r for r in caplog.records if "could not send events" in r.getMessage()]) == 1
