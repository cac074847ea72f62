"""Typed, validated output of `call_model(output=Model)` (issue 13, point 9)."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    temp_c: int


async def run(step: nt.Step, model: ScriptedModel) -> nt.HarnessResponse:
    async with nt.AgentHarness("t", agent_graph=step, model=model) as h:
        return await h.run("Weather in Rome?")


async def test_an_invalid_answer_is_sent_back_with_the_error_then_accepted() -> None:
    """Issue 13, point 9: the model is re-asked with the validation error and its corrected
    answer becomes the typed output."""
    model = ScriptedModel([text_reply('{"city": "Rome"}'), text_reply('{"city": "Rome", "temp_c": 21}')])
    response = await run(nt.call_model("w", output=Weather), model)
    assert response.output == Weather(city="Rome", temp_c=21)
    assert len(model.calls) == 2
    retry = model.calls[1].items[-1]
    assert getattr(retry, "role", None) == "user"
    assert "temp_c" in retry.text and "does not match the required output schema" in retry.text  # type: ignore[attr-defined]


async def test_answers_that_stay_invalid_fail_after_the_bounded_retries() -> None:
    """Issue 13, point 9: `output_retries` bounds the re-asks; then a clear `model_parse_error`."""
    model = ScriptedModel([text_reply("not json")] * 3)
    with pytest.raises(nt.NoeticError) as err:
        await run(nt.call_model("w", output=Weather, output_retries=2), model)
    assert err.value.code == "model_parse_error"
    assert len(model.calls) == 3 and "after 2 retries" in err.value.message
    assert err.value.raw == "not json"


async def test_no_retries_fails_on_the_first_invalid_answer() -> None:
    """Issue 13, point 9: `output_retries=0` calls the model once."""
    model = ScriptedModel([text_reply("{}")])
    with pytest.raises(nt.NoeticError) as err:
        await run(nt.call_model("w", output=Weather, output_retries=0), model)
    assert err.value.code == "model_parse_error" and len(model.calls) == 1


def test_output_retries_must_be_a_non_negative_int() -> None:
    """Issue 13, point 9: a bad bound is a construction error."""
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.call_model("w", output=Weather, output_retries=-1)
    assert err.value.code == "INVALID_STEP"


def test_the_output_type_flows_to_the_harness_response_for_type_checkers(tmp_path: Any) -> None:
    """Issue 13, point 9: `mypy --strict` sees `response.output` as the `output=` model,
    through a `loop` around the step too, and `str` without `output=`."""
    from mypy import api

    source = tmp_path / "typed.py"
    source.write_text(
        "from pydantic import BaseModel\n"
        "import noetic as nt\n"
        "class Weather(BaseModel):\n    temp_c: int\n\n"
        "async def main() -> int:\n"
        "    step = nt.call_model('w', output=Weather)\n"
        "    async with nt.AgentHarness('h', agent_graph=step) as h:\n"
        "        response = await h.run('hi')\n"
        "        reveal_type(response.output)\n"
        "    looped = nt.loop('l', step, until=nt.until.no_tool_calls())\n"
        "    async with nt.AgentHarness('h', agent_graph=looped) as h2:\n"
        "        reveal_type((await h2.run('hi')).output)\n"
        "    async with nt.AgentHarness('h', agent_graph=nt.call_model('t')) as h3:\n"
        "        reveal_type((await h3.run('hi')).output)\n"
        "    return response.output.temp_c\n"
    )
    stdout, _, status = api.run(["--strict", "--no-incremental", str(source)])
    assert stdout.count('Revealed type is "typed.Weather"') == 2, stdout
    assert 'Revealed type is "str"' in stdout, stdout
    assert status == 0, stdout
