"""S3's 10,000 ÷ 1,000 ratio (and S1) of this tree beside another, in interleaved rounds.

The ratio of two wall times taken minutes apart on a shared machine moves with the load as
much as with the code. Here every round runs `worker.py s3 noetic 1000`, `… 10000` and
`worker.py s1 noetic` once for each tree, each in a fresh interpreter, in an order rotated every
round, so both trees share the machine's load alike; the figures are medians over the rounds
of wall and CPU time, each tree's ratio, and the RSS growth of the 10,000 run.

    python bench/s3_trees.py --rounds 7 --tree /tmp/base   # /tmp/base: `git archive` of main

Every worker gets `PYTHONPATH` set to its tree's `packages/core/src` and this bench/ (the
subjects are this tree's), followed by the caller's own `PYTHONPATH` (where psutil may be).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
CORE = BENCH.parent / "packages" / "core" / "src"
MEASUREMENTS = {
    "S3 1,000": ("s3", "noetic", "1000"),
    "S3 10,000": ("s3", "noetic", "10000"),
    "S1": ("s1", "noetic"),
}


def measure(core: Path, argv: tuple[str, ...]) -> dict[str, Any]:
    """One `worker.py` run against the noetic in `core`."""
    path = os.pathsep.join(p for p in (str(core), str(BENCH), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, str(BENCH / "worker.py"), *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=path),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{argv} against {core}: {done.stderr[-600:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of every measurement (default 7)")
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout")
    args = parser.parse_args()
    trees = {"this tree": CORE, str(args.tree): args.tree / "packages" / "core" / "src"}
    runs = [(tree, name) for tree in trees for name in MEASUREMENTS]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {run: [] for run in runs}
    for k in range(args.rounds):
        start = k % len(runs)  # rotated, so no measurement always runs first
        for tree, name in runs[start:] + runs[:start]:
            results[tree, name].append(measure(trees[tree], MEASUREMENTS[name]))
    print(f"{args.rounds} rounds, medians; load average at the end {os.getloadavg()[0]:.1f}\n")
    print(f"| | {' | '.join(trees)} |")
    print(f"| --- |{' ---: |' * len(trees)}")
    for clock, label in (("cpu_seconds", "CPU"), ("seconds", "wall")):
        for name in ("S3 1,000", "S3 10,000"):
            row = [statistics.median(r[clock] for r in results[tree, name]) for tree in trees]
            print(f"| {name}, {label} s | {' | '.join(f'{v:.3f}' for v in row)} |")
        ratios = []
        for tree in trees:
            small = statistics.median(r[clock] for r in results[tree, "S3 1,000"])
            large = statistics.median(r[clock] for r in results[tree, "S3 10,000"])
            ratios.append(f"{large / small:.1f}×")
        print(f"| ratio 10,000 ÷ 1,000, {label} | {' | '.join(ratios)} |")
    rss = [statistics.median(r["rss_growth_mib"] for r in results[tree, "S3 10,000"]) for tree in trees]
    print(f"| S3 10,000 RSS growth, MiB | {' | '.join(f'{v:.1f}' for v in rss)} |")
    for clock, label in (("cpu_seconds", "CPU"), ("seconds", "wall")):
        row = [statistics.median(r[clock] / r["rounds"] for r in results[tree, "S1"]) * 1e6 for tree in trees]
        print(f"| S1 µs per model round, {label} | {' | '.join(f'{v:.1f}' for v in row)} |")


if __name__ == "__main__":
    main()
