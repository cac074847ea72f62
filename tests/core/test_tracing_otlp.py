"""Traces leave the process over OTLP/HTTP: a collector endpoint on 127.0.0.1, run inside the
test, receives the protobuf export of a traced run, and it decodes to the run's span tree."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply
from noetic.usage import RoundUsage
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

pytestmark = pytest.mark.anyio


class Collector(BaseHTTPRequestHandler):
    """Accepts `POST /v1/traces` and keeps each decoded export request."""

    received: ClassVar[list[tuple[str, ExportTraceServiceRequest]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.append((self.path, request))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_spans_are_exported_over_otlp_http(collector: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=collector, timeout=10)))
    model = ScriptedModel(
        [text_reply("hi there", usage=RoundUsage(input_tokens=5, output_tokens=2), cost=0.0001)]
    )
    async with nt.AgentHarness(
        "exported", agent_graph=nt.call_model("answer"), model=model, tracer_provider=provider
    ) as h:
        await h.run("hello")
    assert provider.force_flush(10_000)
    provider.shutdown()
    assert Collector.received, "nothing reached the collector"
    assert {path for path, _ in Collector.received} == {"/v1/traces"}
    spans = {}
    for _, request in Collector.received:
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}[
                "service.name"
            ]
            assert service == "otlp-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "noetic"
                for span in scope_spans.spans:
                    spans[span.name] = span
    assert set(spans) == {"invoke_agent exported", "call_model answer", "chat scripted"}
    root, step, chat = spans["invoke_agent exported"], spans["call_model answer"], spans["chat scripted"]
    assert step.parent_span_id == root.span_id and chat.parent_span_id == step.span_id
    attributes = {a.key: a.value for a in chat.attributes}
    assert attributes["gen_ai.request.model"].string_value == "scripted"
    assert attributes["gen_ai.usage.input_tokens"].int_value == 5
    assert attributes["noetic.cost"].double_value == pytest.approx(0.0001)
