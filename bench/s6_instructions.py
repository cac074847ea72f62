"""S6 in instructions: what each layer variant costs per round trip, counted by cachegrind.

    python bench/s6_instructions.py [--packed] [VARIANT ...]   # needs valgrind; default: every variant

Wall times of the S6 variants drown in the load of a shared machine; instruction counts from
valgrind's cachegrind are deterministic and blind to it (see `ablation.py`). Each variant runs
its S1 round trip 20 and 220 times under cachegrind; the difference over 200 is one round trip
(two model rounds). The last column is the variant over `bare`.

Those runs stay within the harness's 1,000 hot sessions, so no session is packed (SE-5). S6
itself runs 2,020 turns on fresh threads, so about half of its sessions are packed when they
fall out of the hot set; `--packed` counts 1,100 and 2,100 runs instead, the difference over
1,000 being a round trip whose session is packed.
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


def main(variants: list[str], packed: bool = False) -> None:
    fewer, more = (1100, 2100) if packed else (20, 220)
    bare = None
    for variant in ["bare", *[v for v in variants if v != "bare"]]:
        per_run = (_instructions(variant, more) - _instructions(variant, fewer)) // (more - fewer)
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

        packed = "--packed" in sys.argv[1:]
        chosen = [arg for arg in sys.argv[1:] if arg != "--packed"]
        main(chosen or list(VARIANTS[1:]), packed)
