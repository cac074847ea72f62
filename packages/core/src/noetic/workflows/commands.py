"""What `noetic schema`, `noetic validate` and `noetic run` do (`noetic.cli` parses and calls).

- `print_schema` writes the published JSON Schema.
- `validate_document` reports every problem `noetic run` would report before running, each
  with its JSON path: schema, limits, expressions, tools (the command line offers none), named
  workflows, layers and custom items (including what installed plugins register). Both
  commands load a document through `load_for_cli`, so they cannot disagree.
- `run_document` runs a document on an `AgentHarness`, offline unless asked otherwise: every
  model node — also one that names a `model` — runs on `ScriptedModel.echo()` (model text
  echoes the last user message), with the in-memory filesystem. `model="openrouter:<id>"`
  (`--model`) goes online: nodes without a `model` use it, nodes naming one use their own
  (resolved through the installed adapters; an unknown provider is an error, never a
  fallback). The turn renders live on `err` (`TerminalRenderer`) and the final output is
  printed on `out`: a string as is, anything else as JSON.

Problems and errors are printed with hints for the command line (flags, files, `noetic
plugins`), and a runtime error with the JSON path of the node that failed. Each returns the
process exit status: 0 success, 1 the run failed (or a loop stopped because its `until`
predicate failed, which is warned about), 2 the document or the input is invalid. Everything
written is passed through `terminal_safe`, since documents, inputs and model text are untrusted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.terminal_safe import terminal_safe
from noetic.workflows.problems import Problem

if TYPE_CHECKING:
    from noetic.plugins import NoeticPluginManager
    from noetic.steps.base import Step
    from noetic.workflows.workflow import WorkflowStep

__all__ = [
    "CLI_HINTS",
    "MAX_INPUT_DEPTH",
    "load_for_cli",
    "parse_input",
    "print_schema",
    "run_document",
    "use_harness_model",
    "validate_document",
]

#: How deeply `--input` JSON may nest.
MAX_INPUT_DEPTH = 256


def print_schema(out: TextIO) -> int:
    """Write the published JSON Schema of workflow documents."""
    from noetic.workflows.schema import SCHEMA_PATH

    out.write(SCHEMA_PATH.read_text(encoding="utf-8"))
    return 0


#: What to do about a problem when the document runs from the command line.
CLI_HINTS = {
    "UNKNOWN_TOOL_REFERENCE": "`noetic run` offers no tools to a document: remove the tool from the "
    "node, or run the document from a program that passes the tool.",
    "UNKNOWN_LAYER_REFERENCE": "Install the package that registers the layer (`noetic plugins` lists "
    "the registered layers), or remove the name from the document.",
    "UNKNOWN_WORKFLOW_REFERENCE": "`noetic run` knows no named workflows: inline the sub-workflow as "
    "the subflow node's `document`.",
    "UNKNOWN_CUSTOM_ITEM": "Declare the item in the document's (or the node's) customItems, or install "
    "the package that registers it (`noetic plugins` lists the registered items).",
    "MISSING_API_KEY": "Set OPENROUTER_API_KEY in the environment, or leave out --model to run offline.",
    "UNKNOWN_MODEL_ADAPTER": "Pass --model with an installed provider prefix (`noetic plugins` lists "
    "them), or leave out --model to run offline.",
    "PLUGIN_LOAD_FAILED": "Fix or reinstall the plugin that failed (`noetic plugins` shows its error).",
}


def _hint(code: str, fallback: str | None) -> str | None:
    return CLI_HINTS.get(code, fallback)


def _report(path: str, problems: list[Problem], err: TextIO) -> int:
    shown = terminal_safe(path, multiline=False)
    for problem in problems:
        err.write(f"{shown}: {terminal_safe(str(problem), multiline=False)}\n")
    err.write(f"{shown}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
    for code in dict.fromkeys(p.code for p in problems):
        hint = _hint(code, None)
        if hint is not None:
            err.write(f"hint: {hint}\n")
    return 2


def load_for_cli(
    path: str | os.PathLike[str], pm: NoeticPluginManager
) -> tuple[WorkflowStep | None, list[Problem]]:
    """The document at `path` hydrated as `noetic run` runs it, or every problem it has.

    This is `nt.workflow` with no tools and no named workflows (the command line offers none),
    and with the names the document leaves to plugins (layers, custom items) checked against
    `pm`'s registries at once, so nothing is left to fail after the run has started.
    """
    from noetic.workflows.hydrate import Bindings, Hydrator
    from noetic.workflows.load import parse_document
    from noetic.workflows.workflow import WorkflowStep, unregistered

    doc, problems = parse_document(path)
    if doc is None:
        return None, problems
    hydrator = Hydrator(Bindings())
    root = hydrator.document(doc)
    problems = [*hydrator.problems, *unregistered(hydrator.deferred, pm.registries)]
    if problems or root is None:
        return None, sorted(problems, key=lambda p: p.path)
    return WorkflowStep("run", doc, root, deferred=hydrator.deferred), []


def validate_document(path: str | os.PathLike[str], out: TextIO, err: TextIO) -> int:
    """Check the document at `path` and report every problem with its JSON path."""
    from noetic.plugins import make_plugin_manager

    shown = os.fspath(path)
    flow, problems = load_for_cli(path, make_plugin_manager())
    if flow is None:
        return _report(shown, problems, err)
    nodes = sum(1 for _ in _walk(flow.root))
    out.write(f"{terminal_safe(shown, multiline=False)}: valid workflow document ({nodes} nodes)\n")
    return 0


def _walk(step: Step) -> Iterator[Step]:
    """`step` and every step below it."""
    yield step
    for child in step.children():
        yield from _walk(child)


def _not_json(constant: str) -> Any:
    """`NaN` and `Infinity` are not JSON (Python's parser accepts them)."""
    raise ValueError(f"{constant} is not JSON")


def parse_input(text: str | None) -> Any:
    """The turn input of `--input`: JSON when it parses, else the text itself ("" when absent).
    JSON nested more than `MAX_INPUT_DEPTH` levels is `INVALID_INPUT` (checked by a linear scan
    before parsing, since Python's parser recurses and would fail or not depending on the
    interpreter's recursion limit)."""
    from noetic.workflows.limits import json_text_depth

    if text is None:
        return ""
    depth = json_text_depth(text) if text.lstrip()[:1] in ("[", "{") else 0
    if depth > MAX_INPUT_DEPTH:
        raise NoeticConfigError(
            "INVALID_INPUT",
            f"--input is JSON nested {depth} levels deep, over the limit of {MAX_INPUT_DEPTH}",
            hint="Pass flatter JSON, or plain text.",
        )
    try:
        return json.loads(text, parse_constant=_not_json)
    except ValueError:
        return text


def _format_output(value: Any) -> str:
    value = to_jsonable(value)
    if isinstance(value, str):
        return terminal_safe(value)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        text = json.dumps(repr(value)[:10_000])
    return terminal_safe(text)


def run_document(
    path: str | os.PathLike[str],
    *,
    input: Any = "",
    model: str | None = None,
    out: TextIO,
    err: TextIO,
    live: bool | None = None,
) -> int:
    """Run the document at `path` on a harness; see the module docstring."""
    from noetic.plugins import make_plugin_manager

    shown = os.fspath(path)
    pm = make_plugin_manager()
    flow, problems = load_for_cli(path, pm)
    if flow is None:
        return _report(shown, problems, err)
    if model is None:
        offline = use_harness_model(flow)
        if offline:
            err.write(
                f"offline: {offline} model node(s) naming a model use the echo model; pass --model to go online\n"
            )
    try:
        output, failed_loops = anyio.run(_run, flow, pm, input, model, err, live)
    except NoeticError as exc:
        _print_error(exc, err)
        return 1
    out.write(_format_output(output) + "\n")
    for stopped in failed_loops:
        reason = terminal_safe(str(stopped.get("reason")), multiline=False)
        err.write(
            f"warning: loop {stopped.get('step_id')!r} stopped because its until predicate failed: {reason}\n"
        )
    return 1 if failed_loops else 0


def use_harness_model(graph: Step | None) -> int:
    """Make every model step of `graph` use the harness model (for the command line, which
    owns the graph it loaded); returns how many named their own model."""
    from noetic.steps.model_call import CallModel

    if graph is None:
        return 0
    named = 0
    for step in _walk(graph):
        if isinstance(step, CallModel) and step.model is not None:
            step.model = None
            named += 1
    return named


def _print_error(exc: NoeticError, err: TextIO) -> None:
    """One error line (with the failing node's JSON path when known) and a command-line hint."""
    where = exc.details.get("node_path")
    at = f" at {terminal_safe(str(where), multiline=False)}" if where else ""
    err.write(f"error{at}: [{exc.code}] {terminal_safe(exc.message, multiline=False)}\n")
    hint = _hint(exc.code, getattr(exc, "hint", None))
    if hint:
        err.write(f"hint: {terminal_safe(hint, multiline=False)}\n")


async def _run(
    flow: WorkflowStep, pm: NoeticPluginManager, input: Any, model: str | None, err: TextIO, live: bool | None
) -> tuple[Any, list[dict[str, Any]]]:
    """Run the turn, rendering it; returns its output and the loops whose predicate failed."""
    from noetic.harness import AgentHarness
    from noetic.testing import ScriptedModel
    from noetic.workflows.terminal import TerminalRenderer

    renderer = TerminalRenderer(err, live=live)
    failed_loops: list[dict[str, Any]] = []
    async with AgentHarness("noetic", agent_graph=flow, model=model or ScriptedModel.echo(), plugins=pm) as h:
        if model is not None:
            h.resolve_model(model)  # an unknown provider fails here, before the turn starts
        await h.execute(input)
        try:
            async for event in h.get_full_stream():
                if event.type.endswith(":loop_stopped") and event.data.get("failed"):
                    failed_loops.append(event.data)
                renderer.handle(event)
        finally:
            renderer.close()
        response = await h.get_agent_response()
    return response.output, failed_loops
