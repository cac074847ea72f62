"""S6 in instructions: what each layer variant costs per round trip, counted by cachegrind.

    python bench/s6_instructions.py [VARIANT ...]     # needs valgrind; default: every variant

Wall times of the S6 variants drown in the load of a shared machine; instruction counts from
valgrind's cachegrind are deterministic and blind to it (see `ablation.py`). Each variant runs
its S1 round trip 20 and 220 times under cachegrind; the difference over 200 is one round trip
(two model rounds). The last column is the variant over `bare`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from cachegrind import instructions  # noqa: E402  (bench/ is on the path only now)


async def _round_trips(variant: str, runs: int) -> None:
    from subjects.noetic_layers_subject import Variant

    async with Variant(variant).session() as run_once:
        for i in range(runs):
            await run_once(i)


def _instructions(variant: str, runs: int) -> int:
    return instructions(__file__, "--inner", variant, str(runs))


def main(variants: list[str]) -> None:
    bare = None
    for variant in ["bare", *[v for v in variants if v != "bare"]]:
        per_run = (_instructions(variant, 220) - _instructions(variant, 20)) // 200
        bare = per_run if bare is None else bare
        print(
            f"{variant:<13} {per_run:>10,} instructions per round trip  {per_run / bare:5.2f}× bare",
            flush=True,
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        asyncio.run(_round_trips(sys.argv[2], int(sys.argv[3])))
    else:
        from subjects.noetic_layers_subject import VARIANTS

        main(sys.argv[1:] or list(VARIANTS[1:]))
