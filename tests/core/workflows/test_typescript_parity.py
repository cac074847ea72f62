"""A document that runs in the TypeScript Noetic runs here unchanged — and where this runtime
rejects one on purpose, the message says how to make it portable (docs/workflows-divergences.md)."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from jsonschema import Draft202012Validator
from noetic.items import MessageItem
from noetic.testing import ScriptedModel, text_reply
from noetic.workflows.schema import published_schema

pytestmark = pytest.mark.anyio


def doc(root: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"version": 1, "root": root, **extra}


def recording_tool(name: str, calls: list[Any], result: Any) -> nt.Tool:
    return nt.tool(
        name,
        description="records its arguments",
        input={"type": "object"},
        execute=lambda args: calls.append(args) or result,
    )


async def run(flow: nt.Step, input: Any = "", model: Any = None) -> nt.HarnessResponse:
    async with nt.AgentHarness("wf", agent_graph=flow, model=model or ScriptedModel.echo()) as h:
        return await h.run(input)


def user_texts(model: ScriptedModel) -> list[str]:
    return [
        item.text
        for call in model.calls
        for item in call.items
        if isinstance(item, MessageItem) and item.role == "user"
    ]


# --- invokeTool without args: called with {} -------------------------------------------------


async def test_invoke_tool_without_args_gets_an_empty_object_whatever_the_input() -> None:
    calls: list[Any] = []
    tool = recording_tool("probe", calls, "ok")
    flow = nt.workflow("w", doc({"kind": "invokeTool", "id": "t", "toolName": "probe"}), tools=[tool])
    assert (await run(flow, "a plain string input")).output == "ok"
    assert (await run(flow, {"some": "object"})).output == "ok"
    assert calls == [{}, {}]


# --- a non-string value reaching callModel is sent as JSON text -------------------------------


async def test_call_model_after_an_object_tool_result_gets_its_json_text() -> None:
    tool = recording_tool("weather", [], {"city": "Oslo", "temp": -3})
    model = ScriptedModel([text_reply("cold")])
    root = {
        "kind": "sequence",
        "id": "s",
        "steps": [
            {"kind": "invokeTool", "id": "t", "toolName": "weather"},
            {"kind": "callModel", "id": "m", "instructions": "Describe the weather."},
        ],
    }
    resp = await run(nt.workflow("w", doc(root), tools=[tool]), model=model)
    assert resp.output == "cold"
    assert [json.loads(t) for t in user_texts(model)] == [{"city": "Oslo", "temp": -3}]


async def test_call_model_inside_each_over_objects_gets_each_element_as_json() -> None:
    model = ScriptedModel.echo()
    root = {
        "kind": "inParallel",
        "id": "p",
        "mode": "all",
        "each": {"kind": "callModel", "id": "m", "instructions": "Summarise."},
        "merge": "concat",
    }
    resp = await run(nt.workflow("w", doc(root)), [{"n": 1}, {"n": 2}], model=model)
    assert sorted((json.loads(t) for t in user_texts(model)), key=str) == [{"n": 1}, {"n": 2}]
    assert [json.loads(line) for line in resp.output.splitlines()] == [{"n": 1}, {"n": 2}]


# --- builder argument errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "code"),
    [
        (lambda: nt.workflow("w", None), "INVALID_WORKFLOW_SOURCE"),
        (lambda: nt.workflow("w", 42), "INVALID_WORKFLOW_SOURCE"),
        (lambda: nt.loop("l", None, until=nt.until.never()), "INVALID_STEP"),
        (lambda: nt.sequence("s", None), "INVALID_STEP"),
        (lambda: nt.sequence("s", "not steps"), "INVALID_STEP"),
        (lambda: nt.in_parallel("p", 5), "INVALID_STEP"),
        (lambda: nt.in_parallel("p", [nt.run_code("a", str)], concurrency="2"), "INVALID_STEP"),
        (lambda: nt.in_parallel("p", [nt.run_code("a", str)], merge="concat"), "INVALID_STEP"),
        (
            lambda: nt.loop("l", nt.run_code("a", str), until=nt.until.never(), max_iterations="3"),
            "INVALID_STEP",
        ),
        (lambda: nt.spawn("s", nt.run_code("a", str), timeout="3"), "INVALID_STEP"),
    ],
)
def test_bad_builder_arguments_raise_a_config_error_with_a_hint(build: Any, code: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        build()
    assert err.value.code == code and err.value.hint


# --- all_() of nothing stops -----------------------------------------------------------------


async def test_all_of_no_predicates_stops_after_the_first_iteration() -> None:
    runs: list[int] = []
    body = nt.run_code("b", lambda v: runs.append(v) or v + 1)
    resp = await run(nt.loop("l", body, until=nt.all_(), max_iterations=5), 1)
    assert resp.output == 2 and runs == [1]
    verdict = await nt.all_()(None)  # type: ignore[arg-type]
    assert verdict.stop


# --- annotation keys and portable rejections -------------------------------------------------


def annotated() -> dict[str, Any]:
    return doc(
        {
            "kind": "sequence",
            "id": "s",
            "description": "two steps",
            "x-owner": "team-a",
            "steps": [
                {"kind": "compute", "id": "c", "expr": "1", "title": "one", "$comment": "why"},
                {"kind": "compute", "id": "d", "expr": "$ + 1", "x-ui": {"colour": "red"}},
            ],
        },
        description="a document",
        **{"x-version": "3"},
    )


async def test_annotation_keys_are_accepted_everywhere_and_ignored() -> None:
    assert (await run(nt.workflow("w", annotated()))).output == 2
    assert Draft202012Validator(published_schema()).is_valid(annotated())


@pytest.mark.parametrize("key", ["descripton", "expresion", "X-owner", "xowner"])
def test_a_key_that_could_be_a_typo_is_rejected_with_a_portable_fix(key: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc({"kind": "compute", "id": "c", "expr": "1", key: "x"}))
    assert "unknown key" in err.value.message and "portable" in err.value.message
    assert "TypeScript" not in err.value.message  # a Python user need not know the other runtime
    assert not Draft202012Validator(published_schema()).is_valid(
        doc({"kind": "compute", "id": "c", "expr": "1", key: "x"})
    )


def test_over_next_to_paths_says_how_to_make_the_document_portable() -> None:
    root = {
        "kind": "inParallel",
        "id": "p",
        "mode": "all",
        "over": "xs",
        "paths": [{"kind": "compute", "id": "c", "expr": "1"}],
    }
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(root))
    assert "portable" in err.value.message and "remove 'over'" in err.value.message
    assert "TypeScript" not in err.value.message  # a Python user need not know the other runtime


def test_an_unregistered_subflow_ref_says_how_to_make_the_document_portable() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc({"kind": "subflow", "id": "sub", "ref": "later"}))
    assert err.value.code == "UNKNOWN_WORKFLOW_REFERENCE" and "portable" in err.value.message
    assert "TypeScript" not in err.value.message  # a Python user need not know the other runtime


async def test_a_layer_no_host_supplies_says_how_to_make_the_document_portable() -> None:
    root = {
        "kind": "spawn",
        "id": "sp",
        "layers": ["nowhere"],
        "child": {"kind": "compute", "id": "c", "expr": "1"},
    }
    with pytest.raises(nt.NoeticConfigError) as err:
        await run(nt.workflow("w", doc(root)))
    assert err.value.code == "UNKNOWN_LAYER_REFERENCE" and "portable" in err.value.message
    assert "TypeScript" not in err.value.message  # a Python user need not know the other runtime
