"""Scale-out benchmark: executions per second with 1, 2 and 4 `noetic worker` processes on
Postgres + DBOS, and the per-step cost of the Postgres checkpoint store against SQLite, side by
side in one run on a throwaway PostgreSQL server (fsync on, like SQLite's synchronous=FULL).

    scripts/bootstrap.sh python bench/scale_out.py                 # writes bench/results/scale_out.md
    scripts/bootstrap.sh python bench/scale_out.py --executions 40 --steps 10 --runs 20

Kept short on purpose (the machine is shared): the numbers are ratios on one machine, not a
capacity plan. Workers import `agent` from this file, so it is also the benchmark's agent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
from noetic.durable import MemoryCheckpointStore, SqliteCheckpointStore
from noetic.durable.store import CheckpointStore
from noetic.testing import ScriptedModel, text_reply

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


def agent(storage: CheckpointStore) -> nt.AgentHarness:
    """Two model steps around a code step: a small but real durable execution."""
    model = ScriptedModel(default=lambda request: text_reply("ok", cost=0.001))
    graph = nt.sequence(
        "bench",
        [
            nt.call_model("plan", model=model),
            nt.run_code("work", lambda value: value),
            nt.call_model("answer", model=model),
        ],
    )
    return nt.AgentHarness("bench", agent_graph=graph, storage=storage, model=model)


# --- per-step overhead of the stores ------------------------------------------------------------


async def time_steps(storage: Any, steps: int, runs: int) -> float:
    """Median seconds per step of an execution of `steps` code steps on `storage`."""
    graph = nt.sequence("steps", [nt.run_code(f"s{i}", lambda value: value) for i in range(steps)])
    samples = []
    async with nt.AgentHarness("bench", agent_graph=graph, storage=storage) as harness:
        for _ in range(runs):
            started = time.perf_counter()
            await harness.run("x", execution_id=f"steps-{uuid.uuid4().hex}")
            samples.append((time.perf_counter() - started) / steps)
    return statistics.median(samples)


def store_overhead(url: str, steps: int, runs: int) -> dict[str, float]:
    from noetic_durable_dbos.store import PostgresCheckpointStore

    with tempfile.TemporaryDirectory() as tmp:

        async def measure() -> dict[str, float]:
            postgres = PostgresCheckpointStore(url)
            found = {
                "none": await time_steps(None, steps, runs),
                "memory": await time_steps(MemoryCheckpointStore(), steps, runs),
                "sqlite": await time_steps(SqliteCheckpointStore(f"{tmp}/bench.db"), steps, runs),
                "postgres": await time_steps(postgres, steps, runs),
            }
            await postgres.aclose()
            return found

        return anyio.run(measure)


# --- executions per second ----------------------------------------------------------------------


def fresh_database(admin_url: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def wait_for_workers(url: str, count: int, timeout: float = 120) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(url) as conn:
                (up,) = conn.execute("SELECT count(*) FROM noetic_workers").fetchone() or (0,)
            if up >= count:
                return
        except psycopg.Error:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{count} workers did not start")


def throughput(admin_url: str, workers: int, executions: int, concurrency: int) -> float:
    from noetic_durable_dbos.runner import DbosRunner

    url = fresh_database(admin_url)
    env = {**os.environ, "PYTHONPATH": str(BENCH)}
    argv = [sys.executable, "-m", "noetic.cli", "worker", "--storage", url, "scale_out:agent"]
    argv += ["--concurrency", str(concurrency), "--poll-interval", "0.05", "--heartbeat", "0.5"]
    processes = [
        subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)
    ]
    try:
        wait_for_workers(url, workers)

        async def run() -> float:
            async with DbosRunner(url) as runner:
                warm = [await runner.enqueue("scale_out:agent", "warm") for _ in range(workers)]
                for execution_id in warm:
                    await runner.result(execution_id, timeout=120, poll=0.05)
                started = time.perf_counter()
                ids = [await runner.enqueue("scale_out:agent", f"task {i}") for i in range(executions)]
                for execution_id in ids:
                    await runner.result(execution_id, timeout=300, poll=0.05)
                return executions / (time.perf_counter() - started)

        return anyio.run(run)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--executions", type=int, default=60, help="executions per worker count")
    parser.add_argument("--concurrency", type=int, default=4, help="executions at once per worker")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=20, help="code steps per store-overhead execution")
    parser.add_argument("--runs", type=int, default=20, help="store-overhead executions per store")
    args = parser.parse_args()
    subprocess.run(
        [str(BENCH.parent / "scripts" / "ensure-postgres.sh")], check=True, stdout=subprocess.DEVNULL
    )
    from noetic_durable_dbos.local_postgres import LocalPostgres

    with LocalPostgres(durable=True) as server:
        admin = server.url.rsplit("/", 1)[0] + "/postgres"
        overhead = store_overhead(fresh_database(admin), args.steps, args.runs)
        rates = {n: throughput(admin, n, args.executions, args.concurrency) for n in args.workers}
    base = overhead["none"]
    lines = [
        "# Scale-out: Postgres + DBOS workers",
        "",
        f"One run of `bench/scale_out.py` on {os.cpu_count()} cores: {args.executions} executions per "
        f"worker count (two model steps and a code step each, ScriptedModel), {args.concurrency} at once "
        "per worker; PostgreSQL with fsync on. Machine shared with other work: read ratios, not absolutes.",
        "",
        "| workers | executions/s | vs 1 worker |",
        "| ---: | ---: | ---: |",
    ]
    first = rates[args.workers[0]]
    lines += [f"| {n} | {rate:.1f} | {rate / first:.2f}x |" for n, rate in rates.items()]
    lines += [
        "",
        f"Per-step time of an execution of {args.steps} code steps (median of {args.runs} runs), "
        "each step checkpointed as one atomic batch:",
        "",
        "| storage | ms/step | overhead over no storage (ms) | vs SQLite |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, seconds in overhead.items():
        if name == "none":
            lines.append(f"| {name} | {seconds * 1000:.3f} | - | - |")
            continue
        extra = seconds - base
        lines.append(
            f"| {name} | {seconds * 1000:.3f} | {extra * 1000:.3f} | {extra / (overhead['sqlite'] - base):.3g}x |"
        )
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scale_out.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
