"""JSONata expressions of workflow documents, evaluated with bounds and no host access.

`compile_expression(source, limits)` parses once (a syntax error is a `NoeticConfigError`
`INVALID_EXPRESSION`); `Expression.evaluate(value)` reads it against a value and returns plain
JSON (`None` for an undefined result). JSONata cannot reach the host, so what is left to guard
against is denial of service:

- every evaluation runs under a fresh `EvaluationBudget` (`noetic.workflows.budget`): CPU
  time, nesting depth and an estimated memory total, checked at every evaluation step by the
  evaluator itself, out of reach of anything the expression binds;
- every builtin is bounded (`noetic.workflows.jsonata_builtins`): its result's size is checked
  before it allocates, and `[a..b]` ranges and string concatenation (`&`) are capped too;
- `$eval` (expressions built at run time would dodge the static checks) and regular-expression
  literals (Python's `re` cannot be interrupted, so a catastrophic pattern would hang) are
  disabled;
- the input's and the result's JSON size are capped (measured without serialising them);
- inside a workflow run, each evaluation's CPU time and allocations also count toward the
  run's totals (`noetic.workflows.run_budget`).

A breached bound raises `NoeticError("EXPRESSION_LIMIT_EXCEEDED")`; any other evaluation error
raises `NoeticError("EXPRESSION_FAILED")`. Each evaluation starts from the expression's own
environment, so nothing one evaluation binds is seen by the next.

Inputs are native JSON values; a string that parses as JSON is read as the parsed value
so a model's JSON answer can be addressed by field.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from jsonata import JException, Jsonata
from jsonata.utils import Utils

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.workflows.budget import NUMBER_BYTES, SLOT_BYTES, EvaluationBudget, LimitHit, json_size
from noetic.workflows.jsonata_builtins import BudgetSlot, BuiltinFailed, bounded_functions
from noetic.workflows.limits import ExpressionLimits
from noetic.workflows.run_budget import charge_evaluation

__all__ = ["Expression", "compile_expression", "json_value"]

#: JSONata error codes that mean one of the library's own bounds was hit (its range size).
_LIMIT_CODES = frozenset({"D2014"})
_JSON_START = frozenset('{["-0123456789tfn')
#: The longest evaluation message an error carries.
_MESSAGE_LENGTH = 500


class _Disabled(Exception):
    """Raised from inside an evaluation when a disabled function is called."""


def _no_regex(pattern: str, flags: Any) -> NoReturn:
    raise _Disabled(
        f"regular expressions such as /{pattern}/ are disabled in workflow expressions; "
        "use $contains, $split or $replace with a string"
    )


class _BoundedJsonata(Jsonata):  # type: ignore[misc]  # jsonata-python is untyped
    """The JSONata evaluator under an `EvaluationBudget`.

    The library finds its own time and depth callbacks by variable name, so an expression
    could bind those names and switch the bound off. Here the bound is checked in `eval`, the
    method every evaluation step goes through, and the budget lives in a Python attribute no
    expression can name. Ranges and `&` are checked before they allocate; regular-expression
    literals fail to compile.
    """

    def __init__(self, source: str, limits: ExpressionLimits):
        self.limits = limits
        self.slot = BudgetSlot()
        super().__init__(source, _no_regex)

    def eval(self, expr: Any, input: Any, environment: Any) -> Any:
        budget = self.slot.budget()
        budget.enter()
        try:
            result = super().eval(expr, input, environment)
        finally:
            budget.leave()
        budget.collected(result)
        return result

    def evaluate_step(self, expr: Any, input: Any, environment: Any, last_step: bool) -> Any:
        # A path step evaluates once per input item and flattens what comes back into one
        # array, in a loop of its own: count the items as they come, before the flattening.
        budget = self.slot.budget()
        outer = budget.step
        budget.step = [budget.depth, 0]
        try:
            return super().evaluate_step(expr, input, environment, last_step)
        finally:
            budget.step = outer

    def evaluate_range_expression(self, lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, int) and isinstance(rhs, int) and rhs >= lhs:
            size = rhs - lhs + 1
            if size > self.limits.max_range:
                raise LimitHit(f"the range [{lhs}..{rhs}] has more than {self.limits.max_range} items")
            self.slot.budget().charge((SLOT_BYTES + NUMBER_BYTES) * size, f"the range [{lhs}..{rhs}]")
        return super().evaluate_range_expression(lhs, rhs)

    def evaluate_string_concat(self, lhs: Any, rhs: Any) -> str:
        budget = self.slot.budget()
        limit = self.limits.max_string
        length = sum(
            len(v) if isinstance(v, str) else json_size(v, limit) for v in (lhs, rhs) if v is not None
        )
        budget.check_string(length, "a concatenated string")
        result: str = super().evaluate_string_concat(lhs, rhs)
        budget.charge_value(result, "a concatenated string")
        return result


def _disabled_eval(*args: Any) -> NoReturn:
    raise _Disabled("$eval is disabled in workflow expressions; write the expression in the document")


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def json_value(value: Any) -> Any:
    """The JSON value a step value stands for: pydantic models dumped, and a string that
    parses as JSON replaced by the parsed value."""
    value = to_jsonable(value)
    if isinstance(value, str) and value.lstrip()[:1] in _JSON_START:
        try:
            return json.loads(value, parse_constant=_not_a_number)
        except (ValueError, RecursionError):
            return value
    return value


def _plain(value: Any) -> Any:
    """A JSONata result as plain JSON data (lists for JSONata sequences, None for JSONata's
    null); functions and other non-JSON values raise `_Disabled`."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if value is Utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise _Disabled(f"the expression returned a {type(value).__name__}, which is not JSON data")


class Expression:
    """A compiled JSONata expression with its bounds; see the module docstring."""

    __slots__ = ("_engine", "_env", "limits", "source")

    def __init__(self, source: str, engine: _BoundedJsonata, limits: ExpressionLimits):
        self.source = source
        self.limits = limits
        self._engine = engine
        self._env = engine.environment

    def evaluate(self, value: Any) -> Any:
        """Read the expression against `value`; returns plain JSON (None when undefined)."""
        limits = self.limits
        value = to_jsonable(value)
        if isinstance(value, str) and len(value) > limits.max_value_bytes:
            raise self._error(
                "EXPRESSION_LIMIT_EXCEEDED", f"the input is over {limits.max_value_bytes} bytes"
            )
        data = json_value(value)
        self._check_size(data, "input")
        engine = self._engine
        engine.environment = self._env
        budget = engine.slot.current = EvaluationBudget(limits)
        copied = 0  # the JSON size of the result, which `_plain` copies
        Jsonata.CURRENT.jsonata = engine
        try:
            raw = engine.evaluate(data, Jsonata.Frame(None))
            # Measured before it is copied: a result repeating one large value many times is
            # cheap to hold but not to copy.
            copied = self._check_size(raw, "result")
            result = _plain(raw)
        except NoeticError:
            raise
        except JException as exc:
            code = "EXPRESSION_LIMIT_EXCEEDED" if exc.error in _LIMIT_CODES else "EXPRESSION_FAILED"
            raise self._error(code, jsonata_message(exc)) from None
        except LimitHit as exc:
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", str(exc)) from None
        except RecursionError:
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", "the evaluation recursed too deeply") from None
        except _Disabled as exc:
            raise self._error("EXPRESSION_FAILED", str(exc)) from None
        except MemoryError:
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", "the evaluation ran out of memory") from None
        except Exception as exc:  # noqa: BLE001 - whatever the untyped library raises is the expression's failure
            raise self._error("EXPRESSION_FAILED", failure_message(exc)) from None
        finally:
            engine.environment = self._env
            engine.slot.current = None
            # a failed evaluation spent its time and memory too; over the run's total, the
            # run-wide LIMIT_EXCEEDED is the error the run reports
            charge_evaluation(self.source, budget.cpu_used(), budget.memory + copied)
        return result

    def _check_size(self, data: Any, what: str) -> int:
        """The JSON size of `data`; over `max_value_bytes` raises `EXPRESSION_LIMIT_EXCEEDED`."""
        size = json_size(data, self.limits.max_value_bytes)
        if size > self.limits.max_value_bytes:
            raise self._error(
                "EXPRESSION_LIMIT_EXCEEDED",
                f"the {what} is over {self.limits.max_value_bytes} bytes of JSON",
            )
        return size

    def _error(self, code: str, message: str) -> NoeticError:
        # Both parts are cut: an error can quote any value the expression built (`$error` of a
        # megabyte string), and messages end up in logs, spans and terminals.
        shown = self.source if len(self.source) <= 120 else self.source[:117] + "..."
        if len(message) > _MESSAGE_LENGTH:
            message = message[: _MESSAGE_LENGTH - 3] + "..."
        return NoeticError(code, f"expression {shown!r}: {message}", expression=self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


_CODE = re.compile(r"[A-Z][0-9]{4}")
#: The library's message templates name every function "Object" (a rename gone too far in
#: its port); JSONata's own messages say "function".
_TEMPLATES = {
    code: re.sub(r"\{\{\w+\}\}", "{}", re.sub(r"\bObject\b", "function", text))
    for code, text in JException.error_codes.items()
    if text != "{{{message}}}"
}


def jsonata_message(exc: JException) -> str:
    """The message of a JSONata error in JSONata's own words, followed by its code (some of
    the library's errors carry their message where the code belongs)."""
    if not _CODE.fullmatch(str(exc.error)):
        return str(exc.error)
    template = _TEMPLATES.get(exc.error)
    args = (exc.current, exc.expected) if exc.extra is None else (exc.current, exc.expected, exc.extra)
    try:
        message = str(exc) if template is None else template.format(*args)
    except (IndexError, KeyError, ValueError):
        message = str(exc)
    return f"{message} ({exc.error})"


def failure_message(exc: Exception) -> str:
    """What a Python error raised inside an evaluation means in JSONata's terms, with
    JSONata's error code where it has one (jsonata-python computes with Python numbers and
    dates, whose errors would otherwise show through: `1/0` is JSONata's D1001, not a
    `ZeroDivisionError`)."""
    if isinstance(exc, BuiltinFailed):
        function, cause = exc.function, exc.cause
        if function == "power":
            return "the power function has resulted in a value that cannot be represented as a JSON number (D3061)"
        if function == "toMillis" and isinstance(cause, ValueError):
            return "the argument of the toMillis function must be an ISO 8601 formatted timestamp (D3110)"
        if function == "fromMillis" and isinstance(cause, ArithmeticError | OSError | ValueError):
            return "the fromMillis function was given a number of milliseconds outside the range of dates"
        return f"${function}: {_number_failure(cause) or _plain_message(cause)}"
    return _number_failure(exc) or _plain_message(exc)


def _number_failure(exc: Exception) -> str | None:
    """JSONata's message for arithmetic that left the range of numbers, if that is what `exc` is."""
    if isinstance(exc, ZeroDivisionError):
        return "Number out of range: division by zero (D1001)"
    if isinstance(exc, ArithmeticError) or (isinstance(exc, ValueError) and str(exc) == "math domain error"):
        return "Number out of range (D1001)"
    if isinstance(exc, TypeError) and "complex" in str(exc):
        return "the result is not a real number (D1001)"
    return None


def _plain_message(exc: Exception) -> str:
    """The message of an error, without the name of the Python class that carries it."""
    return str(exc) or "the evaluation failed"


def _nesting(source: str) -> int:
    """The deepest bracket nesting of `source`, ignoring brackets inside quotes."""
    depth = deepest = 0
    quote: str | None = None
    escaped = False
    for char in source:
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def _invalid(source: str, detail: str) -> NoeticConfigError:
    return NoeticConfigError(
        "INVALID_EXPRESSION",
        f"{source!r} is not a valid JSONata expression: {detail}",
        hint="Fix the JSONata syntax (https://docs.jsonata.org); regular expressions and $eval "
        "are not available in workflow expressions.",
        expression=source,
    )


def compile_expression(source: str, limits: ExpressionLimits) -> Expression:
    """Parse `source`; a syntax error, too deep a nesting or a disabled construct raises
    `INVALID_EXPRESSION`."""
    nesting = _nesting(source)
    if nesting > limits.max_nesting:
        raise _invalid(source, f"it nests {nesting} brackets deep, over the limit of {limits.max_nesting}")
    try:
        engine = _BoundedJsonata(source, limits)
    except (JException, _Disabled, RecursionError) as exc:
        raise _invalid(
            source, "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        ) from None
    if engine.errors:
        raise _invalid(source, str(engine.errors[0]))
    # The library's null conversion walks every reference of the result in place, with no
    # bound (a result repeating one object 10,000 times took seconds); `_plain` converts after
    # the result's size is checked.
    engine.set_output_convert_nulls(False)
    for name, function in bounded_functions(engine.slot).items():
        engine.register_function(name, function)
    engine.register_lambda("eval", _disabled_eval)
    return Expression(source, engine, limits)
