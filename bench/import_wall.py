"""S4 by wall time: `import noetic` beside the pydantic floor, many rounds interleaved.

A 0.1 s import timed a few times scatters by ±30 % on a shared machine, and a burst of load
that lands on one subject and not the other moves the ratio by as much as the work measured.
Here every round imports each program once, each in a fresh interpreter with warm bytecode
caches, in an order rotated every round; the figures are medians over the rounds and the
median of the per-round ratios, for wall time (S4's figure) and for the process's CPU time
(which time spent waiting for a core on a busy machine does not inflate). Every program gets the same module search path (`PYTHONPATH`
set to a `packages/core/src` and bench/), the floor included. Beside `import noetic` runs
`import noetic` plus its first S1 round trip (what a deferred cost would move into). `--tree
DIR` adds both from another checkout (for example `git archive` of the commit before a change):

    python bench/import_wall.py --rounds 30 --tree /tmp/base
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_instructions import FIRST_USE  # bench/ is on the path only now
from run import IMPORTS, import_time, rotate

BENCH = Path(__file__).resolve().parent
CORE = BENCH.parent / "packages" / "core" / "src"
FLOOR = "pydantic floor"
FIRST_TURN = "import noetic\n" + FIRST_USE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds of every program (default 30)")
    parser.add_argument("--tree", type=Path, help="another checkout whose `import noetic` runs beside")
    args = parser.parse_args()
    trees = {"": CORE}
    if args.tree is not None:
        trees[f" ({args.tree})"] = args.tree / "packages" / "core" / "src"
    programs = {FLOOR: (IMPORTS[FLOOR], CORE, BENCH)}
    for suffix, core in trees.items():
        programs[f"import noetic{suffix}"] = ("import noetic", core, BENCH)
    for suffix, core in trees.items():
        programs[f"import noetic + first S1 round trip{suffix}"] = (FIRST_TURN, core, BENCH)
    for statement, *paths in programs.values():  # the first run writes the bytecode caches
        import_time(statement, *paths)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in programs}
    for k in range(args.rounds):
        for name in rotate(tuple(programs), k):
            result = import_time(*programs[name])
            if "error" in result:
                raise SystemExit(f"{name}: {result['error']}")
            results[name].append(result)
    print(
        f"{args.rounds} rounds; medians in ms (min–max); over the floor: ratio of medians, median per round"
    )
    for clock in ("seconds", "cpu_seconds"):
        print(f"\n| {'wall' if clock == 'seconds' else 'CPU'} time | ms | over the floor | per round |")
        print("| --- | ---: | ---: | ---: |")
        floor = [r[clock] for r in results[FLOOR]]
        for name, runs in results.items():
            values = [r[clock] for r in runs]
            paired = statistics.median(v / f for v, f in zip(values, floor, strict=True))
            median = statistics.median(values)
            print(
                f"| {name} | {median * 1e3:.1f} ({min(values) * 1e3:.1f}–{max(values) * 1e3:.1f})"
                f" | {median / statistics.median(floor):.3f}× | {paired:.3f}× |"
            )


if __name__ == "__main__":
    main()
