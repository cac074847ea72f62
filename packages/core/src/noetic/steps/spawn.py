"""`spawn`: run a step as a sub-agent on a child context with a fresh item log (SP-1..SP-7)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from noetic.errors import NoeticConfigError
from noetic.items import ItemLog
from noetic.layers.layer_set import LayerSet
from noetic.layers.runtime import ChildLayers, abort_with_teardown
from noetic.numbers import as_float
from noetic.steps.base import Step, execute

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["Spawn", "spawn"]


class Spawn(Step):
    """Runs `step` on a child context: empty log, cloned state, depth + 1.

    `layers` (objects or registered names) replaces the inherited layer set for the child;
    without it the parent's layers continue through their `on_spawn` hooks, and `on_return`
    merges the child's layer state back when it succeeds. `timeout` (seconds) bounds the
    child: when it passes, the child is aborted with reason "spawn timeout" (so its channel
    waits and model stream fail with `cancelled` and `child.aborted` is true), and once the
    child has unwound the step raises `cancelled` with that reason (SP-7, CTX-17). The
    child's tokens and spend roll up into the parent however it ends.
    """

    kind = "spawn"
    __slots__ = ("layers", "step", "timeout")

    def __init__(
        self,
        id: str,
        step: Step,
        *,
        layers: Sequence[Any] | None = None,
        timeout: float | None = None,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        if not isinstance(step, Step):
            raise NoeticConfigError(
                "INVALID_STEP", f"spawn {id!r}: {step!r} is not a step", hint="Pass the child step as step=."
            )
        seconds = as_float(timeout)
        if timeout is not None and not (seconds is not None and seconds > 0):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"spawn {id!r}: timeout must be a positive number of seconds, got {timeout!r}",
                hint="Pass timeout=None for no bound, or seconds such as 30.0.",
            )
        self.step = step
        self.layers = LayerSet.of(layers)
        self.timeout = timeout

    def children(self) -> tuple[Step, ...]:
        return (self.step,)

    async def run(self, input: Any, ctx: Context) -> Any:
        child = ctx._exec.child_context(
            ctx, item_log=ItemLog(), state=copy.deepcopy(ctx.state), label=f"spawn {self.id}"
        )
        layers: ChildLayers | None = None
        try:
            if not child.aborted:  # SP-2: the child's layers (on_spawn items seed its log)
                layers = await ctx._exec.layers.open_child(ctx, child, self.layers)
            output = await self._run_child(input, child)
            return output if layers is None else await layers.succeeded(output)  # SP-3
        except BaseException as exc:
            if layers is not None:
                await layers.failed(exc)
            raise
        finally:
            child._roll_up()

    async def _run_child(self, input: Any, child: Context) -> Any:
        """Run the child step; a timer aborts the child when `timeout` passes.

        The timer aborts rather than cancels, so the child sees `cancelled` at its next Noetic
        wait instead of anyio's cancellation inside its code. The child's own failure is held
        until the timer task is gone, so it leaves this method unwrapped by the task group.
        """
        if self.timeout is None:
            return await execute(self.step, input, child)
        failure: Exception | None = None
        async with anyio.create_task_group() as timer:
            timer.start_soon(_abort_after, child, self.timeout)
            try:
                output = await execute(self.step, input, child)
            except Exception as exc:  # noqa: BLE001 - re-raised below, outside the task group
                failure = exc
            timer.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return output


async def _abort_after(child: Context, seconds: float) -> None:
    await anyio.sleep(seconds)
    abort_with_teardown(child, "spawn timeout")


def spawn(
    id: str,
    step: Step,
    *,
    layers: Sequence[Any] | None = None,
    timeout: float | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Spawn:
    """A step that runs `step` as a sub-agent; see `Spawn`."""
    return Spawn(id, step, layers=layers, timeout=timeout, custom_items=custom_items, emit_items=emit_items)
