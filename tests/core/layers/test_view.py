"""View assembly: band order, the token cap, history trimming and orphan stripping (AN-1, BG-6)."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    Item,
    assistant_message,
    developer_message,
    system_message,
    user_message,
)
from noetic.layers import ContextLayer, LayerContext, assemble_view
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic.tokens import estimate_items


def one_token_each(item: Item) -> int:
    return 1


def ids(items: Any) -> list[str]:
    return [getattr(i, "text", None) or i.type for i in items]


def test_an_1_band_order() -> None:
    """AN-1: [system][anchor][history][live][supersedes][tail]."""
    view = assemble_view(
        system=[system_message("sys")],
        anchor=[developer_message("a1"), developer_message("a2")],
        history=[user_message("h1"), assistant_message("h2")],
        live=[developer_message("l1")],
        supersedes=[developer_message("s1")],
        tail=[developer_message("t1")],
    )
    assert ids(view.items) == ["sys", "a1", "a2", "h1", "h2", "l1", "s1", "t1"]
    assert ids(view.history) == ["h1", "h2"]


def test_bg_6_cap_keeps_system_tail_supersedes_and_fills_bands_item_by_item() -> None:
    """BG-6: system, tail and supersedes always stay; an anchor item that does not fit is
    skipped while a later one that fits is kept; history keeps the newest that fit."""
    sizes = {"big": 5}

    def tokens(item: Item) -> int:
        return sizes.get(getattr(item, "text", ""), 1)

    view = assemble_view(
        system=[system_message("sys")],
        anchor=[developer_message("a1"), developer_message("big"), developer_message("a3")],
        history=[user_message(f"h{i}") for i in range(6)],
        live=[developer_message("l1")],
        supersedes=[developer_message("s1")],
        tail=[developer_message("t1")],
        token_budget=8,
        tokens=tokens,
    )
    # 3 always-kept, a1 + a3 (big skipped), l1 → 6 used; history gets the newest 2
    assert ids(view.items) == ["sys", "a1", "a3", "h4", "h5", "l1", "s1", "t1"]


def test_bg_6_history_trimming_stops_at_the_first_item_that_does_not_fit() -> None:
    """History is contiguous: an old small item never jumps over a newer big one."""
    sizes = {"huge": 10}
    view = assemble_view(
        history=[user_message("old"), user_message("huge"), user_message("new")],
        token_budget=5,
        tokens=lambda i: sizes.get(getattr(i, "text", ""), 1),
    )
    assert ids(view.items) == ["new"]


def test_bg_6_orphan_calls_and_outputs_are_stripped() -> None:
    """BG-6: a call whose output was trimmed away, or an output without its call, is dropped."""
    call_a = FunctionCallItem(call_id="a", name="t", arguments="{}")
    out_a = FunctionCallOutputItem(call_id="a", output="1")
    call_b = FunctionCallItem(call_id="b", name="t", arguments="{}")
    out_b = FunctionCallOutputItem(call_id="b", output="2")
    dangling = FunctionCallItem(call_id="c", name="t", arguments="{}")
    history: list[Item] = [call_a, out_a, user_message("u"), call_b, out_b, dangling]
    view = assemble_view(history=history, token_budget=4, tokens=one_token_each)
    # newest 4: user, call_b, out_b, dangling → the dangling call is stripped
    assert view.items == (user_message_like(view.items[0]), call_b, out_b)
    trimmed = assemble_view(history=history, token_budget=5, tokens=one_token_each)
    assert out_a not in trimmed.items  # its call fell off the front: the output is an orphan


def user_message_like(item: Item) -> Item:
    assert getattr(item, "text", None) == "u"
    return item


def test_window_size_caps_history_items() -> None:
    """A sliding window keeps at most `window_size` history items."""
    view = assemble_view(history=[user_message(str(i)) for i in range(5)], window_size=2)
    assert ids(view.items) == ["3", "4"]


class Notes(ContextLayer):
    id = "notes"
    slot = 100

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "remember this"


@pytest.mark.anyio
async def test_bg_6_a_small_projection_trims_the_request_not_the_log() -> None:
    """With a tiny token budget the request keeps the layer and the newest history; the log
    itself still has everything (IL-1). System messages lead the view."""
    model = ScriptedModel([text_reply("one"), text_reply("two"), text_reply("three")])
    async with nt.AgentHarness(
        "h",
        agent_graph=nt.call_model("a"),
        model=model,
        layers=[Notes()],
        projection={"token_budget": 60, "response_reserve": 20},
    ) as h:
        await h.run([system_message("be terse"), user_message("first question " * 5)])
        await h.run("second question " * 5)
        response = await h.run("third")
    last = model.calls[-1].items
    assert getattr(last[0], "role", None) == "system"
    assert "remember this" in [getattr(i, "text", None) for i in last]
    assert user_message_texts(last)[-1] == "third"
    assert "first question " * 5 not in user_message_texts(last)
    assert "first question " * 5 in user_message_texts(response.items)
    usage = response.last_layer_usage
    assert usage is not None  # LU-4: history counts the log items the request carried
    assert usage.history_tokens == estimate_items(
        [i for i in last if getattr(i, "text", None) != "remember this"]
    )


def user_message_texts(items: Any) -> list[str]:
    return [i.text for i in items if getattr(i, "role", None) == "user"]


@pytest.mark.anyio
async def test_tool_rounds_see_earlier_outputs_with_the_layers_around_them() -> None:
    """Each round of the tool loop is assembled afresh: round 2 sees round 1's call and output
    after the anchored layer, in one request."""
    echo = nt.tool("echo", description="Echo.", input={"type": "object"}, execute=lambda args: args)
    model = ScriptedModel([tool_call_reply("echo", {"x": 1}), text_reply("done")])
    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("a", tools=[echo]), model=model, layers=[Notes()]
    ) as h:
        await h.run("go")
    second = model.calls[1].items
    assert [i.type for i in second] == ["message", "message", "function_call", "function_call_output"]
    assert getattr(second[0], "text", None) == "remember this"
    assert model.calls[0].items[0] is second[0]  # the same pinned item, byte for byte
