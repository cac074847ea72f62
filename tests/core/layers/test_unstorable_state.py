"""Layer state a checkpoint cannot store is refused where it is set, never poisoning the
execution's later checkpoints (INVALID_LAYER_STATE), on a real SQLite file.

Before, such a state was accepted, every later snapshot of the execution failed to encode
(only a warning), and resuming the completed execution ran its steps — its model calls —
again. A completed execution's closing checkpoint that cannot be written is on the turn's
response (`checkpoint_error`).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.durable.memory import MemoryCheckpointStore
from noetic.layers import CallResult, ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"d": value}
    return value


class Noting(ContextLayer):
    """An execution-scoped layer whose `store` sets the state it was given."""

    id = "noting"
    slot = 100
    scope = "execution"

    def __init__(self, state: Any):
        self.next_state = state

    async def store(self, ctx: LayerContext, response: CallResult) -> Any:
        return self.next_state


GRAPH = nt.call_model("think")


@pytest.mark.parametrize(
    "state",
    [{"x": math.nan}, {"x": math.inf}, nested(250), ("a", "tuple")],
    ids=["nan", "inf", "deep", "tuple"],
)
async def test_a_hook_setting_unstorable_state_fails_and_checkpoints_go_on(
    tmp_path: Path, state: Any, caplog: pytest.LogCaptureFixture
) -> None:
    storage = f"sqlite:///{tmp_path / 'c.db'}"
    model = ScriptedModel([text_reply("first"), text_reply("again")])
    async with nt.AgentHarness(
        "h", agent_graph=GRAPH, model=model, layers=[Noting(state)], storage=storage
    ) as h:
        with caplog.at_level(logging.WARNING, logger="noetic"):
            response = await h.run("go", thread_id="t", execution_id="x1")
    assert response.text == "first" and response.checkpoint_error is None
    failures = [r.getMessage() for r in caplog.records if "store failed" in r.getMessage()]
    assert failures and "cannot be checkpointed" in failures[0]
    assert not any("checkpoint of execution" in r.getMessage() for r in caplog.records)
    async with nt.AgentHarness(
        "h", agent_graph=GRAPH, model=model, layers=[Noting(None)], storage=storage
    ) as h:
        assert (await h.resume("x1")).text == "first"  # replayed: no second model call
    assert len(model.calls) == 1


async def test_a_failing_closing_checkpoint_is_on_the_response(caplog: pytest.LogCaptureFixture) -> None:
    class Breaking(MemoryCheckpointStore):
        broken = False

        async def write(self, sets: Any, deletes: Any = ()) -> None:
            if self.broken:
                raise OSError("disk full")
            await super().write(sets, deletes)

    store = Breaking()

    def breaks(value: Any) -> Any:
        store.broken = True
        return value

    graph = nt.sequence("s", [nt.run_code("a", lambda v: v), nt.run_code("b", breaks)])
    async with nt.AgentHarness("h", agent_graph=graph, storage=store) as h:
        with caplog.at_level(logging.DEBUG, logger="noetic.durable"):
            response = await h.run("go", execution_id="x1")
    assert response.output == "go"
    error = response.checkpoint_error
    assert isinstance(error, nt.NoeticError) and error.code == "CHECKPOINT_STORE_FAILED"
    assert "disk full" in error.message
    ended = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(ended) == 1 and "x1" in ended[0].getMessage() and "completed" in ended[0].getMessage()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all(r.exc_info is None for r in warnings)  # one line each, no traceback
    assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)
