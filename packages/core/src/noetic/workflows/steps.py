"""The steps a document needs beyond the builders: a sub-workflow, a dynamic fan-out, and a
model step that reads any input as text.

- `Subflow` runs a hydrated sub-document, on a literal input when the node gives one.
- `FanOut` is a dynamic `inParallel`: at run time it selects the array to fan out over (the
  input itself, or its `over` member; a JSON string is parsed first) and runs one `EachItem`
  path per element with `nt.in_parallel`'s semantics. Paths are keyed `<node id>-item-<i>`,
  so the step ledger tells them apart; more than `max_fan_out` elements, or more paths than the
  run's document-wide budget has left (`noetic.workflows.run_budget`), is `LIMIT_EXCEEDED`.
- `DocumentCallModel` is `nt.call_model` for a `callModel` node: an input that is not a string
  (an `invokeTool` result, an `each` element) reaches the model as its JSON text, as the
  TypeScript runtime passes values between nodes as text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.steps.base import Step, execute
from noetic.steps.model_call import CallModel
from noetic.steps.parallel import InParallel, ParallelMode
from noetic.workflows.expressions import json_value
from noetic.workflows.run_budget import count_paths, reraise_breach

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["DocumentCallModel", "EachItem", "FanOut", "Subflow", "input_text", "select_array"]


class Subflow(Step):
    """Runs `child` (a sub-document's root) on `input` when given, else on the step input."""

    kind = "subflow"
    __slots__ = ("child", "input")

    def __init__(
        self,
        id: str,
        child: Step,
        *,
        input: str | None = None,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.child = child
        self.input = input

    def children(self) -> tuple[Step, ...]:
        return (self.child,)

    async def run(self, input: Any, ctx: Context) -> Any:
        return await execute(self.child, input if self.input is None else self.input, ctx)


class EachItem(Step):
    """One path of a fan-out: runs `step` on one element of the array."""

    kind = "each_item"
    __slots__ = ("step", "value")

    def __init__(self, id: str, step: Step, value: Any):
        super().__init__(id)
        self.step = step
        self.value = value

    def children(self) -> tuple[Step, ...]:
        return (self.step,)

    async def run(self, input: Any, ctx: Context) -> Any:
        return await execute(self.step, self.value, ctx)


def select_array(step_id: str, input: Any, over: str | None) -> list[Any]:
    """The array a fan-out runs over; anything else is `INVALID_FORK_INPUT`."""
    value = json_value(input)
    if over is not None:
        value = value.get(over) if isinstance(value, Mapping) else None
    if not isinstance(value, list):
        where = f" at key {over!r}" if over is not None else ""
        raise NoeticConfigError(
            "INVALID_FORK_INPUT",
            f"dynamic inParallel {step_id!r} did not find an array{where} in its input",
            hint="Give the node a JSON array as input, or set 'over' to the key of an array in an input object.",
        )
    return value


class FanOut(Step):
    """A dynamic `inParallel`: one path per element; see the module docstring."""

    kind = "in_parallel"
    __slots__ = ("concurrency", "each", "max_fan_out", "merge", "mode", "over")

    def __init__(
        self,
        id: str,
        each: Step,
        *,
        over: str | None,
        mode: ParallelMode,
        merge: Callable[[list[Any]], Any] | None,
        concurrency: int | None,
        max_fan_out: int,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.each = each
        self.over = over
        self.mode = mode
        self.merge = merge
        self.concurrency = concurrency
        self.max_fan_out = max_fan_out

    def children(self) -> tuple[Step, ...]:
        return (self.each,)

    async def run(self, input: Any, ctx: Context) -> Any:
        values = select_array(self.id, input, self.over)
        if len(values) > self.max_fan_out:
            raise NoeticError(
                "LIMIT_EXCEEDED",
                f"dynamic inParallel {self.id!r} would fan out to {len(values)} paths, over the limit of "
                f"{self.max_fan_out}",
                step_id=self.id,
                limit=self.max_fan_out,
                actual=len(values),
            )
        if not values:
            return None if self.mode == "race" or self.merge is None else self.merge([])
        count_paths(self.id, len(values))
        paths = [EachItem(f"{self.id}-item-{i}", self.each, value) for i, value in enumerate(values)]
        fork = InParallel(self.id, paths, mode=self.mode, merge=self.merge, concurrency=self.concurrency)
        try:
            return await fork.run(input, ctx)
        except NoeticError:
            reraise_breach()
            raise


def input_text(value: Any) -> str:
    """The text a `callModel` node sends for `value`: a string as it is, nothing for None,
    anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"), default=str)


class DocumentCallModel(CallModel):
    """A `callModel` node: `nt.call_model` whose input is always text (see `input_text`)."""

    __slots__ = ()

    async def run(self, input: Any, ctx: Context) -> Any:
        return await super().run(input_text(input), ctx)
