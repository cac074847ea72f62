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


# --- the evaluation budget (issue 18: unbindable, CPU time, nesting, memory) -------------------


def test_the_bound_lives_outside_the_expression_environment() -> None:
    unbind = "( $__evaluate_entry := $nothing; $__evaluate_exit := $nothing; $f := function($n){ $f($n+1) }; $f(0) )"
    with pytest.raises(nt.NoeticError, match="CPU time") as info:
        evaluate(unbind, limits=ExpressionLimits(timeout_ms=50))
    assert info.value.code == "EXPRESSION_LIMIT_EXCEEDED"


def test_the_time_bound_counts_cpu_time_not_the_wall_clock() -> None:
    import time

    from noetic.workflows.budget import EvaluationBudget, LimitHit

    budget = EvaluationBudget(ExpressionLimits(timeout_ms=20))
    time.sleep(0.05)
    budget.check_time()  # sleeping used no CPU time
    end = time.thread_time() + 0.05
    while time.thread_time() < end:
        pass
    with pytest.raises(LimitHit, match="CPU time"):
        budget.check_time()


def test_depth_counts_nesting_so_many_calls_are_fine() -> None:
    assert len(evaluate("$map([1..2000], function($v){[$v,$v]})")) == 2000
    with pytest.raises(nt.NoeticError, match="nests more than 300"):
        evaluate("( $f := function($n){ 1 + $f($n+1) }; $f(0) )")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('( $s := $pad("", 2000, "a"); $replace($s, "a", $s) )', "\\$replace's result"),
        ('( $s := $pad("", 1000, "a"); $join([1..2000].$s) )', "\\$join's result"),
        ('( $s := $pad("", 1000, "a"); $string([1..2000].$s) )', "JSON text"),
        ('( $s := $pad("", 1000, "a"); $s & [1..2000].$s )', "concatenated"),
        ('$split($pad("", 200000, "a"), "")', "\\$split's result"),
        ("$append([1..60000], [1..60000])", "\\$append's result"),
        ('$formatNumber(1, $pad("", 300, "#"))', "picture"),
        ("[1..100000].[1..100000]", "memory budget"),
    ],
)
def test_builtins_refuse_before_they_allocate_over_a_limit(source: str, message: str) -> None:
    with pytest.raises(nt.NoeticError, match=message) as info:
        evaluate(source, limits=ExpressionLimits(max_string=1_000_000))
    assert info.value.code == "EXPRESSION_LIMIT_EXCEEDED"


def test_the_linear_reimplementations_keep_the_library_results() -> None:
    assert evaluate('$distinct([1, 1.0, "1", [1], [1], {"a": 1, "b": 2}, {"b": 2, "a": 1}])') == [
        1,
        "1",
        [1],
        {"a": 1, "b": 2},
    ]
    assert evaluate('$replace("abcabc", "b", "[$0]")') == "a[b]ca[b]c"
    assert evaluate('$replace("abcabc", "b", "X", 1)') == "aXcabc"
    assert evaluate('$replace("a$b", "$", "$$")') == "a$b"
    with pytest.raises(nt.NoeticError, match="empty string"):
        evaluate('$replace("abc", "", "x")')


def test_a_result_repeating_one_large_string_is_measured_without_serialising_it() -> None:
    # 2 GB as JSON; 50,000 path steps took 60-80 % of the default CPU bound on a slow machine
    with pytest.raises(nt.NoeticError, match="result is over"):
        evaluate('( $s := $pad("", 100000, "a"); [1..20000].$s )')


def test_a_path_step_counts_the_items_it_flattens() -> None:
    with pytest.raises(nt.NoeticError, match="path step's result") as info:
        evaluate("($a := [1..300]; $a.$a.$a)")
    assert info.value.code == "EXPRESSION_LIMIT_EXCEEDED"
    assert evaluate("($a := [1..300]; $count($a.$a))") == 90000
    assert len(evaluate("[1..200].[1..200]")) == 200  # constructed arrays stay one item each


def test_any_library_error_becomes_expression_failed() -> None:
    with pytest.raises(nt.NoeticError, match="outside the range of dates") as info:
        evaluate("$fromMillis(1e20)")
    assert info.value.code == "EXPRESSION_FAILED"


def test_garbage_collection_does_not_count_against_the_time_bound() -> None:
    import gc
    import time

    from noetic.workflows.budget import EvaluationBudget

    heap = [[i] for i in range(1_000_000)]
    started = time.thread_time()
    gc.collect()
    one_collection = time.thread_time() - started
    # a bound of half one collection, then two collections: four times over it in CPU time
    budget = EvaluationBudget(ExpressionLimits(timeout_ms=max(1, int(one_collection * 500))))
    gc.collect()
    gc.collect()
    budget.check_time()
    del heap


def test_prettified_string_counts_its_indentation_before_building_it() -> None:
    deep = "[" * 3000 + "]" * 3000  # 6 kB of JSON, some 9 MB once indented
    assert len(evaluate("$string($)", deep)) == 6000
    with pytest.raises(nt.NoeticError, match="JSON text") as info:
        evaluate("$string($, true)", deep)
    assert info.value.code == "EXPRESSION_LIMIT_EXCEEDED"


def test_a_result_repeating_one_object_is_refused_before_it_is_walked() -> None:
    with pytest.raises(nt.NoeticError, match="result is over"):
        evaluate('($o := {"a": [1..10000]}; [1..10000].$o)')
    assert evaluate('{"a": null, "b": [null, 1]}') == {"a": None, "b": [None, 1]}


def test_non_finite_numbers_in_text_are_not_json() -> None:
    assert json_value("-Infinity") == "-Infinity"
    assert json_value('{"a": NaN}') == '{"a": NaN}'


def test_threads_evaluating_one_expression_keep_their_own_budgets() -> None:
    import threading

    expression = compile_expression("$count([1..2000].($ * 2))", LIMITS)
    failures: list[BaseException] = []

    def work() -> None:
        for _ in range(20):
            try:
                assert expression.evaluate(None) == 2000
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_an_error_quoting_a_huge_value_stays_short() -> None:
    for source in ('$error($pad("", 900000, "x"))', '$number($pad("", 900000, "x"))'):
        with pytest.raises(nt.NoeticError) as info:
            evaluate(source)
        assert len(info.value.message) < 700


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 / 0", "Number out of range: division by zero (D1001)"),
        ("1 % 0", "Number out of range (D1001)"),
        ("$power(10, 400)", "cannot be represented as a JSON number (D3061)"),
        ("$power(-8, 1/3)", "cannot be represented as a JSON number (D3061)"),
        ("$fromMillis(1e300)", "outside the range of dates"),
        ("$toMillis('99999-01-01')", "ISO 8601 formatted timestamp (D3110)"),
        ("$sum([1e308, 1e308])", "$sum: Number out of range (D1001)"),
        ("$sqrt(-1)", "The sqrt function cannot be applied to a negative number: -1 (D3060)"),
        ("$replace('a', '', 'b')", "Second argument of replace function cannot be an empty string"),
    ],
)
def test_python_errors_inside_an_evaluation_read_as_jsonata_errors(source: str, expected: str) -> None:
    with pytest.raises(nt.NoeticError) as info:
        evaluate(source)
    assert info.value.code == "EXPRESSION_FAILED"
    message = str(info.value)
    assert expected in message
    for python_name in ("Error:", "Exception", "Object", "errno", "Errno"):
        assert python_name not in message
