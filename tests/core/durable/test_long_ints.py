"""An int with more decimal digits than Python writes as text is not plain JSON.

`json.dumps(10**5000)` raises (`sys.get_int_max_str_digits()`, 4300 by default), so such an
int in a layer state or a turn input must be refused up front, not break every checkpoint of
the execution afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.durable.snapshot import is_plain_json
from noetic.layers import CallResult, ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply

LONG = 10**5000


@pytest.mark.parametrize(
    "value",
    [LONG, -LONG, [LONG], {"n": LONG}, [[1, {"n": -LONG}]]],
    ids=["top", "neg", "list", "dict", "deep"],
)
def test_an_int_too_long_for_text_is_not_plain_json(value: Any) -> None:
    assert not is_plain_json(value)


def test_ints_up_to_the_digit_limit_are_plain_json() -> None:
    limit = sys.get_int_max_str_digits()
    widest = 10**limit - 1  # exactly `limit` digits
    assert is_plain_json([widest, -widest, {"n": widest}, 2**1920])
    assert not is_plain_json([widest + 1])


class Noting(ContextLayer):
    id = "noting"
    slot = 100
    scope = "execution"

    def __init__(self, state: Any) -> None:
        self.next_state = state

    async def store(self, ctx: LayerContext, response: CallResult) -> Any:
        return self.next_state


@pytest.mark.anyio
async def test_a_layer_state_with_a_long_int_is_refused_and_the_turn_still_checkpoints(
    tmp_path: Path,
) -> None:
    storage = f"sqlite:///{tmp_path}/c.db"
    model = ScriptedModel([text_reply("first"), text_reply("again")])
    graph = nt.call_model("think")
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=model, layers=[Noting({"n": LONG})], storage=storage
    ) as h:
        result = await h.run("go", thread_id="t", execution_id="x1")
    assert result.checkpoint_error is None
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=model, layers=[Noting(None)], storage=storage
    ) as h:
        resumed = await h.resume("x1")
    assert resumed.text == "first"
    assert len(model.calls) == 1  # the completed turn replays


@pytest.mark.anyio
async def test_a_long_int_input_is_not_stored_but_the_execution_is(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path}/c.db"
    down = {"on": True}

    def second(value: Any) -> str:
        if down["on"]:
            raise ConnectionError("down")
        return "done"

    graph = nt.sequence("s", [nt.run_code("first", lambda value: "one"), nt.run_code("second", second)])
    async with nt.AgentHarness("h", agent_graph=graph, storage=storage) as h:
        with pytest.raises(nt.NoeticError):
            await h.run(LONG, execution_id="x")
    down["on"] = False
    async with nt.AgentHarness("h", agent_graph=graph, storage=storage) as h:
        with pytest.raises(nt.NoeticError) as needed:
            await h.resume("x")
        assert needed.value.code == "RESUME_INPUT_REQUIRED"
        resumed = await h.resume("x", input=LONG)
    assert resumed.output == "done"
