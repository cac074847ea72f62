"""Resource limits of workflow documents and their expressions.

Documents may come from planners or users, so everything about them is bounded:

- before parsing: the size in bytes and the JSON nesting depth (Python's `json` recurses, so a
  10,000-deep document is rejected by a linear scan before it is parsed);
- after parsing: the node count (across every hydrated sub-workflow), the structural depth
  (the TypeScript Noetic's `maxDepth`, default 5: leaves count 0, each enclosing node 1), the
  length of each expression, how deeply named sub-workflows nest, and how large and deep each
  `customItems` schema is once its `$ref`s are expanded (`noetic.workflows.schema_cost`);
- at run time: how many paths one dynamic `inParallel` may fan out to, how many fan-out
  paths and loop iterations one run of the document may make in total, how much CPU time
  and memory its expressions may use in total, and for each
  expression evaluation the time, evaluation depth, range size, string size and the size of its
  input and output (`ExpressionLimits`).

Static breaches are `WORKFLOW_VALIDATION_FAILED` problems naming the path. Every limit is a
whole number >= 0; anything else (a bool, NaN, a string, 10**400) is `INVALID_WORKFLOW_LIMITS`
when the limits are made.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from noetic.errors import NoeticConfigError
from noetic.numbers import as_float
from noetic.workflows.document import Node, iter_expressions, iter_nodes, node_children
from noetic.workflows.problems import ROOT, Problem
from noetic.workflows.schema_cost import expanded_cost

__all__ = [
    "ExpressionLimits",
    "WorkflowLimits",
    "check_node_limits",
    "check_schema_cost",
    "check_source_limits",
    "check_value_depth",
    "json_text_depth",
    "structural_depth",
]


@dataclass(frozen=True, slots=True)
class ExpressionLimits:
    """Bounds of one JSONata evaluation.

    `max_nesting` bounds the bracket nesting of the source (checked when it is compiled, so the
    parser never recurses deeply). At run time: `timeout_ms` is the CPU time (of the
    evaluating thread, not the wall clock) one evaluation may use; `max_depth` how many
    evaluation steps may be open at once (nesting, not calls); `max_range` caps `[a..b]`;
    `max_string` every string a builtin, `&` or `$pad` makes; `max_items` every array or
    object a builtin makes; `max_memory_bytes` the estimated total of what the builtins,
    ranges and concatenations of one evaluation allocate; `max_value_bytes` the JSON size of
    the input an expression reads and of the value it returns.
    """

    max_nesting: int = 64
    timeout_ms: int = 500
    max_depth: int = 300
    max_range: int = 100_000
    max_string: int = 1_000_000
    max_items: int = 100_000
    max_memory_bytes: int = 64_000_000
    max_value_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True)
class WorkflowLimits:
    """Bounds of a workflow document; pass `nt.workflow(limits=WorkflowLimits(max_depth=8))`.

    `max_schema_size` bounds the schema objects of one `customItems` schema with every `$ref`
    counted as a copy of its target, `max_schema_depth` how deeply they nest then (what one
    validation walks). `max_fan_out` bounds one dynamic `inParallel`; `max_paths` the fan-out paths,
    `max_iterations` the loop iterations, `max_run_cpu_ms` the CPU time of every expression
    evaluation together and `max_run_memory_bytes` the estimated bytes they allocate together,
    of one whole run of the document (every node and sub-workflow together), so nesting and
    repetition cannot multiply past them.
    """

    max_bytes: int = 1_000_000
    max_json_depth: int = 64
    max_nodes: int = 1_000
    max_depth: int = 5
    max_expression_length: int = 4_096
    max_subflow_depth: int = 8
    max_schema_size: int = 10_000
    max_schema_depth: int = 128
    max_fan_out: int = 100
    max_paths: int = 10_000
    max_iterations: int = 100_000
    max_run_cpu_ms: int = 30_000
    max_run_memory_bytes: int = 256_000_000
    expressions: ExpressionLimits = field(default_factory=ExpressionLimits)

    def __post_init__(self) -> None:
        if not isinstance(self.expressions, ExpressionLimits):
            raise NoeticConfigError(
                "INVALID_WORKFLOW_LIMITS",
                f"WorkflowLimits.expressions={self.expressions!r} is not valid: it must be an ExpressionLimits",
                hint="Pass expressions=ExpressionLimits(timeout_ms=200), for example.",
            )
        _check_counts(self)


def _check_counts(limits: ExpressionLimits | WorkflowLimits) -> None:
    """Raise `INVALID_WORKFLOW_LIMITS` for a limit that is not a whole number >= 0 (one too
    large for a float, such as 10**400, is refused too: limits are divided into seconds)."""
    name = type(limits).__name__
    for each in fields(limits):
        value = getattr(limits, each.name)
        if each.name == "expressions":
            continue
        number = as_float(value)
        if not isinstance(value, int) or number is None or value < 0:
            raise NoeticConfigError(
                "INVALID_WORKFLOW_LIMITS",
                f"{name}.{each.name}={value!r:.60} is not valid: it must be a whole number >= 0",
                hint=f"Pass {name}({each.name}={each.default!r}) (the default) or another whole number.",
                field=each.name,
            )


def json_text_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text, ignoring brackets inside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_source_limits(text: str, size: int, limits: WorkflowLimits) -> list[Problem]:
    """Problems of document text before it is parsed: its size and nesting depth."""
    if size > limits.max_bytes:
        return [
            Problem(
                ROOT,
                "WORKFLOW_VALIDATION_FAILED",
                f"the document is {size} bytes, over the limit of {limits.max_bytes}",
            )
        ]
    depth = json_text_depth(text)
    if depth > limits.max_json_depth:
        return [
            Problem(
                ROOT,
                "WORKFLOW_VALIDATION_FAILED",
                f"the document nests {depth} levels deep, over the limit of {limits.max_json_depth}",
            )
        ]
    return []


def _value_depth(value: Any, stop_after: int) -> int:
    """The nesting depth of a Python JSON value, without recursion (stops early when deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Iterator[Any] = iter(current.values())
        elif isinstance(current, list | tuple):
            children = iter(current)
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_after:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_value_depth(value: Any, limits: WorkflowLimits) -> list[Problem]:
    """Problems of an already-parsed document value: its nesting depth."""
    depth = _value_depth(value, limits.max_json_depth)
    if depth > limits.max_json_depth:
        return [
            Problem(
                ROOT,
                "WORKFLOW_VALIDATION_FAILED",
                f"the document nests more than {limits.max_json_depth} levels deep",
            )
        ]
    return []


def structural_depth(node: Node, path: str) -> tuple[int, str]:
    """The TypeScript Noetic's `workflowDepth` of `node` and the path of its deepest leaf."""
    children = list(node_children(node, path))
    if not children:
        return 0, path
    depth, leaf = max(
        (structural_depth(child, child_path) for child_path, child in children), key=lambda pair: pair[0]
    )
    return depth + 1, leaf


def check_node_limits(root: Node, path: str, limits: WorkflowLimits) -> tuple[list[Problem], int]:
    """Problems of one document's node tree (depth, node count, expression length) and its
    node count."""
    problems: list[Problem] = []
    count = 0
    for node_path, node in iter_nodes(root, path):
        count += 1
        for expr_path, source in iter_expressions(node, node_path):
            if len(source) > limits.max_expression_length:
                problems.append(
                    Problem(
                        expr_path,
                        "WORKFLOW_VALIDATION_FAILED",
                        f"the expression is {len(source)} characters long, over the limit of "
                        f"{limits.max_expression_length}",
                    )
                )
    if count > limits.max_nodes:
        problems.append(
            Problem(
                path,
                "WORKFLOW_VALIDATION_FAILED",
                f"the document has {count} nodes, over the limit of {limits.max_nodes}",
            )
        )
    depth, leaf = structural_depth(root, path)
    if depth > limits.max_depth:
        problems.append(
            Problem(
                leaf,
                "WORKFLOW_VALIDATION_FAILED",
                f"this node is nested {depth} levels deep, over the maximum depth of {limits.max_depth}",
            )
        )
    return problems, count


def check_schema_cost(schema: Any, path: str, limits: WorkflowLimits) -> list[Problem]:
    """Problems of a document's schema at `path`: too many schema objects, or too deep, once
    its references are expanded."""
    cost = expanded_cost(schema, limits.max_schema_size, limits.max_schema_depth)
    if cost.size > limits.max_schema_size:
        message = (
            f"the schema expands to more than {limits.max_schema_size} schema objects when its $refs are "
            "followed (WorkflowLimits.max_schema_size)"
        )
    elif cost.depth > limits.max_schema_depth:
        message = (
            f"the schema nests more than {limits.max_schema_depth} levels deep when its $refs are "
            "followed (WorkflowLimits.max_schema_depth)"
        )
    else:
        return []
    return [Problem(path, "WORKFLOW_VALIDATION_FAILED", message)]
