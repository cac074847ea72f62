"""The model-adapter conformance suite (TU-2, TU-8) run against `ScriptedModel`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, ScriptedReply, text_reply, tool_call_reply
from noetic.testing.model_conformance import (
    MODEL_CONFORMANCE_CHECKS,
    ConformanceSubject,
    Round,
    Scenario,
    StallRound,
    SubjectFactory,
    TextRound,
)


def scripted_subject(scenario: Scenario) -> ConformanceSubject:
    """A ScriptedModel playing the scenario; a stall blocks inside the reply function."""
    stalled, released = anyio.Event(), anyio.Event()

    def entry(round_: Round) -> Any:
        if isinstance(round_, StallRound):

            async def stall(_: ModelRequest) -> ScriptedReply:
                stalled.set()
                try:
                    await anyio.sleep_forever()
                finally:
                    released.set()
                return text_reply("not reached: the stall is always cancelled")

            return stall
        if isinstance(round_, TextRound):
            return text_reply(round_.text, usage=round_.usage, cost=round_.cost)
        return tool_call_reply(round_.name, round_.arguments, usage=round_.usage, cost=round_.cost)

    model = ScriptedModel([entry(r) for r in scenario.rounds], delta_size=5)

    def sent_call_ids(index: int) -> tuple[set[str], set[str]]:
        items = model.calls[index].items
        calls = {i.call_id for i in items if isinstance(i, FunctionCallItem)}
        outputs = {i.call_id for i in items if isinstance(i, FunctionCallOutputItem)}
        return calls, outputs

    return ConformanceSubject(model, stalled, released, sent_call_ids)


@pytest.mark.anyio
@pytest.mark.parametrize("check", MODEL_CONFORMANCE_CHECKS, ids=lambda c: c.__name__)
async def test_scripted_model_conforms(check: Callable[[SubjectFactory], Awaitable[None]]) -> None:
    await check(scripted_subject)


@pytest.mark.anyio
async def test_suite_can_fail_on_a_broken_adapter() -> None:
    """A model that turns unreported cache figures into 0 fails the TU-2 check."""
    from noetic.testing.model_conformance import check_usage_absent_stays_none

    def zeroing_subject(scenario: Scenario) -> ConformanceSubject:
        (round_,) = scenario.rounds
        assert isinstance(round_, TextRound)
        usage = round_.usage.model_copy(update={"cached_tokens": 0, "cache_write_tokens": 0})
        subject = scripted_subject(Scenario((TextRound(round_.text, usage, round_.cost),)))
        return subject

    with pytest.raises(AssertionError, match="unreported cached_tokens must be None"):
        await check_usage_absent_stays_none(zeroing_subject)
