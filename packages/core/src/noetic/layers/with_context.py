"""`with_context`: run a step with extra context layers, on the same context.

The layers are initialized when the step starts and torn down (`on_complete`, `dispose`) when
it ends; inside, they join the layers already active (one with the same id replaces the outer
one for the duration), show up in `ctx.context` and offer their tools to `call_model`. Unlike
`spawn`, nothing is isolated: the log, state and counters are the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticConfigError
from noetic.layers.layer_set import LayerSet
from noetic.steps.base import Step, execute

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["WithContext", "with_context"]


class WithContext(Step):
    """Runs `step` with `layers` added; see the module docstring."""

    kind = "with_context"
    __slots__ = ("layers", "step")

    def __init__(
        self,
        id: str,
        step: Step,
        *,
        layers: LayerSet | Iterable[Any],
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        if not isinstance(step, Step):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"with_context {id!r}: {step!r} is not a step",
                hint="Pass the child step as step.",
            )
        layer_set = LayerSet.of(layers)
        if not layer_set:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"with_context {id!r}: no layers given",
                hint="Pass layers=[...] (objects or registered names such as 'scratchpad').",
            )
        self.step = step
        self.layers: LayerSet = layer_set

    def children(self) -> tuple[Step, ...]:
        return (self.step,)

    async def run(self, input: Any, ctx: Context) -> Any:
        return await ctx._exec.layers.run_scoped(ctx, self.layers, lambda: execute(self.step, input, ctx))


def with_context(
    id: str,
    step: Step,
    *,
    layers: LayerSet | Iterable[Any],
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> WithContext:
    """A step that runs `step` with extra context `layers`; see `WithContext`."""
    return WithContext(id, step, layers=layers, custom_items=custom_items, emit_items=emit_items)
