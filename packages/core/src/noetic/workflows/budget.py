"""The budget of one JSONata evaluation: CPU time, nesting depth and memory.

An `EvaluationBudget` is created per evaluation and held by the evaluator itself (a Python
attribute, never a JSONata variable), so nothing an expression binds can reach it. The
evaluator calls `enter`/`leave` around every evaluation step; the bounded builtins call
`check_string`, `check_items` and `charge` before and after they allocate.

- CPU time is the evaluating thread's (`time.thread_time`), not the wall clock, so a loaded
  machine or another task's work does not make a cheap expression fail; time spent in the
  garbage collector is left out too (a full collection of a large heap can take longer than
  the whole bound, and it is not the expression's doing).
- Depth counts nested evaluation steps open at once, not calls: a `$map` over 500 items opens
  one step per item and closes it again.
- Memory is an estimate in bytes of what builtins, ranges and `&` create during the
  evaluation (a character one byte or more, as `sys.getsizeof` says; an array slot eight
  bytes, a new number 32), summed over the whole evaluation, so many medium values cannot add
  up to an unbounded total.

A breach raises `LimitHit`, which the expression turns into `EXPRESSION_LIMIT_EXCEEDED`.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Mapping
from typing import Any

from noetic.workflows.limits import ExpressionLimits

__all__ = ["EvaluationBudget", "LimitHit", "cpu_seconds", "json_size"]

#: Estimated bytes of one array or object slot, and of a number an evaluation creates.
SLOT_BYTES = 8
NUMBER_BYTES = 32


class _CollectorClock:
    """CPU seconds the garbage collector has used so far (per `gc.callbacks`)."""

    __slots__ = ("started", "total")

    def __init__(self) -> None:
        self.started = 0.0
        self.total = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.thread_time()
        elif self.started:
            self.total += time.thread_time() - self.started
            self.started = 0.0


_collector = _CollectorClock()
gc.callbacks.append(_collector)


def cpu_seconds() -> float:
    """The evaluating thread's CPU time, less what the garbage collector used."""
    return time.thread_time() - _collector.total


class LimitHit(Exception):
    """An evaluation went over one of its bounds."""


class EvaluationBudget:
    """What one evaluation may still spend; see the module docstring."""

    __slots__ = ("deadline", "depth", "limits", "memory", "started", "step")

    def __init__(self, limits: ExpressionLimits):
        self.limits = limits
        self.depth = 0
        self.memory = 0
        self.started = cpu_seconds()
        self.deadline = self.started + limits.timeout_ms / 1000
        #: The path step collecting results: the depth its evaluations return to, and how
        #: many items they have given so far (a step flattens them into one array).
        self.step: list[int] | None = None

    def enter(self) -> None:
        """One more evaluation step is open: check depth and CPU time."""
        self.depth += 1
        if self.depth > self.limits.max_depth:
            raise LimitHit(f"the evaluation nests more than {self.limits.max_depth} steps deep")
        self.check_time()

    def cpu_used(self) -> float:
        """CPU seconds the evaluation has used so far (garbage collection left out)."""
        return cpu_seconds() - self.started

    def leave(self) -> None:
        """An evaluation step closed."""
        self.depth -= 1

    def collected(self, result: Any) -> None:
        """Count an evaluation's result toward the path step collecting it, if any."""
        step = self.step
        if step is not None and self.depth == step[0] and isinstance(result, list):
            # an array constructed by the expression is kept as one item, anything else flattened
            size = 1 if getattr(result, "cons", False) else len(result)
            step[1] += size
            self.check_items(step[1], "a path step's result")
            self.charge(SLOT_BYTES * size, "a path step's result")

    def check_time(self) -> None:
        """Raise when the evaluation has used up its CPU time."""
        if cpu_seconds() > self.deadline:
            raise LimitHit(f"the evaluation used more than {self.limits.timeout_ms} ms of CPU time")

    def check_string(self, length: int, what: str) -> None:
        """Raise before building a string of `length` characters over the limit."""
        if length > self.limits.max_string:
            raise LimitHit(f"{what} would be longer than the limit of {self.limits.max_string} characters")

    def check_items(self, count: int, what: str) -> None:
        """Raise before building an array or object of `count` entries over the limit."""
        if count > self.limits.max_items:
            raise LimitHit(f"{what} would have more than the limit of {self.limits.max_items} entries")

    def charge(self, size: int, what: str) -> None:
        """Count `size` estimated bytes against the evaluation's memory budget."""
        self.memory += size
        if self.memory > self.limits.max_memory_bytes:
            raise LimitHit(
                f"{what} took the evaluation over its memory budget of {self.limits.max_memory_bytes} bytes"
            )

    def charge_value(self, value: Any, what: str) -> None:
        """Check and charge a value a builtin just created (its top level only: nested values
        were charged by the steps that made them)."""
        if isinstance(value, str):
            self.check_string(len(value), what)
            self.charge(sys.getsizeof(value), what)
        elif isinstance(value, list | Mapping):
            self.check_items(len(value), what)
            self.charge(SLOT_BYTES * len(value), what)


def json_size(value: Any, limit: int, *, indent: int = 0) -> int:
    """An estimate of the length of `value` as JSON text (indented by `indent` spaces a level
    when given), walking it without recursion and stopping as soon as it passes `limit` (so
    the walk costs at most about `limit` steps, even for a value that repeats one large string
    many times)."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and total <= limit:
        current, depth = stack.pop()
        if indent:
            total += 1 + indent * depth  # the line break and indentation before the value
        if isinstance(current, str):
            total += len(current) + 2
        elif isinstance(current, Mapping):
            total += 2 + len(current)
            for key, item in current.items():
                total += len(str(key)) + 3
                stack.append((item, depth + 1))
        elif isinstance(current, list | tuple):
            total += 2 + len(current)
            stack.extend((item, depth + 1) for item in current)
        else:
            total += 8
    return total
