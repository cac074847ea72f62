"""What the inspector's step trace (IN-1) costs a checkpointed run, side by side.

    scripts/bootstrap.sh python bench/inspector_trace.py [--steps 300] [--repeats 5]

A turn is `nt.loop` over one `call_model` step (ScriptedModel, one round each) on a SQLite store
with `synchronous=normal` (so the disk flush, the same either way, does not drown the
difference). It runs with the trace rows written (as shipped) and with them switched off (the
ledger's `_trace` patched to write nothing), alternating, and reports the median time per step
of each, their ratio, and the bytes the trace adds per step. Numbers depend on the machine;
the ratio is what to read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
from noetic.durable import SqliteCheckpointStore
from noetic.durable.ledger import StepLedger
from noetic.testing import ScriptedModel, text_reply

_ORIGINAL = StepLedger._trace


def _no_trace(*args: Any, **kwargs: Any) -> None:
    return None


async def _run(steps: int, traced: bool, folder: Path, n: int) -> tuple[float, int, int]:
    StepLedger._trace = _ORIGINAL if traced else _no_trace  # type: ignore[method-assign]
    path = folder / f"run-{n}.db"
    model = ScriptedModel(
        default=lambda request: text_reply("ok", usage={"input_tokens": 5, "output_tokens": 1})
    )
    graph = nt.loop("l", nt.call_model("m"), until=nt.until.max_steps(steps))
    async with nt.AgentHarness(
        "b", agent_graph=graph, model=model, storage=f"sqlite:///{path}?synchronous=normal"
    ) as h:
        started = time.perf_counter()
        await h.run("go", execution_id="e")
        elapsed = time.perf_counter() - started
    store = SqliteCheckpointStore(str(path))
    try:
        keys = await store.list_prefix("execution:e:trace:")
        rows = await store.get_many(keys)
    finally:
        await store.aclose()
    return elapsed / steps, sum(len(v) for v in rows.values()), len(rows)


def main() -> None:
    """Run both settings alternately and print the comparison."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    per_step: dict[bool, list[float]] = {True: [], False: []}
    trace_bytes = trace_rows = 0
    with tempfile.TemporaryDirectory() as folder:
        n = 0
        for _ in range(args.repeats):
            for traced in (False, True):
                n += 1
                seconds, size, count = anyio.run(_run, args.steps, traced, Path(folder), n)
                per_step[traced].append(seconds)
                if traced:
                    trace_bytes, trace_rows = size, count
    StepLedger._trace = _ORIGINAL  # type: ignore[method-assign]
    off, on = statistics.median(per_step[False]), statistics.median(per_step[True])
    print(
        f"steps per run: {args.steps} loop iterations; repeats: {args.repeats}; load {os.getloadavg()[0]:.2f}"
    )
    print(f"per iteration without trace: {off * 1e6:.0f} us")
    print(f"per iteration with trace:    {on * 1e6:.0f} us")
    print(f"ratio with/without:          {on / off:.3f}")
    print(
        f"trace rows: {trace_rows}, {trace_bytes / max(1, trace_rows):.0f} bytes each ({trace_bytes} in all)"
    )


if __name__ == "__main__":
    main()
