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

Each returns the process exit status: 0 success, 1 the run failed (or a loop stopped because its
`until` predicate failed, which is warned about), 2 the document or the input is invalid.
Everything written is passed through `terminal_safe`, since documents, inputs and model text
are untrusted.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

import anyio

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import to_jsonable
from noetic.terminal_safe import terminal_safe
from noetic.workflows.problems import Problem

__all__ = ["MAX_INPUT_DEPTH", "parse_input", "print_schema", "run_document", "validate_document"]

#: How deeply `--input` JSON may nest.
MAX_INPUT_DEPTH = 256


def print_schema(out: TextIO) -> int:
    """Write the published JSON Schema of workflow documents."""
    from noetic.workflows.schema import SCHEMA_PATH

    out.write(SCHEMA_PATH.read_text(encoding="utf-8"))
    return 0


def _report(path: str, problems: list[Problem], err: TextIO) -> int:
    shown = terminal_safe(path, multiline=False)
    for problem in problems:
        err.write(f"{shown}: {terminal_safe(str(problem), multiline=False)}\n")
    err.write(f"{shown}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
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
    out.write(f"{terminal_safe(shown, multiline=False)}: valid workflow document ({hydrator.nodes} nodes)\n")
    return 0


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
    from noetic.workflows.workflow import workflow

    shown = os.fspath(path)
    try:
        flow = workflow("run", path)
    except NoeticConfigError as exc:
        problems: list[Problem] = exc.details.get("problems") or [Problem("$", exc.code, exc.message)]
        return _report(shown, problems, err)
    try:
        output, failed_loops = anyio.run(_run, flow, input, model, err, live)
    except NoeticError as exc:
        err.write(f"error: {terminal_safe(str(exc), multiline=False)}\n")
        return 1
    out.write(_format_output(output) + "\n")
    for stopped in failed_loops:
        reason = terminal_safe(str(stopped.get("reason")), multiline=False)
        err.write(
            f"warning: loop {stopped.get('step_id')!r} stopped because its until predicate failed: {reason}\n"
        )
    return 1 if failed_loops else 0


def _check_provider(model: str, installed: list[str]) -> None:
    """Refuse `provider:model` when no adapter registers `provider` (instead of falling back)."""
    provider, colon, _ = model.partition(":")
    if colon and "/" not in provider and provider not in installed:
        raise NoeticConfigError(
            "UNKNOWN_MODEL_ADAPTER",
            f"no model adapter is installed for {provider!r} (installed: {', '.join(installed)})",
            hint=f"Install the adapter package, e.g. `pip install noetic-adapters-{provider}`, or run offline "
            "without --model.",
        )


async def _run(
    flow: Any, input: Any, model: str | None, err: TextIO, live: bool | None
) -> tuple[Any, list[dict[str, Any]]]:
    """Run the turn, rendering it; returns its output and the loops whose predicate failed."""
    from noetic.harness import AgentHarness
    from noetic.testing import ScriptedModel
    from noetic.workflows.terminal import TerminalRenderer

    renderer = TerminalRenderer(err, live=live)
    failed_loops: list[dict[str, Any]] = []
    async with AgentHarness("noetic", agent_graph=flow, model=model or ScriptedModel.echo()) as h:
        if model is not None:
            _check_provider(model, h.plugin_manager.registries.model_adapters.names())
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
