"""Durable steps side by side: what a checkpointed step costs over a bare one, against the
physical floor of one SQLite commit, at 10 / 1,000 / 10,000 items of history (issue 17, target 1).

    scripts/bootstrap.sh python bench/durable_steps.py [--repeats 5] [--out bench/results/durable_steps.md]

For each history size a thread is first filled with that many items (not timed). A turn is then
`nt.loop` over one step that appends one small assistant message; it runs with `few` and with
`many` iterations, and the per-step cost is the difference divided by the difference in steps,
so the turn's fixed costs (the start record, written once per turn with the history in it, and
the loop's closing entry) cancel out. The same is measured without storage; the storage's cost
per step is the difference. The floor is a bare `sqlite3` loop in the same run, on the same
disk, committing one row of the size of a ledger entry per `BEGIN IMMEDIATE … COMMIT` with the
same `journal_mode=WAL` and `synchronous` setting. Each number is the median of `--repeats`
runs; the report gives the ratios the targets are stated in and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
from noetic.items import assistant_message, user_message

HISTORIES = (10, 1_000, 10_000)
FEW, MANY = 5, 45
#: (label, harness durability, SQLite synchronous)
SETTINGS = (("step, synchronous=full", "step", "full"), ("step, synchronous=normal", "step", "normal"))
#: About the size of one step's ledger entry (head, one item, output).
ROW = "x" * 700


def _graph(steps: int) -> nt.Step:
    def work(_: Any, ctx: nt.Context) -> str:
        ctx.item_log.append(assistant_message("a short note from one step of a long agent loop"))
        return "ok"

    return nt.loop("agent", [nt.run_code("step", work)], until=nt.until.max_steps(steps))


def _seed(size: int) -> list[Any]:
    items: list[Any] = []
    for i in range(size // 2):
        items += [user_message(f"question {i}: " + "q" * 60), assistant_message(f"answer {i}: " + "a" * 60)]
    return items


async def _turn_seconds(storage: str | None, durability: str, history: int, steps: int) -> float:
    """The time of one turn of `steps` steps on a thread holding `history` items."""
    async with nt.AgentHarness("bench", agent_graph=_graph(steps), storage=storage, durability=durability) as h:
        await h.run(_seed(history), thread_id="t")  # fills the thread; not timed
        started = time.perf_counter()
        await h.run("go", thread_id="t")
        return time.perf_counter() - started


async def _per_step(storage: str | None, durability: str, history: int) -> float:
    few = await _turn_seconds(storage, durability, history, FEW)
    many = await _turn_seconds(storage, durability, history, MANY)
    return (many - few) / (MANY - FEW)


def _bare_commit(path: Path, synchronous: str, commits: int = 40) -> float:
    """Seconds per commit of one ledger-sized row, written the way the store writes it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    started = time.perf_counter()
    for i in range(commits):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO rows (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (f"k{i:08d}", ROW),
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed / commits


async def measure(repeats: int) -> dict[str, Any]:
    """Medians of every configuration, interleaved so that load changes hit them alike."""
    samples: dict[tuple[str, int], list[float]] = {}
    floors: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("NOETIC_BENCH_DIR")) as tmp:
        for r in range(repeats):
            for label, durability, synchronous in SETTINGS:
                floor_db = Path(tmp, f"floor-{r}-{synchronous}.db")
                floors.setdefault(synchronous, []).append(_bare_commit(floor_db, synchronous))
                for history in HISTORIES:
                    url = f"sqlite:///{tmp}/run-{r}-{synchronous}-{history}.db?synchronous={synchronous}"
                    durable = await _per_step(url, durability, history)
                    bare = await _per_step(None, "step", history)
                    samples.setdefault((label, history), []).append(durable - bare)
                    samples.setdefault(("bare", history), []).append(bare)
    return {
        "per_step": {key: statistics.median(v) for key, v in samples.items()},
        "floor": {key: statistics.median(v) for key, v in floors.items()},
        "load": os.getloadavg(),
        "repeats": repeats,
    }


def report(result: dict[str, Any]) -> str:
    """The markdown report: µs per step, flatness and the ratio to the floor."""
    per, floor = result["per_step"], result["floor"]
    one, five, fifteen = result["load"]
    lines = [
        "# Durable steps: the cost of a checkpointed step (issue 17, target 1)",
        "",
        f"Medians of {result['repeats']} interleaved runs; load average {one:.1f} / {five:.1f} / "
        f"{fifteen:.1f} on {os.cpu_count()} cores (a shared machine: absolute numbers move, the "
        "ratios of one run are what to compare).",
        "",
        "| setting | " + " | ".join(f"{h:,} items" for h in HISTORIES) + " | largest ÷ smallest | floor | ÷ floor |",
        "|---|" + "---:|" * (len(HISTORIES) + 3),
    ]
    bare = [per[("bare", h)] * 1e6 for h in HISTORIES]
    lines.append(
        "| bare step (no storage) | " + " | ".join(f"{v:.0f} µs" for v in bare) + f" | {max(bare) / min(bare):.2f}× | | |"
    )
    for label, _, synchronous in SETTINGS:
        costs = [per[(label, h)] * 1e6 for h in HISTORIES]
        commit = floor[synchronous] * 1e6
        worst = max(costs) / commit
        lines.append(
            f"| storage cost per step, {label} | "
            + " | ".join(f"{v:.0f} µs" for v in costs)
            + f" | {max(costs) / min(costs):.2f}× | {commit:.0f} µs | {worst:.2f}× |"
        )
    lines += [
        "",
        "`storage cost per step` is a step with `storage='sqlite:///…'` minus the same step without "
        "storage; `floor` is one bare SQLite commit of a ledger-sized row with the same `synchronous` "
        "setting; `÷ floor` is the largest storage cost per step over it (targets: largest ÷ smallest "
        "≤ 1.2×, ÷ floor ≤ 1.5×).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    text = report(anyio.run(measure, args.repeats))
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
