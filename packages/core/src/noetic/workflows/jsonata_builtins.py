"""JSONata's builtin functions, bounded: what `compile_expression` binds over the library's.

jsonata-python runs a builtin to its end with no hook for a bound, and several are far from
linear: `$distinct` compares every pair, `$replace` copies the rest of the string at each
match, `$join` and `$string` build whatever their arguments add up to. No setting of the
library bounds them, so this module does it by hand:

- before a builtin runs, a check computes from its arguments alone how large its result can be
  (characters, entries) and refuses when that is over the limit, so nothing is allocated first;
- `$distinct` and `$replace` (string patterns; regular expressions are disabled) are
  reimplemented in linear time with the library's results;
- after every builtin, its result is checked against the size limits and charged to the
  evaluation's memory budget, and the CPU-time bound is checked again;
- picture strings (`$formatNumber`, `$fromMillis`, …) are capped, as the library parses them
  character by character.

`bounded_functions(slot)` gives every builtin under its JSONata name; each reads the current
evaluation's `EvaluationBudget` from `slot`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from jsonata import Jsonata
from jsonata.functions import Functions
from jsonata.utils import Utils

from noetic.workflows.budget import EvaluationBudget, LimitHit, json_size
from noetic.workflows.document_schema import equality_key

__all__ = ["MAX_PICTURE", "BudgetSlot", "BuiltinFailed", "bounded_functions"]

#: The longest picture (format) string a formatting builtin accepts.
MAX_PICTURE = 256

Check = Callable[[EvaluationBudget, list[Any]], None]


class BudgetSlot(threading.local):
    """Where the evaluator puts the budget of the evaluation that is running (one per thread,
    so threads evaluating one compiled expression keep their own budgets)."""

    def __init__(self) -> None:
        self.current: EvaluationBudget | None = None

    def budget(self) -> EvaluationBudget:
        """The running evaluation's budget."""
        if self.current is None:
            raise LimitHit("a builtin was called outside an evaluation")
        return self.current


class BuiltinFailed(Exception):
    """A builtin's Python implementation raised a Python error (not a JSONata one): which
    builtin, and the error, for the expression to report in JSONata's terms."""

    def __init__(self, function: str, cause: Exception):
        super().__init__(function, cause)
        self.function = function
        self.cause = cause


# --- checks made before a builtin runs --------------------------------------------------------


def _arg(args: list[Any], i: int) -> Any:
    return args[i] if i < len(args) else None


def _check_serialised(budget: EvaluationBudget, args: list[Any]) -> None:
    """`$string`, `$clone`: the JSON text of the argument (indented when `$string` prettifies)."""
    value, prettify = _arg(args, 0), _arg(args, 1)
    if not isinstance(value, str):
        size = json_size(value, budget.limits.max_string, indent=2 if prettify is True else 0)
        budget.check_string(size, "the JSON text of the value")


def _check_join(budget: EvaluationBudget, args: list[Any]) -> None:
    strings, separator = _arg(args, 0), _arg(args, 1)
    if isinstance(strings, list):
        total = sum(len(s) for s in strings if isinstance(s, str))
        total += len(separator or "") * max(len(strings) - 1, 0)
        budget.check_string(total, "$join's result")


def _check_split(budget: EvaluationBudget, args: list[Any]) -> None:
    string, separator, limit = _arg(args, 0), _arg(args, 1), _arg(args, 2)
    if isinstance(string, str) and isinstance(separator, str):
        pieces = len(string) if separator == "" else string.count(separator) + 1
        if isinstance(limit, int | float):
            pieces = min(pieces, max(int(limit), 0))
        budget.check_items(pieces, "$split's result")


def _check_append(budget: EvaluationBudget, args: list[Any]) -> None:
    count = sum(len(a) if isinstance(a, list) else 1 for a in args[:2])
    budget.check_items(count, "$append's result")


def _check_pad(budget: EvaluationBudget, args: list[Any]) -> None:
    width = _arg(args, 1)
    if isinstance(width, int | float) and abs(width) > budget.limits.max_string:
        budget.check_string(int(abs(width)), "$pad's result")


def _check_picture(index: int) -> Check:
    def check(budget: EvaluationBudget, args: list[Any]) -> None:
        picture = _arg(args, index)
        if isinstance(picture, str) and len(picture) > MAX_PICTURE:
            raise LimitHit(
                f"a picture string is {len(picture)} characters long, over the limit of {MAX_PICTURE}"
            )

    return check


_CHECKS: dict[str, Check] = {
    "string": _check_serialised,
    "clone": _check_serialised,
    "join": _check_join,
    "split": _check_split,
    "append": _check_append,
    "pad": _check_pad,
    "formatNumber": _check_picture(1),
    "formatInteger": _check_picture(1),
    "parseInteger": _check_picture(1),
    "fromMillis": _check_picture(1),
    "toMillis": _check_picture(1),
    "now": _check_picture(0),
}


# --- linear-time reimplementations ------------------------------------------------------------


def _distinct(arr: Any) -> Any:
    """`$distinct`: the library's result, in linear time (it tests membership in a list)."""
    if arr is None or not isinstance(arr, list) or len(arr) <= 1:
        return arr
    results = Utils.create_sequence() if isinstance(arr, Utils.JList) else []
    seen: set[Any] = set()
    memo: dict[int, str] = {}
    for element in arr:
        key = equality_key(element, memo)
        if key not in seen:
            seen.add(key)
            results.append(element)
    return results


def _replace_with(slot: BudgetSlot) -> Callable[[Any, Any, Any, Any], Any]:
    def replace(string: Any, pattern: Any, replacement: Any, limit: Any) -> Any:
        """`$replace` for a string pattern in linear time, its result's size checked first (the
        library finds each match and then copies the rest of the string to read it)."""
        if (
            not isinstance(string, str)
            or not isinstance(pattern, str)
            or not pattern
            or (limit is not None and limit < 0)
        ):
            return Functions.replace(string, pattern, replacement, limit)  # its own errors and cases
        # A string pattern's match is always the pattern itself, so every match is replaced by
        # the same text: the library's replacement of the pattern within itself.
        expanded = Functions.replace(pattern, pattern, replacement, None)
        count = string.count(pattern)
        if limit is not None:
            count = min(count, int(limit))
        slot.budget().check_string(len(string) + count * (len(expanded) - len(pattern)), "$replace's result")
        return string.replace(pattern, expanded, count)

    return replace


# --- the wrapper ------------------------------------------------------------------------------


class _BoundedNative(Jsonata.JNativeFunction):  # type: ignore[misc]  # jsonata-python is untyped
    """A builtin with its checks: the library's parsed signature and arity, our implementation
    when we have one, a size check before and a charge after each call."""

    def __init__(self, native: Any, slot: BudgetSlot, check: Check | None, method: Callable[..., Any] | None):
        # Not calling the base __init__: it looks the implementation up by name; the parsed
        # signature and arity are the library's own.
        self.function_name = native.function_name
        self.signature = native.signature
        self.method = method or native.method
        self.nargs = native.nargs
        self.function = None
        self.slot = slot
        self.check = check

    def call(self, input: Any, args: Sequence[Any] | None) -> Any:
        budget = self.slot.budget()
        budget.check_time()
        if self.check is not None:
            self.check(budget, list(args or ()))
        try:
            result = super().call(input, args)
        except (ArithmeticError, ValueError, TypeError, OSError) as exc:
            # the library's own errors are JException (a RuntimeError) and pass through
            raise BuiltinFailed(self.function_name, exc) from None
        budget.charge_value(result, f"${self.function_name}'s result")
        budget.check_time()
        return result


def bounded_functions(slot: BudgetSlot) -> dict[str, Any]:
    """Every JSONata builtin, bounded, by name (to bind over the library's)."""
    methods: dict[str, Callable[..., Any]] = {"distinct": _distinct, "replace": _replace_with(slot)}
    found: dict[str, Any] = {}
    for name, native in Jsonata.static_frame.bindings.items():
        if isinstance(native, Jsonata.JNativeFunction):
            found[name] = _BoundedNative(native, slot, _CHECKS.get(name), methods.get(name))
    return found
