"""`with_context` and `call_model(layers=)`: layers added for one step (LY-1, LY-10, LY-11)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import noetic as nt
import pytest
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio

Events = list[tuple[Any, ...]]


def keys(box: list[Any]) -> nt.Step:
    return nt.run_code("keys", lambda v, ctx: box.append(sorted(ctx.context)))


async def test_with_context_adds_layers_for_its_child_only(events: Events, probe: Callable[..., Any]) -> None:
    """The added layer is initialized on entry, visible inside, torn down on exit; outside,
    ctx.context is what it was."""
    seen: list[Any] = []
    inner = nt.with_context(
        "w", nt.sequence("in", [keys(seen), nt.call_model("m")]), layers=[probe("extra", slot=10)]
    )
    graph = nt.sequence("g", [keys(seen), inner, keys(seen)])
    model = ScriptedModel.echo()
    async with nt.AgentHarness("h", agent_graph=graph, model=model, layers=[probe("base", slot=20)]) as h:
        await h.run("go")
    assert seen == [["base"], ["base", "extra"], ["base"]]
    assert [getattr(i, "text", None) for i in model.calls[0].items][:2] == ["extra notes", "base notes"]
    extra = [e[1] for e in events if e[0] == "extra"]
    assert extra == ["init", "recall", "store", "on_complete", "dispose"]
    base = [e[1] for e in events if e[0] == "base"]
    assert base == ["init", "recall", "store", "on_complete", "dispose"]
    assert events.index(("extra", "dispose", 0)) < events.index(("base", "on_complete", "success", 0))


async def test_with_context_layer_replaces_the_outer_one_with_the_same_id(
    events: Events, probe: Callable[..., Any]
) -> None:
    """A layer with an inherited id replaces it inside the scope; the outer comes back after."""
    model = ScriptedModel.echo()
    inner = nt.with_context("w", nt.call_model("inside"), layers=[probe("notes", text="inner text")])
    graph = nt.sequence("g", [inner, nt.call_model("outside")])
    outer = probe("notes", text="outer text")
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=model, layers=[outer], context_cache={"enabled": False}
    ) as h:
        await h.run("go")
    texts = [
        [getattr(i, "text", None) for i in c.items if getattr(i, "role", None) == "developer"]
        for c in model.calls
    ]
    assert texts == [["inner text"], ["outer text"]]


async def test_call_model_layers_apply_to_that_call(events: Events, probe: Callable[..., Any]) -> None:
    """call_model(layers=) adds layers for that one model step, by object or by name."""

    class Plugin:
        @nt.hookimpl
        def register_context_layers(self, register: Any) -> None:
            register("named", lambda: probe("named", slot=5))

    model = ScriptedModel.echo()
    graph = nt.sequence("g", [nt.call_model("a", layers=[probe("step"), "named"]), nt.call_model("b")])
    async with nt.AgentHarness("h", agent_graph=graph, model=model, plugins=[Plugin()]) as h:
        response = await h.run("go")
    first = [getattr(i, "text", None) for i in model.calls[0].items]
    assert first[:2] == ["named notes", "step notes"]
    assert [getattr(i, "role", None) for i in model.calls[1].items].count("developer") == 0
    assert response.last_layer_usage is not None
    assert response.last_layer_usage.layers == ()
    assert [e[1] for e in events if e[0] == "step"] == ["init", "recall", "store", "on_complete", "dispose"]


async def test_with_context_failure_completes_its_layers_as_failure(
    events: Events, probe: Callable[..., Any]
) -> None:
    """An error inside with_context tears its layers down with outcome 'failure'."""

    def boom(value: Any) -> Any:
        raise RuntimeError("inside")

    graph = nt.with_context("w", nt.run_code("b", boom), layers=[probe("scoped")])
    async with nt.AgentHarness("h", agent_graph=graph) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go")
    assert [e[2] for e in events if e[1] == "on_complete"] == ["failure"]
