"""JSONata expressions of workflow documents, evaluated with bounds and no host access.

`compile_expression(source, limits)` parses once (a syntax error is a `NoeticConfigError`
`INVALID_EXPRESSION`); `Expression.evaluate(value)` reads it against a value and returns plain
JSON (`None` for an undefined result). JSONata cannot reach the host, so what is left to guard
against is denial of service:

- every evaluation runs under a fresh time and depth bound (`ExpressionLimits`);
- `[a..b]` ranges, string concatenation (`&`) and `$pad` are capped, because a single builtin
  runs to its end before the time bound is checked again;
- `$eval` (expressions built at run time would dodge the static checks) and regular-expression
  literals (Python's `re` cannot be interrupted, so a catastrophic pattern would hang) are
  disabled;
- the input's and the result's JSON size are capped.

A breached bound raises `NoeticError("EXPRESSION_LIMIT_EXCEEDED")`; any other evaluation error
raises `NoeticError("EXPRESSION_FAILED")`. Each evaluation starts from the expression's own
environment, so nothing one evaluation binds is seen by the next.

Inputs are native JSON values; a string that parses as JSON is read as the parsed value
so a model's JSON answer can be addressed by field.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from jsonata import JException, Jsonata
from jsonata.functions import Functions
from jsonata.timebox import Timebox

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.workflows.limits import ExpressionLimits

__all__ = ["Expression", "compile_expression", "json_value"]

#: JSONata error codes that mean a bound was hit: stack depth, timeout, range size.
_LIMIT_CODES = frozenset({"D1011", "D1012", "D2014"})
_JSON_START = frozenset('{["-0123456789tfn')


class _LimitHit(Exception):
    """Raised from inside an evaluation when one of our caps is hit."""


class _Disabled(Exception):
    """Raised from inside an evaluation when a disabled function is called."""


def _no_regex(pattern: str, flags: Any) -> NoReturn:
    raise _Disabled(
        f"regular expressions such as /{pattern}/ are disabled in workflow expressions; "
        "use $contains, $split or $replace with a string"
    )


class _BoundedJsonata(Jsonata):  # type: ignore[misc]  # jsonata-python is untyped
    """The JSONata evaluator with capped ranges and string concatenation; regular-expression
    literals fail to compile."""

    def __init__(self, source: str, limits: ExpressionLimits):
        self.max_range = limits.max_range
        self.max_string = limits.max_string
        super().__init__(source, _no_regex)

    def evaluate_range_expression(self, lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, int) and isinstance(rhs, int) and rhs - lhs + 1 > self.max_range:
            raise _LimitHit(f"the range [{lhs}..{rhs}] has more than {self.max_range} items")
        return super().evaluate_range_expression(lhs, rhs)

    def evaluate_string_concat(self, lhs: Any, rhs: Any) -> str:
        result: str = super().evaluate_string_concat(lhs, rhs)
        if len(result) > self.max_string:
            raise _LimitHit(f"a concatenated string is longer than {self.max_string} characters")
        return result


class _BoundedPad(Jsonata.JFunctionCallable):  # type: ignore[misc]
    """`$pad` with the padded width capped."""

    def __init__(self, max_string: int):
        self.max_string = max_string

    def call(self, input: Any, args: Any) -> Any:
        values = [*(args or ()), None, None, None]
        string, width, char = values[:3]
        if isinstance(width, int | float) and abs(width) > self.max_string:
            raise _LimitHit(f"$pad to {width} characters is over the limit of {self.max_string}")
        return Functions.pad(string, width, char)


def _disabled_eval(*args: Any) -> NoReturn:
    raise _Disabled("$eval is disabled in workflow expressions; write the expression in the document")


def json_value(value: Any) -> Any:
    """The JSON value a step value stands for: pydantic models dumped, and a string that
    parses as JSON replaced by the parsed value."""
    value = to_jsonable(value)
    if isinstance(value, str) and value.lstrip()[:1] in _JSON_START:
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _plain(value: Any) -> Any:
    """A JSONata result as plain JSON data (lists for JSONata sequences); functions and other
    non-JSON values raise `_Disabled`."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
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
        frame = Jsonata.Frame(None)
        Timebox(frame, limits.timeout_ms, limits.max_depth)
        engine.environment = self._env
        Jsonata.CURRENT.jsonata = engine
        try:
            result = _plain(engine.evaluate(data, frame))
        except JException as exc:
            code = "EXPRESSION_LIMIT_EXCEEDED" if exc.error in _LIMIT_CODES else "EXPRESSION_FAILED"
            raise self._error(code, f"{exc} ({exc.error})") from None
        except _LimitHit as exc:
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", str(exc)) from None
        except RecursionError:
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", "the evaluation recursed too deeply") from None
        except _Disabled as exc:
            raise self._error("EXPRESSION_FAILED", str(exc)) from None
        except (TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError) as exc:
            raise self._error("EXPRESSION_FAILED", f"{type(exc).__name__}: {exc}") from None
        finally:
            engine.environment = self._env
        self._check_size(result, "result")
        return result

    def _check_size(self, data: Any, what: str) -> None:
        try:
            size = len(json.dumps(data, default=str))
        except (ValueError, RecursionError):
            raise self._error("EXPRESSION_LIMIT_EXCEEDED", f"the {what} is too deeply nested") from None
        if size > self.limits.max_value_bytes:
            raise self._error(
                "EXPRESSION_LIMIT_EXCEEDED",
                f"the {what} is {size} bytes of JSON, over the limit of {self.limits.max_value_bytes}",
            )

    def _error(self, code: str, message: str) -> NoeticError:
        shown = self.source if len(self.source) <= 120 else self.source[:117] + "..."
        return NoeticError(code, f"expression {shown!r}: {message}", expression=self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


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
    engine.register_lambda("eval", _disabled_eval)
    engine.register_function("pad", Jsonata.JFunction(_BoundedPad(limits.max_string), "<s-ns?:s>"))
    return Expression(source, engine, limits)
