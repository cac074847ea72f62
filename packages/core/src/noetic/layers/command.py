"""What `noetic context` does (`noetic.cli` parses and calls `context_command`).

Two ways to get a `LastLayerUsage` to show:

- run something for one turn and show its last model call: `TARGET` is a workflow document
  (a path) or `package.module:attr` naming a step, an `AgentHarness`, or a function returning
  one; modules are looked up in the current directory first, as `python -m` does. Layers come
  from `--layers` (registered names, comma separated), added to a harness target's own. The
  model is `--model` — for a harness target too, replacing its model and the models its steps
  name — and defaults to the offline echo model for a step or document, whose model steps
  all use it (a harness target keeps its own models unless `--model` is given);
- read a saved snapshot with `--snapshot FILE`: the JSON `--json` prints, or any object with a
  `last_layer_usage` field (a dumped `HarnessResponse`).

The output is a table that fits the terminal (`noetic.console`; every active layer has a row,
also one that showed the model nothing on that call), or the snapshot as JSON with `--json`.
Exit status: 0 shown, 1 the run failed or made no model call, 2 bad arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, TextIO

import anyio
from pydantic import ValidationError

from noetic.errors import NoeticConfigError, NoeticError
from noetic.layers.layer_set import LayerSet
from noetic.terminal_safe import terminal_safe
from noetic.usage import LastLayerUsage
from noetic.workflows.commands import CLI_HINTS

__all__ = ["context_command", "load_snapshot"]

#: Command-line advice for a failed run that differs from `noetic run`'s.
_CONTEXT_HINTS = {
    "MISSING_API_KEY": "Set OPENROUTER_API_KEY in the environment, or pass --model scripted:echo to run offline.",
    "UNKNOWN_MODEL_ADAPTER": "Pass --model with an installed provider prefix (`noetic plugins` lists them), "
    "or --model scripted:echo to run offline.",
}


#: A snapshot file larger than this is refused unread: a real one is a few kilobytes.
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024


def load_snapshot(path: str | os.PathLike[str]) -> LastLayerUsage:
    """A `LastLayerUsage` saved as JSON (bare, or under `last_layer_usage`).

    Raises `INVALID_SNAPSHOT` naming the file for anything else: a missing or unreadable file,
    one over `MAX_SNAPSHOT_BYTES`, text that is not JSON, JSON of another shape.
    """
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_SNAPSHOT_BYTES + 1)
    except OSError as exc:
        raise _invalid_snapshot(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise _invalid_snapshot(path, f"is larger than {MAX_SNAPSHOT_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise _invalid_snapshot(path, f"is not JSON ({str(exc)[:200]})") from None
    if isinstance(data, dict) and "last_layer_usage" in data:
        data = data["last_layer_usage"]
    try:
        return LastLayerUsage.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem.get("loc", ())) or "the top level"
        raise _invalid_snapshot(
            path, f"is not a layer-usage snapshot ({where}: {problem.get('msg', '')})"
        ) from None


def _invalid_snapshot(path: str | os.PathLike[str], problem: str) -> NoeticConfigError:
    return NoeticConfigError(
        "INVALID_SNAPSHOT",
        f"snapshot file {os.fspath(path)!r} {problem}",
        hint="Pass a file saved from `noetic context --json` or a dumped HarnessResponse.",
    )


def _target(spec: str) -> Any:
    """The step or harness `spec` names: a document path or `module:attr`."""
    import sys

    import noetic as nt
    from noetic.registry import import_target

    if os.path.exists(spec):
        return nt.workflow("context", spec)
    if ":" not in spec:
        raise ValueError(f"{spec!r} is neither a file nor a module:attr target")
    here = os.getcwd()
    if here not in sys.path:  # a console script does not put the current directory on the path
        sys.path.insert(0, here)
    try:
        value = import_target(spec)
    except NoeticConfigError as exc:
        raise ValueError(
            f"cannot import {spec!r} from the current directory or the environment: {exc.__cause__ or exc.message}"
        ) from None
    if callable(value) and not isinstance(value, nt.Step | nt.AgentHarness):
        value = value()
    if not isinstance(value, nt.Step | nt.AgentHarness):
        raise TypeError(f"{spec} is a {type(value).__name__}, not a step or an AgentHarness")
    return value


def _layer_names(harness: Any) -> list[str]:
    """The ids of the harness's layers, for the rows of layers that showed nothing."""
    return [s if isinstance(s, str) else str(getattr(s, "id", s)) for s in harness.layer_set.specs]


async def _run(
    target: Any, input: Any, model: str | None, layers: Sequence[str], thread: str | None
) -> tuple[LastLayerUsage | None, list[str]]:
    import noetic as nt
    from noetic.testing.scripted import ScriptedModel
    from noetic.workflows.commands import use_harness_model

    if isinstance(target, nt.AgentHarness):
        harness = target
        if model is not None:
            harness._model_spec = model  # the CLI owns this process: --model wins everywhere
            use_harness_model(harness.agent_graph)
        if layers:
            harness.layer_set = LayerSet([*harness.layer_set.specs, *layers])
    else:
        use_harness_model(target)  # offline unless --model, also for steps that name a model
        harness = nt.AgentHarness(
            "context", agent_graph=target, model=model or ScriptedModel.echo(), layers=layers
        )
    async with harness:
        response = await harness.run(input, thread_id=thread)
    return response.last_layer_usage, _layer_names(harness)


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
            active: list[str] = []
        else:
            assert target is not None
            usage, active = anyio.run(_run, _target(target), input, model, layers, thread)
    except (OSError, ValueError, TypeError) as exc:  # a bad path or target
        err.write(f"noetic context: {exc}\n")
        return 2
    except NoeticError as exc:
        if exc.code == "INVALID_SNAPSHOT":
            err.write(f"noetic context: {terminal_safe(str(exc), multiline=False)}\n")
            return 2
        err.write(f"noetic context: the run failed: [{exc.code}] {exc.message}\n")
        hint = _CONTEXT_HINTS.get(exc.code) or CLI_HINTS.get(exc.code)
        if hint:
            err.write(f"hint: {hint}\n")
        return 1
    if usage is None:
        err.write("noetic context: no model call ran, so there is no layer usage to show\n")
        return 1
    if as_json:
        out.write(json.dumps(usage.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    else:
        from noetic.console import console_for, layer_usage_view

        console = console_for(out)
        console.print(layer_usage_view(usage, active, console.width))
    return 0
