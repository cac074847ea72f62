"""Profile noetic's hot paths with pyinstrument: S1, S2 and S3 as `worker.py` runs them.

    uv run --group bench python bench/profile_noetic.py [s1 s2 s3]

Writes `bench/results/profiles/{scenario}.txt` (the call tree) and `{scenario}-flat.txt`
(functions by their own time) for each scenario. The profiler samples every 0.1 ms, so the
absolute times are inflated; the proportions are what to read.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import worker  # noqa: E402
from pyinstrument import Profiler  # noqa: E402
from pyinstrument.renderers import ConsoleRenderer  # noqa: E402
from subjects import noetic_subject  # noqa: E402

OUT = BENCH / "results" / "profiles"


async def _s1() -> None:
    await worker.s1(noetic_subject)


async def _s2() -> None:
    await worker.s2(noetic_subject, items=False)


async def _s3() -> None:
    await worker.s3(noetic_subject)


SCENARIOS = {"s1": _s1, "s2": _s2, "s3": _s3}


def profile(name: str) -> None:
    """Run one scenario under the profiler and write its two renderings."""
    profiler = Profiler(interval=0.0001, async_mode="disabled")
    with profiler:
        asyncio.run(SCENARIOS[name]())
    session = profiler.last_session
    assert session is not None
    tree = ConsoleRenderer(unicode=True, color=False, show_all=False, short_mode=False).render(session)
    flat = ConsoleRenderer(unicode=True, color=False, flat=True, show_all=True).render(session)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.txt").write_text(tree)
    (OUT / f"{name}-flat.txt").write_text("\n".join(flat.splitlines()[:60]) + "\n")
    print(f"wrote {OUT / name}.txt and {name}-flat.txt")


if __name__ == "__main__":
    for scenario in sys.argv[1:] or list(SCENARIOS):
        profile(scenario)
