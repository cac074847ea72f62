"""Hydrated node semantics and binding errors."""

from __future__ import annotations

import math
import sys
from typing import Any

import noetic as nt
import pytest
from noetic.steps.loop import Loop
from noetic.testing import ScriptedModel, text_reply
from noetic.workflows.limits import WorkflowLimits

pytestmark = pytest.mark.anyio


def doc(root: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "root": root}


def compute(id: str, expr: str) -> dict[str, Any]:
    return {"kind": "compute", "id": id, "expr": expr}


lookup = nt.tool(
    "lookup",
    description="Look something up.",
    input={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    execute=lambda args: f"result for {args['query']}",
)


# --- conditional (check 53) ---------------------------------------------------------------------


def triage() -> nt.Step:
    return nt.workflow(
        "w",
        doc(
            {
                "kind": "conditional",
                "id": "triage",
                "routes": [
                    {"match": "ERROR", "target": compute("alarm", "'alarm'")},
                    {"match": "warn", "target": compute("notice", "'notice'")},
                ],
                "default": compute("fine", "'fine'"),
            }
        ),
    )


@pytest.mark.parametrize(
    ("input", "output"),
    [
        ("an error occurred", "alarm"),  # check 53: case-insensitive substring
        ("WARNING: disk", "notice"),
        ("Error and warning", "alarm"),  # the first matching route wins
        ("all quiet", "fine"),
        ({"status": "error"}, "alarm"),  # non-strings are matched as JSON text
    ],
)
async def test_check_53_the_first_route_whose_match_the_input_contains(
    run_graph: Any, input: Any, output: str
) -> None:
    assert await run_graph(triage(), input) == output


async def test_a_conditional_without_default_passes_the_input_through(run_graph: Any) -> None:
    flow = nt.workflow(
        "w",
        doc({"kind": "conditional", "id": "c", "routes": [{"match": "x", "target": compute("t", "'hit'")}]}),
    )
    assert await run_graph(flow, "nothing here") == "nothing here"


# --- inParallel ---------------------------------------------------------------------------------


def parallel(mode: str, merge: str | None = None, **extra: Any) -> nt.Step:
    node = {
        "kind": "inParallel",
        "id": "p",
        "mode": mode,
        "paths": [compute("a", "'a'"), compute("b", "'b'"), compute("c", "{ 'c': 3 }")],
        **extra,
    }
    if merge:
        node["merge"] = merge
    return nt.workflow("w", doc(node))


@pytest.mark.parametrize(
    ("mode", "merge", "output"),
    [
        ("all", None, {"c": 3}),
        ("all", "last", {"c": 3}),
        ("all", "first", "a"),
        ("all", "concat", ["a", "b", {"c": 3}]),
        ("settle", "first", "a"),
    ],
)
async def test_in_parallel_merges(run_graph: Any, mode: str, merge: str | None, output: Any) -> None:
    assert await run_graph(parallel(mode, merge, concurrency=2), "") == output


async def test_concat_of_strings_joins_lines_and_settle_skips_failed_paths(run_graph: Any) -> None:
    flow = nt.workflow(
        "w",
        doc(
            {
                "kind": "inParallel",
                "id": "p",
                "mode": "settle",
                "merge": "concat",
                "paths": [compute("a", "'a'"), compute("boom", "$error('no')"), compute("b", "'b'")],
            }
        ),
    )
    assert await run_graph(flow, "") == "a\nb"


async def test_race_returns_the_winner(run_graph: Any) -> None:
    assert await run_graph(parallel("race"), "") in ("a", "b", {"c": 3})


async def test_each_fans_out_over_the_input_array_or_its_over_member(run_graph: Any) -> None:
    each = {
        "kind": "inParallel",
        "id": "fan",
        "mode": "all",
        "merge": "concat",
        "each": compute("double", "$ * 2"),
    }
    assert await run_graph(nt.workflow("w", doc(each)), [1, 2, 3]) == [2, 4, 6]
    assert await run_graph(nt.workflow("w", doc({**each, "over": "xs"})), '{"xs": [5]}') == [10]
    assert await run_graph(nt.workflow("w", doc(each)), []) == []


async def test_each_without_an_array_is_invalid_fork_input(run_graph: Any) -> None:
    flow = nt.workflow(
        "w",
        doc({"kind": "inParallel", "id": "fan", "mode": "all", "over": "xs", "each": compute("one", "1")}),
    )
    with pytest.raises(nt.NoeticConfigError) as err:
        await run_graph(flow, {"ys": [1]})
    assert err.value.code == "INVALID_FORK_INPUT"


async def test_fan_out_width_is_limited(run_graph: Any) -> None:
    flow = nt.workflow(
        "w",
        doc({"kind": "inParallel", "id": "fan", "mode": "all", "each": compute("one", "1")}),
        limits=WorkflowLimits(max_fan_out=3),
    )
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(flow, [1, 2, 3, 4])
    assert err.value.code == "LIMIT_EXCEEDED"


# --- loop ---------------------------------------------------------------------------------------


def test_max_iterations_infinity_number_and_default() -> None:
    def ceiling(value: Any) -> float:
        node: dict[str, Any] = {
            "kind": "loop",
            "id": "l",
            "body": compute("c", "1"),
            "until": {"kind": "never"},
        }
        if value is not None:
            node["maxIterations"] = value
        root = nt.workflow("w", doc(node)).root
        assert isinstance(root, Loop)
        return root.max_iterations

    assert ceiling("infinity") == math.inf
    assert ceiling(7) == 7
    assert ceiling(None) == 1000


async def test_until_expr_stops_on_true_and_continues_on_undefined(run_graph: Any) -> None:
    counting = {
        "kind": "loop",
        "id": "l",
        "maxIterations": 10,
        "body": compute("c", "{ 'i': i + 1 }"),
        "until": {
            "kind": "any",
            "predicates": [{"kind": "expr", "expr": "i = 4"}, {"kind": "expr", "expr": "nothing.here"}],
        },
    }
    assert await run_graph(nt.workflow("w", doc(counting)), {"i": 0}) == {"i": 4}


async def test_converged_stops_when_the_output_repeats_and_restarts_each_run(run_graph: Any) -> None:
    node = {
        "kind": "loop",
        "id": "l",
        "maxIterations": 10,
        "body": compute("c", "{ 'i': i < 2 ? i + 1 : i }"),
        "until": {"kind": "converged"},
    }
    flow = nt.workflow("w", doc(node))
    assert await run_graph(flow, {"i": 0}) == {"i": 2}
    assert await run_graph(flow, {"i": 2}) == {"i": 2}


# --- model and tool nodes -----------------------------------------------------------------------


async def test_call_model_params_and_server_tools_reach_the_model(run_graph: Any) -> None:
    model = ScriptedModel([text_reply("done")])
    flow = nt.workflow(
        "w",
        doc(
            {
                "kind": "callModel",
                "id": "m",
                "instructions": "Be brief.",
                "tools": [
                    {"type": "lookup"},
                    {"type": "openrouter:web_search", "parameters": {"maxResults": 2}},
                ],
                "params": {"temperature": 0.5, "topP": 0.9, "maxTokens": 99, "stopSequences": ["END"]},
            }
        ),
        tools=[lookup],
    )
    assert await run_graph(flow, "hi", model=model) == "done"
    [request] = model.calls
    assert request.instructions == "Be brief."
    assert [t.name for t in request.tools] == ["lookup"]
    assert dict(request.params) == {
        "temperature": 0.5,
        "top_p": 0.9,
        "max_tokens": 99,
        "stop": ["END"],
        "server_tools": [{"type": "openrouter:web_search", "parameters": {"max_results": 2}}],
    }


async def test_invoke_tool_calls_the_tool_with_its_args_alone(run_graph: Any) -> None:
    node = {"kind": "invokeTool", "id": "t", "toolName": "lookup", "args": {"query": "tea"}}
    assert (
        await run_graph(nt.workflow("w", doc(node), tools=[lookup]), {"query": "coffee"}) == "result for tea"
    )


def test_check_52_an_unknown_tool_names_the_node_path() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow(
            "w",
            doc(
                {
                    "kind": "sequence",
                    "id": "s",
                    "steps": [
                        {
                            "kind": "callModel",
                            "id": "m",
                            "instructions": "x",
                            "tools": [{"type": "lookup"}, {"type": "nope"}],
                        },
                        {"kind": "invokeTool", "id": "t", "toolName": "missing"},
                    ],
                }
            ),
            tools=[lookup],
        )
    assert err.value.code == "UNKNOWN_TOOL_REFERENCE"
    assert [p.path for p in err.value.problems] == [
        "$.root.steps[0].tools[1].type",
        "$.root.steps[1].toolName",
    ]


async def test_an_unknown_layer_is_reported_before_the_workflow_runs(run_graph: Any) -> None:
    flow = nt.workflow(
        "w", doc({"kind": "spawn", "id": "s", "layers": ["no-such-layer"], "child": compute("c", "'ran'")})
    )
    with pytest.raises(nt.NoeticConfigError) as err:
        await run_graph(flow, "")
    assert err.value.code == "UNKNOWN_LAYER_REFERENCE"
    assert err.value.path == "$.root.layers[0]"


async def test_spawn_runs_its_child_with_a_timeout_in_milliseconds(run_graph: Any) -> None:
    flow = nt.workflow(
        "w", doc({"kind": "spawn", "id": "s", "timeout": 2500, "child": compute("c", "'ran'")})
    )
    assert flow.root.timeout == 2.5  # type: ignore[attr-defined]
    assert await run_graph(flow, "") == "ran"


async def test_with_context_runs_its_child_with_registered_layers(run_graph: Any) -> None:
    flow = nt.workflow(
        "w",
        doc({"kind": "withContext", "id": "wc", "layers": ["scratchpad"], "child": compute("c", "'inside'")}),
    )
    assert await run_graph(flow, "") == "inside"


def test_with_context_without_the_layer_runtime_is_a_clear_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "noetic.layers.with_context", None)  # makes the import fail
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow(
            "w",
            doc({"kind": "withContext", "id": "wc", "layers": ["scratchpad"], "child": compute("c", "1")}),
        )
    assert err.value.code == "UNSUPPORTED_NODE_KIND"
    assert "noetic.layers.with_context" in err.value.message


# --- subflows (check 51) ------------------------------------------------------------------------


def ref(id: str, name: str) -> dict[str, Any]:
    return {"kind": "subflow", "id": id, "ref": name}


def test_check_51_a_ref_cycle_is_workflow_cycle() -> None:
    workflows = {"a": doc(ref("to-b", "b")), "b": doc(ref("to-a", "a"))}
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(ref("start", "a")), workflows=workflows)
    assert err.value.code == "WORKFLOW_CYCLE"
    assert "a -> b -> a" in err.value.message
    assert err.value.path == "$.root > workflows['a'] $.root > workflows['b'] $.root.ref"


def test_a_self_reference_is_a_cycle_too() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(ref("start", "a")), workflows={"a": doc(ref("again", "a"))})
    assert err.value.code == "WORKFLOW_CYCLE"


async def test_check_51_diamond_reuse_of_one_ref_is_fine(run_graph: Any) -> None:
    workflows = {
        "inc": doc(compute("add", "$ + 1")),
        "twice": doc({"kind": "sequence", "id": "s", "steps": [ref("x", "inc"), ref("y", "inc")]}),
    }
    flow = nt.workflow(
        "w",
        doc({"kind": "sequence", "id": "top", "steps": [ref("p", "twice"), ref("q", "twice")]}),
        workflows=workflows,
    )
    assert await run_graph(flow, 0) == 4


def test_an_unknown_ref_names_the_node_path() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow(
            "w", doc({"kind": "sequence", "id": "s", "steps": [compute("c", "1"), ref("f", "ghost")]})
        )
    assert err.value.code == "UNKNOWN_WORKFLOW_REFERENCE"
    assert err.value.path == "$.root.steps[1].ref"


def test_a_named_documents_problems_carry_its_name() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(ref("f", "bad")), workflows={"bad": doc({"kind": "compute", "id": "c"})})
    assert err.value.path == "workflows['bad'] $.root.expr"


async def test_subflow_ids_are_suffixed_and_a_literal_input_replaces_the_node_input(run_turn: Any) -> None:
    flow = nt.workflow(
        "w",
        doc(
            {"kind": "subflow", "id": "sub", "input": "literal", "document": doc(compute("inner", "$ & '!'"))}
        ),
    )
    turn = await run_turn(flow, "ignored")
    assert turn.response.output == "literal!"
    started = [e.data["step_id"] for e in turn.events if e.type.endswith(":step_started")]
    assert started == ["w", "sub", "inner-sub"]


def test_named_workflows_nest_at_most_max_subflow_depth() -> None:
    chain = {f"w{i}": doc(ref(f"r{i}", f"w{i + 1}")) for i in range(5)}
    chain["w5"] = doc(compute("end", "1"))
    nt.workflow("w", doc(ref("start", "w0")), workflows=chain)
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc(ref("start", "w0")), workflows=chain, limits=WorkflowLimits(max_subflow_depth=3))
    assert err.value.code == "WORKFLOW_VALIDATION_FAILED"


def test_an_expression_with_a_syntax_error_names_its_path() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow(
            "w",
            doc(
                {
                    "kind": "loop",
                    "id": "l",
                    "body": compute("c", "1"),
                    "until": {"kind": "all", "predicates": [{"kind": "expr", "expr": "n ="}]},
                }
            ),
        )
    assert err.value.code == "INVALID_EXPRESSION"
    assert err.value.path == "$.root.until.predicates[0].expr"


def test_the_workflow_step_keeps_its_document_and_root() -> None:
    flow = nt.workflow("w", doc(compute("c", "1")))
    assert flow.kind == "workflow"
    assert flow.document.root.id == "c"
    assert flow.children() == (flow.root,)
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("", doc(compute("c", "1")))
    assert err.value.code == "EMPTY_STEP_ID"
