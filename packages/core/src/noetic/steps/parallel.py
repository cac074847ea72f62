"""`in_parallel`: run paths concurrently in `all`, `race` or `settle` mode (rules LC-1..LC-5).

Each path runs on a child context holding a copy of the parent's log (SP-5) and a deep clone of
its `state` (CTX-4); children roll their tokens and spend up into the parent when they finish
(TU-7). Ledger keys come from each path's position in the list (RS-3). Context layers continue
on each path through `on_spawn` (its items are not appended); for paths that succeed,
`on_return` merges their layer state back, one path at a time (SP-5).

- `all`: every path must succeed; on the first failure (a cancelled path is not one) queued
  paths are skipped, running siblings are aborted and awaited, and
  `fork_partial{succeeded, failed}` is raised.
- `race`: the first success wins, the others are aborted and awaited; its `state` replaces
  the parent's. If every path fails, `fork_partial`.
- `settle`: never raises for a path failure; the result is one `SettleResult` per path.

Aborting a path is cooperative, like every abort (CTX-17): its Noetic waits fail with
`cancelled` and it stops at its next step boundary; code of its own runs to its end. If the
parent itself is aborted while paths run — the abort reaches every live path — any mode raises
`cancelled` with the parent's reason (LC-2).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
from noetic.errors import NoeticConfigError, NoeticError, cancelled
from noetic.items import ItemLog
from noetic.layers.runtime import ChildLayers, abort_with_teardown
from noetic.records import FrozenRecord, set_field
from noetic.steps.base import Step, current_frame, execute
from noetic.steps.flow import ensure_steps

if TYPE_CHECKING:
    from noetic.custom_items import CustomItemDecl
    from noetic.execution_context import Context

__all__ = ["InParallel", "SettleResult", "in_parallel"]

ParallelMode = Literal["all", "race", "settle"]


class SettleResult(FrozenRecord):
    """How one path ended: `fulfilled` with a `value`, or `rejected` with an `error`."""

    __slots__ = ("error", "status", "step_id", "value")
    step_id: str
    status: Literal["fulfilled", "rejected"]
    value: Any
    error: BaseException | None

    def __init__(
        self,
        step_id: str,
        status: Literal["fulfilled", "rejected"],
        value: Any = None,
        error: BaseException | None = None,
    ) -> None:
        set_field(self, "step_id", step_id)
        set_field(self, "status", status)
        set_field(self, "value", value)
        set_field(self, "error", error)


class _Path:
    __slots__ = ("child", "error", "index", "ok", "step", "value")

    def __init__(self, index: int, step: Step):
        self.index = index
        self.step = step
        self.child: Context | None = None
        self.ok = False
        self.value: Any = None
        self.error: BaseException | None = None

    def result(self) -> SettleResult:
        if self.ok:
            return SettleResult(self.step.id, "fulfilled", value=self.value)
        return SettleResult(self.step.id, "rejected", error=self.error)


class _Race:
    """Shared bookkeeping of the paths: whether the step is decided, and the race winner."""

    __slots__ = ("stopped", "winner")

    def __init__(self) -> None:
        self.stopped = False
        self.winner: _Path | None = None


class InParallel(Step):
    """Runs `steps` concurrently on the same input; see the module docstring."""

    kind = "in_parallel"
    __slots__ = ("concurrency", "merge", "mode", "steps")

    def __init__(
        self,
        id: str,
        steps: Sequence[Step],
        *,
        mode: ParallelMode = "all",
        merge: Callable[..., Any] | None = None,
        concurrency: int | None = None,
        custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
        emit_items: Any = None,
    ):
        super().__init__(id, custom_items=custom_items, emit_items=emit_items)
        if mode not in ("all", "race", "settle"):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"in_parallel {id!r}: unknown mode {mode!r}",
                hint="Use mode='all', 'race' or 'settle'.",
            )
        if concurrency is not None and (not _is_number(concurrency) or concurrency < 1):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"in_parallel {id!r}: concurrency must be a whole number of at least 1, got {concurrency!r}",
                hint="Pass concurrency=None for no bound, or a positive number.",
            )
        if merge is not None and not callable(merge):
            raise NoeticConfigError(
                "INVALID_STEP",
                f"in_parallel {id!r}: merge must be a function, got {type(merge).__name__}",
                hint="Pass merge=lambda results: ... (plain or async), or leave it out to get the list.",
            )
        self.steps = ensure_steps(f"in_parallel {id!r}", steps)
        self.mode = mode
        self.merge = merge
        self.concurrency = concurrency

    def children(self) -> tuple[Step, ...]:
        return self.steps

    async def run(self, input: Any, ctx: Context) -> Any:
        frame = current_frame()
        keys = [frame.child_path(step.id) for step in self.steps]  # RS-3: by position, now
        paths = [_Path(i, step) for i, step in enumerate(self.steps)]
        limiter = anyio.Semaphore(self.concurrency) if self.concurrency else None
        state = _Race()

        def stop_others(keep: _Path, reason: str) -> None:
            state.stopped = True
            for other in paths:
                if other is not keep and other.child is not None and not other.ok:
                    abort_with_teardown(other.child, reason)  # its layers still see on_complete

        async def run_path(path: _Path) -> None:
            if limiter is not None:
                await limiter.acquire()
            try:
                if state.stopped or ctx._aborted:
                    path.error = cancelled("path skipped: the parallel step was already decided")
                    return
                child = path.child = ctx._exec.child_context(
                    ctx,
                    item_log=ItemLog(ctx.item_log.items),
                    state=copy.deepcopy(ctx.state),
                    label=f"path {path.index} {path.step.id}",
                )
                layers: ChildLayers | None = None
                try:
                    if not child.aborted:  # SP-5: layers continue, on_spawn items are not appended
                        layers = await ctx._exec.layers.open_child(ctx, child, None, fork=True)
                    value = await execute(path.step, input, child, path=keys[path.index])
                    path.value = value if layers is None else await layers.succeeded(value)
                    path.ok = True
                except NoeticError as exc:
                    path.error = exc
                finally:
                    if layers is not None and not path.ok:
                        await layers.failed(path.error or cancelled(child.abort_reason))
                    child._roll_up()
                failed = path.error is not None and getattr(path.error, "code", None) != "cancelled"
                if self.mode == "all" and failed and not state.stopped and not ctx._aborted:
                    stop_others(path, f"sibling path {path.step.id!r} failed")
                if self.mode == "race" and path.ok and state.winner is None:
                    state.winner = path
                    stop_others(path, "lost the race")
            finally:
                if limiter is not None:
                    limiter.release()

        async with anyio.create_task_group() as tg:
            for path in paths:
                tg.start_soon(run_path, path)

        if ctx._aborted:
            raise cancelled(ctx._abort_reason)
        return await self._result(paths, state.winner, ctx)

    async def _result(self, paths: list[_Path], winner: _Path | None, ctx: Context) -> Any:
        if self.mode == "settle":
            return await self._merged([p.result() for p in paths], ctx)
        if self.mode == "race":
            if winner is None:
                raise _fork_partial(self.id, paths)
            assert winner.child is not None
            ctx.state = winner.child.state
            if self.merge is None:
                return winner.value
            return await self._merged([winner.value], ctx)
        if any(not p.ok for p in paths):
            raise _fork_partial(self.id, paths)
        return await self._merged([p.value for p in paths], ctx)

    async def _merged(self, results: list[Any], ctx: Context) -> Any:
        if self.merge is None:
            return results
        value = self.merge(results)
        if inspect.isawaitable(value):
            value = await value
        return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fork_partial(step_id: str, paths: list[_Path]) -> NoeticError:
    succeeded = [p.result() for p in paths if p.ok]
    failed = [p.result() for p in paths if not p.ok]
    reasons = "; ".join(f"{r.step_id}: {r.error}" for r in failed)
    return NoeticError(
        "fork_partial",
        f"in_parallel {step_id!r}: {len(failed)} of {len(paths)} paths failed ({reasons})",
        succeeded=succeeded,
        failed=failed,
        step_id=step_id,
    )


def in_parallel(
    id: str,
    steps: Sequence[Step],
    *,
    mode: ParallelMode = "all",
    merge: Callable[..., Any] | None = None,
    concurrency: int | None = None,
    custom_items: Mapping[str, CustomItemDecl[Any, Any]] | None = None,
    emit_items: Any = None,
) -> InParallel:
    """A step that runs `steps` concurrently; see `InParallel`."""
    return InParallel(
        id,
        steps,
        mode=mode,
        merge=merge,
        concurrency=concurrency,
        custom_items=custom_items,
        emit_items=emit_items,
    )
