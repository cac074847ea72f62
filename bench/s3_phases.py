"""Where an S3 burst's CPU time goes: the cyclic GC by generation, packing, and the rest.

    python bench/s3_phases.py 10000          # the collector on, as in `worker.py s3 noetic`
    python bench/s3_phases.py 10000 --no-gc  # the collector off for the burst
    python bench/s3_phases.py 10000 --rewarm # also encode each packed session twice

One burst of `RUNS` concurrent round trips of the noetic subject (as `worker.py s3` runs them,
after the same warm-up). Each collection is timed with `gc.callbacks` and each `pack` call
with thread CPU time; "rest" is the burst's process CPU time minus both. With `--rewarm`, the
packer's encoder is run a second time on the same parts right after the first, so the two
figures differ only by what the first run left in the CPU caches (the second is not kept):
the share of packing that is cache misses, on a machine whose load moves both alike (the pack
time printed then includes the second encode).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import noetic.packed_sessions as packed_sessions
from subjects import noetic_subject

GENERATIONS = (0, 1, 2)


class Phases:
    """The thread CPU time and count of each collection by generation, and of each pack."""

    def __init__(self) -> None:
        self.gc_seconds = dict.fromkeys(GENERATIONS, 0.0)
        self.gc_count = dict.fromkeys(GENERATIONS, 0)
        self.pack_seconds = 0.0
        self.packs = 0
        self.encode_first: list[int] = []
        self.encode_again: list[int] = []
        self._started = 0.0

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        """A `gc.callbacks` entry: time each collection."""
        if phase == "start":
            self._started = time.thread_time()
        else:
            generation = info["generation"]
            self.gc_seconds[generation] += time.thread_time() - self._started
            self.gc_count[generation] += 1


def instrument(phases: Phases, rewarm: bool) -> None:
    """Time every `pack` (and, with `rewarm`, every encode twice) of `noetic.packed_sessions`."""
    pack, encode = packed_sessions.pack, packed_sessions.encode

    def timed_pack(session: Any) -> bool:
        started = time.thread_time()
        packed = pack(session)
        phases.pack_seconds += time.thread_time() - started
        phases.packs += 1
        return packed

    def encoded_twice(parts: Any) -> Any:
        started = time.perf_counter_ns()
        encoded = encode(parts)
        first = time.perf_counter_ns()
        encode(parts)
        phases.encode_first.append(first - started)
        phases.encode_again.append(time.perf_counter_ns() - first)
        return encoded

    packed_sessions.pack = timed_pack  # type: ignore[assignment]
    if rewarm:
        packed_sessions.encode = encoded_twice  # type: ignore[assignment]


async def burst(runs: int, collect: bool, phases: Phases) -> float:
    """The process CPU seconds of one burst of `runs` concurrent round trips."""
    async with noetic_subject.session() as run_once:
        await asyncio.gather(*(run_once(-1 - i) for i in range(20)))
        gc.collect()
        if not collect:
            gc.disable()
        gc.callbacks.append(phases.on_gc)
        cpu = time.process_time()
        await asyncio.gather(*(run_once(i) for i in range(runs)))
        cpu = time.process_time() - cpu
        gc.callbacks.remove(phases.on_gc)
        gc.enable()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=int)
    parser.add_argument("--no-gc", action="store_true", help="switch the collector off for the burst")
    parser.add_argument("--rewarm", action="store_true", help="encode each packed session a second time")
    args = parser.parse_args()
    phases = Phases()
    instrument(phases, args.rewarm)
    cpu = asyncio.run(burst(args.runs, not args.no_gc, phases))
    collections = " ".join(f"gen{g} {phases.gc_count[g]}× {phases.gc_seconds[g]:.3f} s" for g in GENERATIONS)
    rest = cpu - sum(phases.gc_seconds.values()) - phases.pack_seconds
    print(f"{args.runs} runs: CPU {cpu:.3f} s; GC {collections}; ", end="")
    print(f"pack {phases.packs}× {phases.pack_seconds:.3f} s; rest {rest:.3f} s")
    if phases.encode_first:
        first = statistics.median(phases.encode_first) / 1e3
        again = statistics.median(phases.encode_again) / 1e3
        print(f"encode, median per session: first {first:.1f} µs, again at once {again:.1f} µs")


if __name__ == "__main__":
    main()
