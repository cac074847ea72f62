"""One measurement in a fresh interpreter: `python bench/worker.py SCENARIO SUBJECT [SIZE]`.

Prints one JSON object on stdout. `run.py` starts one worker per measurement, so no scenario
or framework shares a process (or its memory and import state) with another.

- `s1 SUBJECT`: `S1_RUNS` sequential round trips after `WARMUP` untimed ones.
- `s2 SUBJECT [SIZE]`: one streaming run of `SIZE` (default `S2_DELTAS`) deltas after a short
  untimed one.
- `s3 SUBJECT [RUNS]`: `RUNS` (default `S3_RUNS`) concurrent round trips; RSS before and after
  in this process.
- `s5 SUBJECT`: `S5_RUNS` sequential durable round trips on SQLite (`S5_SYNCHRONOUS`) after
  `S5_WARMUP` untimed ones, each subject with its own durable setup (`subjects/durable_*.py`).
- `growth SCENARIO SIZE`: one noetic growth scenario at one size (see `growth.py`).
- `sessions MODE THREADS`: a harness serving `THREADS` one-turn threads (see `sessions_growth.py`).
- `s6 VARIANT`: S1 through context layers, anchoring on (`subjects/noetic_layers_subject.py`).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

S1_RUNS = 2000
S2_DELTAS = 20_000
S3_RUNS = 1000
WARMUP = 20
S5_RUNS = 200
S5_WARMUP = 10
#: The `synchronous` setting every S5 subject's SQLite database uses (WAL mode for all).
S5_SYNCHRONOUS = "full"

SUBJECTS = {
    "noetic": "subjects.noetic_subject",
    "noetic-items": "subjects.noetic_subject",
    "noetic-evict": "subjects.noetic_evict_subject",
    "noetic-unpacked": "subjects.noetic_unpacked_subject",
    "pydantic-ai": "subjects.pydantic_ai_subject",
    "openai-agents": "subjects.openai_agents_subject",
    "langgraph": "subjects.langgraph_subject",
    "limit": "subjects.limit_subject",
}
#: S5: each subject's durable setup on SQLite.
S5_SUBJECTS = {
    "noetic": "subjects.durable_noetic",
    "pydantic-ai": "subjects.durable_pydantic_ai",
    "langgraph": "subjects.durable_langgraph",
    "limit": "subjects.durable_limit",
}


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _expect(answer: str) -> None:
    from subjects.common import ANSWER

    if answer != ANSWER:
        raise AssertionError(f"wrong answer {answer!r}")


async def s1(subject: Any) -> dict[str, Any]:
    async with subject.session() as run_once:
        for i in range(WARMUP):
            _expect(await run_once(-1 - i))
        gc.collect()
        cpu, started = time.process_time(), time.perf_counter()
        for i in range(S1_RUNS):
            _expect(await run_once(i))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"seconds": seconds, "cpu_seconds": cpu, "runs": S1_RUNS, "rounds": 2 * S1_RUNS}


async def s2(subject: Any, items: bool, size: int = S2_DELTAS) -> dict[str, Any]:
    from subjects.common import delta_chunks

    stream = subject.stream_items if items else subject.stream
    await stream(delta_chunks(100))
    chunks = delta_chunks(size)
    gc.collect()
    cpu, started = time.process_time(), time.perf_counter()
    seen, text = await stream(chunks)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if seen != size or text != "".join(chunks):
        raise AssertionError(f"saw {seen} deltas and {len(text)} characters")
    return {"seconds": seconds, "cpu_seconds": cpu, "deltas": seen}


async def s3(subject: Any, runs: int = S3_RUNS) -> dict[str, Any]:
    async with subject.session() as run_once:
        for answer in await asyncio.gather(*(run_once(-1 - i) for i in range(WARMUP))):
            _expect(answer)
        gc.collect()
        before = _rss()
        cpu, started = time.process_time(), time.perf_counter()
        answers = await asyncio.gather(*(run_once(i) for i in range(runs)))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        after = _rss()
        peak = _peak_rss()
    for answer in answers:
        _expect(answer)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "runs": runs,
        "rss_growth_mib": (max(after, peak) - before) / 2**20,
        "rss_end_growth_mib": (after - before) / 2**20,
    }


async def s5(subject: Any) -> dict[str, Any]:
    import os
    import tempfile

    with tempfile.TemporaryDirectory(dir=os.environ.get("NOETIC_BENCH_DIR")) as tmp:
        async with subject.durable_session(Path(tmp, "s5.db"), S5_SYNCHRONOUS) as run_once:
            for i in range(S5_WARMUP):
                _expect(await run_once(-1 - i))
            gc.collect()
            cpu, started = time.process_time(), time.perf_counter()
            for i in range(S5_RUNS):
                _expect(await run_once(i))
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"seconds": seconds, "cpu_seconds": cpu, "runs": S5_RUNS, "synchronous": S5_SYNCHRONOUS}


async def growth(name: str, size: int) -> dict[str, Any]:
    import growth as scenarios

    try:
        seconds, units = await scenarios.SCENARIOS[name](size)
    except scenarios.Pending as exc:
        return {"pending": str(exc)}
    return {"seconds": seconds, "units": units}


def main(argv: list[str]) -> dict[str, Any]:
    scenario = argv[0]
    if scenario == "growth":
        return asyncio.run(growth(argv[1], int(argv[2])))
    if scenario == "s5":
        return asyncio.run(s5(importlib.import_module(S5_SUBJECTS[argv[1]])))
    if scenario == "sessions":
        import sessions_growth

        return sessions_growth.main(argv[1:])
    if scenario == "s6":
        from subjects.noetic_layers_subject import Variant

        return asyncio.run(s1(Variant(argv[1])))
    subject = importlib.import_module(SUBJECTS[argv[1]])
    if scenario == "s1":
        return asyncio.run(s1(subject))
    if scenario == "s2":
        size = int(argv[2]) if len(argv) > 2 else S2_DELTAS
        return asyncio.run(s2(subject, items=argv[1] == "noetic-items", size=size))
    if scenario == "s3":
        return asyncio.run(s3(subject, int(argv[2]) if len(argv) > 2 else S3_RUNS))
    raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
