"""Layer state for checkpoints: `Execution.layers.export_state()` / `import_state()` (RS-14)."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from noetic.execution_context import Context
from noetic.layers import CallResult, ContextLayer, LayerContext, layer_data
from noetic.runtime import Execution
from noetic.streams import TurnStream
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Notebook(ContextLayer):
    id = "notebook"
    slot = 100
    scope = "execution"
    provides = {"pages": layer_data(lambda state: state)}  # noqa: RUF012

    def __init__(self) -> None:
        self.inits = 0

    async def init(self, ctx: LayerContext) -> list[str]:
        self.inits += 1
        return []

    async def store(self, ctx: LayerContext, response: CallResult) -> list[str]:
        return [*ctx.state, response.text]


class Broken(ContextLayer):
    id = "broken"
    slot = 200
    on_init_error = "disable"

    async def init(self, ctx: LayerContext) -> None:
        raise RuntimeError("no")


async def test_export_is_plain_json_and_import_skips_init() -> None:
    """The exported root states are JSON; imported ones are not initialized again, and a
    layer disabled at export time stays disabled."""
    exported: list[dict[str, Any]] = []
    notebook = Notebook()
    graph = nt.sequence(
        "g",
        [
            nt.call_model("a"),
            nt.run_code("x", lambda v, ctx: exported.append(ctx._exec.layers.export_state())),
        ],
    )
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=ScriptedModel.echo(), layers=[notebook, Broken()]
    ) as h:
        await h.run("page one")
        data = json.loads(json.dumps(exported[0]))
        assert data == {
            "version": 1,
            "layers": {
                "notebook": {"state": ["page one"], "disabled": False},
                "broken": {"state": None, "disabled": True},
            },
        }
        # imported before the root frame exists (the durable resume path) …
        run = Execution(h, TurnStream("h"), thread_id="default")
        run.layers.import_state(data)
        ctx = Context(run)
        await run.layers.start_root(ctx, h.layer_set)
        assert notebook.inits == 1
        assert ctx.context["notebook"].pages == ["page one"]
        assert "broken" not in ctx.context
        # … or after it was attached (create_context)
        other = h.create_context()
        other._exec.layers.import_state({"layers": {"notebook": {"state": ["restored"], "disabled": False}}})
        await other._exec.layers.start_root(other, h.layer_set)
        assert other.context["notebook"].pages == ["restored"]
        assert notebook.inits == 1


async def test_export_without_layers_is_empty() -> None:
    """An execution without layers exports nothing."""
    ctx = nt.AgentHarness("h").create_context()
    assert ctx._exec.layers.export_state() == {}
