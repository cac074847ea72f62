"""A model's `scratchpad/update` that no checkpoint could store (NaN, Infinity, nesting past
the checkpoint's depth) is a tool error the model sees; the notes stay as they were and the
execution's checkpoints go on, so a completed execution never runs again on resume.
Real SQLite files, a second process resuming."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio

GRAPH = nt.loop("r", nt.call_model("think"), until=nt.until.no_tool_calls())

RESUME = """
import sys, anyio, noetic as nt
from noetic.testing import ScriptedModel, text_reply
g = nt.loop("r", nt.call_model("think"), until=nt.until.no_tool_calls())
async def main():
    m = ScriptedModel([text_reply("ran again")])
    async with nt.AgentHarness("sp", agent_graph=g, model=m, layers=["scratchpad"], storage=sys.argv[1]) as h:
        print((await h.resume("x1")).text, len(m.calls))
anyio.run(main)
"""


@pytest.mark.parametrize(
    "arguments",
    ['{"x": NaN}', '{"x": Infinity}', '{"x": ' + "[" * 300 + "]" * 300 + "}"],
    ids=["nan", "infinity", "deep"],
)
async def test_an_unstorable_update_is_a_tool_error(tmp_path: Path, arguments: str) -> None:
    storage = f"sqlite:///{tmp_path / 'pad.db'}"
    model = ScriptedModel([tool_call_reply("scratchpad/update", arguments), text_reply("ok")])
    async with nt.AgentHarness(
        "sp", agent_graph=GRAPH, model=model, layers=["scratchpad"], storage=storage
    ) as h:
        response = await h.run("go", thread_id="t", execution_id="x1")
    assert response.text == "ok" and response.checkpoint_error is None
    outputs = [i for i in response.items if isinstance(i, FunctionCallOutputItem)]
    assert len(outputs) == 1
    error = json.loads(outputs[0].output)["error"]
    assert error.startswith("[INVALID_LAYER_STATE] scratchpad update rejected")
    with anyio.fail_after(120):
        done = await anyio.run_process([sys.executable, "-c", RESUME, storage])
    assert done.stdout.decode().split() == ["ok", "0"]  # replayed from the checkpoint: no model call
