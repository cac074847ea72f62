"""Durable steps side by side: what a checkpointed step costs over a bare one, against the
physical floor of one SQLite commit, at 10 / 1,000 / 10,000 items of history (issue 17, target 1).

    scripts/bootstrap.sh python bench/durable_steps.py [--repeats 5] [--checkpoint-pages 100,300,1000]
        [--out bench/results/durable_steps.md]

For each history size a thread is first filled with that many items (not timed). A turn is then
`nt.loop` over one step that appends one small assistant message; each step notes the time, and
the per-step cost is the median time from one step to the next (a step's work and its
checkpoint), so the turn's fixed costs (the start record, written once per turn with the items
new since the last turn's start, and the loop's closing entry) are not in it and a stall of the shared machine does not
move it. The mean from one step to the next is given beside it: it is what a user pays, and
it alone carries the store's WAL checkpoints, which run every few dozen steps. The same is measured without storage; the storage's cost per step is the difference. The floor is a bare `sqlite3` loop in the same run, on the same
disk, committing one row of the size of a ledger entry per `BEGIN IMMEDIATE … COMMIT` with the
same `journal_mode=WAL` and `synchronous` setting. Each number is the median of `--repeats`
runs; the report gives the ratios the targets are stated in and the machine's load average.

A lone execution's `synchronous=full` commit waits for its flush on the event loop's thread;
the `inline=False` rows are the same step with every commit in a worker thread (what each
commit does while two executions run), beside the floor plus one worker-thread hop (the least
an asynchronous commit can cost). `loop lateness` is what another task on the loop sees while
the turn runs: the worst and the median delay of its 1 ms sleeps.

Two more measurements say where a step's time over the floor goes. `after a flush`: a fixed
piece of pure Python (JSON of a ledger-sized document) timed with nothing before it, right after
one bare commit, and right after a sleep as long as that commit; on a virtual machine a thread
that blocked in `fdatasync` runs its next Python slower, and a step runs all of its Python after
the previous step's flush (the floor's loop has almost none). `floor, WAL overwritten` is the
floor on a WAL that a checkpoint has restarted, so each commit overwrites frames instead of
growing the file: what a store pays once it has checkpointed (the floor uses new files, whose
WAL grows; the store checkpoints every `CHECKPOINT_PAGES` pages, so by the timed turn it
overwrites its WAL).

`checkpoint interval` compares values of the store's `CHECKPOINT_PAGES` (`--checkpoint-pages`;
by default 100, the store's own value and 1,000, SQLite's default), set on the module for one run
each: per repeat one longer turn of `INTERVAL_STEPS` steps per value on a new store, in an order
that turns around from repeat to repeat, with the median and the mean step, each mean against
the first value's mean of the same repeat, and the WAL's length at the end (a longer interval
trades fewer checkpoints for a longer WAL, and commits grow the file until it is that long).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
from noetic.durable import SqliteCheckpointStore
from noetic.durable import sqlite as sqlite_store
from noetic.items import assistant_message, user_message

HISTORIES = (10, 1_000, 10_000)
STEPS = 60
#: (label, harness durability, SQLite synchronous, the store's `inline`)
SETTINGS = (
    ("step, synchronous=full", "step", "full", True),
    ("step, synchronous=full, inline=False", "step", "full", False),
    ("step, synchronous=normal", "step", "normal", True),
)
#: The sleep of the task measuring how late the event loop serves it.
TICK = 0.001
#: The checkpoint-interval comparison: a turn of this many steps on a thread of this many items,
#: long enough that every interval compared checkpoints in it (at 1,000 pages, about every 300 steps).
INTERVAL_STEPS = 600
INTERVAL_HISTORY = 1_000
#: About the size of one step's ledger entry (head, one item, output).
ROW = "x" * 700


def _graph(steps: int, stamps: list[float]) -> nt.Step:
    def work(_: Any, ctx: nt.Context) -> str:
        stamps.append(time.perf_counter())
        ctx.item_log.append(assistant_message("a short note from one step of a long agent loop"))
        return "ok"

    return nt.loop("agent", [nt.run_code("step", work)], until=nt.until.max_steps(steps))


def _seed(size: int) -> list[Any]:
    items: list[Any] = []
    for i in range(size // 2):
        items += [user_message(f"question {i}: " + "q" * 60), assistant_message(f"answer {i}: " + "a" * 60)]
    return items


async def _per_step(
    storage: Any, durability: str, history: int, steps: int = STEPS
) -> tuple[float, float, float, list[float]]:
    """`(median per step, mean per step, turn start, lateness)` in a turn of `steps` steps on a
    thread holding `history` items: the median and the mean time from one step to the next (a
    step's own work plus its checkpoint; the mean also carries the store's occasional WAL
    checkpoints, which the median leaves out), the time from the turn's start to its first step
    (where the start record is written), and how late each `TICK` sleep of another task on the
    loop woke during the turn."""
    stamps: list[float] = []
    late: list[float] = []
    graph = _graph(steps, stamps)
    async with nt.AgentHarness("bench", agent_graph=graph, storage=storage, durability=durability) as h:
        await h.run(_seed(history), thread_id="t")  # fills the thread; not timed
        stamps.clear()

        async def ticker() -> None:
            while True:
                due = time.perf_counter() + TICK
                try:
                    await anyio.sleep(TICK)
                finally:  # the sleep in flight when the turn ends counts as far as it got
                    late.append(max(0.0, time.perf_counter() - due))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            started = time.perf_counter()
            await h.run("go", thread_id="t")
            tg.cancel_scope.cancel()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return statistics.median(gaps), statistics.fmean(gaps), stamps[0] - started, late


def _floor_connection(path: Path, synchronous: str) -> sqlite3.Connection:
    """A bare connection set up as the store sets up its own (WAL, the same `synchronous`);
    usable from a worker thread, one thread at a time."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    return conn


def _commit(conn: sqlite3.Connection, i: int) -> None:
    """One bare commit of one ledger-sized row, written the way the store writes it."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO rows (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (f"k{i:08d}", ROW),
    )
    conn.execute("COMMIT")


def _bare_commit(path: Path, synchronous: str, commits: int = 40) -> float:
    """The median time of one commit of one ledger-sized row on a new file (its WAL grows)."""
    conn = _floor_connection(path, synchronous)
    times: list[float] = []
    for i in range(commits):
        started = time.perf_counter()
        _commit(conn, i)
        times.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(times)


#: A fixed piece of pure Python about as heavy as a durable step's own encoding: one
#: ledger-sized document through `json.dumps` and back, `_WORK_ROUNDS` times.
_WORK_DOC = {
    "head": {"path": "agent/0/step", "attempt": 1, "hash": "0" * 64, "cost": 0.0},
    "items": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ROW[:60]}]}
    ]
    * 4,
    "output": "ok",
}
_WORK_ROUNDS = 4


def _python_work() -> float:
    """The time of one run of the fixed piece of pure Python."""
    started = time.perf_counter()
    for _ in range(_WORK_ROUNDS):
        json.loads(json.dumps(_WORK_DOC))
    return time.perf_counter() - started


def _after_flush(path: Path, synchronous: str, rounds: int = 40) -> tuple[float, float, float]:
    """`(warm, after a commit, after a sleep)`: the median time of `_python_work` with nothing
    before it, right after one bare commit, and right after a sleep as long as that commit,
    interleaved round by round (the sleep shows whether the disk or the thread's blocking slows it)."""
    conn = _floor_connection(path, synchronous)
    warm: list[float] = []
    flushed: list[float] = []
    slept: list[float] = []
    for i in range(rounds):
        _python_work()  # the code and data it touches are hot for the warm sample
        warm.append(_python_work())
        started = time.perf_counter()
        _commit(conn, i)
        took = time.perf_counter() - started
        flushed.append(_python_work())
        time.sleep(took)
        slept.append(_python_work())
    conn.close()
    return statistics.median(warm), statistics.median(flushed), statistics.median(slept)


def _overwriting_commit(path: Path, synchronous: str, commits: int = 40) -> float:
    """`_bare_commit` on a WAL already as long as the commits need: a first series of commits
    grows it, a checkpoint writes them into the database, and the next commit restarts the
    WAL, so the timed commits overwrite its frames and the file's size no longer changes."""
    conn = _floor_connection(path, synchronous)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for i in range(commits + 10):
        _commit(conn, commits + i)
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    times: list[float] = []
    for i in range(commits):
        started = time.perf_counter()
        _commit(conn, i)
        times.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(times)


async def _store_write(path: Path, synchronous: str, writes: int = 40) -> float:
    """The median time of one `SqliteCheckpointStore.write` of a ledger-sized row: the floor
    plus the worker-thread hop and the store's own work (checksums, statements)."""
    store = SqliteCheckpointStore(str(path), synchronous=synchronous)
    times: list[float] = []
    try:
        for i in range(writes):
            started = time.perf_counter()
            await store.write({f"k{i:08d}": ROW})
            times.append(time.perf_counter() - started)
    finally:
        await store.aclose()
    return statistics.median(times)


async def _bare_commit_in_thread(path: Path, synchronous: str) -> float:
    """The floor plus one worker-thread hop: `_bare_commit`'s loop with each commit handed to a
    worker thread and back (`anyio.to_thread`), as an asynchronous program must to keep its
    event loop free during the flush."""
    conn = _floor_connection(path, synchronous)
    times: list[float] = []
    for i in range(40):
        started = time.perf_counter()
        await anyio.to_thread.run_sync(_commit, conn, i)
        times.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(times)


async def _thread_hop(hops: int = 40) -> float:
    """The median time of handing a no-op to a worker thread and back (`anyio.to_thread`)."""
    times: list[float] = []
    for _ in range(hops):
        started = time.perf_counter()
        await anyio.to_thread.run_sync(lambda: None)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def _interval_turn(path: Path, pages: int) -> tuple[float, float, int]:
    """`(median per step, mean per step, WAL bytes)` of a turn of `INTERVAL_STEPS` steps on a new
    store (`synchronous=full`, inline) whose `CHECKPOINT_PAGES` is `pages` for the run: the step
    to step times with the storage in them, and the WAL's length when the turn ends."""
    default = sqlite_store.CHECKPOINT_PAGES
    sqlite_store.CHECKPOINT_PAGES = pages  # the store reads the module's constant at each write
    store = SqliteCheckpointStore(str(path))
    try:
        median, mean, _, _ = await _per_step(store, "step", INTERVAL_HISTORY, INTERVAL_STEPS)
        wal = (await anyio.Path(f"{path}-wal").stat()).st_size
    finally:
        await store.aclose()
        sqlite_store.CHECKPOINT_PAGES = default
    return median, mean, wal


async def measure(repeats: int, checkpoint_pages: tuple[int, ...]) -> dict[str, Any]:
    """Medians of every configuration, interleaved so that load changes hit them alike. The
    floor is measured right before and right after each configuration, and each sample's ratio
    is taken against the mean of those two (the disk's speed drifts on a shared machine). Each
    repeat also runs one `_interval_turn` per interval in `checkpoint_pages`, in an order that
    turns around from one repeat to the next."""
    intervals: dict[int, list[tuple[float, float, int]]] = {}
    costs: dict[tuple[str, int], list[float]] = {}
    ratios: dict[tuple[str, int], list[float]] = {}
    floors: dict[str, list[float]] = {}
    late: dict[str, list[float]] = {}
    flush_effect: dict[str, list[tuple[float, float, float]]] = {}
    overwriting: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("NOETIC_BENCH_DIR")) as tmp:
        for r in range(repeats):
            for label, durability, synchronous, inline in SETTINGS:
                for history in HISTORIES:
                    name = f"{r}-{synchronous}-{inline}-{history}"
                    before = _bare_commit(Path(tmp, f"floor-a-{name}.db"), synchronous)
                    store = SqliteCheckpointStore(
                        f"{tmp}/run-{name}.db", synchronous=synchronous, inline=inline
                    )
                    try:
                        durable, durable_mean, durable_start, lateness = await _per_step(
                            store, durability, history
                        )
                    finally:
                        await store.aclose()
                    bare, bare_mean, bare_start, bare_lateness = await _per_step(None, "step", history)
                    costs.setdefault((f"mean-{label}", history), []).append(durable_mean - bare_mean)
                    costs.setdefault((f"start-{label}", history), []).append(durable_start - bare_start)
                    after = _bare_commit(Path(tmp, f"floor-b-{name}.db"), synchronous)
                    floor = (before + after) / 2
                    floors.setdefault(synchronous, []).append(floor)
                    late.setdefault(label, []).extend(lateness)
                    late.setdefault("no storage", []).extend(bare_lateness)
                    if inline:
                        writes = await _store_write(Path(tmp, f"store-{name}.db"), synchronous)
                        costs.setdefault((f"store-{synchronous}", history), []).append(writes)
                        costs.setdefault(("hop", history), []).append(await _thread_hop())
                        flush_effect.setdefault(synchronous, []).append(
                            _after_flush(Path(tmp, f"after-{name}.db"), synchronous)
                        )
                        overwritten = _overwriting_commit(Path(tmp, f"floor-o-{name}.db"), synchronous)
                        overwriting.setdefault(synchronous, []).append((overwritten, floor))
                        ratios.setdefault((f"overwritten-{label}", history), []).append(
                            (durable - bare) / overwritten
                        )
                    else:
                        threaded = await _bare_commit_in_thread(Path(tmp, f"floor-t-{name}.db"), synchronous)
                        costs.setdefault((f"floor+hop-{synchronous}", history), []).append(threaded)
                        ratios.setdefault((f"floor+hop-{synchronous}", history), []).append(threaded / floor)
                    costs.setdefault((label, history), []).append(durable - bare)
                    costs.setdefault(("bare", history), []).append(bare)
                    ratios.setdefault((label, history), []).append((durable - bare) / floor)
                    costs.setdefault((f"over-{label}", history), []).append(durable - bare - floor)
            for pages in checkpoint_pages if r % 2 == 0 else checkpoint_pages[::-1]:
                turn = await _interval_turn(Path(tmp, f"interval-{r}-{pages}.db"), pages)
                intervals.setdefault(pages, []).append(turn)
    return {
        "intervals": intervals,
        "per_step": {key: statistics.median(v) for key, v in costs.items()},
        "ratio": {key: statistics.median(v) for key, v in ratios.items()},
        "floor": {key: statistics.median(v) for key, v in floors.items()},
        "late": {key: (statistics.median(v), max(v)) for key, v in late.items()},
        "after_flush": {
            key: [statistics.median(column) for column in zip(*v, strict=True)]
            for key, v in flush_effect.items()
        },
        "overwriting": {
            key: (statistics.median(o for o, _ in v), statistics.median(o / f for o, f in v))
            for key, v in overwriting.items()
        },
        "load": os.getloadavg(),
        "repeats": repeats,
    }


def report(result: dict[str, Any]) -> str:
    """The markdown report: µs per step, flatness and the ratio to the floor."""
    per, ratio, floor = result["per_step"], result["ratio"], result["floor"]
    one, five, fifteen = result["load"]
    sizes = " | ".join(f"{h:,} items" for h in HISTORIES)
    lines = [
        "# Durable steps: the cost of a checkpointed step (issue 17, target 1)",
        "",
        f"Medians of {result['repeats']} interleaved runs; load average at the end {one:.1f} / {five:.1f} / "
        f"{fifteen:.1f} on {os.cpu_count()} cores (a shared machine and disk: absolute numbers move "
        "between runs, the ratios measured side by side are what to compare).",
        "",
        f"| µs per step | {sizes} | floor (one bare commit) |",
        "|---|" + "---:|" * (len(HISTORIES) + 1),
    ]
    bare = [per[("bare", h)] * 1e6 for h in HISTORIES]
    lines.append("| bare step, no storage | " + " | ".join(f"{v:.0f}" for v in bare) + " | |")
    for label, _, synchronous, inline in SETTINGS:
        cells = " | ".join(f"{per[(label, h)] * 1e6:.0f}" for h in HISTORIES)
        lines.append(f"| storage cost, {label} | {cells} | {floor[synchronous] * 1e6:.0f} |")
        cells = " | ".join(f"{per[(f'mean-{label}', h)] * 1e6:.0f}" for h in HISTORIES)
        lines.append(f"| the same by the mean step (what a user pays) | {cells} | |")
        if inline:
            cells = " | ".join(f"{per[(f'store-{synchronous}', h)] * 1e6:.0f}" for h in HISTORIES)
            lines.append(f"| of which `store.write` alone, synchronous={synchronous} | {cells} | |")
        else:
            cells = " | ".join(f"{per[(f'floor+hop-{synchronous}', h)] * 1e6:.0f}" for h in HISTORIES)
            lines.append(f"| the floor plus one worker-thread hop, synchronous={synchronous} | {cells} | |")
    cells = " | ".join(f"{per[('hop', h)] * 1e6:.0f}" for h in HISTORIES)
    lines.append(f"| one worker-thread hop (a no-op) | {cells} | |")
    for label, *_ in SETTINGS:
        cells = " | ".join(f"{per[(f'start-{label}', h)] * 1e6:.0f}" for h in HISTORIES)
        lines.append(f"| once per turn: the start record, {label} | {cells} | |")
    lines += [
        "",
        f"| storage cost ÷ adjacent floor | {sizes} | largest ÷ smallest (flatness) |",
        "|---|" + "---:|" * (len(HISTORIES) + 1),
    ]
    threaded = [f"floor+hop-{synchronous}" for _, _, synchronous, inline in SETTINGS if not inline]
    for label in [label for label, *_ in SETTINGS] + threaded:
        values = [ratio[(label, h)] for h in HISTORIES]
        cells = " | ".join(f"{v:.2f}×" for v in values)
        name = label if label not in threaded else f"the floor plus one worker-thread hop ({label[10:]})"
        lines.append(f"| {name} | {cells} | {max(values) / min(values):.2f}× |")
    for label, _, _, inline in SETTINGS:
        if inline:
            values = [ratio[(f"overwritten-{label}", h)] for h in HISTORIES]
            cells = " | ".join(f"{v:.2f}×" for v in values)
            lines.append(
                f"| {label}, ÷ the floor with its WAL overwritten | {cells} | {max(values) / min(values):.2f}× |"
            )
    lines += [
        "",
        f"| storage cost − adjacent floor, µs (what the disk's speed does not set) | {sizes} |",
        "|---|" + "---:|" * len(HISTORIES),
    ]
    for label, *_ in SETTINGS:
        cells = " | ".join(f"{per[(f'over-{label}', h)] * 1e6:.0f}" for h in HISTORIES)
        lines.append(f"| {label} | {cells} |")
    lines += [
        "",
        f"| checkpoint interval (`CHECKPOINT_PAGES`), {INTERVAL_STEPS}-step turn, {INTERVAL_HISTORY:,} items, "
        "synchronous=full | median µs per step | mean µs per step | means, range | mean ÷ the first's, "
        "median of the pairs | WAL at the end, KiB (largest) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    intervals = result["intervals"]
    first = next(iter(intervals.values()))
    for pages, turns in intervals.items():
        means = [mean for _, mean, _ in turns]
        paired = statistics.median(mean / base for mean, (_, base, _) in zip(means, first, strict=True))
        now = " (the store now)" if pages == sqlite_store.CHECKPOINT_PAGES else ""
        lines.append(
            f"| {pages:,} pages{now} | {statistics.median(m for m, _, _ in turns) * 1e6:.0f} | "
            f"{statistics.median(means) * 1e6:.0f} | {min(means) * 1e6:.0f}–{max(means) * 1e6:.0f} | "
            f"{paired:.2f}× | {max(wal for _, _, wal in turns) / 1024:.0f} |"
        )
    lines += [
        "",
        f"| loop lateness of a {TICK * 1000:.0f} ms sleep while the turn runs | median µs | worst µs |",
        "|---|---:|---:|",
    ]
    for label in ["no storage"] + [label for label, *_ in SETTINGS]:
        median, worst = result["late"][label]
        lines.append(f"| {label} | {median * 1e6:.0f} | {worst * 1e6:.0f} |")
    lines += [
        "",
        f"| where the time over the floor goes (µs) | {' | '.join(f'synchronous={sync}' for sync in result['after_flush'])} |",
        "|---|" + "---:|" * len(result["after_flush"]),
    ]
    effects = list(result["after_flush"].values())
    lines.append(
        "| a fixed piece of Python, warm | " + " | ".join(f"{w * 1e6:.0f}" for w, _, _ in effects) + " |"
    )
    lines.append(
        "| the same, right after one bare commit | "
        + " | ".join(f"{a * 1e6:.0f} ({a / w:.2f}×)" for w, a, _ in effects)
        + " |"
    )
    lines.append(
        "| the same, right after a sleep as long as that commit | "
        + " | ".join(f"{z * 1e6:.0f} ({z / w:.2f}×)" for w, _, z in effects)
        + " |"
    )
    cells = " | ".join(f"{o * 1e6:.0f} ({r:.2f}× the floor)" for o, r in result["overwriting"].values())
    lines.append(f"| floor, WAL overwritten (a checkpoint restarted it) | {cells} |")
    lines += [
        "",
        "`storage cost` is a step with `storage='sqlite:///…'` minus the same step without storage: "
        f"the median time from one step to the next in a turn of {STEPS} steps (so the turn's fixed "
        "costs, the start record among them, are not in it). `floor` is one bare SQLite "
        "commit of a ledger-sized row with the same `synchronous` setting, measured just before and "
        "after each configuration. Targets: flatness ≤ 1.2×, storage cost ≤ 1.5× the floor. "
        "`inline=False` sends every commit to a worker thread (as the store does for each commit "
        "while two executions run); `the floor plus one worker-thread hop` is the same bare commit "
        "handed to a worker thread and back, the least such a commit costs. "
        "`once per turn` is the storage's cost from the turn's start to its first step: the start "
        "record, written once per execution, which names the thread's stored history and writes only "
        "the items new since the previous turn's start (so it should not grow with the history). "
        "The storage cost over the floor is the time a step adds to the flush (its Python, its "
        "rows' share of the commit, any thread hop): at a floor of F µs the ratio is 1 + that ÷ F, "
        "so a fast disk needs a small one. "
        "`loop lateness` is how much later than asked another task's sleeps on the same event "
        "loop woke during the turn: the bench's steps are synchronous, so without storage too "
        "they hold the loop until a step boundary yields (every 2 ms). "
        "`where the time over the floor goes`: a step runs all of its Python (its own, the bookkeeping, "
        "the statements before the commit) after the previous step's flush, while the floor's loop "
        "runs almost none between its commits; the fixed piece of Python shows how much slower code "
        "runs right after a flush, and right after a sleep as long (the same slowdown means it is the "
        "thread's blocking, not the disk). `floor, WAL overwritten` is the floor once a checkpoint has "
        "restarted the WAL, so a commit no longer grows the file (the floor above uses new files, whose "
        "WAL grows; the store checkpoints every `CHECKPOINT_PAGES` pages, so its WAL is overwritten by the "
        "timed turn). `the same by the mean step` is the mean time from one step to the next, less the "
        "mean without storage: the occasional checkpoints are in it and not in the median. "
        "`checkpoint interval`: one turn per value per repeat on a new store, the module's "
        "`CHECKPOINT_PAGES` set for it; the step times include the step itself (the same in every row), "
        "and the pairs' ratio compares means measured back to back.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--checkpoint-pages",
        default=f"100,{sqlite_store.CHECKPOINT_PAGES},1000",
        help="the store's checkpoint intervals (WAL pages, comma-separated) to compare side by side",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    pages = tuple(dict.fromkeys(int(value) for value in args.checkpoint_pages.split(",")))
    text = report(anyio.run(measure, args.repeats, pages))
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
