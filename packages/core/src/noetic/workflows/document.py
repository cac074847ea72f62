"""The workflow document model: `{version: 1, root, customItems?}` and its node kinds.

Keys are camelCase exactly as the TypeScript Noetic writes them, so its documents load
unchanged; unknown keys are rejected (a typo is an error, never ignored). Node kinds:
`callModel`, `decide`, `invokeTool`, `compute` (a JSONata `expr`), `conditional`, `inParallel`, `spawn`,
`withContext`, `loop`, `sequence` and `subflow`; every node may declare `customItems` and
`emitItems`. Until predicates are the TypeScript ones plus `{"kind": "expr", "expr": ...}`.
The kinds `runCode` (a code string), `schedule` and `acp-agent` need subsystems this runtime
does not have, so they are rejected with `UNSUPPORTED_NODE_KIND` (see `UNSUPPORTED_KINDS`).

Durations are milliseconds (`spawn.timeout`, `maxDuration.duration`), as in every document.
These models are also the source of the published JSON Schema (`noetic.workflows.schema`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from noetic.workflows.problems import Problem, child_path, index_path

__all__ = [
    "NODE_KINDS",
    "UNSUPPORTED_KINDS",
    "UNTIL_KINDS",
    "CallModelNode",
    "ComputeNode",
    "ConditionalNode",
    "ConditionalRoute",
    "CustomItemSpec",
    "DecideNode",
    "DecisionQuestion",
    "EmitItemsSpec",
    "InParallelNode",
    "InvokeToolNode",
    "LoopNode",
    "ModelParams",
    "Node",
    "OutputCodecRef",
    "SequenceNode",
    "SpawnNode",
    "SubflowNode",
    "ToolEntry",
    "Until",
    "WithContextNode",
    "WorkflowDocument",
    "iter_expressions",
    "iter_nodes",
    "node_children",
    "repeated_sibling_ids",
]

NonEmpty = Annotated[str, Field(min_length=1)]
PositiveInt = Annotated[int, Field(gt=0)]
PositiveNumber = Annotated[float, Field(gt=0)]

#: Node kinds of TypeScript documents that this runtime rejects, with the reason.
UNSUPPORTED_KINDS = {
    "runCode": "a runCode node carries a code string that needs a subprocess adapter, which Noetic for "
    "Python does not run; compute a value with a compute node (JSONata) or call a tool with invokeTool",
    "schedule": "schedule nodes are not implemented; repeat the step with a loop node, or schedule "
    "the whole workflow from the host",
    "acp-agent": "acp-agent nodes need the Agent Client Protocol subsystem, which Noetic for Python "
    "does not have",
}


#: Keys any object of a document may carry as annotations for people and tools. None is within
#: typo distance of a real key, so accepting them cannot hide a misspelling (the TypeScript
#: runtime ignores every unknown key; this one rejects the others, see `_Spec`).
ANNOTATION_KEYS = frozenset({"description", "title", "$comment"})
#: Prefix of vendor annotation keys (`x-owner`, `x-ui-color`), as in OpenAPI.
ANNOTATION_PREFIX = "x-"


def is_annotation_key(key: object) -> bool:
    """True for a key a document may carry anywhere as an annotation (ignored on load)."""
    return isinstance(key, str) and (key in ANNOTATION_KEYS or key.startswith(ANNOTATION_PREFIX))


class _Spec(BaseModel):
    """Base of every document model: camelCase keys, no unknown keys, strict JSON types.

    Annotation keys (`description`, `title`, `$comment`, `x-…`) are accepted and dropped
    wherever the model has no field of that name; any other unknown key is an error.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        frozen=True,
        strict=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_annotations(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = {f.alias or name for name, f in cls.model_fields.items()}
        if not any(is_annotation_key(k) and k not in fields for k in data):
            return data
        return {k: v for k, v in data.items() if k in fields or not is_annotation_key(k)}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        if target.get("type") == "object":
            properties = target.setdefault("properties", {})
            for key in sorted(ANNOTATION_KEYS - set(properties)):
                properties[key] = {"type": "string", "description": "An annotation; ignored."}
            target["patternProperties"] = {"^x-": {"description": "A vendor annotation; ignored."}}
        return schema


# --- custom items (CI-9) ----------------------------------------------------------------------


class CustomItemSpec(_Spec):
    """A custom item declared in JSON Schema: `type` is `prefix:name`; `output` describes the
    final item's fields (an object without `id`/`type`); `event` what streams, if anything."""

    type: NonEmpty
    description: str | None = None
    event: dict[str, Any] | None = None
    output: dict[str, Any]


class EmitItemsSpec(_Spec):
    """What a node emits: the item name and JSONata hooks. `onStart` is read against the node
    input and gives one event; `onDone` is read against the output and gives the final fields."""

    item: NonEmpty
    on_start: NonEmpty | None = None
    on_done: NonEmpty | None = None


CustomItems: TypeAlias = dict[str, CustomItemSpec]


class _NodeBase(_Spec):
    id: NonEmpty
    custom_items: CustomItems | None = None
    emit_items: EmitItemsSpec | Literal[True] | None = None


# --- until predicates -------------------------------------------------------------------------


class MaxSteps(_Spec):
    """Stop after `n` iterations."""

    kind: Literal["maxSteps"]
    n: PositiveInt


class MaxCost(_Spec):
    """Stop once the accumulated cost reaches `usd`."""

    kind: Literal["maxCost"]
    usd: PositiveNumber


class MaxDuration(_Spec):
    """Stop once the loop has run for `duration` milliseconds."""

    kind: Literal["maxDuration"]
    duration: PositiveNumber


class NoToolCalls(_Spec):
    """Stop when the last iteration's model made no tool calls."""

    kind: Literal["noToolCalls"]


class Never(_Spec):
    """Never stop (the loop ends by maxIterations, abort or error)."""

    kind: Literal["never"]


class OutputContains(_Spec):
    """Stop when the output's text contains `marker`."""

    kind: Literal["outputContains"]
    marker: NonEmpty


class OutputEquals(_Spec):
    """Stop when the output's text equals `sentinel`."""

    kind: Literal["outputEquals"]
    sentinel: NonEmpty


class Converged(_Spec):
    """Stop when two consecutive outputs have the same text (`threshold` below 1 needs an
    embedding model in the TypeScript Noetic; without one, as here, it compares exactly)."""

    kind: Literal["converged"]
    threshold: Annotated[float, Field(ge=0, le=1)] | None = None


class AnyOf(_Spec):
    """Stop when any predicate says stop."""

    kind: Literal["any"]
    predicates: Annotated[list[Until], Field(min_length=1)]


class AllOf(_Spec):
    """Stop when every predicate says stop."""

    kind: Literal["all"]
    predicates: Annotated[list[Until], Field(min_length=1)]


class ExprUntil(_Spec):
    """Stop when the JSONata `expr`, read against the latest iteration output, is `true`
    (anything else, including an undefined result, continues)."""

    kind: Literal["expr"]
    expr: NonEmpty


Until: TypeAlias = Annotated[
    MaxSteps
    | MaxCost
    | MaxDuration
    | NoToolCalls
    | Never
    | OutputContains
    | OutputEquals
    | Converged
    | AnyOf
    | AllOf
    | ExprUntil,
    Field(discriminator="kind"),
]

# --- nodes ------------------------------------------------------------------------------------


class ToolEntry(_Spec):
    """A tool a callModel node offers: a tool name passed to `nt.workflow(tools=...)`, or a
    provider server tool such as `openrouter:web_search` with its `parameters`."""

    type: NonEmpty
    parameters: dict[str, Any] | None = None


class ModelParams(_Spec):
    """Sampling parameters of a callModel node."""

    temperature: Annotated[float, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    max_tokens: PositiveInt | None = None
    stop_sequences: list[str] | None = None


class OutputCodecRef(_Spec):
    """A streaming output codec of the TypeScript Noetic (OpenUI); not available here."""

    codec: Literal["openui"]
    library: NonEmpty


class CallModelNode(_NodeBase):
    """One model call (with its tool loop); `model` falls back to the harness model."""

    kind: Literal["callModel"]
    model: str | None = None
    instructions: str
    tools: list[ToolEntry] | None = None
    params: ModelParams | None = None
    output: OutputCodecRef | None = None


class DecisionQuestion(_Spec):
    """One question of a decide node: `text` answers a string, `yes_no` a boolean, `choice`
    one of `choices`, `score` a number from `low` (default 0) to `high` (default 10)."""

    id: NonEmpty
    text: NonEmpty
    kind: Literal["text", "yes_no", "choice", "score"] = "text"
    choices: list[NonEmpty] | None = None
    low: float | None = None
    high: float | None = None


class DecideNode(_NodeBase):
    """Asks the model the declared `questions`; the output is the map of answers, and the step
    records which model answered, natively or estimated, and which questions it declined."""

    kind: Literal["decide"]
    model: str | None = None
    instructions: str | None = None
    questions: Annotated[list[DecisionQuestion], Field(min_length=1)]
    params: ModelParams | None = None


class InvokeToolNode(_NodeBase):
    """A direct tool call with `args` (or `{}`); the node input is not merged in."""

    kind: Literal["invokeTool"]
    tool_name: NonEmpty
    args: dict[str, Any] | None = None


class ComputeNode(_NodeBase):
    """A JSONata expression read against the node input; its value is the output."""

    kind: Literal["compute"]
    expr: NonEmpty


class ConditionalRoute(_Spec):
    """A route: taken when `match` is a case-insensitive substring of the input's text."""

    match: NonEmpty
    target: Node


class ConditionalNode(_NodeBase):
    """The first route whose `match` the input contains, else `default`, else pass-through."""

    kind: Literal["conditional"]
    routes: Annotated[list[ConditionalRoute], Field(min_length=1)]
    default: Node | None = None


class InParallelNode(_NodeBase):
    """Static `paths`, or one `each` path per element of the input array (or of the input's
    `over` member). `merge`: last (default), first, or concat; race returns the winner."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": ["paths"]}, {"required": ["each"]}],
            "dependentRequired": {"over": ["each"]},
        }
    )

    kind: Literal["inParallel"]
    mode: Literal["race", "all", "settle"]
    paths: Annotated[list[Node], Field(min_length=1)] | None = None
    each: Node | None = None
    over: NonEmpty | None = None
    merge: Literal["last", "first", "concat"] | None = None
    concurrency: PositiveInt | None = None

    @model_validator(mode="after")
    def _paths_xor_each(self) -> InParallelNode:
        if (self.paths is None) == (self.each is None):
            raise ValueError("an inParallel node needs exactly one of 'paths' (static) or 'each' (dynamic)")
        if self.over is not None and self.each is None:
            raise ValueError(
                "'over' selects the array an 'each' path fans out over, so it needs 'each': remove 'over' "
                "or replace 'paths' with 'each' (other Noetic runtimes ignore 'over' next to 'paths'; "
                "either fix keeps the document portable)"
            )
        return self


class SpawnNode(_NodeBase):
    """Runs `child` as a sub-agent with a fresh item log; `layers` replace the inherited set;
    `timeout` is in milliseconds."""

    kind: Literal["spawn"]
    child: Node
    timeout: PositiveNumber | None = None
    layers: Annotated[list[NonEmpty], Field(min_length=1)] | None = None


class WithContextNode(_NodeBase):
    """Runs `child` with the named context layers added."""

    kind: Literal["withContext"]
    child: Node
    layers: Annotated[list[NonEmpty], Field(min_length=1)]


class LoopNode(_NodeBase):
    """Repeats `body` until `until` says stop; `maxIterations` is a ceiling or "infinity"."""

    kind: Literal["loop"]
    body: Node
    until: Until
    max_iterations: PositiveInt | Literal["infinity"] | None = None


class SequenceNode(_NodeBase):
    """Runs `steps` in order, each one's output the next one's input."""

    kind: Literal["sequence"]
    steps: Annotated[list[Node], Field(min_length=1)]


class SubflowNode(_NodeBase):
    """Runs another document, inline (`document`) or named (`ref`, from `nt.workflow(workflows=)`);
    `input` is a literal input (default: the node input)."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["document"]}, {"required": ["ref"]}]}
    )

    kind: Literal["subflow"]
    document: WorkflowDocument | None = None
    ref: NonEmpty | None = None
    input: str | None = None

    @model_validator(mode="after")
    def _document_xor_ref(self) -> SubflowNode:
        if (self.document is None) == (self.ref is None):
            raise ValueError("a subflow node needs exactly one of 'document' (inline) or 'ref' (named)")
        return self


Node: TypeAlias = Annotated[
    CallModelNode
    | DecideNode
    | InvokeToolNode
    | ComputeNode
    | ConditionalNode
    | InParallelNode
    | SpawnNode
    | WithContextNode
    | LoopNode
    | SequenceNode
    | SubflowNode,
    Field(discriminator="kind"),
]


class WorkflowDocument(_Spec):
    """A workflow document: a version-1 envelope around one root node, with custom items any
    node may emit. A `$schema` key (for editors) is allowed and ignored."""

    model_config = ConfigDict(title="WorkflowDocument")

    schema_: str | None = Field(default=None, alias="$schema")
    version: Literal[1]
    root: Node
    custom_items: CustomItems | None = None


for _model in (
    AnyOf,
    AllOf,
    ConditionalRoute,
    ConditionalNode,
    InParallelNode,
    SpawnNode,
    WithContextNode,
    LoopNode,
    SequenceNode,
    SubflowNode,
    WorkflowDocument,
):
    _model.model_rebuild()

#: Every node kind this runtime accepts.
NODE_KINDS = (
    "callModel",
    "decide",
    "invokeTool",
    "compute",
    "conditional",
    "inParallel",
    "spawn",
    "withContext",
    "loop",
    "sequence",
    "subflow",
)
#: Every until kind this runtime accepts.
UNTIL_KINDS = (
    "maxSteps",
    "maxCost",
    "maxDuration",
    "noToolCalls",
    "never",
    "outputContains",
    "outputEquals",
    "converged",
    "any",
    "all",
    "expr",
)


# --- walking ----------------------------------------------------------------------------------


def node_children(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    """The nodes directly inside `node` with their paths (an inline subflow's root included)."""
    if isinstance(node, SequenceNode):
        steps = child_path(path, "steps")
        for i, step in enumerate(node.steps):
            yield index_path(steps, i), step
    elif isinstance(node, InParallelNode):
        if node.each is not None:
            yield child_path(path, "each"), node.each
        for i, p in enumerate(node.paths or ()):
            yield index_path(child_path(path, "paths"), i), p
    elif isinstance(node, SpawnNode | WithContextNode):
        yield child_path(path, "child"), node.child
    elif isinstance(node, LoopNode):
        yield child_path(path, "body"), node.body
    elif isinstance(node, ConditionalNode):
        for i, route in enumerate(node.routes):
            yield child_path(index_path(child_path(path, "routes"), i), "target"), route.target
        if node.default is not None:
            yield child_path(path, "default"), node.default
    elif isinstance(node, SubflowNode) and node.document is not None:
        yield child_path(child_path(path, "document"), "root"), node.document.root


def iter_nodes(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    """`node` and every node below it, depth first, with their paths."""
    stack = [(path, node)]
    while stack:
        current_path, current = stack.pop()
        yield current_path, current
        stack.extend(reversed(list(node_children(current, current_path))))


def repeated_sibling_ids(root: Node, path: str) -> list[Problem]:
    """A problem for each node whose id an earlier node inside the same parent already has:
    the steps of one sequence, the paths of one `inParallel`, the routes of one conditional.
    Spans, events and checkpoints name a step by its id, so two siblings sharing one could not
    be told apart."""
    problems: list[Problem] = []
    for node_at, node in iter_nodes(root, path):
        first: dict[str, str] = {}
        for child_at, child in node_children(node, node_at):
            earlier = first.setdefault(child.id, child_at)
            if earlier != child_at:
                problems.append(
                    Problem(
                        child_path(child_at, "id"),
                        "WORKFLOW_VALIDATION_FAILED",
                        f"step id {child.id!r} is already the id of {earlier}; steps inside one node need "
                        "distinct ids",
                    )
                )
    return problems


def _until_expressions(until: Until, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(until, ExprUntil):
        yield child_path(path, "expr"), until.expr
    elif isinstance(until, AnyOf | AllOf):
        for i, inner in enumerate(until.predicates):
            yield from _until_expressions(inner, index_path(child_path(path, "predicates"), i))


def iter_expressions(node: Node, path: str) -> Iterator[tuple[str, str]]:
    """The JSONata expressions written on `node` itself, with their paths."""
    if isinstance(node, ComputeNode):
        yield child_path(path, "expr"), node.expr
    if isinstance(node, LoopNode):
        yield from _until_expressions(node.until, child_path(path, "until"))
    emit = node.emit_items
    if isinstance(emit, EmitItemsSpec):
        emit_path = child_path(path, "emitItems")
        if emit.on_start is not None:
            yield child_path(emit_path, "onStart"), emit.on_start
        if emit.on_done is not None:
            yield child_path(emit_path, "onDone"), emit.on_done
