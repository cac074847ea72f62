"""A durable step and a durable round trip in instructions, counted by cachegrind (issue 17, target 1).

    python bench/durable_instructions.py [step] [s5]   # needs valgrind; default: both

Wall times of a durable step are mostly the disk's flush, which moves with the load of a
shared machine; the Python around it does not, and cachegrind counts it deterministically. The
SQLite files are on tmpfs (`/dev/shm`), where `fdatasync` returns at once, so what is counted is
the step's own work and SQLite's, never a wait. With `synchronous=full`, as the bench times it.

- `step`: `durable_steps.py`'s turn (one `run_code` step appending one assistant message, in
  a loop) on a thread of 1,000 items, 250 steps minus 50: instructions per step, with SQLite,
  with a `MemoryCheckpointStore` (the bookkeeping without SQLite) and without storage.
- `s5`: S5's durable round trip (`subjects/durable_noetic.py`, a fresh thread each), 60 runs
  minus 10: instructions per round trip; `limit` is the hand-written loop's.

Under valgrind a run is ~50× slower, so the 2 ms step boundary yields at nearly every step:
the counts hold event-loop work a timed step does not do. The cyclic garbage collector is off.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from cachegrind import instructions  # noqa: E402  (bench/ is on the path only now)

HISTORY = 1_000
STEPS = (50, 250)
RUNS = (10, 60)


async def _steps(storage: str, steps: int) -> None:
    import noetic as nt
    from durable_steps import _graph, _seed
    from noetic.durable import MemoryCheckpointStore, SqliteCheckpointStore

    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        store: Any = {
            "sqlite": lambda: SqliteCheckpointStore(f"{tmp}/steps.db"),
            "memory": MemoryCheckpointStore,
            "none": lambda: None,
        }[storage]()
        graph = _graph(steps, [])
        async with nt.AgentHarness("bench", agent_graph=graph, storage=store) as h:
            await h.run(_seed(HISTORY), thread_id="t")
            await h.run("go", thread_id="t")
        if store is not None:
            await store.aclose()


async def _round_trips(subject: str, runs: int) -> None:
    import importlib

    module = importlib.import_module(f"subjects.durable_{subject}")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        async with module.durable_session(Path(tmp, "s5.db"), "full") as run_once:
            for i in range(runs):
                await run_once(i)


def _per_unit(kind: str, variant: str) -> int:
    fewer, more = STEPS if kind == "step" else RUNS
    counts = [instructions(__file__, "--inner", kind, variant, str(n)) for n in (fewer, more)]
    return (counts[1] - counts[0]) // (more - fewer)


def main(kinds: list[str]) -> None:
    for kind in kinds:
        variants = ("sqlite", "memory", "none") if kind == "step" else ("noetic", "limit")
        unit = "step" if kind == "step" else "round trip"
        for variant in variants:
            print(f"{kind} {variant:<7} {_per_unit(kind, variant):>10,} instructions per {unit}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        gc.disable()  # where its collections fall moves with every allocation (see ablation.py)
        kind, variant, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
        asyncio.run(_steps(variant, count) if kind == "step" else _round_trips(variant, count))
    else:
        main(sys.argv[1:] or ["step", "s5"])
