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
process exit status: 0 success, 1 the run failed, 2 the document is invalid.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from noetic.errors import NoeticError
from noetic.schema import to_jsonable
from noetic.workflows.problems import Problem

if TYPE_CHECKING:
    from noetic.plugins import NoeticPluginManager
    from noetic.steps.base import Step
    from noetic.workflows.workflow import WorkflowStep

__all__ = [
    "CLI_HINTS",
    "load_for_cli",
    "use_harness_model",
    "parse_input",
    "print_schema",
    "run_document",
    "validate_document",
]


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
    from noetic.console import safe_text  # problems quote the document: shown, never obeyed

    for problem in problems:
        err.write(f"{safe_text(path)}: {safe_text(problem)}\n")
    err.write(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
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
    out.write(f"{shown}: valid workflow document ({nodes} nodes)\n")
    return 0


def _walk(step: Step) -> Iterator[Step]:
    """`step` and every step below it."""
    yield step
    for child in step.children():
        yield from _walk(child)


def parse_input(text: str | None) -> Any:
    """The turn input of `--input`: JSON when it parses, else the text itself ("" when absent)."""
    if text is None:
        return ""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _format_output(value: Any) -> str:
    value = to_jsonable(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


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
        output = anyio.run(_run, flow, pm, input, model, err, live)
    except NoeticError as exc:
        _print_error(exc, err)
        return 1
    text = _format_output(output)
    if out.isatty():  # model text on a terminal must not drive it; a pipe gets the exact output
        from noetic.console import safe_text

        text = safe_text(text)
    out.write(text + "\n")
    return 0


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
    from noetic.console import safe_text  # the message may quote a provider or a model

    where = exc.details.get("node_path")
    err.write(f"error{f' at {where}' if where else ''}: [{exc.code}] {safe_text(exc.message)}\n")
    hint = _hint(exc.code, getattr(exc, "hint", None))
    if hint:
        err.write(f"hint: {hint}\n")


async def _run(
    flow: WorkflowStep, pm: NoeticPluginManager, input: Any, model: str | None, err: TextIO, live: bool | None
) -> Any:
    from noetic.harness import AgentHarness
    from noetic.testing import ScriptedModel
    from noetic.workflows.terminal import TerminalRenderer

    renderer = TerminalRenderer(err, live=live)
    async with AgentHarness("noetic", agent_graph=flow, model=model or ScriptedModel.echo(), plugins=pm) as h:
        if model is not None:
            h.resolve_model(model)  # an unknown provider fails here, before the turn starts
        await h.execute(input)
        try:
            async for event in h.get_full_stream():
                renderer.handle(event)
        finally:
            renderer.close()
        response = await h.get_agent_response()
    return response.output
