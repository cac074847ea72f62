"""Hostile JSONata in `compute` nodes: every evaluation is bounded in CPU time, nesting and
memory, and the bound cannot be switched off from inside the expression."""

from __future__ import annotations

import json

import pytest

#: A snippet running one `compute` node on `INPUT` and returning its output.
COMPUTE = """
import json
import noetic as nt
from noetic.testing import ScriptedModel
from noetic.workflows.limits import ExpressionLimits, WorkflowLimits

EXPR = json.loads({expr!r})
INPUT = json.loads({input!r})

async def main():
    doc = {{"version": 1, "root": {{"kind": "compute", "id": "c", "expr": EXPR}}}}
    flow = nt.workflow("w", doc, limits=WorkflowLimits({limits}))
    async with nt.AgentHarness("t", agent_graph=flow, model=ScriptedModel.echo()) as h:
        return (await h.run(INPUT)).output
"""


def compute(child, expr: str, input: object = None, workflow_limits: str = "", **limits: float):
    """Run `expr` in a child; `workflow_limits` is the text of `WorkflowLimits(...)`'s arguments."""
    snippet = COMPUTE.format(expr=json.dumps(expr), input=json.dumps(input), limits=workflow_limits)
    return child.run(snippet, **limits)


def test_the_bound_cannot_be_unbound_from_inside_the_expression(child):
    expr = (
        "( $__evaluate_entry := $nothing; $__evaluate_exit := $nothing; "
        "$f := function($n){ $f($n+1) }; $f(0) )"
    )
    message = compute(child, expr, wall_clock=30).raised("EXPRESSION_LIMIT_EXCEEDED")
    assert "CPU time" in message


def test_rebinding_the_callback_names_to_functions_does_not_help(child):
    expr = "( $__evaluate_entry := function($a,$b,$c){1}; $f := function($n){ $f($n+1) }; $f(0) )"
    outcome = compute(child, expr, wall_clock=30)
    assert outcome.data.get("raised", {}).get("code") in ("EXPRESSION_LIMIT_EXCEEDED", "EXPRESSION_FAILED"), (
        outcome.summary()
    )


@pytest.mark.parametrize(
    "expr",
    [
        pytest.param('( $s := $pad("", 1000000, "a"); $replace($s, "a", $s) )', id="replace-1M"),
        pytest.param('( $s := $pad("", 1000000, "a"); $join([1..5000].$s) )', id="join-5000x1MB"),
        pytest.param('( $s := $pad("", 1000000, "a"); $string([1..5000].$s) )', id="string-5000x1MB"),
        pytest.param('( $s := $pad("", 1000000, "a"); [1..100000].$pad($s, 1000000, "b") )', id="pad-many"),
        pytest.param("[1..100000].[1..100000]", id="range-of-ranges"),
        # found by attacking the fixes: a path step flattens in a loop of its own (27 M items
        # took 8 s and 200 MB before it was counted), and the roman numerals recurse
        pytest.param("($a := [1..1000]; $a.$a.$a)", id="path-flattening"),
        pytest.param('$formatInteger(1e15, "I")', id="roman-numerals"),
        pytest.param('$formatInteger(1e308, "w")', id="number-words"),
        pytest.param("$sort([1..100000], function($a, $b){ $a > $b })", id="sort-comparator"),
        pytest.param('$decodeUrl($pad("", 999999, "%"))', id="decode-url"),
        # the library's null conversion walked all 100 M references of this result (30 s)
        pytest.param('($o := {"a": [1..10000]}; [1..10000].$o)', id="shared-result"),
    ],
)
def test_a_single_builtin_is_bounded_in_time_and_memory(child, expr):
    compute(child, expr, wall_clock=30, memory_mb=768).raised("EXPRESSION_LIMIT_EXCEEDED")


def test_a_library_error_is_an_expression_failure_not_a_crash(child):
    # $fromMillis(1e20) raised a bare OSError out of the evaluator
    assert "outside the range of dates" in compute(child, "$fromMillis(1e20)").raised("EXPRESSION_FAILED")


def test_distinct_runs_in_linear_time(child):
    # The library compares every pair: 100,000 items ran past 30 s. Linear, the two take
    # ~0.5 s of CPU (mostly the library evaluating 10,000 path steps), which is the default
    # per-expression bound on a slow machine: the bound is raised to 5 s, still far below
    # what comparing every pair costs.
    expr = "[$count($distinct([1..100000])), $count($distinct([1..10000].($ % 7)))]"
    roomy = "expressions=ExpressionLimits(timeout_ms=5_000)"
    assert compute(child, expr, workflow_limits=roomy, wall_clock=30).returned() == [100000, 7]


def test_the_depth_bound_counts_nesting_not_calls(child):
    result = compute(child, "$map([1..500], function($v){[$v,$v]})").returned()
    assert len(result) == 500
    assert result[499] == [500, 500]


def test_deep_recursion_still_hits_the_depth_bound(child):
    message = compute(child, "( $f := function($n){ 1 + $f($n+1) }; $f(0) )").raised(
        "EXPRESSION_LIMIT_EXCEEDED"
    )
    assert "nest" in message
