"""Where S1's cost goes, in instructions: stub one part of noetic out and count what disappears.

    python bench/ablation.py [PART ...]         # needs valgrind; default: every part

The machine the benchmarks run on is shared, so wall and CPU times of small parts drown in
noise. Instruction counts from valgrind's cachegrind are deterministic (±0.01 %) and do not
depend on load. For each part this runs the S1 round trip 20 and 220 times under cachegrind,
with that part stubbed out, and reports instructions per round trip (two model rounds); the
difference to `base` is what the part costs. A stubbed run is not a correct run: it only
measures. Every run but `gc`'s has the cyclic garbage collector off: where its collections
fall moves with every allocation, which would scatter a part's saving by tens of thousands of
instructions. Parts:

- `gc`: the cyclic garbage collector (the one part that adds: collector on);
- `emit`: framework events (`Execution.emit`; payloads are still built);
- `abortable`: `ctx.abortable()` cancel scopes;
- `fake`: the fake model's own work (prebuilt responses instead);
- `user_message`: building the user message item;
- `add_usage`: summing `RoundUsage` per round;
- `encode`: JSON-encoding the tool result;
- `validate`: validating the tool arguments;
- `accounting`: accepting each round's usage and cost (`noetic.accounting.accept_round`);
- `tracing`: the tracing checks when nothing records (the caller's OpenTelemetry context per
  input, the tracer lookup per execution);
- `step_boundary`: the cancellation point at every step start;
- `subscribe_yields`: the yields at the start of `run()` / `execute()` that let a just-started
  watcher subscribe first;
- `durable`: attaching durability to a turn (`_make_durable`; nothing without `storage=`);
- `layers_root`: starting and finishing the root's layer lifecycle (no layers configured).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from cachegrind import instructions  # noqa: E402  (bench/ is on the path only now)

Undo = list[Callable[[], None]]


def _patch(owner: Any, name: str, value: Any, undo: Undo) -> None:
    if not hasattr(owner, name):
        raise SystemExit(f"{owner!r} has no {name!r} any more: this part cannot be stubbed on this tree")
    old = getattr(owner, name)
    setattr(owner, name, value)
    undo.append(lambda: setattr(owner, name, old))


class _NoScope:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def _stub(part: str, undo: Undo) -> None:
    import noetic.execution_context as ec
    import noetic.runtime as rt
    import noetic.steps.model_call as mc
    import noetic.tools as tl
    from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem, OutputText, user_message
    from noetic.model import ModelResponse
    from noetic.schema import Schema
    from noetic.usage import RoundUsage
    from subjects import noetic_subject as subject

    if part == "emit":
        _patch(rt.Execution, "emit", lambda self, event, data: None, undo)
    elif part == "gc":
        import gc

        gc.enable()
    elif part == "abortable":
        scope = _NoScope()
        _patch(ec.Context, "abortable", lambda self: scope, undo)
    elif part == "fake":
        usage = RoundUsage(input_tokens=12, output_tokens=6)
        call = FunctionCallItem(call_id="call_1", name="add", arguments='{"a": 1, "b": 2}')
        text = MessageItem(role="assistant", content=[OutputText(text="The answer is 3.")])
        first = ModelResponse(items=(call,), usage=usage, model_id="bench-fake")
        last = ModelResponse(items=(text,), usage=usage, model_id="bench-fake")

        async def stream(self: Any, request: Any, *, cancel: Any) -> Any:
            yield last if type(request.items[-1]) is FunctionCallOutputItem else first

        _patch(subject.FakeModel, "stream", stream, undo)
    elif part == "user_message":
        message = user_message("What is 1 + 2?")
        _patch(mc, "user_message", lambda text: message, undo)
    elif part == "add_usage":
        _patch(mc, "_add_usage", lambda a, b: b, undo)
    elif part == "encode":
        _patch(tl, "encode_output", lambda value: "3", undo)
    elif part == "validate":
        args = subject.AddArgs(a=1, b=2)
        _patch(Schema, "validate_json", lambda self, text: args, undo)
    elif part == "accounting":
        from decimal import Decimal

        zero = Decimal(0)
        _patch(mc, "accept_round", lambda response, model_id: (response.usage, zero, zero), undo)
    elif part == "tracing":
        from noetic.tracing import Tracing

        _patch(Tracing, "caller_context", lambda self: None, undo)
        _patch(Tracing, "tracer", lambda self: None, undo)
    elif part == "step_boundary":
        import noetic.steps.base as sb

        async def no_boundary() -> None:
            return None

        _patch(sb, "step_boundary", no_boundary, undo)
    elif part == "subscribe_yields":
        import noetic.harness as hs

        async def no_yields(yields: int) -> None:
            return None

        _patch(hs, "_let_started_tasks_subscribe", no_yields, undo)
    elif part == "durable":
        import noetic.harness as hs

        async def not_durable(*args: Any) -> None:
            return None

        _patch(hs.AgentHarness, "_make_durable", not_durable, undo)
    elif part == "layers_root":
        from noetic.layers.runtime import LayerRuntime

        async def nothing(*args: Any) -> None:
            return None

        _patch(LayerRuntime, "start_root", nothing, undo)
        _patch(LayerRuntime, "finish_root", nothing, undo)
    elif part != "base":
        raise SystemExit(f"unknown part {part!r}")


PARTS = (
    "base",
    "gc",
    "emit",
    "abortable",
    "fake",
    "user_message",
    "add_usage",
    "encode",
    "validate",
    "accounting",
    "tracing",
    "step_boundary",
    "subscribe_yields",
    "durable",
    "layers_root",
)


async def _round_trips(part: str, runs: int) -> None:
    import gc

    from subjects import noetic_subject as subject

    gc.disable()
    _stub(part, [])
    async with subject.session() as run_once:
        for i in range(runs):
            await run_once(i)


def _instructions(part: str, runs: int) -> int:
    return instructions(__file__, "--inner", part, str(runs))


def main(parts: list[str]) -> None:
    base = None
    for part in ["base", *[p for p in parts if p != "base"]]:
        per_run = (_instructions(part, 220) - _instructions(part, 20)) // 200
        base = per_run if base is None else base
        cost = per_run - base if part == "gc" else base - per_run
        saved = "" if part == "base" else f"  (the part costs {cost:,})"
        print(f"{part:<13} {per_run:>10,} instructions per round trip{saved}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        asyncio.run(_round_trips(sys.argv[2], int(sys.argv[3])))
    else:
        main(sys.argv[1:] or list(PARTS[1:]))
