"""The README's ReAct example pays for the rounds the conversation needs (issue 13, point 1)."""

from __future__ import annotations

import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio


async def test_readme_react_example_makes_exactly_two_model_calls() -> None:
    """Issue 13, point 1: one tool call and one answer are two model calls, not three."""
    weather = nt.tool(
        "weather",
        description="Current weather for a city",
        input={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        execute=lambda args, ctx: {"city": args["city"], "temp_c": 21},
    )
    agent = nt.loop(
        "react",
        nt.call_model("think", instructions="Answer briefly.", tools=[weather]),
        until=nt.until.no_tool_calls(),
    )
    model = ScriptedModel([tool_call_reply("weather", {"city": "Rome"}), text_reply("Yes, 21 °C.")])
    async with nt.AgentHarness("assistant", agent_graph=agent, model=model) as h:
        response = await h.run("Is it warm in Rome?")
    assert response.text == "Yes, 21 °C."
    assert len(model.calls) == 2
    assert [i.type for i in response.items] == ["message", "function_call", "function_call_output", "message"]
