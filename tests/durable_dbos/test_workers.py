"""Workers started with `noetic worker` on a real Postgres: executions run once each, a killed
worker's executions are recovered by a live one and resume from the step ledger without paying
twice, racing enqueues run one execution, and a Postgres restart loses nothing."""

from __future__ import annotations

import functools
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import anyio
import noetic as nt
import pytest
from dbos_agent import CLEAN_COST, CODE_STEPS, COSTS, MODEL_STEPS
from dbos_fleet import AGENT, Fleet
from noetic_durable_dbos.local_postgres import LocalPostgres
from noetic_durable_dbos.runner import DbosRunner, ExecutionResult

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Workers need asyncio (DBOS runs workflows on it); the runner alone is tested on trio too,
    in test_runner.py."""
    return "asyncio"


async def results(runner: DbosRunner, ids: list[str], timeout: float = 240) -> dict[str, ExecutionResult]:
    found: dict[str, ExecutionResult] = {}
    with anyio.fail_after(timeout):
        for execution_id in ids:
            found[execution_id] = await runner.result(execution_id, poll=0.1)
    return found


def wait_for(path: Path, timeout: float = 120) -> int:
    """The pid written into a park marker once it appears."""
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path.name} never parked"
        time.sleep(0.05)
    return int(path.read_text())


def wait_for_steps(fleet: Fleet, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(fleet.step_runs()) < count:
        assert time.monotonic() < deadline, f"fewer than {count} steps ran"
        time.sleep(0.05)


async def test_executions_run_once_each_and_results_read_from_another_client(fleet: Fleet) -> None:
    fleet.start(concurrency=2)
    fleet.start(concurrency=2)
    async with DbosRunner(fleet.url) as runner:
        ids = [await runner.enqueue(AGENT, f"task {i}", execution_id=f"e{i:02d}") for i in range(12)]
        assert await runner.status("never-enqueued") == "unknown"
    async with DbosRunner(fleet.url) as reader:  # another client: nothing shared but Postgres
        done = await results(reader, ids)
        assert await reader.status(ids[0]) == "finished"
    for execution_id, result in done.items():
        assert result.status == "completed"
        assert result.output == f"answer for {execution_id}"
        assert (result.cost, result.billed_cost, result.resumed) == (CLEAN_COST, CLEAN_COST, False)
    runs = Counter((e, s) for e, s, _, _ in fleet.step_runs())
    assert runs == Counter({(e, s): 1 for e in ids for s in (*CODE_STEPS, *MODEL_STEPS)})


async def test_an_unknown_agent_fails_with_its_code(fleet: Fleet) -> None:
    fleet.start()
    async with DbosRunner(fleet.url) as runner:
        execution_id = await runner.enqueue("nobody:serves_this", "x")
        with pytest.raises(nt.NoeticError) as err:
            await runner.result(execution_id, timeout=120)
        assert err.value.code == "UNKNOWN_AGENT"
        assert await runner.status(execution_id) == "failed"


async def test_two_workers_racing_for_one_execution_run_it_once(fleet: Fleet) -> None:
    fleet.start(concurrency=4)
    fleet.start(concurrency=4)
    async with DbosRunner(fleet.url) as first, DbosRunner(fleet.url) as second:
        async with anyio.create_task_group() as tg:
            for runner in (first, second, first, second):
                tg.start_soon(functools.partial(runner.enqueue, AGENT, "contended", execution_id="the-one"))
        one, other = await first.result("the-one", timeout=120), await second.result("the-one", timeout=120)
    assert one == other
    runs = Counter(s for e, s, _, _ in fleet.step_runs() if e == "the-one")
    assert runs == Counter({s: 1 for s in (*CODE_STEPS, *MODEL_STEPS)})


@pytest.mark.slow
async def test_killed_workers_executions_complete_without_paying_twice(fleet: Fleet) -> None:
    """3 workers, 200 executions; a worker is SIGKILLed three times, each at another point of
    the run and another step boundary (before any model call, between the model steps, after
    the last one). A replacement worker is started after each kill."""
    victims = {"e030": "start", "e100": "middle", "e160": "end"}
    fleet.park(victims)
    for _ in range(3):
        fleet.start(concurrency=1)
    ids = [f"e{i:03d}" for i in range(200)]
    killed: dict[str, int] = {}  # victim -> the pid of the worker killed while running it
    async with DbosRunner(fleet.url) as runner:
        for execution_id in ids:
            await runner.enqueue(AGENT, f"task {execution_id}", execution_id=execution_id)
        for victim in victims:
            pid = await anyio.to_thread.run_sync(wait_for, fleet.park_dir / victim)
            os.kill(pid, signal.SIGKILL)
            killed[victim] = pid
            fleet.start(concurrency=1)
        done = await results(runner, ids)
    assert all(r.status == "completed" for r in done.values())
    assert all(r.cost == CLEAN_COST for r in done.values()), "cost differs from a clean run's"
    assert {e for e, r in done.items() if r.resumed} == set(victims)
    runs = fleet.step_runs()
    # No completed step ran twice: every step ran once, but for the parked code step of each
    # victim, which its killed attempt entered and its recovered attempt ran again.
    counts = Counter((e, s) for e, s, _, _ in runs)
    expected = Counter({(e, s): 1 for e in ids for s in (*CODE_STEPS, *MODEL_STEPS)})
    expected.update({(e, s): 1 for e, s in victims.items()})
    assert counts == expected
    model_calls = [(e, s, c) for e, s, _, c in runs if s in MODEL_STEPS]
    assert len(model_calls) == len(ids) * len(MODEL_STEPS)  # model calls == a clean run's model steps
    # billed_cost: each step was paid once in all (the side channel), and each execution's
    # finishing attempt billed exactly what its killed attempt (if any) had not paid yet.
    assert sum(c for *_, c in runs) == len(ids) * CLEAN_COST
    for execution_id, result in done.items():
        paid_before = sum(c for e, _, p, c in runs if e == execution_id and p == killed.get(e))
        assert result.billed_cost + paid_before == CLEAN_COST, execution_id
    expected_bills = {"start": CLEAN_COST, "middle": COSTS["answer"], "end": 0.0}
    assert {v: done[v].billed_cost for v in victims} == {v: expected_bills[s] for v, s in victims.items()}


@pytest.mark.slow
async def test_a_postgres_restart_mid_run_loses_nothing(postgres: LocalPostgres, fleet: Fleet) -> None:
    fleet.start(concurrency=2)
    fleet.start(concurrency=2)
    ids = [f"r{i:02d}" for i in range(60)]
    async with DbosRunner(fleet.url) as runner:
        for execution_id in ids:
            await runner.enqueue(AGENT, f"task {execution_id}", execution_id=execution_id)
        # Restart once about a quarter of the steps have run.
        await anyio.to_thread.run_sync(wait_for_steps, fleet, 80)
    ran_before = len(fleet.step_runs())
    await anyio.to_thread.run_sync(lambda: postgres.restart(mode="immediate", down_for=1.0))
    async with DbosRunner(fleet.url) as runner:
        done = await results(runner, ids)
    assert all(r.status == "completed" and r.cost == CLEAN_COST for r in done.values())
    model_calls = Counter((e, s) for e, s, _, _ in fleet.step_runs() if s in MODEL_STEPS)
    assert set(model_calls) == {(e, s) for e in ids for s in MODEL_STEPS}
    assert all(workers.poll() is None for workers in fleet.workers), "a worker died in the restart"
    assert ran_before < len(fleet.step_runs()), "every step had run before the restart"


async def test_the_cli_enqueues_and_reads_results_and_a_worker_stops_cleanly(fleet: Fleet) -> None:
    worker = fleet.start(agents=(AGENT, "dbos_agent:shout"))
    queued = fleet.noetic(
        "enqueue", "--storage", fleet.url, "dbos_agent:shout", "--input", "hello", "--execution-id", "cli-1"
    )
    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.strip() == "cli-1"
    shown = fleet.noetic("result", "--storage", fleet.url, "cli-1", "--timeout", "120")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert (record["execution_id"], record["status"], record["output"]) == ("cli-1", "completed", "HELLO")
    missing = fleet.noetic("result", "--storage", fleet.url, "never-enqueued")
    assert missing.returncode == 1
    assert "UNKNOWN_EXECUTION" in missing.stderr and "Traceback" not in missing.stderr
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0


def test_a_worker_with_a_bad_agent_reference_exits_with_its_error(fleet: Fleet) -> None:
    done = fleet.noetic("worker", "--storage", fleet.url, "dbos_agent:COSTS")
    assert done.returncode == 2
    assert "INVALID_STEP" in done.stderr and "Traceback" not in done.stderr
    done = fleet.noetic("worker", "--storage", "sqlite:///x.db", AGENT)
    assert done.returncode == 2
    assert "postgresql://" in done.stderr


def pid_of(executor_id: str | None) -> int:
    """The pid inside a default executor id (`host-pid-random`)."""
    assert executor_id is not None
    return int(executor_id.rsplit("-", 2)[1])


@pytest.mark.slow
async def test_workers_killed_at_arbitrary_moments_rerun_only_what_was_in_flight(fleet: Fleet) -> None:
    """SIGKILL at moments the test does not choose, three executions at once per worker: a step
    in flight on the killed worker may run again (at least once), a completed one never does."""
    for _ in range(3):
        fleet.start(concurrency=3)
    ids = [f"k{i:03d}" for i in range(200)]
    killed: list[int] = []
    async with DbosRunner(fleet.url) as runner:
        for execution_id in ids:
            await runner.enqueue(AGENT, f"task {execution_id}", execution_id=execution_id)
        for threshold in (150, 550):  # of the 1000 step runs
            await anyio.to_thread.run_sync(wait_for_steps, fleet, threshold)
            busy = fleet.step_runs()[-1][2]  # the worker that ran the latest step: it is mid-run
            victim = next(w for w in fleet.workers if w.pid == busy)
            victim.send_signal(signal.SIGKILL)
            killed.append(busy)
            fleet.start(concurrency=3)
        done = await results(runner, ids)
    assert all(r.status == "completed" and r.cost == CLEAN_COST for r in done.values())
    runs = fleet.step_runs()
    by_step: dict[tuple[str, str], list[int]] = {}
    for e, s, p, _ in runs:
        by_step.setdefault((e, s), []).append(p)
    assert set(by_step) == {(e, s) for e in ids for s in (*CODE_STEPS, *MODEL_STEPS)}
    for key, pids in by_step.items():
        # Run again only when the first run was on a killed worker (in flight when it died).
        assert len(pids) == 1 or (len(pids) == 2 and pids[0] in killed), (key, pids)
    rerun = {e for (e, _), pids in by_step.items() if len(pids) == 2}
    assert len(rerun) <= 3 * len(killed)  # at most the executions in flight on the killed workers
    for execution_id, result in done.items():
        # billed_cost is exactly what the finishing attempt paid, by the side channel.
        finisher = pid_of(result.executor_id)
        paid = sum(c for e, _, p, c in runs if e == execution_id and p == finisher)
        assert result.billed_cost == paid, execution_id
    assert any(r.resumed for r in done.values())  # the kills did interrupt executions
