"""A long-lived harness serving many distinct threads, one turn each: its RSS as threads pile up.

    python bench/sessions_growth.py MODE THREADS     # prints one JSON object

Each thread runs one S1 round trip (`h.run(question, thread_id=...)`) and is never used again,
as in a service where every conversation is short. RSS is sampled every `THREADS / 10` threads
(after a `gc.collect()`), relative to RSS after a warm-up of `WARMUP` threads.

- `keep`: `max_idle_sessions=None` — every session stays in memory (the harness before eviction).
- `evict`: `max_idle_sessions=1000`, no storage — evicted threads lose their history.
- `evict-sqlite`: `max_idle_sessions=1000` with `storage="sqlite:///..."` in a temporary
  directory — evicted histories are written to the store and would come back on a next turn.

A flat RSS after the first samples means memory is bounded; `keep` grows with every thread.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

import noetic as nt
from subjects.common import ANSWER, QUESTION
from subjects.noetic_subject import FakeModel, _agent

MODES = ("keep", "evict", "evict-sqlite")
MAX_IDLE = 1000
WARMUP = 2000
SAMPLES = 10


def _rss_mib() -> float:
    gc.collect()
    return float(psutil.Process().memory_info().rss) / 2**20


async def serve(mode: str, threads: int) -> dict[str, Any]:
    """Run `threads` one-turn threads in `mode`; RSS growth at each sample point."""
    options: dict[str, Any] = {"max_idle_sessions": None if mode == "keep" else MAX_IDLE}
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "evict-sqlite":
            options["storage"] = f"sqlite:///{Path(tmp) / 'sessions.db'}"
        async with nt.AgentHarness("bench", agent_graph=_agent(), model=FakeModel(), **options) as h:
            for i in range(WARMUP):
                await h.run(QUESTION, thread_id=f"warm{i}")
            await h.wait_background()
            base = _rss_mib()
            every = max(1, threads // SAMPLES)
            samples: list[tuple[int, float]] = []
            started = time.perf_counter()
            for i in range(threads):
                response = await h.run(QUESTION, thread_id=f"t{i}")
                if response.text != ANSWER:
                    raise AssertionError(f"wrong answer {response.text!r}")
                if (i + 1) % every == 0:
                    await h.wait_background()
                    samples.append((i + 1, _rss_mib() - base))
            seconds = time.perf_counter() - started
            live = len(h._sessions)
    return {"seconds": seconds, "threads": threads, "rss_growth_mib": samples, "live_sessions": live}


def main(argv: list[str]) -> dict[str, Any]:
    mode, threads = argv[0], int(argv[1])
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    return anyio.run(serve, mode, threads)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
