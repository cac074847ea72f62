"""Live calls to the real OpenRouter API: skipped unless `OPENROUTER_API_KEY` is set.

Run with `OPENROUTER_API_KEY=… uv run pytest tests/adapters_openrouter/test_live.py -m live`.
`OPENROUTER_LIVE_MODEL` picks the model (default: a cheap one). Each test costs a fraction of
a cent.
"""

from __future__ import annotations

import os

import noetic as nt
import pytest
from noetic.items import FunctionCallItem, user_message
from noetic.model import ModelRequest, ModelResponse, TextDelta
from noetic.testing.model_conformance import ManualAbort
from noetic_adapters_openrouter import OpenRouterProvider

pytestmark = [
    pytest.mark.live,
    pytest.mark.anyio,
    pytest.mark.skipif(not os.environ.get("OPENROUTER_API_KEY"), reason="OPENROUTER_API_KEY is not set"),
]

MODEL = os.environ.get("OPENROUTER_LIVE_MODEL", "openai/gpt-4o-mini")


@pytest.fixture
def anyio_backend() -> str:
    """One backend is enough for paid calls."""
    return "asyncio"


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_live_text_round(api: str) -> None:
    async with OpenRouterProvider() as provider:
        model = provider.model(MODEL, api=api)  # type: ignore[arg-type]
        request = ModelRequest(
            MODEL, [user_message("Reply with the single word: pong")], params={"max_output_tokens": 20}
        )
        events = [e async for e in model.stream(request, cancel=ManualAbort())]
    response = events[-1]
    assert isinstance(response, ModelResponse)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "pong" in text.lower()
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.cost is not None
    assert response.generation_id


async def test_live_tool_round_trip_through_the_harness() -> None:
    calls: list[str] = []

    async def weather(args: dict[str, str], ctx: nt.Context) -> str:
        calls.append(args["city"])
        return "sunny, 21 C"

    tool = nt.tool(
        "get_weather",
        description="Current weather of a city.",
        input={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        execute=weather,
    )
    agent = nt.call_model("answer", instructions="Use the tool, then answer in one sentence.", tools=[tool])
    async with (
        OpenRouterProvider() as provider,
        nt.AgentHarness("live", agent_graph=agent, model=provider.model(MODEL)) as harness,
    ):
        response = await harness.run("What's the weather in Paris?")
    assert calls
    assert any(isinstance(i, FunctionCallItem) for i in response.items)
    assert "sunny" in response.text.lower() or "21" in response.text
    assert response.cost > 0
    assert response.held_cost == 0
