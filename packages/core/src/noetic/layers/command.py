"""What `noetic context` does (`noetic.cli` parses and calls `context_command`).

Two ways to get a `LastLayerUsage` to show:

- run something for one turn and show its last model call: `TARGET` is a workflow document
  (a path) or `package.module:attr` naming a step, an `AgentHarness`, or a function returning
  one. Layers come from `--layers` (registered names, comma separated) unless the target is a
  harness with its own; the model is `--model` (default: the offline echo model);
- read a saved snapshot with `--snapshot FILE`: the JSON `--json` prints, or any object with a
  `last_layer_usage` field (a dumped `HarnessResponse`).

The output is the table of `render_layer_usage`, or the snapshot as JSON with `--json`. Exit
status: 0 shown, 1 the run failed or made no model call, 2 bad arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from noetic.errors import NoeticError
from noetic.layers.report import render_layer_usage
from noetic.usage import LastLayerUsage

__all__ = ["context_command", "load_snapshot"]


def load_snapshot(path: str | os.PathLike[str]) -> LastLayerUsage:
    """A `LastLayerUsage` saved as JSON (bare, or under `last_layer_usage`)."""
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if isinstance(data, dict) and "last_layer_usage" in data:
        data = data["last_layer_usage"]
    return LastLayerUsage.model_validate(data)


def _target(spec: str) -> Any:
    """The step or harness `spec` names: a document path or `module:attr`."""
    import noetic as nt
    from noetic.registry import import_target

    if os.path.exists(spec):
        return nt.workflow("context", spec)
    value = import_target(spec)
    if callable(value) and not isinstance(value, nt.Step | nt.AgentHarness):
        value = value()
    if not isinstance(value, nt.Step | nt.AgentHarness):
        raise TypeError(f"{spec} is a {type(value).__name__}, not a step or an AgentHarness")
    return value


async def _run(target: Any, input: Any, model: str | None, layers: Sequence[str], thread: str | None) -> Any:
    import noetic as nt
    from noetic.testing.scripted import ScriptedModel

    if isinstance(target, nt.AgentHarness):
        harness = target
    else:
        harness = nt.AgentHarness(
            "context", agent_graph=target, model=model or ScriptedModel.echo(), layers=layers
        )
    async with harness:
        response = await harness.run(input, thread_id=thread)
    return response.last_layer_usage


def context_command(
    *,
    target: str | None,
    snapshot: str | None,
    input: Any = "",
    model: str | None = None,
    layers: Sequence[str] = (),
    thread: str | None = None,
    as_json: bool = False,
    out: TextIO,
    err: TextIO,
) -> int:
    """Show the layer usage of a run or a saved snapshot; returns the exit status."""
    if (target is None) == (snapshot is None):
        err.write("noetic context: give either a TARGET to run or --snapshot FILE\n")
        return 2
    try:
        if snapshot is not None:
            usage: LastLayerUsage | None = load_snapshot(snapshot)
        else:
            assert target is not None
            usage = anyio.run(_run, _target(target), input, model, layers, thread)
    except (OSError, ValueError, TypeError) as exc:  # a bad path, snapshot or target
        err.write(f"noetic context: {exc}\n")
        return 2
    except NoeticError as exc:
        err.write(f"noetic context: the run failed: {exc}\n")
        return 1
    if usage is None:
        err.write("noetic context: no model call ran, so there is no layer usage to show\n")
        return 1
    if as_json:
        out.write(json.dumps(usage.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render_layer_usage(usage) + "\n")
    return 0
