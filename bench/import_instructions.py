"""S4 in instructions: `import noetic`, and `import noetic` plus its first S1 round trip.

Wall times of a 0.1 s import scatter by ±30 % on a shared machine; cachegrind's instruction
count does not move between runs. Each program below runs in a fresh interpreter under
cachegrind, after one plain run of it has written the bytecode caches (S4 is timed with warm
caches too). Every program is the same file name in an empty directory of its own: the script's
directory heads the module search path, so a stray module beside it (a `nt.py` in /tmp is
imported by `os`) would be loaded by every program, and a random temporary name changes the
count by a million instructions or so from run to run. Each figure is given over the floor
twice: as counted, and with the interpreter's own start-up (a program that does nothing)
taken off both, as S4's wall time leaves it out. `--tree DIR` adds the same programs run on
another checkout's `packages/core/src` (for example `git archive` of the commit before a
change), so before and after come from one run:

    python bench/import_instructions.py --tree /tmp/base
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cachegrind import instructions  # bench/ is on the path only now

BENCH = Path(__file__).resolve().parent
CORE = BENCH.parent / "packages" / "core" / "src"

#: The pydantic floor of S4 (bench/run.py): noetic's dependencies and one pydantic model.
FLOOR = 'import anyio, pluggy; from pydantic import BaseModel; type("M", (BaseModel,), {"__annotations__": {"x": int}})'

#: One S1 round trip (two model rounds, one tool call) on the bench's fake model.
FIRST_USE = """
import anyio
from subjects import noetic_subject

async def main() -> None:
    async with noetic_subject.session() as run_once:
        assert await run_once(0) == "The answer is 3."

anyio.run(main)
"""

PROGRAMS = {
    "pydantic floor": FLOOR,
    "import noetic": "import noetic",
    "import noetic + first S1 round trip": "import noetic\n" + FIRST_USE,
}


def _count(code: str, source: Path) -> int:
    """Instructions of `code` in a fresh interpreter that imports noetic from `source`."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up run writes bytecode caches
    os.environ["PYTHONPATH"] = os.pathsep.join([str(source), str(BENCH)])
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "program.py"
        script.write_text(code)
        subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
        return instructions(str(script))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="another checkout to measure beside this one")
    args = parser.parse_args()
    trees = {"this tree": CORE}
    if args.tree is not None:
        trees = {str(args.tree): args.tree / "packages" / "core" / "src", **trees}
    floor = _count(FLOOR, CORE)
    startup = _count("pass", CORE)
    print(f"interpreter start-up: {startup / 1e6:,.1f} M; over the floor: as counted, start-up taken off")
    print(f"| program | {' | '.join(trees)} |")
    print(f"| --- |{' ---: |' * len(trees)}")
    for name, code in PROGRAMS.items():
        counts = [floor if code is FLOOR else _count(code, source) for source in trees.values()]
        cells = [
            f"{n / 1e6:,.1f} M ({n / floor:.3f}×, {(n - startup) / (floor - startup):.3f}×)" for n in counts
        ]
        print(f"| {name} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
