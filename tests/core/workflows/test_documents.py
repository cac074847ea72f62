"""Loading documents: the model, every problem with its JSON path, and the static limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.workflows.document import LoopNode, WorkflowDocument
from noetic.workflows.limits import WorkflowLimits
from noetic.workflows.load import MAX_INT_DIGITS, load_document, parse_document


def compute(id: str = "c", expr: str = "1") -> dict[str, Any]:
    return {"kind": "compute", "id": id, "expr": expr}


def doc(root: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"version": 1, "root": root, **extra}


def problems_of(source: Any, limits: WorkflowLimits | None = None) -> list[tuple[str, str]]:
    document, problems = parse_document(source, limits)
    assert document is None
    return [(p.path, p.code) for p in problems]


def nested(depth: int) -> dict[str, Any]:
    """`depth` sequences around one compute: structural depth `depth`."""
    node = compute()
    for i in range(depth):
        node = {"kind": "sequence", "id": f"s{i}", "steps": [node]}
    return node


def test_camel_case_keys_load_into_the_model() -> None:
    loaded = load_document(
        doc(
            {
                "kind": "loop",
                "id": "l",
                "maxIterations": "infinity",
                "body": compute(),
                "until": {"kind": "maxSteps", "n": 2},
            }
        )
    )
    assert isinstance(loaded.root, LoopNode)
    assert loaded.root.max_iterations == "infinity"


def test_a_schema_key_is_allowed_and_ignored() -> None:
    assert (
        load_document(
            {"$schema": "https://noetic.tools/schema/noetic-workflow.schema.json", **doc(compute())}
        ).root.id
        == "c"
    )


def test_sources_dict_json_text_path_and_model_load_the_same(tmp_path: Path) -> None:
    data = doc(compute())
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(data))
    loaded = [load_document(s) for s in (data, json.dumps(data), str(path), path, json.dumps(data).encode())]
    assert all(d == loaded[0] for d in loaded)
    assert load_document(loaded[0]) is loaded[0]


def test_every_problem_is_reported_with_its_json_path() -> None:
    found = problems_of(
        doc(
            {
                "kind": "sequence",
                "id": "s",
                "steps": [
                    {"kind": "compute", "id": "c"},
                    {
                        "kind": "loop",
                        "id": "l",
                        "body": compute(),
                        "until": {"kind": "expr", "expr": ""},
                        "maxIterations": 0,
                    },
                    {"kind": "callModel", "id": "m", "instructions": "x", "tempreature": 1},
                    {"kind": "inParallel", "id": "p", "mode": "both", "paths": [compute()]},
                ],
            }
        )
    )
    assert ("$.root.steps[0].expr", "WORKFLOW_VALIDATION_FAILED") in found
    assert ("$.root.steps[1].until.expr", "WORKFLOW_VALIDATION_FAILED") in found
    assert ("$.root.steps[1].maxIterations", "WORKFLOW_VALIDATION_FAILED") in found
    assert ("$.root.steps[2].tempreature", "WORKFLOW_VALIDATION_FAILED") in found
    assert ("$.root.steps[3].mode", "WORKFLOW_VALIDATION_FAILED") in found
    assert len(found) == 5


def test_load_document_raises_all_problems_at_once() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        load_document(
            doc(
                {
                    "kind": "sequence",
                    "id": "s",
                    "steps": [{"kind": "compute", "id": "a"}, {"kind": "compute", "id": "b"}],
                }
            )
        )
    assert err.value.code == "WORKFLOW_VALIDATION_FAILED"
    assert [p.path for p in err.value.problems] == ["$.root.steps[0].expr", "$.root.steps[1].expr"]
    assert "$.root.steps[1].expr" in str(err.value)
    assert err.value.hint


@pytest.mark.parametrize("kind", ["runCode", "schedule", "acp-agent"])
def test_node_kinds_needing_an_absent_subsystem_are_unsupported_never_ignored(kind: str) -> None:
    found = problems_of(doc({"kind": "sequence", "id": "s", "steps": [compute(), {"kind": kind, "id": "x"}]}))
    assert found == [("$.root.steps[1]", "UNSUPPORTED_NODE_KIND")]
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("w", doc({"kind": kind, "id": "x"}))
    assert err.value.code == "UNSUPPORTED_NODE_KIND"
    assert kind in err.value.message


def test_unknown_node_and_until_kinds_have_their_own_codes() -> None:
    assert problems_of(doc({"kind": "teleport", "id": "x"})) == [("$.root", "UNKNOWN_NODE_KIND")]
    assert problems_of(doc({"kind": "loop", "id": "l", "body": compute(), "until": {"kind": "soon"}})) == [
        ("$.root.until", "UNKNOWN_UNTIL_PREDICATE")
    ]


def test_in_parallel_needs_paths_xor_each_and_over_needs_each() -> None:
    both = {"kind": "inParallel", "id": "p", "mode": "all", "paths": [compute()], "each": compute()}
    neither = {"kind": "inParallel", "id": "p", "mode": "all"}
    over = {"kind": "inParallel", "id": "p", "mode": "all", "paths": [compute()], "over": "xs"}
    for node in (both, neither, over):
        assert problems_of(doc(node)) == [("$.root", "WORKFLOW_VALIDATION_FAILED")]


def test_subflow_needs_document_xor_ref() -> None:
    both = {"kind": "subflow", "id": "f", "ref": "a", "document": doc(compute())}
    assert problems_of(doc(both)) == [("$.root", "WORKFLOW_VALIDATION_FAILED")]
    assert problems_of(doc({"kind": "subflow", "id": "f"})) == [("$.root", "WORKFLOW_VALIDATION_FAILED")]


def test_version_must_be_1() -> None:
    assert problems_of({"version": 2, "root": compute()}) == [("$.version", "WORKFLOW_VALIDATION_FAILED")]


def test_bad_json_text_and_unreadable_paths_are_problems_not_crashes(tmp_path: Path) -> None:
    assert problems_of('{"version": 1,') == [("$", "WORKFLOW_VALIDATION_FAILED")]
    assert problems_of(tmp_path / "missing.json") == [("$", "INVALID_WORKFLOW_SOURCE")]
    assert problems_of(b"[1, 2]") == [("$", "WORKFLOW_VALIDATION_FAILED")]


# --- limits ---------------------------------------------------------------------------------------


def test_depth_5_is_allowed_and_depth_6_fails_naming_the_deepest_node() -> None:
    nt.workflow("ok", doc(nested(5)))
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("deep", doc(nested(6)))
    assert err.value.code == "WORKFLOW_VALIDATION_FAILED"
    assert err.value.path == "$.root" + ".steps[0]" * 6
    assert "6 levels" in err.value.message


def test_max_depth_is_configurable() -> None:
    nt.workflow("deep", doc(nested(7)), limits=WorkflowLimits(max_depth=7))


def test_json_nested_ten_thousand_deep_is_rejected_before_parsing() -> None:
    text = '{"version": 1, "root": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}"
    assert problems_of(text) == [("$", "WORKFLOW_VALIDATION_FAILED")]
    deep: Any = 1
    for _ in range(10_000):
        deep = {"a": deep}
    assert problems_of({"version": 1, "root": deep}) == [("$", "WORKFLOW_VALIDATION_FAILED")]


def test_document_size_node_count_and_expression_length_are_bounded() -> None:
    big = doc(compute(expr="'" + "x" * 2_000 + "'"))
    assert problems_of(json.dumps(big), WorkflowLimits(max_bytes=1_000)) == [
        ("$", "WORKFLOW_VALIDATION_FAILED")
    ]
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("long", big, limits=WorkflowLimits(max_expression_length=100))
    assert err.value.path == "$.root.expr"
    wide = doc({"kind": "sequence", "id": "s", "steps": [compute(f"c{i}") for i in range(20)]})
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.workflow("wide", wide, limits=WorkflowLimits(max_nodes=10))
    assert "21 nodes" in err.value.message


def test_the_model_round_trips_by_alias() -> None:
    data = doc(
        {
            "kind": "invokeTool",
            "id": "t",
            "toolName": "x",
            "args": {"a": 1},
            "emitItems": {"item": "p", "onDone": "1"},
        }
    )
    dumped = WorkflowDocument.model_validate(data).model_dump(by_alias=True, exclude_none=True)
    assert dumped == data


def test_repeated_keys_are_reported_wherever_they_are_nested() -> None:
    text = (
        '{"version": 1, "root": {"kind": "sequence", "id": "s", "steps": ['
        '{"kind": "compute", "id": "a", "expr": "1"},'
        '{"kind": "compute", "id": "b", "expr": "1", "id": "c", "expr": "2"}]}}'
    )
    document, problems = parse_document(text)
    assert document is None
    assert [p.path for p in problems] == ["$.root.steps[1].expr", "$.root.steps[1].id"]


def test_integers_up_to_the_digit_limit_are_read() -> None:
    digits = "9" * MAX_INT_DIGITS
    text = '{"version": 1, "root": {"kind": "compute", "id": "c", "expr": "1", "x-n": ' + digits + "}}"
    document, problems = parse_document(text)
    assert problems == []
    assert document is not None
