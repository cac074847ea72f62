"""Abort from inside the newer hooks (CTX-17): the hook runs to its end, then the step stops
with `cancelled` and the model is not called again."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.items import Item
from noetic.layers import ContextLayer, LayerContext, ModelCallDecision, ToolCallDecision
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Echo(BaseModel):
    text: str


ECHO = nt.tool("echo", description="Echo.", input=Echo, execute=lambda args: args.text)


class Aborter(ContextLayer):
    """Aborts the execution from its one hook, then answers normally."""

    id = "aborter"
    slot = 100
    scope = "execution"

    def __init__(self, hook: str, answer: Any = None):
        self.finished: list[str] = []

        async def hook_fn(ctx: LayerContext, *args: Any) -> Any:
            ctx.execution.abort(f"stop in {hook}")
            self.finished.append(hook)  # the hook itself runs to its end
            return answer(args) if answer is not None else None

        setattr(self, hook, hook_fn)


def keep(args: tuple[Any, ...]) -> list[Item]:
    return list(args[0])


@pytest.mark.parametrize(
    ("hook", "answer", "calls"),
    [
        ("on_item_append", keep, 0),
        ("project_history", keep, 0),
        ("after_model_call", lambda args: ModelCallDecision.guide("again"), 1),
        ("before_tool_call", lambda args: ToolCallDecision(), 1),
    ],
)
async def test_abort_in_a_hook_stops_the_step_before_the_next_model_call(
    hook: str, answer: Any, calls: int
) -> None:
    model = ScriptedModel([tool_call_reply("echo", {"text": "x"}), text_reply("done")])
    layer = Aborter(hook, answer)
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[ECHO]), model=model, layers=[layer])
    async with h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run("go")
    assert info.value.code == "cancelled"
    assert f"stop in {hook}" in str(info.value)
    assert layer.finished == [hook]
    assert len(model.calls) == calls
