"""Run every benchmark interleaved and write `bench/results/report.md` and `ratios.png`.

    make bench                                  # or: uv run --group bench python bench/run.py
    python bench/run.py --reps 3 --only s1 s2   # fewer repetitions, some scenarios

The peers (pydantic-ai, the OpenAI Agents SDK, LangGraph) live in the root pyproject's `bench`
dependency group, which `uv sync` does not install. Started outside that environment, this
script re-runs itself through `uv run --group bench` in its own environment `bench/.venv`, so
the development environment stays as `uv sync --all-packages --locked` leaves it.

Every measurement runs in a fresh interpreter (`bench/worker.py`). One repetition runs every
scenario once for every subject, rotating the subject order; the report gives medians with
min–max over the repetitions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PEERS = ("pydantic_ai", "agents", "langgraph", "matplotlib", "psutil", "dbos", "langgraph.checkpoint.sqlite")

SUBJECTS = ("noetic", "pydantic-ai", "openai-agents", "langgraph", "limit")
S3_SUBJECTS = (*SUBJECTS, "noetic-evict", "noetic-unpacked")
S2_SUBJECTS = ("noetic", "noetic-items", "pydantic-ai", "openai-agents", "langgraph", "limit")
#: S5 (durable round trip): the peers with a durable setup on SQLite (the OpenAI Agents SDK has none).
S5_SUBJECTS = ("noetic", "pydantic-ai", "langgraph", "limit")
#: S2 at further sizes for noetic's two streams (key `s2size/{subject}/{size}`): the report's
#: flatness rows compare their cost per delta with the default size's.
S2_SIZES = {"noetic": (2_000, 200_000), "noetic-items": (2_000, 200_000)}
#: What S4 times in a fresh interpreter for each subject (the modules its S1 program needs).
IMPORTS = {
    "noetic": "import noetic",
    "pydantic-ai": "import pydantic_ai",
    "openai-agents": "import agents",
    "langgraph": "import langgraph.graph, langgraph.prebuilt",
    "limit": "import asyncio, json, pydantic",
    "noetic deps": "import pydantic, anyio, pluggy",
    # pydantic loads its model machinery on first use: the floor of any library defining a model
    "pydantic floor": 'import anyio, pluggy; from pydantic import BaseModel; type("M", (BaseModel,), {"__annotations__": {"x": int}})',
}
#: S4 rounds per repetition. A round imports every subject once, each in a fresh interpreter,
#: in an order rotated every round, so the floor and noetic are timed side by side under the
#: same load: 7 rounds of 3 repetitions give 21 samples per subject. (It used to time 3 imports
#: of one subject back to back before the next subject's; 9 samples per subject taken seconds
#: apart, so a burst of load on the machine landed on one subject and not on the other.)
IMPORT_ROUNDS = 7
SCENARIOS = ("s1", "s2", "s3", "s3x", "s4", "s5", "s6", "growth", "sessions")
#: S3 at scale (scenario `s3x`): the subjects run at this many concurrent round trips (the
#: peers stay at S3's 1,000: at 10,000 they take minutes). `noetic-evict` is noetic with
#: `max_idle_sessions=1000`, as a service of one-turn threads would set it; `noetic-unpacked` is
#: noetic with `hot_sessions=None` (no idle session packed, SE-5); both run in S3 too.
S3X_RUNS = 10_000
S3X_SUBJECTS = ("noetic", "noetic-evict", "noetic-unpacked", "limit")
#: The session growth scenario (`bench/sessions_growth.py`): modes and threads served.
SESSION_MODES = {"keep": 100_000, "evict": 100_000, "evict-sqlite": 10_000}
#: S6 variants (the layer sets of `bench/subjects/noetic_layers_subject.py`), in the report's row names.
S6_VARIANTS = {
    "bare": "noetic",
    **{v: f"noetic+{v}" for v in ("scratchpad", "scratchpad+3", "1-layer", "10-layers")},
}
WORKER_TIMEOUT = 900.0


def ensure_environment() -> None:
    """Re-run under `uv run --group bench` unless the peers are importable here."""
    if all(importlib.util.find_spec(name) is not None for name in PEERS):
        return
    uv = os.environ.get("UV") or shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if os.environ.get("NOETIC_BENCH_REEXEC") or not Path(uv).exists():
        missing = [name for name in PEERS if importlib.util.find_spec(name) is None]
        raise SystemExit(
            f"the benchmark needs the bench dependency group (missing: {', '.join(missing)}); "
            "run it as `uv run --group bench python bench/run.py` (uv is required)"
        )
    env = dict(os.environ, NOETIC_BENCH_REEXEC="1", UV_PROJECT_ENVIRONMENT=str(BENCH / ".venv"))
    env.pop("VIRTUAL_ENV", None)
    command = [uv, "run", "--project", str(ROOT), "--locked", "--all-packages", "--no-default-groups"]
    command += ["--group", "bench", "python", str(Path(__file__).resolve()), *sys.argv[1:]]
    os.execvpe(uv, command, env)


def worker(*args: str) -> dict[str, Any]:
    """One measurement in a fresh interpreter; failures are returned, not raised."""
    command = [sys.executable, str(BENCH / "worker.py"), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=WORKER_TIMEOUT, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {WORKER_TIMEOUT:.0f} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def import_time(statement: str, *paths: Path) -> dict[str, Any]:
    """Seconds `statement` takes in a fresh interpreter (startup itself excluded): wall time
    (`seconds`, what S4 reports) and the process's CPU time (`cpu_seconds`, which a busy machine
    disturbs less: time spent waiting for a core is not in it).

    `paths`, when given, go first on the module search path (`PYTHONPATH`): another checkout's
    `packages/core/src`, say; give them to every program that is compared, the floor included.
    """
    code = (
        f"import time\nt, c = time.perf_counter(), time.process_time()\n{statement}\n"
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    # The warm-up must be able to write bytecode caches, or every subject is timed compiling its source.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(map(str, paths))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    wall, cpu = done.stdout.split()
    return {"seconds": float(wall), "cpu_seconds": float(cpu)}


def rotate(names: tuple[str, ...], by: int) -> list[str]:
    """`names` starting at position `by` (so no subject always runs first)."""
    k = by % len(names)
    return [*names[k:], *names[:k]]


def run(reps: int, only: tuple[str, ...], log: Any) -> dict[str, Any]:
    """Every measurement of every repetition: {"scenario/subject[/size]": [result, ...]}."""
    import growth

    samples: dict[str, list[dict[str, Any]]] = {}

    def record(key: str, result: dict[str, Any]) -> None:
        samples.setdefault(key, []).append(result)
        shown = result.get("error") or result.get("pending") or f"{result.get('seconds', 0):.4f} s"
        print(f"  {key:<34} {shown}", file=log, flush=True)

    if "s4" in only:  # the first import after an install also writes bytecode caches
        for statement in IMPORTS.values():
            import_time(statement)
    for rep in range(reps):
        print(f"repetition {rep + 1}/{reps}", file=log, flush=True)
        for scenario in only:
            if scenario == "s4":
                for k in range(IMPORT_ROUNDS):
                    for name in rotate(tuple(IMPORTS), rep * IMPORT_ROUNDS + k):
                        record(f"s4/{name}", import_time(IMPORTS[name]))
            elif scenario == "s3x":
                for name in rotate(S3X_SUBJECTS, rep):
                    record(f"s3x/{name}", worker("s3", name, str(S3X_RUNS)))
            elif scenario == "sessions":
                for mode, threads in SESSION_MODES.items():
                    record(f"sessions/{mode}", worker("sessions", mode, str(threads)))
            elif scenario == "s6":  # every variant side by side, the bare one as the reference
                for variant in rotate(tuple(S6_VARIANTS), rep):
                    record(f"s6/{S6_VARIANTS[variant]}", worker("s6", variant))
            elif scenario == "growth":
                for name, sizes in growth.SIZES.items():
                    for size in sizes:
                        record(f"growth/{name}/{size}", worker("growth", name, str(size)))
            else:
                subjects = {"s2": S2_SUBJECTS, "s3": S3_SUBJECTS, "s5": S5_SUBJECTS}.get(scenario, SUBJECTS)
                for name in rotate(subjects, rep):
                    record(f"{scenario}/{name}", worker(scenario, name))
                    for size in S2_SIZES.get(name, ()) if scenario == "s2" else ():
                        record(f"s2size/{name}/{size}", worker(scenario, name, str(size)))
    return samples


def environment() -> dict[str, Any]:
    """What the numbers were measured on."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for dist in (
        "noetic-core",
        "pydantic-ai-slim",
        "openai-agents",
        "langgraph",
        "langchain-core",
        "pydantic",
        "anyio",
    ):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "not installed"
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "packages"], capture_output=True, text=True, cwd=ROOT
    )
    return {
        "python": sys.version.split()[0],
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "commit": commit.stdout.strip()
        + ("+uncommitted changes in packages/" if dirty.stdout.strip() else ""),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "versions": versions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions of every measurement (default 5)")
    parser.add_argument(
        "--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), help="scenarios to run"
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="where report.md, ratios.png and raw.json go"
    )
    parser.add_argument(
        "--from-raw",
        type=Path,
        default=None,
        help="re-render the report from a raw.json instead of measuring",
    )
    args = parser.parse_args()
    ensure_environment()
    sys.path.insert(0, str(BENCH))
    import report

    if args.from_raw is not None:
        raw = json.loads(args.from_raw.read_text())
    else:
        started = time.monotonic()
        samples = run(args.reps, tuple(args.only), sys.stderr)
        raw = {
            "environment": environment(),
            "reps": args.reps,
            "minutes": (time.monotonic() - started) / 60,
            "samples": samples,
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "raw.json").write_text(json.dumps(raw, indent=1) + "\n")
    tables = report.summarise(raw)
    print(report.console(tables))
    report.write(raw, tables, args.out)
    print(f"\nwrote {args.out / 'report.md'} and {args.out / 'ratios.png'}")


if __name__ == "__main__":
    main()
