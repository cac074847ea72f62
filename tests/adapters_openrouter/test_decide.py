"""A `decide` step on the OpenRouter adapter (MockTransport): the answers' JSON Schema goes out
as the strict response format, the JSON reply comes back as native answers (DC-1)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import noetic as nt
import pytest
from noetic.usage import RoundUsage
from noetic_adapters_openrouter import OpenRouterProvider

pytestmark = pytest.mark.anyio

QUESTIONS = [
    nt.question("ship", "Ship it?", kind="yes_no"),
    nt.question("risk", "Risk level?", kind="choice", choices=["low", "high"]),
]


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_decide_answers_natively_through_the_openrouter_response_format(wire: Any, api: str) -> None:
    sent: list[dict[str, Any]] = []
    reply = json.dumps({"ship": True, "risk": None})

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json=wire.models("a/b"))
        sent.append(json.loads(request.content))
        usage = RoundUsage(input_tokens=40, output_tokens=9)
        if api == "chat":
            events = wire.chat_text(reply, wire.chat_usage(usage, 0.0002), "gen-d")
        else:
            events = wire.responses_text(reply, wire.responses_usage(usage, 0.0002), "gen-d")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=wire.sse(events))

    metas: list[Any] = []
    graph = nt.sequence(
        "s",
        [
            nt.decide("d", QUESTIONS),
            nt.run_code("meta", lambda v, ctx: metas.append(ctx.last_step_meta) or v),
        ],
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = OpenRouterProvider(api_key="k", http_client=client).model("a/b", api=api)  # type: ignore[arg-type]
        async with nt.AgentHarness("h", agent_graph=graph, model=model) as h:
            response = await h.run("Release 2.1 passed every check.")
    assert response.output == {"ship": True}
    decision = metas[0].decision
    assert (decision.model_id, decision.source, decision.refused) == ("a/b", "native", ("risk",))
    assert response.cost == pytest.approx(0.0002)
    body = sent[0]
    schema = (
        body["response_format"]["json_schema"]["schema"]
        if api == "chat"
        else body["text"]["format"]["schema"]
    )
    assert schema["required"] == ["ship", "risk"] and schema["additionalProperties"] is False
