"""JSON Schemas from workflow documents: checked and validated without fetching anything, and
with patterns that cannot backtrack.

A document's `customItems` schemas are untrusted, so `document_validator_class` extends the
jsonschema validator for them, and `schema_problems` lists what makes one unacceptable:

- `$ref` and `$dynamicRef` must point inside the schema (`#…`); nothing is ever retrieved, for
  any schema (`noetic.schema` validates with an empty reference registry), so a reference to a
  URL or a `file://` path is refused when the document is checked;
- `pattern`, `patternProperties` and the pattern test of `additionalProperties` run on RE2, a
  linear-time engine (Python's `re` backtracks: `^(a+)+$` against 40 `a`s and a `!` never
  ends); a pattern RE2 cannot compile (backreferences, lookaround) makes the schema invalid;
- `uniqueItems` is checked in linear time (jsonschema compares every pair of objects);
- `unevaluatedProperties` next to `patternProperties` is refused: jsonschema evaluates that
  combination with `re` and offers no way to swap it;
- `anyOf` and `oneOf` stop at a branch's first error and keep none of the branches' errors
  (jsonschema keeps every error of every failed branch, so nested combinators hold a tree of
  errors as large as the work done);
- every keyword that applies subschemas is metered, and `enum` (per member) and `const`: a
  validation counts its CPU time against the run's `max_run_cpu_ms` (`metered_validation`), and stops with `LIMIT_EXCEEDED` as soon as it would
  go over, even in the middle of one value. How large the schema may be once its references
  are expanded is checked when the document is loaded (`noetic.workflows.schema_cost`).

The keyword functions are written here because jsonschema calls `re.search` directly in them;
a validator class can replace a keyword, not the regular-expression engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from noetic.workflows.budget import cpu_seconds
from noetic.workflows.run_budget import charge_validation, validation_allowance

__all__ = ["document_validator_class", "equality_key", "metered_validation", "schema_problems"]

_REF_KEYWORDS = ("$ref", "$dynamicRef")
#: Keywords whose values are data, not schemas: a `$ref` key inside them refers to nothing.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
#: Keywords whose values map names to schemas: there a key such as `enum` is a name, and the
#: schema under it is walked like any other.
_NAME_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
#: RE2's memory cap of one compiled pattern (program and match cache), and how many compiled
#: patterns are kept: together they bound what a document's patterns can hold at once.
_PATTERN_MEMORY = 8 << 20
_CACHED_PATTERNS = 16
_ECMA_UNICODE_ESCAPE = re.compile(r"\\(u([0-9A-Fa-f]{4})|.)", re.DOTALL)


class PatternError(ValueError):
    """A pattern RE2 cannot compile."""


def _re2_syntax(pattern: str) -> str:
    """A JSON Schema (ECMA-262) pattern in RE2's syntax: `\\uXXXX` becomes `\\x{XXXX}`; other
    escapes are the same in both."""
    return _ECMA_UNICODE_ESCAPE.sub(lambda m: f"\\x{{{m.group(2)}}}" if m.group(2) else m.group(0), pattern)


@lru_cache(maxsize=_CACHED_PATTERNS)
def _compiled(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = _PATTERN_MEMORY
    try:
        return re2.compile(_re2_syntax(pattern), options)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            f"pattern {pattern!r} is not supported ({detail}); patterns run on RE2, without "
            "backreferences or lookaround"
        ) from None


def equality_key(value: Any, memo: dict[int, str]) -> Any:
    """A hashable key equal for deep-equal JSON values (objects compared regardless of key
    order); a container's key is computed once per object however often it repeats."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value))
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list | tuple | Mapping):
        key = memo.get(id(value))
        if key is None:
            key = memo[id(value)] = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
        return ("j", key)
    return ("z", repr(value))


def _walk(schema: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema object inside `schema` with its path, without recursion."""
    # Each entry: the path, the value, and whether it maps names to schemas.
    stack: list[tuple[str, Any, bool]] = [(path, schema, False)]
    while stack:
        where, current, names = stack.pop()
        if isinstance(current, Mapping) and names:
            stack.extend((f"{where}/{key}", value, False) for key, value in current.items())
        elif isinstance(current, Mapping):
            yield where, current
            stack.extend(
                (f"{where}/{key}", value, key in _NAME_MAP_KEYWORDS)
                for key, value in current.items()
                if key not in _DATA_KEYWORDS
            )
        elif isinstance(current, list):
            stack.extend((f"{where}/{i}", value, False) for i, value in enumerate(current))


def schema_problems(schema: Any) -> list[tuple[str, str]]:
    """What makes a document's schema unacceptable: `(path, message)` pairs."""
    problems: list[tuple[str, str]] = []
    nodes = list(_walk(schema))
    unevaluated = any("unevaluatedProperties" in node for _, node in nodes)
    for where, node in nodes:
        for keyword in _REF_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str) and not ref.startswith("#"):
                problems.append(
                    (
                        f"{where}/{keyword}",
                        f"{keyword} {ref!r} points outside the schema; a document's schema may only "
                        "refer to its own parts ('#/$defs/...'), nothing is ever fetched",
                    )
                )
        patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), Mapping):
            patterns.extend(node["patternProperties"])
            if unevaluated:
                problems.append(
                    (
                        f"{where}/patternProperties",
                        "patternProperties cannot be combined with unevaluatedProperties in a "
                        "document's schema",
                    )
                )
        for pattern in patterns:
            try:
                _compiled(pattern)
            except PatternError as exc:
                problems.append((where, str(exc)))
    return problems


# --- keywords ---------------------------------------------------------------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r:.200} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = _compiled(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    compiled = [_compiled(p) for p in schema.get("patternProperties", {})]
    return [
        key
        for key in instance
        if key not in properties and not any(pattern.search(key) for pattern in compiled)
    ]


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(extra) for extra in sorted(extras)[:20])
        yield ValidationError(f"additional properties are not allowed ({shown} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    memo: dict[int, str] = {}
    seen: set[Any] = set()
    for element in instance:
        key = equality_key(element, memo)
        if key in seen:
            yield ValidationError("the array has non-unique elements")
            return
        seen.add(key)


def _fails(validator: Any, instance: Any, subschema: Any, index: int) -> bool:
    """True when `instance` does not match `subschema` (stops at the first error)."""
    return next(iter(validator.descend(instance, subschema, schema_path=index)), None) is not None


def _any_of(validator: Any, branches: list[Any], instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if all(_fails(validator, instance, branch, i) for i, branch in enumerate(branches)):
        yield ValidationError(f"{instance!r:.200} is not valid under any of the given schemas")


def _one_of(validator: Any, branches: list[Any], instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    matching = 0
    for i, branch in enumerate(branches):
        if not _fails(validator, instance, branch, i):
            matching += 1
            if matching > 1:
                yield ValidationError(f"{instance!r:.200} is valid under more than one of the given schemas")
                return
    if not matching:
        yield ValidationError(f"{instance!r:.200} is not valid under any of the given schemas")


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
    "anyOf": _any_of,
    "oneOf": _one_of,
}


# --- metering ---------------------------------------------------------------------------------

#: How many keyword calls pass between two looks at the CPU clock (reading it is a system call).
_CALLS_PER_CHECK = 64
#: The keywords that apply subschemas, through which all repeated work passes, and `const`
#: (`enum` is metered per member: jsonschema compares each in Python). Metering them bounds a
#: validation; the other keywords do a bounded amount of work on one value each.
_METERED = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "const",
        "contains",
        "dependencies",
        "dependentSchemas",
        "else",
        "if",
        "items",
        "not",
        "oneOf",
        "patternProperties",
        "prefixItems",
        "properties",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)


class _Meter:
    """The validation in progress: when its CPU time runs out, and calls since the last look."""

    __slots__ = ("calls", "deadline", "next_look", "started")

    def __init__(self, allowance: float) -> None:
        self.started = cpu_seconds()
        self.deadline = self.started + allowance
        self.calls = 0
        self.next_look = _CALLS_PER_CHECK

    def tick(self, weight: int = 1) -> None:
        """Count `weight` calls' worth of work about to be done, looking at the clock first
        when it reaches the next look (an `enum` of 20,000 members counts as 20,000 calls)."""
        self.calls += weight
        if self.calls >= self.next_look:
            self.next_look = self.calls + _CALLS_PER_CHECK
            now = cpu_seconds()
            if now > self.deadline:
                charge_validation(now - self.started)


_meter: ContextVar[_Meter | None] = ContextVar("noetic_schema_meter", default=None)


@contextmanager
def metered_validation() -> Iterator[None]:
    """Meter the document-schema validation run inside: its CPU time is charged to the run's
    budget when it ends, and it is stopped with `LIMIT_EXCEEDED` as soon as it would go over
    (outside a run, over the default `max_run_cpu_ms`)."""
    if _meter.get() is not None:  # a nested validation is already metered
        yield
        return
    meter = _Meter(validation_allowance())
    token = _meter.set(meter)
    try:
        yield
    finally:
        _meter.reset(token)
        charge_validation(cpu_seconds() - meter.started)


def _metered(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def metered(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        meter = _meter.get()
        if meter is not None:
            meter.tick()
        return keyword(validator, value, instance, schema)

    return metered


def _metered_enum(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """`enum`, counted as one call per member it compares."""

    def metered(validator: Any, members: Any, instance: Any, schema: Any) -> Any:
        meter = _meter.get()
        if meter is not None:
            meter.tick(len(members) if isinstance(members, list) else 1)
        return keyword(validator, members, instance, schema)

    return metered


def _with_meter(name: str, keyword: Callable[..., Any]) -> Callable[..., Any]:
    if name == "enum":
        return _metered_enum(keyword)
    return _metered(keyword) if name in _METERED else keyword


def document_validator_class(base: Any) -> Any:
    """`base` (a jsonschema validator class) with the keywords above, the applicators, `enum`
    and `const` metered."""
    from jsonschema.validators import extend

    keywords = {**base.VALIDATORS, **{k: v for k, v in _KEYWORDS.items() if k in base.VALIDATORS}}
    return extend(
        base,
        {name: _with_meter(name, keyword) for name, keyword in keywords.items()},
    )
