"""`loop`: repeat body steps until a predicate says stop (rules LP-1..LP-3, CTX-15).

Each iteration checks abort first (raising `cancelled`), pipes the body steps, then asks
`until(snapshot)`. A predicate that raises stops the loop with reason "Predicate error: …".
Every stop publishes a `loop_stopped` event (`step_id`, `reason`, `iterations`, and `failed`:
true when the predicate raised), so a host can tell a broken predicate from a finished loop.
`prepare_next(output, verdict, ctx)` builds the next input (default: the output). `on_error`
decides what a failed iteration does: `"abort"` (default) re-raises, `"retry"` runs the
iteration again, `"skip"` continues with the last good output; it may also be a function
`(error, ctx) -> action`. Cancellation is never handed to `on_error`. `max_iterations` is a
hard ceiling counting retries: exceeding it fails the step (it may be `math.inf`).
`keep_history` is how many of the latest outputs `LoopSnapshot.history` holds (default 100);
a loop whose predicate reads fewer keeps fewer, so its memory does not grow with its outputs.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.numbers import as_float
from noetic.predicates import LoopSnapshot, Until, Verdict, evaluate
from noetic.schema import to_jsonable
from noetic.steps.base import OutT, Step, call_user, execute
from noetic.steps.flow import ensure_steps

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context
    from noetic.tracing import IterationSpans

__all__ = ["Loop", "loop", "output_text"]

OnError = Literal["abort", "retry", "skip"] | Callable[..., Any]
_MISSING: Any = object()


def output_text(value: Any) -> str:
    """The text form of a step output: the string itself, a `text` field, or JSON."""
    if isinstance(value, str):
        return value
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    if value is None:
        return ""
    return json.dumps(to_jsonable(value), default=str)


class Loop(Step[OutT]):
    """Repeats `steps`; see the module docstring."""

    kind = "loop"
    __slots__ = ("keep_history", "max_iterations", "on_error", "prepare_next", "steps", "until")

    def __init__(
        self,
        id: str,
        steps: Step | Sequence[Step],
        *,
        until: Until,
        max_iterations: float = 1000,
        on_error: OnError = "abort",
        prepare_next: Callable[..., Any] | None = None,
        keep_history: int = 100,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.steps = ensure_steps(f"loop {id!r}", steps)
        if not callable(until):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"loop {id!r}: until must be a predicate",
                hint="Use one of nt.until.*, combine with nt.any_/nt.all_, or pass a function.",
            )
        ceiling = as_float(max_iterations)
        if not (ceiling is not None and ceiling >= 1 and (ceiling == math.inf or ceiling.is_integer())):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"loop {id!r}: max_iterations must be a whole number >= 1 or math.inf, got {max_iterations!r}",
                hint="Pass max_iterations=1000 (the default) or math.inf for no ceiling.",
            )
        if not callable(on_error) and on_error not in ("abort", "retry", "skip"):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"loop {id!r}: unknown on_error {on_error!r}",
                hint="Use 'abort', 'retry', 'skip' or a function (error, ctx) -> one of those.",
            )
        if isinstance(keep_history, bool) or not isinstance(keep_history, int) or keep_history < 1:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"loop {id!r}: keep_history must be a whole number >= 1, got {keep_history!r}",
                hint="Pass keep_history=100 (the default), or 1 when the predicate reads only the last output.",
            )
        self.keep_history = keep_history
        self.until = until
        self.max_iterations = max_iterations
        self.on_error = on_error
        self.prepare_next = prepare_next

    def children(self) -> tuple[Step, ...]:
        return self.steps

    async def run(self, input: Any, ctx: Context) -> Any:
        tracer = ctx._exec.tracer
        if tracer is None:
            return await self._iterate(input, ctx, None)
        from noetic.tracing import IterationSpans

        spans = IterationSpans(tracer)
        try:
            output = await self._iterate(input, ctx, spans)
        except BaseException as exc:
            spans.close(exc)
            raise
        spans.close()
        return output

    async def _iterate(self, input: Any, ctx: Context, spans: IterationSpans | None) -> Any:
        current = input
        last: Any = _MISSING
        history: deque[Any] = deque(maxlen=self.keep_history)
        started = time.monotonic()
        completed = 0
        attempts = 0
        while True:
            if ctx._aborted:
                raise cancelled(ctx._abort_reason)
            attempts += 1
            if spans is not None:
                spans.next()
            if attempts > self.max_iterations:
                raise NoeticError(
                    "step_failed",
                    f"loop {self.id!r} exceeded its maximum of {self.max_iterations} iterations",
                    step_id=self.id,
                    retries_exhausted=False,
                )
            try:
                output = current
                for step in self.steps:
                    output = await execute(step, output, ctx)
                completed += 1
            except NoeticError as exc:
                action = await self._on_error(exc, ctx)
                if action == "retry" or (action == "skip" and last is _MISSING):
                    continue
                output = last
            last = output
            history.append(output)
            snapshot = LoopSnapshot(
                step_count=completed,
                tokens=ctx.tokens,
                elapsed=(time.monotonic() - started) * 1000.0,
                cost=ctx.cost,
                last_output=output,
                last_text=output_text(output),
                history=tuple(history),
                depth=ctx.depth,
                last_step_meta=ctx.last_step_meta,
                held_cost=ctx.root.held_cost,
            )
            failed = False
            try:
                verdict = await evaluate(self.until, snapshot)
            except Exception as exc:  # noqa: BLE001 - LP-2: a raising predicate stops the loop
                verdict = Verdict(True, f"Predicate error: {exc}")
                failed = True
            if spans is not None:
                spans.verdict(verdict.stop, verdict.reason)
            if verdict.stop:
                ctx._exec.emit(
                    "loop_stopped",
                    {"step_id": self.id, "reason": verdict.reason, "failed": failed, "iterations": completed},
                )
                return last
            current = await self._next(output, verdict, ctx)

    async def _on_error(self, exc: NoeticError, ctx: Context) -> str:
        if exc.code == "cancelled":
            raise exc
        action: Any = self.on_error
        if callable(action):
            action = await call_user(action, True, exc, ctx)
        if action not in ("retry", "skip"):
            raise exc
        return str(action)

    async def _next(self, output: Any, verdict: Verdict, ctx: Context) -> Any:
        if self.prepare_next is None:
            return output
        value = self.prepare_next(output, verdict, ctx)
        if inspect.isawaitable(value):
            value = await value
        return value


@overload
def loop(
    id: str,
    steps: Step[OutT],
    *,
    until: Until,
    max_iterations: float = 1000,
    on_error: OnError = "abort",
    prepare_next: Callable[..., Any] | None = None,
    keep_history: int = 100,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Loop[OutT]: ...
@overload
def loop(
    id: str,
    steps: Sequence[Step],
    *,
    until: Until,
    max_iterations: float = 1000,
    on_error: OnError = "abort",
    prepare_next: Callable[..., Any] | None = None,
    keep_history: int = 100,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Loop[Any]: ...
def loop(
    id: str,
    steps: Step | Sequence[Step],
    *,
    until: Until,
    max_iterations: float = 1000,
    on_error: OnError = "abort",
    prepare_next: Callable[..., Any] | None = None,
    keep_history: int = 100,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> Loop[Any]:
    """A step that repeats `steps` until `until` says stop; see `Loop`.

    Its output is the last iteration's output, so `loop(id, step)` has the type of `step`."""
    return Loop(
        id,
        steps,
        until=until,
        max_iterations=max_iterations,
        on_error=on_error,
        prepare_next=prepare_next,
        keep_history=keep_history,
        custom_items=custom_items,
        emit_items=emit_items,
    )
