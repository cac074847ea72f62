"""A recorded OpenRouter exchange replayed through `AgentHarness`, traced: the model-round
spans carry what the provider reported (GenAI usage, cache reads, cost, generation id), and
no span holds the key."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import noetic as nt
import pytest
from noetic_adapters_openrouter import OpenRouterProvider, RetryPolicy
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytestmark = pytest.mark.anyio

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
MODEL = "openai/gpt-5-mini"


async def test_a_replayed_fixture_traces_its_usage_and_cost(cassettes: Callable[..., Any]) -> None:
    cassette = cassettes("test_openrouter_usage.yaml")  # call 1 reports no cost, call 2 does
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider = OpenRouterProvider(
        api_key=TEST_KEY, http_client=cassette.client, retry=RetryPolicy(max_attempts=1)
    )
    model = provider.model(MODEL, api="chat", stream=False)
    graph = nt.sequence("turn", [nt.call_model("venus"), nt.call_model("mars")])
    async with nt.AgentHarness(
        "planets", agent_graph=graph, model=model, tracer_provider=tracer_provider, trace_content=True
    ) as harness:
        response = await harness.run("Tell me about the planets")
    cassette.assert_consumed()
    spans = exporter.get_finished_spans()
    first, second = [s for s in spans if s.name == f"chat {MODEL}"]
    one, two = dict(first.attributes or {}), dict(second.attributes or {})
    assert one["gen_ai.provider.name"] == two["gen_ai.provider.name"] == "openrouter"
    assert one["gen_ai.request.model"] == MODEL
    assert (one["gen_ai.usage.input_tokens"], one["gen_ai.usage.output_tokens"]) == (17, 1515)
    assert one["noetic.usage.reasoning_tokens"] == 704
    assert "gen_ai.usage.cache_read.input_tokens" not in one  # not reported: absent, not 0
    assert one["noetic.cost"] == 0.0
    assert (two["gen_ai.usage.input_tokens"], two["gen_ai.usage.output_tokens"]) == (17, 2177)
    assert two["gen_ai.usage.cache_read.input_tokens"] == 0  # reported zero: kept as 0
    assert two["noetic.cost"] == two["noetic.billed_cost"] == 0.00435825
    assert str(two["gen_ai.response.id"]).startswith("gen-")
    root = next(s for s in spans if s.name == "invoke_agent planets")
    assert (root.attributes or {})["noetic.cost"] == pytest.approx(response.cost)
    dumped = json.dumps([json.loads(s.to_json()) for s in spans])
    assert TEST_KEY not in dumped and "Bearer" not in dumped
