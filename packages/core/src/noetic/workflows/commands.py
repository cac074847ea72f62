"""What `noetic schema`, `noetic validate` and `noetic run` do (`noetic.cli` parses and calls).

- `print_schema` writes the published JSON Schema.
- `validate_document` reports every problem of a document with its JSON path: schema, limits,
  expressions, custom items (including those plugins register). Tool, layer and named-workflow
  names are not checked, since the program that runs the document supplies them.
- `run_document` runs a document on an `AgentHarness` — by default offline on
  `ScriptedModel.echo()` (model text echoes the last user message) with the in-memory
  filesystem; `model="openrouter:<id>"` uses OpenRouter when its adapter package is installed
  and `OPENROUTER_API_KEY` is set (a provider prefix no installed adapter registers is an
  error, never a silent fallback to the offline model). The turn renders live on `err` (`TerminalRenderer`) and the
  final output is printed on `out`: a string as is, anything else as JSON.

Each returns the process exit status: 0 success, 1 the run failed, 2 the document is invalid.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

import anyio

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.workflows.problems import Problem

__all__ = ["parse_input", "print_schema", "run_document", "validate_document"]


def print_schema(out: TextIO) -> int:
    """Write the published JSON Schema of workflow documents."""
    from noetic.workflows.schema import SCHEMA_PATH

    out.write(SCHEMA_PATH.read_text(encoding="utf-8"))
    return 0


def _report(path: str, problems: list[Problem], err: TextIO) -> int:
    for problem in problems:
        err.write(f"{path}: {problem}\n")
    err.write(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
    return 2


def validate_document(path: str | os.PathLike[str], out: TextIO, err: TextIO) -> int:
    """Check the document at `path` and report every problem with its JSON path."""
    from noetic.plugins import make_plugin_manager
    from noetic.workflows.hydrate import Bindings, Hydrator
    from noetic.workflows.load import parse_document

    shown = os.fspath(path)
    doc, problems = parse_document(path)
    if doc is None:
        return _report(shown, problems, err)
    registered = make_plugin_manager().registries.custom_items
    hydrator = Hydrator(Bindings(), bind=False, registered_items=registered)
    hydrator.document(doc)
    if hydrator.problems:
        return _report(shown, hydrator.problems, err)
    out.write(f"{shown}: valid workflow document ({hydrator.nodes} nodes)\n")
    return 0


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
    from noetic.workflows.workflow import workflow

    shown = os.fspath(path)
    try:
        flow = workflow("run", path)
    except NoeticConfigError as exc:
        problems: list[Problem] = exc.details.get("problems") or [Problem("$", exc.code, exc.message)]
        return _report(shown, problems, err)
    try:
        output = anyio.run(_run, flow, input, model, err, live)
    except NoeticError as exc:
        err.write(f"error: {exc}\n")
        return 1
    out.write(_format_output(output) + "\n")
    return 0


async def _run(flow: Any, input: Any, model: str | None, err: TextIO, live: bool | None) -> Any:
    from noetic.harness import AgentHarness
    from noetic.testing import ScriptedModel
    from noetic.workflows.terminal import TerminalRenderer

    renderer = TerminalRenderer(err, live=live)
    async with AgentHarness("noetic", agent_graph=flow, model=model or ScriptedModel.echo()) as h:
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
