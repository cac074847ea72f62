"""Numeric options given an int too large for a float (10**400) raise their documented
`NoeticConfigError` code at construction, like NaN does, never a raw `OverflowError`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import noetic as nt
import pytest
from noetic.layers.budgets import allocate_budgets
from noetic.workflows.limits import ExpressionLimits, WorkflowLimits

HUGE = 10**400


class Layer:
    """A minimal context layer whose attributes the test sets."""

    id = "probe"
    slot = 100
    scope = "thread"

    def __init__(self, **attributes: Any) -> None:
        for name, value in attributes.items():
            setattr(self, name, value)


def noop() -> nt.Step:
    return nt.run_code("noop", lambda value: value)


OPTIONS: dict[str, tuple[Callable[[Any], object], str]] = {
    "session_idle_timeout": (
        lambda v: nt.AgentHarness("h", session_idle_timeout=v),
        "SESSION_POLICY_INVALID",
    ),
    "background_grace": (lambda v: nt.AgentHarness("h", background_grace=v), "INVALID_HARNESS_OPTION"),
    "loop max_iterations": (
        lambda v: nt.loop("l", noop(), until=nt.until.no_tool_calls(), max_iterations=v),
        "INVALID_STEP",
    ),
    "spawn timeout": (lambda v: nt.spawn("s", noop(), timeout=v), "INVALID_STEP"),
    "layer slot": (lambda v: nt.AgentHarness("h", layers=[Layer(slot=v)]), "INVALID_LAYER"),
    "layer budget": (lambda v: nt.AgentHarness("h", layers=[Layer(budget=v)]), "INVALID_LAYER"),
    "layer budget range": (
        lambda v: nt.AgentHarness("h", layers=[Layer(budget={"min": 0, "max": v})]),
        "INVALID_LAYER",
    ),
    "layer timeout": (
        lambda v: nt.AgentHarness("h", layers=[Layer(timeouts={"recall": v})]),
        "INVALID_LAYER",
    ),
    "allocate_budgets": (lambda v: allocate_budgets(v, []), "INVALID_BUDGET_INPUT"),
    "WorkflowLimits.max_run_cpu_ms": (lambda v: WorkflowLimits(max_run_cpu_ms=v), "INVALID_WORKFLOW_LIMITS"),
    "ExpressionLimits.timeout_ms": (lambda v: ExpressionLimits(timeout_ms=v), "INVALID_WORKFLOW_LIMITS"),
}


@pytest.mark.parametrize("option", OPTIONS)
def test_an_int_too_large_for_a_float_is_the_options_own_error(option: str) -> None:
    make, code = OPTIONS[option]
    with pytest.raises(nt.NoeticConfigError) as err:
        make(HUGE)
    assert err.value.code == code


@pytest.mark.parametrize("option", OPTIONS)
def test_nan_is_the_same_error(option: str) -> None:
    make, code = OPTIONS[option]
    with pytest.raises(nt.NoeticConfigError) as err:
        make(math.nan)
    assert err.value.code == code


def test_an_ordinary_value_is_still_accepted() -> None:
    nt.AgentHarness("h", session_idle_timeout=10**6, background_grace=10**6)
    nt.loop("l", noop(), until=nt.until.no_tool_calls(), max_iterations=10**6)
    nt.spawn("s", noop(), timeout=10**6)


@pytest.mark.parametrize("value", [-1, 1.5, True, "10", None])
def test_a_workflow_limit_is_a_whole_number(value: object) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        WorkflowLimits(max_iterations=value)  # type: ignore[arg-type]
    assert err.value.code == "INVALID_WORKFLOW_LIMITS"
    assert "WorkflowLimits.max_iterations" in err.value.message


def test_the_expressions_field_must_be_expression_limits() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        WorkflowLimits(expressions={"timeout_ms": 10})  # type: ignore[arg-type]
    assert err.value.code == "INVALID_WORKFLOW_LIMITS"
