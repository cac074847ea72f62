"""The overflow modes (BG-7, BG-8): `truncate` cuts old text, `summarize` replaces what does not
fit with a model-written summary whose cost is charged; `sliding_window` drops it."""

from __future__ import annotations

import logging
from typing import Any

import noetic as nt
import pytest
from noetic.items import MessageItem, item_text, user_message
from noetic.layers import ContextLayer, LayerContext, Projection
from noetic.layers.overflow import SUMMARY_TAG, TRUNCATE_FLOOR_CHARS, truncate_history
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply
from noetic.tokens import estimate_item_tokens

pytestmark = pytest.mark.anyio

LONG = "old detail " * 200  # about 550 tokens


class Note(ContextLayer):
    """A layer, so model steps assemble a budgeted view."""

    id = "note"
    slot = 100
    scope = "execution"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "be brief"


def harness(model: Any, overflow: str, **projection: Any) -> nt.AgentHarness:
    policy = {"token_budget": 400, "response_reserve": 50, "overflow": overflow, **projection}
    return nt.AgentHarness(
        "t", agent_graph=nt.call_model("m"), model=model, layers=[Note()], projection=policy
    )


def texts(request: ModelRequest) -> list[str]:
    return [item_text(i) for i in request.items if isinstance(i, MessageItem)]


async def test_sliding_window_drops_the_old_turn() -> None:
    """The default mode: the oversized first turn is left out of the second call."""
    model = ScriptedModel([text_reply("ok"), text_reply("fine")])
    async with harness(model, "sliding_window") as h:
        await h.run(LONG)
        await h.run("and now?")
    assert not any("old detail" in t for t in texts(model.calls[1]))


async def test_bg_7_truncate_keeps_the_turn_but_cuts_its_text() -> None:
    """`truncate`: the old message stays, shortened with a marker; the newest is intact."""
    model = ScriptedModel([text_reply("ok"), text_reply("fine")])
    async with harness(model, "truncate") as h:
        await h.run(LONG)
        await h.run("and now?")
    sent = texts(model.calls[1])
    cut = [t for t in sent if t.startswith("old detail")]
    assert len(cut) == 1 and "characters truncated]" in cut[0] and len(cut[0]) < len(LONG)
    assert sent[-1] == "and now?" or "and now?" in sent
    assert "ok" in sent


def test_bg_7_truncate_never_cuts_below_the_floor_or_the_newest_item() -> None:
    """Unit: the newest item is never cut, no text goes below the floor, and a history that
    fits comes back unchanged."""
    old, new = user_message("a" * 2000), user_message("b" * 2000)
    kept = truncate_history([old, new], 10, estimate_item_tokens)
    assert item_text(kept[1]) == "b" * 2000
    assert item_text(kept[0]).startswith("a" * TRUNCATE_FLOOR_CHARS)
    assert len(item_text(kept[0])) < 300
    assert truncate_history([old], 10_000, estimate_item_tokens) == [old]


async def test_bg_8_summarize_calls_the_model_and_charges_its_cost() -> None:
    """`summarize`: the overflow goes to the model in its own call; the next request carries
    the summary instead of the old turn; the summary's cost lands in cost and billed_cost."""
    summaries: list[ModelRequest] = []

    def answer(request: ModelRequest) -> Any:
        if request.instructions and "compress" in request.instructions:
            summaries.append(request)
            return text_reply("User shared old details.", cost=0.5, billed_cost=0.25)
        return text_reply("fine", cost=0.01)

    model = ScriptedModel(default=answer)
    async with harness(model, "summarize") as h:
        first = await h.run(LONG)
        second = await h.run("and now?")
    assert len(summaries) == 1  # the second turn reuses the summary of the same old turn
    assert "old detail" in item_text(summaries[0].items[0])
    final = model.calls[-1]
    assert any(f"<{SUMMARY_TAG}>" in t and "User shared old details." in t for t in texts(final))
    assert not any(t.startswith("old detail") for t in texts(final))
    assert "and now?" in texts(final)
    assert (first.cost, first.billed_cost) == (pytest.approx(0.51), pytest.approx(0.26))
    assert (second.cost, second.billed_cost) == (pytest.approx(0.01), pytest.approx(0.01))
    assert item_text(first.items[0]) == LONG  # the log keeps the original turn


async def test_bg_8_a_summary_is_reused_and_overflow_model_is_used() -> None:
    """A later round with nothing new to summarize makes no new summary call, and
    `overflow_model` answers the summary instead of the step's model."""
    summarizer = ScriptedModel([text_reply("S1")], model_id="summarizer")
    model = ScriptedModel([text_reply("ok"), text_reply("fine"), text_reply("again")])
    assert summarizer.remaining == 1
    async with harness(model, "summarize", overflow_model=summarizer) as h:
        await h.run(LONG)
        await h.run("and now?")
        await h.run("x")
    assert len(summarizer.calls) == 1
    assert any("S1" in t for t in texts(model.calls[2]))


async def test_bg_8_a_failing_summary_falls_back_to_the_window(caplog: pytest.LogCaptureFixture) -> None:
    """The summary call fails: logged, and the round drops the old turn instead."""
    summarizer = ScriptedModel([], model_id="broken")  # exhausted: raises on first call
    model = ScriptedModel([text_reply("ok"), text_reply("fine")])
    with caplog.at_level(logging.WARNING, logger="noetic.layers"):
        async with harness(model, "summarize", overflow_model=summarizer) as h:
            response = await h.run(LONG)
            response = await h.run("and now?")
    assert response.text == "fine"
    assert not any("old detail" in t for t in texts(model.calls[1]))
    assert any("summary call failed" in r.getMessage() for r in caplog.records)


def test_unknown_overflow_is_a_config_error() -> None:
    """A projection names one of the three modes."""
    with pytest.raises(nt.NoeticConfigError) as info:
        Projection.of({"overflow": "compress"})
    assert info.value.code == "INVALID_BUDGET_INPUT"
