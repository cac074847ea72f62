"""What S3's turns leave for the cyclic GC: tracked objects per waiting turn, per finished
caller task and per kept session, and the full collections of one S3 run.

    scripts/bootstrap.sh python bench/turn_objects.py            # 10,000 turns, the noetic subject
    scripts/bootstrap.sh python bench/turn_objects.py 1000 noetic-unpacked

Counts are `len(gc.get_objects())` deltas after a full collection, so they do not depend on the
machine's load (no timing, except the CPU seconds of the S3 run shown for context). A burst of
`RUNS` concurrent `run()` calls (as `worker.py s3` makes them) is counted three times: with every
turn waiting to start (the caller's task, handle, context and coroutine included, since the
collector walks them too), once every turn has finished while the gather still holds the
caller tasks, and once those are gone (the sessions alone). Then a second burst of the same
size is run with `gc.callbacks` recording each full collection: how many objects it walked and
how many turns had finished by then.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import importlib
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import worker  # found on the path set above


def census() -> collections.Counter[str]:
    """The tracked objects by type name, after a full collection."""
    gc.collect()
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


def show(label: str, before: collections.Counter[str], after: collections.Counter[str], runs: int) -> None:
    delta = after - before
    print(f"{label}: {(sum(after.values()) - sum(before.values())) / runs:.2f} tracked objects per turn")
    for name, count in delta.most_common(12):
        if count / runs >= 0.05:
            print(f"    {name:28} {count / runs:6.2f}")


async def counted(subject: Any, runs: int) -> None:
    async with subject.session() as run_once:
        for i in range(worker.WARMUP):
            await run_once(-1 - i)
        base = census()
        burst = [asyncio.ensure_future(run_once(i)) for i in range(runs)]
        await asyncio.sleep(0)  # every task has run up to its first wait
        show("waiting to start", base, census(), runs)
        answers = [await task for task in burst]
        show("finished, caller tasks held", base, census(), runs)
        del burst, answers
        show("finished, sessions only", base, census(), runs)


async def collections_of(subject: Any, runs: int) -> None:
    finished = [0]
    full: list[tuple[int, int]] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append((sum(len(gc.get_objects(g)) for g in range(3)), finished[0]))

    async with subject.session() as run_once:

        async def one(i: int) -> str:
            answer = await run_once(i)
            finished[0] += 1
            return answer

        for i in range(worker.WARMUP):
            await run_once(-1 - i)
        gc.collect()
        gc.callbacks.append(on_gc)
        cpu = time.process_time()
        try:
            await asyncio.gather(*(one(i) for i in range(runs)))
        finally:
            gc.callbacks.remove(on_gc)
        cpu = time.process_time() - cpu
        print(f"S3 burst of {runs:,}: {cpu:.3f} s CPU, {len(full)} full collections")
        for walked, done in full:
            print(f"    walked {walked:9,} objects with {done:6,} turns finished")


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 10_000
    subject = importlib.import_module(worker.SUBJECTS[argv[1] if len(argv) > 1 else "noetic"])
    asyncio.run(counted(subject, runs))
    asyncio.run(collections_of(subject, runs))


if __name__ == "__main__":
    main(sys.argv[1:])
