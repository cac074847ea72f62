"""Hydration: a validated document becomes a tree of ordinary steps built by the builders.

| node | step |
|---|---|
| callModel | `nt.call_model` (client tools from `tools=`, `openrouter:*` entries as server tools); a non-string input is sent as JSON text |
| decide | `nt.decide` with one `nt.question` per entry of `questions` |
| invokeTool | `nt.invoke_tool` with the tool named in `tools=`, called with `args` (or `{}`) exactly: the input is not merged in |
| compute | `nt.run_code` evaluating the JSONata `expr` against the input |
| conditional | `nt.conditional`: the first route whose `match` is a case-insensitive substring of the input's text, else `default`, else pass-through |
| inParallel | `nt.in_parallel` (static `paths`) or a `FanOut` (`each` + `over`); merge last/first/concat |
| spawn | `nt.spawn` (`timeout` ms → s, `layers` replace the inherited set) |
| withContext | `with_context` from `noetic.layers.with_context` |
| loop | `nt.loop` with the hydrated until predicate; `maxIterations: "infinity"` is no ceiling |
| sequence | `nt.sequence` |
| subflow | a `Subflow` running the inline or named document; ids inside get the suffix `-<node id>` |

Custom-item names resolve node → document root → enclosing workflow (for a subflow) →
`custom_items=` of `nt.workflow` (CI-11). A document declaration sharing a name with a
`custom_items=` declaration must have its type (`CUSTOM_ITEM_MISMATCH`), and the code-side
declaration is then the one used, so its schema validates and `is_custom_item` matches (CI-12).
Names found nowhere, and layer names not passed in `layers=`, are left to the harness's plugin
registries and checked by the workflow step before it runs (`Deferred`).

Every problem is collected with its path; with `bind=False` (`noetic validate`) tool, layer and
workflow names are not resolved, since those are supplied by the host program.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from noetic.custom_items import CustomItemDecl, custom_item
from noetic.errors import NoeticConfigError
from noetic.predicates import LoopSnapshot, Until, Verdict, all_, any_, until
from noetic.schema import Schema, to_jsonable
from noetic.steps.base import Step
from noetic.steps.code import run_code
from noetic.steps.decide import decide, question
from noetic.steps.flow import conditional, sequence
from noetic.steps.loop import loop, output_text
from noetic.steps.parallel import in_parallel
from noetic.steps.spawn import spawn
from noetic.tools import Tool, invoke_tool
from noetic.workflows import document as d
from noetic.workflows.expressions import Expression, compile_expression
from noetic.workflows.limits import WorkflowLimits, check_node_limits, check_schema_cost
from noetic.workflows.load import DocumentSource, parse_document
from noetic.workflows.problems import ROOT, Problem, child_path, index_path
from noetic.workflows.run_budget import charge_kept_item, counted_iterations
from noetic.workflows.steps import DocumentCallModel, FanOut, Subflow

if TYPE_CHECKING:
    from noetic.registry import Registry

__all__ = ["Bindings", "Deferred", "Hydrator", "merge_results"]

Scope = Mapping[str, CustomItemDecl[Any, Any]]
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


@dataclass(frozen=True, slots=True)
class Deferred:
    """A name left to the harness's plugin registries, and where the document uses it."""

    kind: Literal["custom item", "layer"]
    name: str
    path: str


@dataclass(frozen=True)
class Bindings:
    """What the host program supplies to a document: tools, layers and named documents by
    name, code-side custom items, and the limits."""

    tools: Mapping[str, Tool] = field(default_factory=dict)
    layers: Mapping[str, Any] = field(default_factory=dict)
    custom_items: Scope = field(default_factory=dict)
    workflows: Mapping[str, DocumentSource] = field(default_factory=dict)
    limits: WorkflowLimits = field(default_factory=WorkflowLimits)


def _text(value: Any) -> str:
    """The text a conditional matches against: a string itself, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(to_jsonable(value), default=str, ensure_ascii=False)


def _concat(values: Sequence[Any]) -> Any:
    """Strings joined by newlines; otherwise one list (array results spliced in)."""
    if values and all(isinstance(v, str) for v in values):
        return "\n".join(values)
    merged: list[Any] = []
    for v in values:
        if isinstance(v, list):
            merged.extend(v)
        else:
            merged.append(v)
    return merged


def merge_results(strategy: Literal["last", "first", "concat"], mode: str) -> Callable[[list[Any]], Any]:
    """The merge of an `inParallel` node (for `settle`, over the fulfilled paths' values)."""

    def merge(results: list[Any]) -> Any:
        values = [r.value for r in results if r.status == "fulfilled"] if mode == "settle" else results
        if strategy == "concat":
            return _concat(values)
        if not values:
            return None
        return values[0] if strategy == "first" else values[-1]

    return merge


def _snake(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Server-tool parameters with camelCase keys (as documents write them) in snake_case."""
    return {_CAMEL.sub(r"_\1", key).lower(): value for key, value in parameters.items()}


def _start_hook(expression: Expression) -> Callable[[Any], Iterator[Any]]:
    """`onStart`: one event, the expression read against the input (none when undefined)."""

    def on_start(value: Any) -> Iterator[Any]:
        event = expression.evaluate(value)
        if event is not None:
            charge_kept_item(expression.source, event)
            yield event

    return on_start


def _done_hook(expression: Expression) -> Callable[[Any], Any]:
    """`onDone`: the final item's fields, the expression read against the output."""

    def on_done(value: Any) -> Any:
        fields = expression.evaluate(value)
        charge_kept_item(expression.source, fields)
        return fields

    return on_done


class Hydrator:
    """Builds the steps of a document and collects every problem on the way."""

    def __init__(
        self, bindings: Bindings, *, bind: bool = True, registered_items: Registry[Any] | None = None
    ):
        self.bindings = bindings
        self.limits = bindings.limits
        self.bind = bind
        self.registered_items = registered_items
        self.problems: list[Problem] = []
        self.deferred: list[Deferred] = []
        self.nodes = 0
        self._expressions: dict[str, Expression | NoeticConfigError] = {}
        self._declarations: dict[int, CustomItemDecl[Any, Any] | None] = {}
        #: Names whose document declaration was refused (its problem is reported already).
        self._refused_items: set[str] = set()
        self._documents: dict[str, d.WorkflowDocument | None] = {}

    # --- documents ------------------------------------------------------------------------

    def document(
        self,
        doc: d.WorkflowDocument,
        path: str = ROOT,
        *,
        enclosing: Scope | None = None,
        suffix: str = "",
        refs: tuple[str, ...] = (),
        inline: bool = False,
    ) -> Step | None:
        """Hydrate `doc` (an inline sub-document's limits are its parent's)."""
        root_path = child_path(path, "root")
        if not inline:
            problems, count = check_node_limits(doc.root, root_path, self.limits)
            problems += d.repeated_sibling_ids(doc.root, root_path)
            self.nodes += count
            if not problems and self.nodes > self.limits.max_nodes:
                problems = [
                    Problem(
                        path,
                        "WORKFLOW_VALIDATION_FAILED",
                        f"the workflow expands to more than {self.limits.max_nodes} nodes across "
                        "its named sub-workflows",
                    )
                ]
            if problems:
                self.problems.extend(problems)
                return None
        base = dict(self.bindings.custom_items) if enclosing is None else dict(enclosing)
        scope = self._declare(doc.custom_items, child_path(path, "customItems"), base)
        return self.node(doc.root, root_path, scope, suffix, refs)

    def _problem(self, path: str, code: str, message: str) -> None:
        self.problems.append(Problem(path, code, message))

    # --- custom items -----------------------------------------------------------------------

    def _declare(self, specs: Mapping[str, d.CustomItemSpec] | None, path: str, base: Scope) -> Scope:
        """`base` with the declarations `specs` layered over it."""
        if not specs:
            return base
        scope = dict(base)
        for name, spec in specs.items():
            decl = self._declaration(name, spec, child_path(path, name))
            if decl is not None:
                scope[name] = decl
            else:
                self._refused_items.add(name)
        return scope

    def _declaration(self, name: str, spec: d.CustomItemSpec, path: str) -> CustomItemDecl[Any, Any] | None:
        key = id(spec)
        if key in self._declarations:
            return self._declarations[key]
        decl: CustomItemDecl[Any, Any] | None = None
        code_side = self.bindings.custom_items.get(name)
        if code_side is not None:
            if code_side.type != spec.type:
                self._problem(
                    child_path(path, "type"),
                    "CUSTOM_ITEM_MISMATCH",
                    f"the document declares {name!r} as {spec.type!r} but custom_items= declares it "
                    f"as {code_side.type!r}",
                )
            else:
                decl = code_side
        elif self._schemas_within_limits(spec, path):
            try:
                event = Schema.from_document(spec.event) if spec.event is not None else None
                decl = custom_item(
                    spec.type,
                    description=spec.description,
                    event=event,
                    output=Schema.from_document(spec.output),
                )
            except NoeticConfigError as exc:
                self._problem(path, exc.code, exc.message)
        self._declarations[key] = decl
        return decl

    def _schemas_within_limits(self, spec: d.CustomItemSpec, path: str) -> bool:
        """False, with the problems recorded, when a schema of `spec` is too large to validate with."""
        problems = [
            problem
            for key, schema in (("event", spec.event), ("output", spec.output))
            if schema is not None
            for problem in check_schema_cost(schema, child_path(path, key), self.limits)
        ]
        self.problems.extend(problems)
        return not problems

    def _emit(self, node: d.Node, path: str, scope: Scope) -> tuple[Scope | None, Any]:
        """The `custom_items=` and `emit_items=` of the step for `node`."""
        spec = node.emit_items
        if spec is None:
            return None, None
        if spec is True:
            return scope, True
        emit_path = child_path(path, "emitItems")
        if spec.item not in scope and spec.item not in self._refused_items:
            self._unresolved_item(spec.item, child_path(emit_path, "item"), scope)
        hooks: dict[str, Any] = {"item": spec.item}
        if spec.on_start is not None:
            start = self._expression(spec.on_start, child_path(emit_path, "onStart"))
            if start is not None:
                hooks["on_start"] = _start_hook(start)
        if spec.on_done is not None:
            done = self._expression(spec.on_done, child_path(emit_path, "onDone"))
            if done is not None:
                hooks["on_done"] = _done_hook(done)
        return scope, hooks

    def _unresolved_item(self, name: str, path: str, scope: Scope) -> None:
        registry = self.registered_items
        if registry is None:
            self.deferred.append(Deferred("custom item", name, path))
        elif name not in registry:
            known = ", ".join(sorted(scope)) or "none"
            self._problem(
                path, "UNKNOWN_CUSTOM_ITEM", f"custom item {name!r} is not in scope (in scope: {known})"
            )

    # --- expressions and names --------------------------------------------------------------

    def _expression(self, source: str, path: str) -> Expression | None:
        compiled = self._expressions.get(source)
        if compiled is None:
            try:
                compiled = compile_expression(source, self.limits.expressions)
            except NoeticConfigError as exc:
                compiled = exc
            self._expressions[source] = compiled
        if isinstance(compiled, NoeticConfigError):
            self._problem(path, compiled.code, compiled.message)
            return None
        return compiled

    def _tool(self, name: str, path: str) -> Tool | None:
        found = self.bindings.tools.get(name)
        if found is None:
            known = ", ".join(sorted(self.bindings.tools)) or "none"
            self._problem(
                path,
                "UNKNOWN_TOOL_REFERENCE",
                f"tool {name!r} is not among the workflow's tools (available: {known})",
            )
        return found

    def _layers(self, names: Sequence[str], path: str) -> list[Any]:
        """Layer objects from `layers=`; other names stay names, for the harness registry."""
        resolved: list[Any] = []
        for i, name in enumerate(names):
            layer = self.bindings.layers.get(name)
            if layer is None:
                self.deferred.append(Deferred("layer", name, index_path(path, i)))
                resolved.append(name)
            else:
                resolved.append(layer)
        return resolved

    # --- nodes ------------------------------------------------------------------------------

    def node(self, node: d.Node, path: str, scope: Scope, suffix: str, refs: tuple[str, ...]) -> Step | None:
        """The step for `node`, or None when it (or a node below it) has a problem."""
        before = len(self.problems)
        if node.custom_items:
            scope = self._declare(node.custom_items, child_path(path, "customItems"), scope)
        items, emit = self._emit(node, path, scope)
        options: dict[str, Any] = {"custom_items": items, "emit_items": emit}
        step_id = node.id + suffix
        try:
            step = self._build(node, path, step_id, options, scope, suffix, refs)
        except NoeticConfigError as exc:
            self._problem(path, exc.code, exc.message)
            return None
        if step is not None:
            step.node_path = path  # runtime errors of this node name where it is in the document
        return step if len(self.problems) == before else None

    def _build(
        self,
        node: d.Node,
        path: str,
        step_id: str,
        options: dict[str, Any],
        scope: Scope,
        suffix: str,
        refs: tuple[str, ...],
    ) -> Step | None:
        def child(key: str, value: d.Node) -> Step | None:
            return self.node(value, child_path(path, key), scope, suffix, refs)

        if isinstance(node, d.CallModelNode):
            return self._call_model(node, path, step_id, options)
        if isinstance(node, d.DecideNode):
            return self._decide(node, step_id, options)
        if isinstance(node, d.InvokeToolNode):
            if not self.bind:
                return None
            tool = self._tool(node.tool_name, child_path(path, "toolName"))
            if tool is None:
                return None
            return invoke_tool(step_id, tool, node.args or {}, merge_input=False, **options)
        if isinstance(node, d.ComputeNode):
            expression = self._expression(node.expr, child_path(path, "expr"))
            return None if expression is None else run_code(step_id, expression.evaluate, **options)
        if isinstance(node, d.ConditionalNode):
            return self._conditional(node, path, step_id, options, scope, suffix, refs)
        if isinstance(node, d.InParallelNode):
            return self._in_parallel(node, path, step_id, options, scope, suffix, refs)
        if isinstance(node, d.SpawnNode):
            body = child("child", node.child)
            layers = self._layers(node.layers, child_path(path, "layers")) if node.layers else None
            timeout = node.timeout / 1000 if node.timeout is not None else None
            return None if body is None else spawn(step_id, body, layers=layers, timeout=timeout, **options)
        if isinstance(node, d.WithContextNode):
            return self._with_context(node, path, step_id, options, child("child", node.child))
        if isinstance(node, d.LoopNode):
            body = child("body", node.body)
            predicate = self._until(node.until, child_path(path, "until"))
            if body is None or predicate is None:
                return None
            ceiling = node.max_iterations
            max_iterations = 1000 if ceiling is None else math.inf if ceiling == "infinity" else ceiling
            return loop(
                step_id,
                [body],
                until=predicate,
                max_iterations=max_iterations,
                prepare_next=counted_iterations(step_id),
                keep_history=2 if _reads_previous(node.until) else 1,
                **options,
            )
        if isinstance(node, d.SequenceNode):
            steps = [
                self.node(s, index_path(child_path(path, "steps"), i), scope, suffix, refs)
                for i, s in enumerate(node.steps)
            ]
            return (
                None if None in steps else sequence(step_id, [s for s in steps if s is not None], **options)
            )
        return self._subflow(node, path, step_id, options, scope, suffix, refs)

    def _call_model(
        self, node: d.CallModelNode, path: str, step_id: str, options: dict[str, Any]
    ) -> Step | None:
        if node.output is not None:
            self._problem(
                child_path(path, "output"),
                "UNKNOWN_UI_LIBRARY_REFERENCE",
                f"output codec {node.output.codec!r} (library {node.output.library!r}) is not "
                "available: Noetic for Python has no OpenUI codecs",
            )
        tools: list[Tool] = []
        server_tools: list[dict[str, Any]] = []
        for i, entry in enumerate(node.tools or ()):
            if entry.type.startswith("openrouter:"):
                server_tools.append({"type": entry.type, "parameters": _snake(entry.parameters or {})})
            elif self.bind:
                found = self._tool(entry.type, child_path(index_path(child_path(path, "tools"), i), "type"))
                if found is not None:
                    tools.append(found)
        params = _model_params(node.params)
        if server_tools:
            params["server_tools"] = server_tools
        if not self.bind:
            return None
        return DocumentCallModel(
            step_id,
            model=node.model,
            instructions=node.instructions,
            tools=tools,
            params=params or None,
            **options,
        )

    def _decide(self, node: d.DecideNode, step_id: str, options: dict[str, Any]) -> Step:
        questions = [
            question(
                q.id,
                q.text,
                kind=q.kind,
                choices=q.choices or (),
                low=0 if q.low is None else q.low,
                high=10 if q.high is None else q.high,
            )
            for q in node.questions
        ]
        params = _model_params(node.params)
        return decide(
            step_id,
            questions,
            model=node.model,
            instructions=node.instructions,
            params=params or None,
            **options,
        )

    def _conditional(
        self,
        node: d.ConditionalNode,
        path: str,
        step_id: str,
        options: dict[str, Any],
        scope: Scope,
        suffix: str,
        refs: tuple[str, ...],
    ) -> Step | None:
        routes_path = child_path(path, "routes")
        targets = [
            self.node(r.target, child_path(index_path(routes_path, i), "target"), scope, suffix, refs)
            for i, r in enumerate(node.routes)
        ]
        fallback = (
            self.node(node.default, child_path(path, "default"), scope, suffix, refs)
            if node.default is not None
            else None
        )
        if None in targets or (node.default is not None and fallback is None):
            return None
        routes = [(r.match.lower(), target) for r, target in zip(node.routes, targets, strict=True)]

        def route(value: Any) -> Step | None:
            text = _text(value).strip().lower()
            return next((target for match, target in routes if match in text), fallback)

        return conditional(step_id, route, **options)

    def _in_parallel(
        self,
        node: d.InParallelNode,
        path: str,
        step_id: str,
        options: dict[str, Any],
        scope: Scope,
        suffix: str,
        refs: tuple[str, ...],
    ) -> Step | None:
        merge = None if node.mode == "race" else merge_results(node.merge or "last", node.mode)
        if node.each is not None:
            each = self.node(node.each, child_path(path, "each"), scope, suffix, refs)
            if each is None:
                return None
            return FanOut(
                step_id,
                each,
                over=node.over,
                mode=node.mode,
                merge=merge,
                concurrency=node.concurrency,
                max_fan_out=self.limits.max_fan_out,
                **options,
            )
        paths_path = child_path(path, "paths")
        paths = [
            self.node(p, index_path(paths_path, i), scope, suffix, refs)
            for i, p in enumerate(node.paths or ())
        ]
        if None in paths:
            return None
        return in_parallel(
            step_id,
            [p for p in paths if p is not None],
            mode=node.mode,
            merge=merge,
            concurrency=node.concurrency,
            **options,
        )

    def _with_context(
        self, node: d.WithContextNode, path: str, step_id: str, options: dict[str, Any], body: Step | None
    ) -> Step | None:
        try:
            with_context = importlib.import_module("noetic.layers.with_context").with_context
        except (ImportError, AttributeError):
            self._problem(
                path,
                "UNSUPPORTED_NODE_KIND",
                "withContext needs noetic.layers.with_context (the context-layer runtime), which this "
                "installation of noetic-core does not have",
            )
            return None
        layers = self._layers(node.layers, child_path(path, "layers"))
        if body is None:
            return None
        built: Step = with_context(step_id, body, layers=layers, **options)
        return built

    def _subflow(
        self,
        node: d.SubflowNode,
        path: str,
        step_id: str,
        options: dict[str, Any],
        scope: Scope,
        suffix: str,
        refs: tuple[str, ...],
    ) -> Step | None:
        inner_suffix = f"{suffix}-{node.id}"
        if node.document is not None:
            body = self.document(
                node.document,
                child_path(path, "document"),
                enclosing=scope,
                suffix=inner_suffix,
                refs=refs,
                inline=True,
            )
        else:
            assert node.ref is not None
            if not self.bind:
                return None
            body = self._ref(node.ref, path, scope, inner_suffix, refs)
        return None if body is None else Subflow(step_id, body, input=node.input, **options)

    def _ref(self, ref: str, path: str, scope: Scope, suffix: str, refs: tuple[str, ...]) -> Step | None:
        ref_path = child_path(path, "ref")
        if ref in refs:
            chain = " -> ".join((*refs, ref))
            self._problem(ref_path, "WORKFLOW_CYCLE", f"named workflow {ref!r} references itself ({chain})")
            return None
        if len(refs) >= self.limits.max_subflow_depth:
            self._problem(
                ref_path,
                "WORKFLOW_VALIDATION_FAILED",
                f"named workflows nest more than {self.limits.max_subflow_depth} deep here",
            )
            return None
        doc = self._named(ref, ref_path)
        if doc is None:
            return None
        return self.document(
            doc, f"{path} > workflows[{ref!r}] {ROOT}", enclosing=scope, suffix=suffix, refs=(*refs, ref)
        )

    def _named(self, ref: str, path: str) -> d.WorkflowDocument | None:
        """The named document `ref`, loaded once (its problems reported once)."""
        if ref in self._documents:
            return self._documents[ref]
        source = self.bindings.workflows.get(ref)
        doc: d.WorkflowDocument | None = None
        if source is None:
            known = ", ".join(sorted(self.bindings.workflows)) or "none"
            self._problem(
                path,
                "UNKNOWN_WORKFLOW_REFERENCE",
                f"no workflow named {ref!r} was passed in workflows= (available: {known}). Named "
                "workflows are resolved when the workflow is built, so pass every named document up "
                "front (other Noetic runtimes resolve one when its subflow first runs; a document "
                "every host is given up front is portable to them all)",
            )
        else:
            doc, problems = parse_document(source, self.limits)
            prefix = f"workflows[{ref!r}] "
            self.problems.extend(Problem(prefix + p.path, p.code, p.message) for p in problems)
        self._documents[ref] = doc
        return doc

    # --- until predicates -------------------------------------------------------------------

    def _until(self, spec: d.Until, path: str) -> Until | None:
        if isinstance(spec, d.MaxSteps):
            return until.max_steps(spec.n)
        if isinstance(spec, d.MaxCost):
            return until.max_cost(spec.usd)
        if isinstance(spec, d.MaxDuration):
            return until.max_duration(spec.duration / 1000)
        if isinstance(spec, d.NoToolCalls):
            return until.no_tool_calls()
        if isinstance(spec, d.Never):
            return until.never()
        if isinstance(spec, d.OutputContains):
            return until.output_contains(spec.marker)
        if isinstance(spec, d.OutputEquals):
            return _output_equals(spec.sentinel)
        if isinstance(spec, d.Converged):
            return _converged
        if isinstance(spec, d.AnyOf | d.AllOf):
            inner = [
                self._until(p, index_path(child_path(path, "predicates"), i))
                for i, p in enumerate(spec.predicates)
            ]
            if None in inner:
                return None
            combine = any_ if isinstance(spec, d.AnyOf) else all_
            return combine(*[p for p in inner if p is not None])
        expression = self._expression(spec.expr, child_path(path, "expr"))
        return None if expression is None else _expr_until(expression)


def _model_params(spec: d.ModelParams | None) -> dict[str, Any]:
    """The sampling parameters a model node names, in the adapter's spelling."""
    if spec is None:
        return {}
    named = {
        "temperature": spec.temperature,
        "top_p": spec.top_p,
        "max_tokens": spec.max_tokens,
        "stop": spec.stop_sequences,
    }
    return {k: v for k, v in named.items() if v is not None}


def _output_equals(sentinel: str) -> Until:
    """Stop when the output's text is exactly `sentinel`."""

    def check(snap: LoopSnapshot) -> Verdict:
        done = snap.last_text == sentinel
        return Verdict(done, f"Output matched sentinel: {sentinel}" if done else None)

    return check


def _reads_previous(spec: d.Until) -> bool:
    """Whether a predicate reads the previous iteration's output (only `converged` does), so
    the loop keeps two outputs, not one, whatever the size of each."""
    if isinstance(spec, d.Converged):
        return True
    if isinstance(spec, d.AnyOf | d.AllOf):
        return any(_reads_previous(p) for p in spec.predicates)
    return False


def _converged(snap: LoopSnapshot) -> Verdict:
    """Stop when this iteration's output text equals the previous one's (state-free, so one
    hydrated loop can run any number of times)."""
    history = snap.history
    same = len(history) >= 2 and output_text(history[-2]) == snap.last_text
    return Verdict(same, "Output converged" if same else None)


def _expr_until(expression: Expression) -> Until:
    """Stop when the expression, read against the latest output, is `true`."""

    def check(snap: LoopSnapshot) -> Verdict:
        done = expression.evaluate(snap.last_output) is True
        return Verdict(done, f"{expression.source} is true" if done else None)

    return check
