"""The budget allocator and the projection policy (BG-1..BG-5)."""

from __future__ import annotations

import math
from typing import Any

import noetic as nt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from noetic.layers import DEFAULT_PROJECTION, Projection, allocate_budgets


def test_bg_2_acceptance_33() -> None:
    """Acceptance 33: 10000 total, system 1000, reserve 1000, [{200..1500}, auto] → the first
    layer gets 200..1500, history 40% of the post-minimum remainder, everything sums to 8000."""
    result = allocate_budgets(
        10_000, [{"min": 200, "max": 1500}, "auto"], system_prompt_tokens=1000, response_reserve=1000
    )
    first, second = result.allocations
    assert 200 <= first <= 1500
    assert result.history_budget == pytest.approx(0.4 * (8000 - 200))
    assert result.total == pytest.approx(8000)
    assert first == 1500
    assert second == pytest.approx(8000 - 200 - 0.4 * 7800 - 1300)


@pytest.mark.parametrize("field", ["total_budget", "system_prompt_tokens", "response_reserve"])
def test_bg_3_nan_inputs_raise(field: str) -> None:
    """BG-3: NaN in any input → INVALID_BUDGET_INPUT naming the field."""
    kwargs: dict[str, Any] = {"total_budget": 1000.0, "system_prompt_tokens": 0.0, "response_reserve": 0.0}
    kwargs[field] = math.nan
    total = kwargs.pop("total_budget")
    with pytest.raises(nt.NoeticConfigError) as info:
        allocate_budgets(total, ["auto"], **kwargs)
    assert info.value.code == "INVALID_BUDGET_INPUT"
    assert info.value.field == field


@pytest.mark.parametrize("spec", [math.nan, {"min": 0, "max": math.nan}, {"min": 1}, "lots"])
def test_bg_3_bad_budget_specs_raise(spec: Any) -> None:
    """BG-3: a NaN or malformed budget in the list → INVALID_BUDGET_INPUT."""
    with pytest.raises(nt.NoeticConfigError) as info:
        allocate_budgets(1000, [spec])
    assert info.value.code == "INVALID_BUDGET_INPUT"


def test_bg_3_infinity_is_uncapped() -> None:
    """BG-3: an infinite budget is allowed; finite layers reach their max."""
    result = allocate_budgets(math.inf, [{"min": 10, "max": 20}, "auto"])
    assert result.allocations[0] == 20
    assert math.isinf(result.allocations[1])
    assert math.isinf(result.history_budget)


def test_bg_1_nothing_available_gives_zero() -> None:
    """BG-1: when reserve and system eat the budget, every allocation and history are 0."""
    result = allocate_budgets(
        1000, [{"min": 100, "max": 200}, "auto"], system_prompt_tokens=600, response_reserve=400
    )
    assert result.allocations == (0.0, 0.0)
    assert result.history_budget == 0


def test_bg_2_overcommitted_minimums_scale_down() -> None:
    """Minimums above the available budget are scaled down together; history gets nothing."""
    result = allocate_budgets(1000, [{"min": 800, "max": 900}, {"min": 1200, "max": 1500}])
    assert result.allocations == (400, 600)
    assert result.history_budget == 0


def test_bg_4_pool_a_capped_layer_cannot_use_goes_to_history() -> None:
    """BG-4: with only finite layers, unused pool goes to history, never to other layers."""
    result = allocate_budgets(10_000, [{"min": 0, "max": 100}, 50])
    assert result.allocations == (100, 50)
    assert result.history_budget == pytest.approx(10_000 - 150)


def test_layers_keyed_by_id() -> None:
    """Layer objects are allocated by their budget and reported by id."""

    class L(nt.ContextLayer):
        slot = 100

        def __init__(self, id: str, budget: Any):
            self.id, self.budget = id, budget

    result = allocate_budgets(5000, [L("a", 100), L("b", "auto")])
    assert set(result.by_id()) == {"a", "b"}
    assert result.by_id()["a"] == 100


budget_specs = st.one_of(
    st.just("auto"),
    st.integers(0, 5000),
    st.tuples(st.integers(0, 3000), st.integers(0, 3000)).map(lambda t: {"min": min(t), "max": max(t)}),
)


@given(
    total=st.integers(0, 200_000),
    system=st.integers(0, 20_000),
    reserve=st.integers(0, 20_000),
    specs=st.lists(budget_specs, max_size=6),
)
def test_bg_2_the_budget_is_conserved_and_no_layer_exceeds_its_max(
    total: int, system: int, reserve: int, specs: list[Any]
) -> None:
    """BG-2: allocations plus history equal what is available (or 0), none above its max, and
    every minimum is met whenever the minimums fit."""
    result = allocate_budgets(total, specs, system_prompt_tokens=system, response_reserve=reserve)
    available = total - system - reserve
    if available <= 0:
        assert result.total == 0
        return
    minimums = [s["min"] if isinstance(s, dict) else 0 for s in specs]
    maximums = [s["max"] if isinstance(s, dict) else s if isinstance(s, int) else math.inf for s in specs]
    for allocated, low, high in zip(result.allocations, minimums, maximums, strict=True):
        assert allocated <= high + 1e-6
        if sum(minimums) <= available:
            assert allocated >= low - 1e-6
    assert result.total <= available + 1e-6
    if sum(minimums) <= available:
        assert result.total == pytest.approx(available)


def test_bg_5_projection_defaults_and_parsing() -> None:
    """BG-5: the default projection is 128000 / 4000 / sliding_window; dicts are accepted."""
    assert (DEFAULT_PROJECTION.token_budget, DEFAULT_PROJECTION.response_reserve) == (128_000, 4_000)
    assert DEFAULT_PROJECTION.overflow == "sliding_window"
    assert Projection.of({"token_budget": 500}) == Projection(token_budget=500)
    with pytest.raises(nt.NoeticConfigError):
        Projection.of({"tokens": 5})
