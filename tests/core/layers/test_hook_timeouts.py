"""Each newer hook runs under its own timeout (default or `timeouts=`); a hook that overruns
is handled by that hook's failure policy and the turn goes on."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.layers import ContextLayer
from noetic.layers.contract import DEFAULT_TIMEOUTS
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Slow(ContextLayer):
    """Defines one hook, which sleeps far past its 50 ms timeout."""

    id = "slow"
    slot = 100
    scope = "execution"

    def __init__(self, hook: str):
        self.timeouts = {hook: 0.05}

        async def sleepy(*args: Any) -> None:
            await anyio.sleep(10)

        setattr(self, hook, sleepy)


def test_the_newer_hooks_have_default_timeouts() -> None:
    """Defaults: 5 s for the item pipelines and the tool guard, 10 s for the response judge
    and parent updates."""
    assert {h: DEFAULT_TIMEOUTS[h] for h in ("on_item_append", "project_history", "before_tool_call")} == {
        "on_item_append": 5.0,
        "project_history": 5.0,
        "before_tool_call": 5.0,
    }
    assert DEFAULT_TIMEOUTS["after_model_call"] == DEFAULT_TIMEOUTS["on_parent_update"] == 10.0


@pytest.mark.parametrize("hook", ["on_item_append", "project_history", "after_model_call"])
async def test_an_overrunning_hook_is_cut_and_logged(hook: str, caplog: pytest.LogCaptureFixture) -> None:
    """The hook is stopped at its timeout, logged as failed, and the turn answers normally."""
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=ScriptedModel.echo(), layers=[Slow(hook)])
    with caplog.at_level(logging.WARNING, logger="noetic.layers"), anyio.fail_after(5):
        async with h:
            response = await h.run("still answered")
    assert response.text == "still answered"
    assert any(f"{hook} failed: TimeoutError" in r.getMessage() for r in caplog.records)
