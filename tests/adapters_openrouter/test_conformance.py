"""The model-adapter conformance suite (TU-2, TU-8) against the OpenRouter adapter.

The subject is the real adapter over `httpx.MockTransport`: each scenario round becomes an
OpenRouter-shaped event stream (Responses or Chat Completions), `/models` and `/generation`
answer for held-cost reconciliation, and a stalled round is a body that blocks after its first
delta and records when httpx closes it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from noetic.testing.model_conformance import (
    MODEL_CONFORMANCE_CHECKS,
    ConformanceSubject,
    Scenario,
    StallRound,
    SubjectFactory,
    TextRound,
)
from noetic_adapters_openrouter import BillingPolicy, OpenRouterProvider

TEST_KEY = "sk-or-v1-placeholder-not-a-real-key-0000"
MODEL = "test/conformance-model"


def subject_factory(api: str, wire: Any, clients: list[httpx.AsyncClient]) -> SubjectFactory:
    """Subjects for `api` ('responses' or 'chat'); their clients are collected for closing."""

    def make(scenario: Scenario) -> ConformanceSubject:
        stalled, released = anyio.Event(), anyio.Event()
        sent: list[dict[str, Any]] = []

        async def stall(gen_id: str) -> AsyncIterator[bytes]:
            if api == "responses":
                head = [*wire.responses_head(gen_id), {"type": "response.output_text.delta", "delta": "Once"}]
            else:
                head = [wire.chat_chunk(gen_id, {"role": "assistant", "content": "Once"})]
            yield wire.sse(head, done=False)
            stalled.set()
            try:
                await anyio.sleep_forever()
            finally:
                released.set()

        async def pieces(body: bytes) -> AsyncIterator[bytes]:
            for start in range(0, len(body), 5):
                yield body[start : start + 5]

        def answer(body: dict[str, Any], gen_id: str) -> bytes:
            round_ = scenario.rounds[len(sent) - 1]
            assert not isinstance(round_, StallRound)
            usage_of = wire.responses_usage if api == "responses" else wire.chat_usage
            usage = usage_of(round_.usage, round_.cost)
            if isinstance(round_, TextRound):
                build = wire.responses_text if api == "responses" else wire.chat_text
                return bytes(wire.sse(build(round_.text, usage, gen_id)))
            tool = body["tools"][0]
            wire_name = tool["name"] if api == "responses" else tool["function"]["name"]
            build = wire.responses_call if api == "responses" else wire.chat_call
            return bytes(wire.sse(build(wire_name, round_.arguments, f"call_{gen_id}", usage, gen_id)))

        def handler(request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/models"):
                return httpx.Response(200, json=wire.models(MODEL))
            if request.url.path.endswith("/generation"):
                return httpx.Response(200, json=wire.generation(request.url.params["id"], 0.0042))
            body = json.loads(request.content)
            sent.append(body)
            gen_id = f"gen-conformance-{len(sent)}"
            headers = {"content-type": "text/event-stream", "x-generation-id": gen_id}
            if isinstance(scenario.rounds[len(sent) - 1], StallRound):
                return httpx.Response(200, headers=headers, content=stall(gen_id))
            return httpx.Response(200, headers=headers, content=pieces(answer(body, gen_id)))

        def sent_call_ids(index: int) -> tuple[set[str], set[str]]:
            body = sent[index]
            if api == "responses":
                calls = {i["call_id"] for i in body["input"] if i.get("type") == "function_call"}
                outputs = {i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"}
            else:
                calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls", [])}
                outputs = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
            return calls, outputs

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        clients.append(client)
        provider = OpenRouterProvider(
            api_key=TEST_KEY,
            http_client=client,
            billing=BillingPolicy(first_poll_delay=0.0, max_poll_delay=0.0),
        )
        return ConformanceSubject(provider.model(MODEL, api=api), stalled, released, sent_call_ids)  # type: ignore[arg-type]

    return make


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("check", MODEL_CONFORMANCE_CHECKS, ids=lambda c: c.__name__)
async def test_openrouter_adapter_conforms(
    check: Callable[[SubjectFactory], Awaitable[None]], api: str, wire: Any
) -> None:
    clients: list[httpx.AsyncClient] = []
    try:
        await check(subject_factory(api, wire, clients))
    finally:
        for client in clients:
            await client.aclose()
