"""The layer conformance suite passes a good layer and catches broken ones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from noetic.items import Item
from noetic.layers import (
    CallResult,
    ContextLayer,
    LayerContext,
    LayerResult,
    ModelCallDecision,
    ParentUpdateResult,
    SpawnResult,
    ToolCallDecision,
    ToolCallRequest,
    layer_data,
    layer_function,
)
from noetic.model import ModelResponse
from noetic.testing.layer_conformance import LayerConformance


class Good(ContextLayer):
    id = "good"
    slot = 120
    scope = "thread"

    def __init__(self) -> None:
        self.provides = {
            "items": layer_data(lambda state: state),
            "add": layer_function(
                self._add, input={"type": "object", "properties": {"item": {"type": "string"}}}
            ),
        }

    async def _add(self, args: dict[str, Any], ctx: LayerContext) -> LayerResult:
        return LayerResult(state=[*ctx.state, args["item"]])

    async def init(self, ctx: LayerContext) -> list[str]:
        return list(await ctx.storage.get("state") or [])

    async def recall(self, ctx: LayerContext, budget: float) -> str | None:
        return ", ".join(ctx.state) or None

    async def store(self, ctx: LayerContext, response: CallResult) -> None:
        return None


class TestGoodLayer(LayerConformance):
    """A correct layer passes every check."""

    @pytest.fixture
    def layer(self) -> Good:
        return Good()

    @pytest.fixture
    def sample_inputs(self) -> dict[str, Any]:
        return {"add": {"item": "milk"}}


class SyncHook(Good):
    def recall(self, ctx: LayerContext, budget: float) -> str:  # type: ignore[override]
        return "sync"


class FailingRecall(Good):
    async def recall(self, ctx: LayerContext, budget: float) -> str:
        raise RuntimeError("broken recall")


class Unserializable(Good):
    async def init(self, ctx: LayerContext) -> Any:
        return {object()}


class GeneratorHook(Good):
    def recall(self, ctx: LayerContext, budget: float) -> Iterator[str]:  # type: ignore[override]
        yield "never awaited"


def test_the_suite_takes_a_plain_hook_and_rejects_a_generator() -> None:
    """`test_hooks_are_functions` passes a plain `def` hook and fails a generator function."""
    LayerConformance().test_hooks_are_functions(SyncHook())
    with pytest.raises(AssertionError, match="recall must be an async def or a plain def"):
        LayerConformance().test_hooks_are_functions(GeneratorHook())


@pytest.mark.anyio
async def test_a_plain_hook_passes_the_suite_for_real(caplog: pytest.LogCaptureFixture) -> None:
    """A layer whose recall is a plain function runs through two turns like an async one."""
    await LayerConformance().test_two_turns_on_one_thread(SyncHook(), caplog)


def test_the_suite_rejects_samples_for_unknown_functions() -> None:
    """`sample_inputs` naming a function the layer does not provide is an error."""
    with pytest.raises(AssertionError, match="does not provide"):
        LayerConformance().test_provides_are_well_formed(Good(), {"remove": {}})


@pytest.mark.anyio
async def test_the_suite_catches_a_hook_the_runtime_had_to_recover_from(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A recall that raises is skipped by the runtime, and the suite fails on it."""
    with pytest.raises(AssertionError):
        await LayerConformance().test_two_turns_on_one_thread(FailingRecall(), caplog)


@pytest.mark.anyio
async def test_the_suite_catches_state_a_checkpoint_cannot_hold(caplog: pytest.LogCaptureFixture) -> None:
    """State that is not plain JSON fails the run (the capture step raises)."""
    with pytest.raises(Exception, match=r"not JSON serializable|step_failed"):
        await LayerConformance().test_two_turns_on_one_thread(Unserializable(), caplog)


class Steering(ContextLayer):
    """A correct layer using every newer hook: it counts what it sees in its state."""

    id = "steering"
    slot = 90
    scope = "thread"

    async def init(self, ctx: LayerContext) -> dict[str, int]:
        return dict(await ctx.storage.get("state") or {"appended": 0, "calls": 0})

    async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> list[Item]:
        return list(items)

    async def project_history(self, ctx: LayerContext, items: tuple[Item, ...]) -> list[Item]:
        return list(items[-20:])

    async def after_model_call(self, ctx: LayerContext, response: ModelResponse) -> ModelCallDecision:
        return ModelCallDecision.allow(state={**ctx.state, "calls": ctx.state["calls"] + 1})

    async def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> ToolCallDecision:
        return (
            ToolCallDecision(block="no tools in conformance")
            if call.name == "forbidden"
            else ToolCallDecision()
        )

    async def on_spawn(self, ctx: LayerContext, child: Any) -> SpawnResult:
        return SpawnResult(child_state=dict(ctx.state))

    async def on_parent_update(self, ctx: LayerContext, parent_state: Any, parent: Any) -> ParentUpdateResult:
        return ParentUpdateResult(child_state=dict(parent_state))

    async def store(self, ctx: LayerContext, response: CallResult) -> dict[str, int]:
        return {**ctx.state, "appended": ctx.state["appended"] + 1}


class TestSteeringLayer(LayerConformance):
    """A correct layer with every newer hook passes every check."""

    @pytest.fixture
    def layer(self) -> Steering:
        return Steering()


class WrongGuardAnswer(Steering):
    async def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> Any:
        return "allow"  # not a ToolCallDecision


class FailingProjection(Steering):
    async def project_history(self, ctx: LayerContext, items: tuple[Item, ...]) -> list[Item]:
        raise RuntimeError("broken projection")


class WrongAppendAnswer(Steering):
    async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> Any:
        return 42


class FailingJudge(Steering):
    async def after_model_call(self, ctx: LayerContext, response: ModelResponse) -> ModelCallDecision:
        raise RuntimeError("broken judge")


class FailingParentUpdate(Steering):
    async def on_parent_update(self, ctx: LayerContext, parent_state: Any, parent: Any) -> Any:
        raise RuntimeError("broken follower")


class SyncGuard(Steering):
    def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> ToolCallDecision:  # type: ignore[override]
        return ToolCallDecision()


@pytest.mark.anyio
@pytest.mark.parametrize("broken", [WrongGuardAnswer, FailingProjection, WrongAppendAnswer, FailingJudge])
async def test_the_suite_fails_broken_tool_round_hooks(
    broken: type[Steering], caplog: pytest.LogCaptureFixture
) -> None:
    """A guard, projection, append or judge hook the runtime had to recover from fails the
    tool-round check."""
    with pytest.raises(AssertionError):
        await LayerConformance().test_a_tool_round(broken(), caplog)


@pytest.mark.anyio
async def test_the_suite_fails_a_broken_parent_update(caplog: pytest.LogCaptureFixture) -> None:
    """An `on_parent_update` that raises fails the spawn-while-storing check."""
    with pytest.raises(AssertionError):
        await LayerConformance().test_a_spawn_child_running_while_the_parent_stores(
            FailingParentUpdate(), caplog
        )


@pytest.mark.anyio
async def test_a_plain_guard_passes_the_tool_round(caplog: pytest.LogCaptureFixture) -> None:
    """The newer hooks may be plain functions too: a plain `before_tool_call` runs."""
    LayerConformance().test_hooks_are_functions(SyncGuard())
    await LayerConformance().test_a_tool_round(SyncGuard(), caplog)
