"""Loading a workflow document from a dict, JSON text or a file, with every problem reported.

`parse_document(source)` returns the validated `WorkflowDocument` (or None) and the list of
problems found: size and nesting limits first (before `json` ever recurses), then JSON syntax,
then what JSON allows but a reviewer would misread (a key written twice in one object, of
which only the last would count; an integer too long to convert), then the document model. Schema problems carry the JSON path of the offending value; a node
kind this runtime cannot run (`runCode`, `schedule`, `acp-agent`) is `UNSUPPORTED_NODE_KIND`,
any other unknown kind `UNKNOWN_NODE_KIND` / `UNKNOWN_UNTIL_PREDICATE`.
`load_document(source)` raises them all as one `NoeticConfigError`.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from noetic.workflows.document import NODE_KINDS, UNSUPPORTED_KINDS, UNTIL_KINDS, WorkflowDocument
from noetic.workflows.limits import WorkflowLimits, check_source_limits, check_value_depth
from noetic.workflows.problems import ROOT, Problem, child_path, index_path, raise_problems

__all__ = ["DocumentSource", "load_document", "parse_document"]

#: What a document may be given as: the model, a dict, JSON text, or a path to a JSON file.
DocumentSource: TypeAlias = "WorkflowDocument | Mapping[str, Any] | str | bytes | os.PathLike[str]"


def _read(source: Any, limits: WorkflowLimits) -> tuple[str | None, list[Problem]]:
    """The JSON text of a text, bytes or path source."""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        data = source.encode()
    elif isinstance(source, bytes):
        data = source
    elif not isinstance(source, str | os.PathLike):
        kind = type(source).__name__
        return None, [Problem(ROOT, "INVALID_WORKFLOW_SOURCE", f"a workflow document cannot be a {kind}")]
    else:
        path = Path(source)
        try:
            # Opened without blocking and read only when it is a regular file: a FIFO or a
            # device as the document would otherwise hang the read or never end.
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as file:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return None, [
                        Problem(ROOT, "INVALID_WORKFLOW_SOURCE", f"{str(path)!r} is not a regular file")
                    ]
                data = file.read(limits.max_bytes + 1)
        except OSError as exc:
            return None, [
                Problem(ROOT, "INVALID_WORKFLOW_SOURCE", f"cannot read {str(path)!r}: {exc.strerror}")
            ]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [Problem(ROOT, "WORKFLOW_VALIDATION_FAILED", f"the document is not UTF-8 text: {exc}")]
    problems = check_source_limits(text, len(data), limits)
    return (None if problems else text), problems


#: The longest integer literal a document may hold: Python's own default conversion limit,
#: fixed here so that a host that lifted that limit still never converts a huge one (the
#: conversion takes time quadratic in the digits).
MAX_INT_DIGITS = 4300


class _LongInteger:
    """Stands in for an integer literal over `MAX_INT_DIGITS`, so its path can be reported."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits


class _Objects:
    """The `json.loads` hooks that remember what a document's text says that its parsed value
    cannot show: keys given twice in one object, and integer literals too long to convert."""

    def __init__(self) -> None:
        #: each object with repeated keys, held so that its id stays its own
        self.repeated: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) < len(pairs):
            counts = Counter(key for key, _ in pairs)
            self.repeated[id(value)] = (value, [key for key, count in counts.items() if count > 1])
        return value

    @staticmethod
    def integer(text: str) -> int | _LongInteger:
        digits = len(text.lstrip("-"))
        return _LongInteger(digits) if digits > MAX_INT_DIGITS else int(text)

    def problems(self, data: Any) -> list[Problem]:
        """The problems found while parsing, each at the path of its object or number."""
        found: list[Problem] = []
        stack: list[tuple[str, Any]] = [(ROOT, data)]
        while stack:  # the nesting is already bounded; a stack keeps the walk flat anyway
            path, value = stack.pop()
            if isinstance(value, _LongInteger):
                found.append(
                    Problem(
                        path,
                        "WORKFLOW_VALIDATION_FAILED",
                        f"an integer of {value.digits} digits, over the limit of {MAX_INT_DIGITS}",
                    )
                )
            elif isinstance(value, dict):
                entry = self.repeated.get(id(value))
                if entry is not None and entry[0] is value:
                    for key in entry[1]:
                        found.append(
                            Problem(
                                child_path(path, key),
                                "WORKFLOW_VALIDATION_FAILED",
                                "this key is given more than once in its object; a JSON reader keeps "
                                "only one of them, so write it once",
                            )
                        )
                stack.extend((child_path(path, k), v) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((index_path(path, i), v) for i, v in enumerate(value))
        return sorted(found, key=lambda p: p.path)


def _parse_json(text: str) -> tuple[Any, list[Problem]]:
    """The parsed value of document text, or the problems that stop it being read as meant."""
    hooks = _Objects()
    try:
        data = json.loads(text, object_pairs_hook=hooks.object, parse_int=hooks.integer)
    except json.JSONDecodeError as exc:
        return None, [
            Problem(
                ROOT,
                "WORKFLOW_VALIDATION_FAILED",
                f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            )
        ]
    return data, hooks.problems(data)


def _located(loc: tuple[int | str, ...], error_type: str, data: Any) -> str:
    """The JSON path of a pydantic error location, skipping the union tags pydantic inserts."""
    path, current = ROOT, data
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(current, Mapping) and isinstance(part, str) and part in current:
            path, current = child_path(path, part), current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            path, current = index_path(path, part), current[part]
        elif last and error_type == "missing" and isinstance(part, str):
            path = child_path(path, part)
    return path


def _problem(error: ErrorDetails, data: Any) -> Problem:
    path = _located(error["loc"], error["type"], data)
    if error["type"] == "union_tag_invalid":
        ctx = error.get("ctx") or {}
        tag = str(ctx.get("tag"))
        if tag in UNSUPPORTED_KINDS:
            return Problem(
                path, "UNSUPPORTED_NODE_KIND", f"node kind {tag!r} is not supported: {UNSUPPORTED_KINDS[tag]}"
            )
        if "maxSteps" in str(ctx.get("expected_tags")):
            return Problem(
                path,
                "UNKNOWN_UNTIL_PREDICATE",
                f"unknown until kind {tag!r}; use one of {', '.join(UNTIL_KINDS)}",
            )
        return Problem(
            path, "UNKNOWN_NODE_KIND", f"unknown node kind {tag!r}; use one of {', '.join(NODE_KINDS)}"
        )
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = (
            "unknown key (check its spelling; document keys are camelCase). Unknown keys are rejected "
            "so that a typo is never silently dropped: remove the key, or rename an annotation to "
            "'x-…' (or 'description', 'title', '$comment'), which every Noetic runtime ignores, so "
            "the document stays portable"
        )
    return Problem(path, "WORKFLOW_VALIDATION_FAILED", message)


def _merged(problems: list[Problem]) -> list[Problem]:
    """One problem per path and code (a union's alternatives are joined with "or")."""
    merged: dict[tuple[str, str], list[str]] = {}
    for p in problems:
        messages = merged.setdefault((p.path, p.code), [])
        if p.message not in messages:
            messages.append(p.message)
    return [Problem(path, code, " or ".join(messages)) for (path, code), messages in merged.items()]


def parse_document(
    source: DocumentSource, limits: WorkflowLimits | None = None
) -> tuple[WorkflowDocument | None, list[Problem]]:
    """The validated document (None when it has problems) and every problem found."""
    limits = limits or WorkflowLimits()
    if isinstance(source, WorkflowDocument):
        return source, []
    if isinstance(source, Mapping):
        data: Any = source
        problems = check_value_depth(data, limits)
    else:
        text, problems = _read(source, limits)
        if text is None:
            return None, problems
        data, problems = _parse_json(text)
    if problems:
        return None, problems
    if not isinstance(data, Mapping):
        return None, [Problem(ROOT, "WORKFLOW_VALIDATION_FAILED", "a workflow document is a JSON object")]
    try:
        return WorkflowDocument.model_validate(data), []
    except ValidationError as exc:
        return None, _merged([_problem(e, data) for e in exc.errors(include_url=False)])


def load_document(
    source: DocumentSource, limits: WorkflowLimits | None = None, *, what: str = "the workflow document"
) -> WorkflowDocument:
    """The validated document; every problem is raised together as one `NoeticConfigError`."""
    document, problems = parse_document(source, limits)
    raise_problems(problems, what=what)
    assert document is not None
    return document
