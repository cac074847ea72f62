"""`decide` steps: declared questions, answers read natively or estimated from text, and
`StepMeta.decision` (TU-3, DC-1)."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from noetic.items import MessageItem, Refusal
from noetic.model import ModelResponse
from noetic.testing import ScriptedModel, text_reply
from noetic.usage import DecisionMeta

pytestmark = pytest.mark.anyio

QUESTIONS = [
    nt.question("risky", "Is the change risky?", kind="yes_no"),
    nt.question("area", "Which area does it touch?", kind="choice", choices=["api", "ui", "db"]),
    nt.question("score", "How confident are you?", kind="score", low=0, high=1),
    nt.question("note", "Anything else?"),
]


async def run_decide(model: Any, input: Any = "Review: drop the users table") -> tuple[Any, Any, Any]:
    metas: list[Any] = []
    graph = nt.sequence(
        "s",
        [
            nt.decide("d", QUESTIONS),
            nt.run_code("meta", lambda v, ctx: metas.append(ctx.last_step_meta) or v),
        ],
    )
    async with nt.AgentHarness("h", agent_graph=graph, model=model) as h:
        response = await h.run(input)
    return response.output, metas[0], response


async def test_dc_1_native_answers_come_through_structured_output() -> None:
    reply = {"risky": True, "area": "db", "score": 0.9, "note": None}
    model = ScriptedModel([text_reply(json.dumps(reply))], model_id="m-native", structured_output=True)
    answers, meta, _ = await run_decide(model)
    assert answers == {"risky": True, "area": "db", "score": 0.9}
    assert meta.kind == "decide" and meta.decision == DecisionMeta(
        model_id="m-native", source="native", refused=("note",)
    )
    schema = model.calls[0].output_schema
    assert schema is not None and schema["required"] == ["risky", "area", "score", "note"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["area"]["anyOf"][0] == {"type": "string", "enum": ["api", "ui", "db"]}
    prompt = model.calls[0].instructions or ""
    assert all(f'"{q.id}"' in prompt for q in QUESTIONS)


async def test_dc_1_answers_are_estimated_from_text_when_the_model_has_no_structured_output() -> None:
    text = 'Here you go:\n```json\n{"risky": false, "area": "ui", "score": 0.25}\n```\nThanks.'
    model = ScriptedModel([text_reply(text)], model_id="m-text")
    answers, meta, response = await run_decide(model)
    assert answers == {"risky": False, "area": "ui", "score": 0.25}
    assert meta.decision == DecisionMeta(model_id="m-text", source="estimated", refused=("note",))
    assert model.calls[0].output_schema is None
    assert response.items[-1].text == text  # the reply is in the log like any model reply


async def test_dc_1_a_native_model_that_answers_in_prose_is_estimated() -> None:
    model = ScriptedModel(
        [text_reply('Sure! {"risky": true, "area": "api", "score": 1, "note": "ship later"}')],
        structured_output=True,
    )
    answers, meta, _ = await run_decide(model)
    assert answers["note"] == "ship later" and meta.decision.source == "estimated"
    assert meta.decision.refused == ()


async def test_dc_1_a_model_refusal_declines_every_question() -> None:
    def refuse(_: Any) -> Any:
        class Refusing:
            model_id = "m-refuse"
            structured_output = True

            async def stream(self, request: Any, *, cancel: Any) -> Any:
                message = MessageItem(role="assistant", content=[Refusal(refusal="I can't help with that.")])
                yield ModelResponse(items=(message,), model_id="m-refuse")

        return Refusing()

    answers, meta, _ = await run_decide(refuse(None))
    assert answers == {}
    assert meta.decision == DecisionMeta(
        model_id="m-refuse", source="estimated", refused=("risky", "area", "score", "note")
    )


@pytest.mark.parametrize(
    "reply",
    [
        '{"risky": "yes", "area": "db", "score": 0.5, "note": null}',  # not a boolean
        '{"risky": true, "area": "network", "score": 0.5, "note": null}',  # not a choice
        '{"risky": true, "area": "db", "score": 7, "note": null}',  # out of range
        "I would rather talk about something else.",  # no answers at all
        "[" * 100_000,  # hostile: deep nesting is not a crash
    ],
)
async def test_dc_1_an_answer_that_does_not_fit_fails_with_a_clear_code(reply: str) -> None:
    model = ScriptedModel([text_reply(reply)], structured_output=True)
    with pytest.raises(nt.NoeticError) as err:
        await run_decide(model)
    assert err.value.code == "DECISION_ANSWER_INVALID"


@pytest.mark.parametrize(
    "build",
    [
        lambda: nt.decide("d", []),
        lambda: nt.decide("d", ["not a question"]),  # type: ignore[list-item]
        lambda: nt.decide("d", [nt.question("a", "x"), nt.question("a", "y")]),
        lambda: nt.question("c", "pick", kind="choice"),
        lambda: nt.question("s", "rate", kind="score", low=5, high=1),
        lambda: nt.question("k", "what", kind="essay"),  # type: ignore[arg-type]
        lambda: nt.question("", "no id"),
    ],
)
def test_bad_decide_declarations_are_config_errors(build: Any) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        build()
    assert err.value.code == "INVALID_STEP" and err.value.hint


async def test_a_decide_node_in_a_workflow_document() -> None:
    document = {
        "version": 1,
        "root": {
            "kind": "decide",
            "id": "triage",
            "instructions": "You triage bug reports.",
            "questions": [
                {"id": "severity", "text": "How severe?", "kind": "choice", "choices": ["low", "high"]},
                {"id": "repro", "text": "Is there a reproduction?", "kind": "yes_no"},
                {"id": "effort", "text": "Effort in days?", "kind": "score", "low": 0, "high": 30},
            ],
        },
    }
    model = ScriptedModel(
        [text_reply('{"severity": "high", "repro": null, "effort": 3}')], structured_output=True
    )
    async with nt.AgentHarness("h", agent_graph=nt.workflow("w", document), model=model) as h:
        response = await h.run("The app crashes on start.")
    assert response.output == {"severity": "high", "effort": 3}
    assert "You triage bug reports." in (model.calls[0].instructions or "")


def test_a_decide_node_with_a_bad_question_is_a_document_problem() -> None:
    document = {
        "version": 1,
        "root": {"kind": "decide", "id": "d", "questions": [{"id": "c", "text": "pick", "kind": "choice"}]},
    }
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", document)
    assert err.value.code == "INVALID_STEP" and err.value.path == "$.root"
