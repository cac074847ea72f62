"""`run_code`: a step whose body is your function (plain, async, generator or async generator).

A plain function runs on the event loop's thread, like any synchronous code in an async
program: while it runs, nothing else in the process does. `in_thread=True` runs it in a worker
thread instead (`anyio.to_thread`), so a blocking body (a `time.sleep`, a blocking client call)
does not hold up the other turns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from noetic.errors import NoeticConfigError, NoeticError
from noetic.steps.base import Step, check_in_thread, takes_ctx

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["RunCode", "run_code"]


class RunCode(Step):
    """Runs `execute(input, ctx)`; retried up to `retry` times when it raises.

    A generator body's yields are events of the item `emit_items` names (dropped when it names
    none); its return value — or, for an async generator, a final `yield Return(value)` — is the
    step output. Aborting the context never interrupts the body (CTX-17): its own awaits run
    on, Noetic's waits inside it (`ctx.recv`, a nested model call) fail with `cancelled`, and
    whatever it returns after the abort is discarded for `cancelled`. No retry runs after abort.

    With `in_thread=True` a plain body runs in a worker thread. A thread cannot be interrupted:
    a cancellation from outside (a deadline around `run`, Ctrl-C, harness shutdown) ends the
    step at once and leaves the body running in its thread to its end, its result discarded.
    """

    kind = "run_code"
    __slots__ = ("_with_ctx", "execute", "in_thread", "retry")

    def __init__(
        self,
        id: str,
        execute: Callable[..., Any],
        *,
        retry: int = 0,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
        in_thread: bool = False,
    ):
        if not callable(execute):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"run_code {id!r}: execute must be a function, got {type(execute).__name__}",
                hint="Pass execute=lambda input, ctx: ... (plain, async, generator or async generator).",
            )
        if not isinstance(retry, int) or retry < 0:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"run_code {id!r}: retry must be a non-negative int, got {retry!r}",
                hint="Pass retry=0 (no retries) or a small positive number.",
            )
        check_in_thread(f"run_code {id!r}", execute, in_thread)
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        self.execute = execute
        self.retry = retry
        self.in_thread = in_thread
        self._with_ctx = takes_ctx(execute)

    async def run(self, input: Any, ctx: Context) -> Any:
        attempt = 0
        while True:
            try:
                return await self._attempt(input, ctx)
            except NoeticError as exc:
                if exc.code == "cancelled" or attempt >= self.retry or ctx.aborted:
                    raise
            except Exception as exc:
                if attempt >= self.retry or ctx.aborted:
                    raise NoeticError(
                        "step_failed",
                        f"step {self.id!r} (run_code) raised {type(exc).__name__}: {exc}",
                        cause=exc,
                        step_id=self.id,
                        retries_exhausted=self.retry > 0,
                    ) from exc
            attempt += 1

    async def _attempt(self, input: Any, ctx: Context) -> Any:
        if self.in_thread:
            import anyio.to_thread  # here: only programs with a threaded step load worker threads

            args = (input, ctx) if self._with_ctx else (input,)
            return await anyio.to_thread.run_sync(self.execute, *args, abandon_on_cancel=True)
        # Here rather than at the top: `import noetic` does not load the custom-item machinery.
        from noetic.custom_items import current_dispatch, drain

        dispatch = current_dispatch(self)
        result = self.execute(input, ctx) if self._with_ctx else self.execute(input)
        return await drain(result, dispatch.event if dispatch is not None else None)


def run_code(
    id: str,
    execute: Callable[..., Any],
    *,
    retry: int = 0,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
    in_thread: bool = False,
) -> RunCode:
    """A step that runs `execute(input, ctx)` and returns its result (in a worker thread when
    `in_thread=True`: for a plain function that blocks)."""
    return RunCode(
        id, execute, retry=retry, custom_items=custom_items, emit_items=emit_items, in_thread=in_thread
    )
