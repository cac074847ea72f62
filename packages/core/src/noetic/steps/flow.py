"""`sequence` and `conditional`: piping steps and choosing one at run time."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticConfigError, cancelled
from noetic.steps.base import Step, call_user, execute, takes_ctx

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["Conditional", "Sequence_", "conditional", "ensure_steps", "sequence"]


def ensure_steps(owner: str, steps: Step | Sequence[Step]) -> tuple[Step, ...]:
    """Normalise one step or a list of steps, rejecting anything that is not a step."""
    if isinstance(steps, Step):
        items: tuple[Any, ...] = (steps,)
    elif isinstance(steps, list | tuple):
        items = tuple(steps)
    else:
        raise NoeticConfigError(
            "INVALID_STEP",
            f"{owner}: expected a step or a list of steps, got {type(steps).__name__}",
            hint="Pass one step (nt.run_code(...), nt.call_model(...), …) or a non-empty list of them.",
        )
    if not items:
        raise NoeticConfigError(
            "INVALID_STEP", f"{owner}: needs at least one step", hint="Pass one step or a non-empty list."
        )
    for s in items:
        if not isinstance(s, Step):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"{owner}: {s!r} is not a step",
                hint="Build steps with nt.run_code, nt.call_model, nt.sequence, …",
            )
    return items


class Sequence_(Step):
    """Runs steps in order; each step's output is the next one's input."""

    kind = "sequence"
    __slots__ = ("steps",)

    def __init__(
        self,
        id: str,
        steps: Sequence[Step],
        *,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.steps = ensure_steps(f"sequence {id!r}", steps)

    async def run(self, input: Any, ctx: Context) -> Any:
        value = input
        for step in self.steps:
            value = await execute(step, value, ctx)
        return value

    def children(self) -> tuple[Step, ...]:
        return self.steps


def sequence(
    id: str,
    steps: Sequence[Step],
    *,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Sequence_:
    """A step that pipes `steps` in order."""
    return Sequence_(id, steps, custom_items=custom_items, emit_items=emit_items)


class Conditional(Step):
    """Runs the step `route(input, ctx)` picks; when it picks None, passes the input through."""

    kind = "conditional"
    __slots__ = ("_with_ctx", "route")

    def __init__(
        self,
        id: str,
        route: Callable[..., Any],
        *,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        if not callable(route):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"conditional {id!r}: route must be a function",
                hint="Pass route=lambda input, ctx: step_or_none.",
            )
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.route = route
        self._with_ctx = takes_ctx(route)

    async def run(self, input: Any, ctx: Context) -> Any:
        chosen = await call_user(self.route, self._with_ctx, input, ctx)
        if ctx.aborted:
            raise cancelled(ctx.abort_reason)
        if chosen is None:
            return input
        if not isinstance(chosen, Step):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"conditional {self.id!r}: route returned {chosen!r}, not a step or None",
                hint="Return one of your steps, or None to pass the input through.",
            )
        return await execute(chosen, input, ctx)


def conditional(
    id: str,
    route: Callable[..., Any],
    *,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Conditional:
    """A step that routes its input to the step `route(input, ctx)` returns."""
    return Conditional(id, route, custom_items=custom_items, emit_items=emit_items)
