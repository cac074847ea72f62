"""The document-wide bounds of one run of a workflow document: paths, loop iterations, and
what its expressions spend in CPU time and memory (with the CPU time of validating values
against the document's own schemas, which is counted with the expressions').

Each node is bounded on its own (a dynamic `inParallel` fans out to at most `max_fan_out`
paths, an expression evaluation has its own time and memory), but repetition multiplies:
three nested fan-outs of 100 are a million paths, and 100,000 loop iterations of a 500 ms
expression are 14 hours. So one run of a document — the `WorkflowStep` and every
sub-workflow it runs — shares a `RunBudget` counting the fan-out paths it has started, the
loop iterations it has made, and the CPU time and estimated bytes its expression evaluations
have used, and going over `WorkflowLimits.max_paths`, `max_iterations`, `max_run_cpu_ms` or
`max_run_memory_bytes` fails the run early with `LIMIT_EXCEEDED`.

Everything a run holds at once was made by its expressions (besides its input and what
models and tools return), so the total they allocated is also a bound on what it can keep
alive, however many fan-out paths or loops keep their values. The items a node emits stay in
the thread after the run, so each one is charged too: its JSON size and `ITEM_BYTES` for the
item that carries it. A breach is sticky: once over, every later charge raises again, so a
fan-out that settles cannot run on past it, and `WorkflowStep` raises it at the end even when
a node swallowed it.

The budget travels in a context variable, so parallel paths (tasks that copy the context)
count into the same one. A breach deep inside a fan-out reaches the enclosing `inParallel` as
one failed path among many; `reraise_breach` lets the fan-out raise the breach itself instead,
so the run fails with `LIMIT_EXCEEDED` rather than a `fork_partial`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NoReturn

from noetic.errors import NoeticError
from noetic.workflows.budget import json_size
from noetic.workflows.limits import WorkflowLimits

__all__ = [
    "RunBudget",
    "charge_evaluation",
    "charge_kept_item",
    "charge_validation",
    "count_iteration",
    "count_paths",
    "counted_iterations",
    "reraise_breach",
    "run_budget",
    "validation_allowance",
]


class RunBudget:
    """What one run of a document has started so far."""

    __slots__ = ("breach", "cpu_seconds", "iterations", "limits", "memory", "paths")

    def __init__(self, limits: WorkflowLimits):
        self.limits = limits
        self.paths = 0
        self.iterations = 0
        self.cpu_seconds = 0.0
        self.memory = 0
        self.breach: NoeticError | None = None

    def fail(self, error: NoeticError) -> NoReturn:
        """Remember and raise the first breach."""
        if self.breach is None:
            self.breach = error
        raise self.breach


#: Estimated bytes of the item (ids, type, timestamps) that carries an emitted item's fields.
ITEM_BYTES = 1_000

_current: ContextVar[RunBudget | None] = ContextVar("noetic_workflow_run_budget", default=None)


@contextmanager
def run_budget(limits: WorkflowLimits) -> Iterator[RunBudget]:
    """The budget of the run in progress, or a new one when this is the outermost document."""
    budget = _current.get()
    if budget is not None:
        yield budget
        return
    budget = RunBudget(limits)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def count_paths(step_id: str, count: int) -> None:
    """Count `count` fan-out paths about to start at `step_id`; over the limit is `LIMIT_EXCEEDED`."""
    budget = _current.get()
    if budget is None:
        return
    budget.paths += count
    if budget.paths > budget.limits.max_paths:
        budget.fail(
            NoeticError(
                "LIMIT_EXCEEDED",
                f"dynamic inParallel {step_id!r} would take the run to {budget.paths} fan-out paths, over the "
                f"document-wide limit of {budget.limits.max_paths} (WorkflowLimits.max_paths)",
                step_id=step_id,
                limit=budget.limits.max_paths,
                actual=budget.paths,
            )
        )


def count_iteration(step_id: str) -> None:
    """Count one more loop iteration at `step_id`; over the limit is `LIMIT_EXCEEDED`."""
    budget = _current.get()
    if budget is None:
        return
    budget.iterations += 1
    if budget.iterations > budget.limits.max_iterations:
        budget.fail(
            NoeticError(
                "LIMIT_EXCEEDED",
                f"loop {step_id!r} would take the run past {budget.limits.max_iterations} loop iterations in "
                "total (WorkflowLimits.max_iterations)",
                step_id=step_id,
                limit=budget.limits.max_iterations,
                actual=budget.iterations,
            )
        )


def charge_evaluation(expression: str, cpu_seconds: float, memory: int) -> None:
    """Count one expression evaluation's CPU time and estimated allocations (its builtins',
    and the copy of its result) against the run;
    over `max_run_cpu_ms` or `max_run_memory_bytes` is `LIMIT_EXCEEDED`."""
    budget = _current.get()
    if budget is None:
        return
    budget.cpu_seconds += cpu_seconds
    budget.memory += memory
    limits = budget.limits
    shown = expression if len(expression) <= 60 else expression[:57] + "..."
    if budget.cpu_seconds * 1000 > limits.max_run_cpu_ms:
        budget.fail(
            NoeticError(
                "LIMIT_EXCEEDED",
                f"expression {shown!r} took the run's expressions past {limits.max_run_cpu_ms} ms of CPU "
                "time in total (WorkflowLimits.max_run_cpu_ms)",
                expression=expression,
                limit=limits.max_run_cpu_ms,
                actual=math.ceil(budget.cpu_seconds * 1000),  # over the limit, never rounded down to it
            )
        )
    if budget.memory > limits.max_run_memory_bytes:
        budget.fail(
            NoeticError(
                "LIMIT_EXCEEDED",
                f"expression {shown!r} took the run's expressions past {limits.max_run_memory_bytes} "
                "estimated bytes allocated in total (WorkflowLimits.max_run_memory_bytes)",
                expression=expression,
                limit=limits.max_run_memory_bytes,
                actual=budget.memory,
            )
        )


def validation_allowance() -> float:
    """CPU seconds a validation against a document's schema may still use: what is left of
    the run's `max_run_cpu_ms`, or all of the default one outside a run."""
    budget = _current.get()
    if budget is None:
        return WorkflowLimits().max_run_cpu_ms / 1000
    return max(0.0, budget.limits.max_run_cpu_ms / 1000 - budget.cpu_seconds)


def charge_validation(cpu_seconds: float) -> None:
    """Count the CPU time of validating a value against a document's schema against the run;
    over `max_run_cpu_ms` (or, outside a run, over the default) is `LIMIT_EXCEEDED`."""
    budget = _current.get()
    if budget is None:
        budget = RunBudget(WorkflowLimits())  # one validation on its own
    elif budget.breach is not None:
        raise budget.breach
    budget.cpu_seconds += cpu_seconds
    limit = budget.limits.max_run_cpu_ms
    if budget.cpu_seconds * 1000 > limit:
        budget.fail(
            NoeticError(
                "LIMIT_EXCEEDED",
                f"validating a value against a schema of the document took the run past {limit} ms of "
                "CPU time in total (WorkflowLimits.max_run_cpu_ms)",
                limit=limit,
                actual=math.ceil(budget.cpu_seconds * 1000),
            )
        )


def charge_kept_item(expression: str, fields: Any) -> None:
    """Count an item an `emitItems` expression made, which the thread keeps, against the
    run's memory budget."""
    budget = _current.get()
    if budget is None:
        return
    charge_evaluation(expression, 0.0, ITEM_BYTES + json_size(fields, budget.limits.max_run_memory_bytes))


def reraise_breach() -> None:
    """Raise the run's budget breach, if one happened (called when a fan-out failed)."""
    budget = _current.get()
    if budget is not None and budget.breach is not None:
        raise budget.breach


def counted_iterations(step_id: str) -> Any:
    """A loop's `prepare_next` that counts each further iteration and passes the output on."""

    def prepare_next(output: Any, verdict: Any, ctx: Any) -> Any:
        count_iteration(step_id)
        return output

    return prepare_next
