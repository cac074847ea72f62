"""The layer conformance suite passes a good layer and catches broken ones."""

from __future__ import annotations

from typing import Any

import pytest
from noetic.layers import CallResult, ContextLayer, LayerContext, LayerResult, layer_data, layer_function
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


def test_the_suite_rejects_a_sync_hook() -> None:
    """`test_hooks_are_async` fails for a plain `def` hook."""
    with pytest.raises(AssertionError, match="recall must be async"):
        LayerConformance().test_hooks_are_async(SyncHook())


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
