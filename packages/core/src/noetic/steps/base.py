"""The step base class and the interpreter every step runs through.

A step is a tagged value (`kind`, `id`) with an async `run(input, ctx)`; `execute(step, input,
ctx)` wraps every run with what all steps share: the abort check, `step_count`, the ledger path
key (RS-2), replay from the step ledger (RS-4), `step_started` / `step_completed` events, the
custom-item dispatch (CI-5), wrapping user exceptions as `step_failed`, the automatic
checkpoint after a completed step (RS-16), and — when tracing — the step's span
(`noetic.tracing`). Every step start is a cancellation point (`step_boundary`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, ClassVar, Generic

import anyio
from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.framework_events import step_completed, step_started
from typing_extensions import TypeVar

if TYPE_CHECKING:
    import anyio.lowlevel
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["Frame", "OutT", "Step", "call_user", "check_in_thread", "current_frame", "execute", "takes_ctx"]

#: The output type of a step, for type checkers only (`Step` alone means `Step[Any]`).
OutT = TypeVar("OutT", default=Any)


class Frame:
    """A position in the step tree: the ledger path of the running step and a counter of
    how many times each child id was dispatched under it (RS-2)."""

    __slots__ = ("_counts", "path")

    def __init__(self, path: str = ""):
        self.path = path
        self._counts: dict[str, int] | None = None

    def child_path(self, step_id: str) -> str:
        """The path of the next dispatch of `step_id` under this frame."""
        counts = self._counts
        if counts is None:
            counts = self._counts = {}
        n = counts.get(step_id, 0)
        counts[step_id] = n + 1
        return f"{self.path}/{step_id}#{n}"


_frame: ContextVar[Frame | None] = ContextVar("noetic_frame", default=None)


def reset_frame() -> Token[Frame | None]:
    """Start a fresh root frame in this task (the harness does this per turn); returns a token."""
    return _frame.set(Frame())


def restore_frame(token: Token[Frame | None]) -> None:
    """Put back the frame that was current before `reset_frame` returned `token`."""
    _frame.reset(token)


def current_frame() -> Frame:
    """The frame of the step running in this task (a fresh root frame outside any step)."""
    frame = _frame.get()
    if frame is None:
        frame = Frame()
        _frame.set(frame)
    return frame


def takes_ctx(fn: Callable[..., Any]) -> bool:
    """True when `fn` accepts a second positional argument (the context)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def check_in_thread(what: str, fn: Callable[..., Any], in_thread: Any, code: str = "INVALID_STEP") -> None:
    """Validate `in_thread=` of a `run_code` step or a tool (`what` names it; `code` is the
    error code): a bool, and True only for a plain function (an async body already lets others run while it awaits; a
    generator's body would run on the event loop anyway, one `next()` at a time)."""
    if not isinstance(in_thread, bool):
        raise NoeticConfigError(
            code,
            f"{what}: in_thread must be True or False, got {in_thread!r}",
            hint="Pass in_thread=True to run a blocking plain function in a worker thread.",
        )
    checks = (inspect.iscoroutinefunction, inspect.isgeneratorfunction, inspect.isasyncgenfunction)
    targets = (fn, type(fn).__call__)  # a callable object's own `__call__` too
    if in_thread and any(check(target) for target in targets for check in checks):
        raise NoeticConfigError(
            code,
            f"{what}: in_thread=True needs a plain function, got an async or generator one",
            hint="An async function already lets other work run while it awaits: drop in_thread=True.",
        )


async def call_user(fn: Callable[..., Any], with_ctx: bool, value: Any, ctx: Context) -> Any:
    """Call a plain or async user callable as `fn(value, ctx)` (or `fn(value)`)."""
    result = fn(value, ctx) if with_ctx else fn(value)
    if inspect.isawaitable(result):
        result = await result
    return result


class Step(Generic[OutT]):
    """A node of an agent graph. Subclasses set `kind` and implement `run`.

    `Step[T]` says the step's output is a `T` (type checkers carry it to `HarnessResponse`).

    Every builder takes `custom_items=` (declarations in scope for this step, by name) and
    `emit_items=` (what this step emits; see `noetic.custom_items`).
    """

    kind: ClassVar[str] = "step"

    __slots__ = ("custom_items", "emit_items", "id", "node_path")

    def __init__(
        self,
        id: str,
        *,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        if not isinstance(id, str) or not id.strip():
            raise NoeticConfigError(
                "EMPTY_STEP_ID",
                f"a {self.kind} step needs a non-empty string id, got {id!r}",
                hint="Give every step a short unique id such as 'plan' or 'review-loop'.",
            )
        self.id = id
        #: The JSON path of the workflow-document node this step was built from (None
        #: otherwise); a `NoeticError` leaving the step carries it as `node_path`.
        self.node_path: str | None = None
        self.custom_items: Mapping[str, CustomItemDecl[Any, Any]] = dict(custom_items or {})
        self.emit_items = emit_items
        if emit_items is not None and emit_items is not False:
            from noetic.custom_items import check_emit_items

            check_emit_items(self)

    async def run(self, input: Any, ctx: Context) -> Any:
        """Run the step's own work (without the shared wrapping `execute` adds)."""
        raise NotImplementedError

    def children(self) -> tuple[Step, ...]:
        """The steps nested directly inside this one."""
        return ()

    def record_output(self, output: Any) -> Any:
        """The plain-JSON form of `output` kept in the step ledger (RS-1).

        The default keeps `output` as it is; a value that is not plain JSON is not recorded,
        so the step runs again on resume. Steps with typed outputs override this and
        `replay_output` together.
        """
        return output

    def replay_output(self, data: Any) -> Any:
        """The output rebuilt from what `record_output` recorded (RS-4)."""
        return data

    def __repr__(self) -> str:
        return f"<{self.kind} {self.id!r}>"


#: The longest stretch of steps (seconds) run without yielding to the event loop.
YIELD_INTERVAL = 0.002
_next_yield = 0.0


async def step_boundary() -> None:
    """A cancellation point at a step start that lets other tasks and timers run.

    Yielding on every step made a loop of cheap synchronous steps 2.5 to 3 times slower (a
    yield costs more than such a step), so the event loop gets a turn once `YIELD_INTERVAL`
    has passed since the last yield here: a deadline, an abort or Ctrl-C then lands within that interval (plus
    the current step), while a burst of fast steps pays one clock read each (`execute` reads
    the clock itself and awaits this only when a yield is due).
    """
    global _next_yield
    _next_yield = time.monotonic() + YIELD_INTERVAL
    await anyio.lowlevel.checkpoint()


async def execute(
    step: Step, input: Any, ctx: Context, *, path: str | None = None, span: Span | None = None
) -> Any:
    """Run `step` on `ctx` with the shared step semantics; returns the step's output.

    Every step start is a cancellation point (see `step_boundary`), so a timeout
    (`anyio.fail_after`), an abort from another task, `harness.cancel` or Ctrl-C stop even a
    graph made only of synchronous steps within a few milliseconds. When tracing, the step
    runs inside its own span (`span` is that span, set by `_traced_execute`; callers leave it
    None).
    """
    if time.monotonic() >= _next_yield:
        await step_boundary()
    if ctx._aborted:
        raise cancelled(ctx._abort_reason)
    run = ctx._exec
    if path is None:
        path = current_frame().child_path(step.id)
    if span is None and run.tracer is not None:
        return await _traced_execute(step, input, ctx, path, run.tracer)
    ctx._step_count += 1
    ledger = run.ledger
    if ledger is not None:
        from noetic.durable.fingerprint import input_hash

        seen = input_hash(input, ctx)  # replay only for the input the entry was recorded for
        found, output = ledger.replay(path, step, seen, ctx)
        if found:
            if span is not None:
                span.set_attribute("noetic.replayed", True)
            return output
        mark = ledger.mark(ctx, seen)
    run.emit_later(step_started, step.id, step.kind, path)
    token = _frame.set(Frame(path))
    try:
        if step.emit_items:
            from noetic.custom_items import run_with_dispatch

            output = await run_with_dispatch(step, input, ctx)
        else:
            output = await step.run(input, ctx)
    except NoeticError as exc:
        if step.node_path is not None and "node_path" not in exc.details:  # the innermost node
            exc.details["node_path"] = step.node_path
        raise
    except Exception as exc:
        raise NoeticError(
            "step_failed",
            f"step {step.id!r} ({step.kind}) raised {type(exc).__name__}: {exc}",
            cause=exc,
            step_id=step.id,
            retries_exhausted=False,
            **({} if step.node_path is None else {"node_path": step.node_path}),
        ) from exc
    finally:
        _frame.reset(token)
    if ctx._aborted:  # aborted while it ran: the result is not this step's output
        raise cancelled(ctx._abort_reason)
    run.emit_later(step_completed, step.id, step.kind, path)
    if ledger is not None:  # the entry and the snapshot after it are one write (RS-1, RS-16)
        await run.checkpoint(ctx, ledger.record(path, step, output, ctx, mark), step_end=True)
    return output


async def _traced_execute(step: Step, input: Any, ctx: Context, path: str, tracer: Tracer) -> Any:
    """`execute` inside a `{kind} {id}` span. A context's first step hangs under the context's
    own span (a spawn child, a parallel path, the turn); later ones under whatever step of
    that context is running them."""
    from noetic.tracing import end_span, open_span, step_attributes

    span, token = open_span(tracer, f"{step.kind} {step.id}", ctx.span if ctx._step_count == 0 else None)
    if span.is_recording():
        step_attributes(span, step.kind, step.id, path, ctx.id)
    try:
        output = await execute(step, input, ctx, path=path, span=span)
    except BaseException as exc:
        end_span(span, token, exc)
        raise
    end_span(span, token)
    return output
