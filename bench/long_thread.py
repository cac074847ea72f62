"""One long thread side by side, with and without storage: do a thread's last turns cost what
its first ones did? (issue 17: "on one thread of 400 turns the last turns cost 4.7× the first
with storage").

    scripts/bootstrap.sh python bench/long_thread.py [--turns 400] [--repeats 3]

Three harnesses run the same thread turn by turn, interleaved (turn k without storage, then
with `storage="sqlite:///…"` at its default `synchronous=full`, then with `synchronous=normal`,
which leaves out the disk flush that dominates a turn on a busy disk), so that load changes on
the shared machine hit all alike. Each turn is one model round (a `ScriptedModel` reply) on a
history that grows by two items per turn. The report gives, for each, the median turn time of
the last `WINDOW` turns divided by that of the first `WINDOW` turns (1.0: a turn costs the same
however long the thread), the median of `--repeats` runs, and the store's size at the end.
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
from noetic.testing import ScriptedModel, text_reply

#: Turns at each end of the thread whose median is compared.
WINDOW = 40
#: What runs side by side, and how the report names it.
SUBJECTS = {
    "bare": "no storage",
    "full": "storage='sqlite:///…'",
    "normal": "storage='sqlite:///…?synchronous=normal'",
}
QUESTION = "a question of a long conversation, " + "q" * 160


def _harness(storage: str | None) -> nt.AgentHarness[Any]:
    model = ScriptedModel(default=lambda request: text_reply("an answer of about the same size " + "a" * 160))
    return nt.AgentHarness("bench", agent_graph=nt.call_model("m"), model=model, storage=storage)


async def one_run(turns: int, tmp: Path) -> dict[str, Any]:
    """Turn times of one thread of `turns` turns, bare and durable, interleaved."""
    db = tmp / f"thread-{time.monotonic_ns()}.db"
    times: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    async with (
        _harness(None) as bare,
        _harness(f"sqlite:///{db}") as full,
        _harness(f"sqlite:///{db}-normal?synchronous=normal") as normal,
    ):
        for k in range(turns):
            for name, h in (("bare", bare), ("full", full), ("normal", normal)):
                started = time.perf_counter()
                await h.run(f"{k}: {QUESTION}", thread_id="long")
                times[name].append(time.perf_counter() - started)
    size = await anyio.to_thread.run_sync(_bytes, tmp, db.name)
    return {
        name: statistics.median(values[-WINDOW:]) / statistics.median(values[:WINDOW])
        for name, values in times.items()
    } | {
        "first_ms": {name: statistics.median(values[:WINDOW]) * 1e3 for name, values in times.items()},
        "bytes": size,
    }


def _bytes(folder: Path, name: str) -> int:
    """The size of the SQLite file `name` in `folder` with its WAL and shared-memory files."""
    files = (folder / name, folder / f"{name}-wal", folder / f"{name}-shm")
    return sum(path.stat().st_size for path in files if path.exists())


async def measure(turns: int, repeats: int) -> dict[str, Any]:
    """The medians over `repeats` runs."""
    runs = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("NOETIC_BENCH_DIR")) as tmp:
        for _ in range(repeats):
            runs.append(await one_run(turns, Path(tmp)))
    return {
        "ratio": {name: statistics.median(run[name] for run in runs) for name in SUBJECTS},
        "first_ms": {name: statistics.median(run["first_ms"][name] for run in runs) for name in SUBJECTS},
        "bytes": statistics.median(run["bytes"] for run in runs),
        "load": os.getloadavg(),
    }


def report(result: dict[str, Any], turns: int, repeats: int) -> str:
    """The markdown table."""
    one, five, fifteen = result["load"]
    lines = [
        f"# One thread of {turns} turns, with and without storage",
        "",
        f"Medians of {repeats} interleaved runs; load average {one:.1f} / {five:.1f} / {fifteen:.1f}.",
        "",
        f"| | first {WINDOW} turns (ms per turn) | last {WINDOW} ÷ first {WINDOW} |",
        "|---|---:|---:|",
    ]
    for name, label in SUBJECTS.items():
        lines.append(f"| {label} | {result['first_ms'][name]:.2f} | {result['ratio'][name]:.2f}× |")
    lines += [
        "",
        f"The SQLite file (synchronous=full) after {turns} turns: {result['bytes'] / 1e6:.1f} MB.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(report(anyio.run(measure, args.turns, args.repeats), args.turns, args.repeats))


if __name__ == "__main__":
    main()
