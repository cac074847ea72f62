"""JSONata expressions: semantics, bounds, and the hostile corpus.

Every hostile expression must end with a clear error instead of running on; the evaluator
bounds time at `timeout_ms`, so none of these can take long, but the tests assert only codes.
"""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.workflows.expressions import compile_expression, json_value
from noetic.workflows.limits import ExpressionLimits

LIMITS = ExpressionLimits()


def evaluate(source: str, value: Any = None, limits: ExpressionLimits = LIMITS) -> Any:
    return compile_expression(source, limits).evaluate(value)


def test_seed_expressions() -> None:
    assert evaluate("{ 'n': n - 1 }", {"n": 3}) == {"n": 2}
    assert evaluate("n = 0", {"n": 0}) is True
    assert evaluate("1") == 1


def test_undefined_is_none_and_results_are_plain_json() -> None:
    assert evaluate("missing.path", {"n": 1}) is None
    result = evaluate("[1..3]")
    assert result == [1, 2, 3]
    assert type(result) is list


def test_a_string_that_parses_as_json_is_read_as_the_parsed_value() -> None:
    assert evaluate("n", '{"n": 7}') == 7
    assert evaluate("$", "plain words") == "plain words"
    assert json_value("[1, 2]") == [1, 2]
    assert json_value("{not json") == "{not json"


def test_nothing_one_evaluation_binds_is_seen_by_the_next() -> None:
    expression = compile_expression("$exists($x) ? 'leaked' : ($x := 1; 'clean')", LIMITS)
    assert expression.evaluate(None) == "clean"
    assert expression.evaluate(None) == "clean"


HOSTILE = [
    pytest.param(
        "($f := function($x){ $f($x + 1) }; $f(0))",
        "EXPRESSION_LIMIT_EXCEEDED",
        id="unbounded-tail-recursion",
    ),
    pytest.param(
        "($f := function($x){ $x + $f($x + 1) }; $f(0))", "EXPRESSION_LIMIT_EXCEEDED", id="deep-recursion"
    ),
    pytest.param("$count([1..9999999])", "EXPRESSION_LIMIT_EXCEEDED", id="huge-range"),
    pytest.param("$sum([0..99999].[0..99999])", "EXPRESSION_LIMIT_EXCEEDED", id="range-product"),
    pytest.param("$length($pad('x', 100000000))", "EXPRESSION_LIMIT_EXCEEDED", id="huge-pad"),
    pytest.param(
        "($d := function($s, $n){ $n = 0 ? $s : $d($s & $s, $n - 1) }; $d('xxxxxxxxxx', 40))",
        "EXPRESSION_LIMIT_EXCEEDED",
        id="string-doubling",
    ),
    pytest.param(
        "$sort([1..99999], function($a, $b){ $a < $b })", "EXPRESSION_LIMIT_EXCEEDED", id="slow-sort"
    ),
    pytest.param("$eval('1 + 1')", "EXPRESSION_FAILED", id="eval"),
    pytest.param("($e := $eval; $e('1'))", "EXPRESSION_FAILED", id="eval-alias"),
    pytest.param("function($x){ $x }", "EXPRESSION_FAILED", id="function-result"),
    pytest.param("$error('boom')", "EXPRESSION_FAILED", id="error"),
    pytest.param(
        "[1..99999].{ 'a': $, 'b': 'xxxxxxxxxxxxxxxxxxxx' }", "EXPRESSION_LIMIT_EXCEEDED", id="huge-output"
    ),
]


@pytest.mark.parametrize(("source", "code"), HOSTILE)
def test_hostile_expressions_end_with_a_clear_error(source: str, code: str) -> None:
    with pytest.raises(nt.NoeticError) as err:
        evaluate(source, {"n": 1})
    assert err.value.code == code
    assert err.value.expression == source


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("$match('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', /(a+)+$/)", id="regex-backtracking"),
        pytest.param("1 +", id="syntax"),
        pytest.param("(" * 5000 + "1" + ")" * 5000, id="parser-recursion"),
        pytest.param("[" * 65 + "]" * 65, id="deep-nesting"),
        pytest.param("$string(" * 65 + "1" + ")" * 65, id="deep-calls"),
    ],
)
def test_regex_literals_deep_nesting_and_broken_syntax_fail_to_compile(source: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        compile_expression(source, LIMITS)
    assert err.value.code == "INVALID_EXPRESSION"


def test_the_input_size_is_capped() -> None:
    small = ExpressionLimits(max_value_bytes=100)
    with pytest.raises(nt.NoeticError) as err:
        evaluate("$count(xs)", {"xs": list(range(100))}, small)
    assert err.value.code == "EXPRESSION_LIMIT_EXCEEDED"
    assert "input" in err.value.message


def test_a_huge_string_input_is_refused_before_it_is_parsed() -> None:
    small = ExpressionLimits(max_value_bytes=100)
    with pytest.raises(nt.NoeticError) as err:
        evaluate("$", "[" + "1," * 100 + "1]", small)
    assert err.value.code == "EXPRESSION_LIMIT_EXCEEDED"


def test_limits_are_configurable() -> None:
    tight = ExpressionLimits(max_range=10)
    assert evaluate("$count([1..10])", None, tight) == 10
    with pytest.raises(nt.NoeticError):
        evaluate("$count([1..11])", None, tight)
