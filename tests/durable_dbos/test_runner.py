"""`DbosRunner` on its own (no worker running), on asyncio and trio: enqueue, status, bounded
waits, bad agent references, and the checks on results read back from the database."""

from __future__ import annotations

import noetic as nt
import pytest
from dbos_fleet import AGENT, Fleet
from noetic_durable_dbos.runner import DbosRunner, ExecutionResult, dbos_database_url

pytestmark = pytest.mark.anyio


async def test_a_result_wait_is_bounded(fleet: Fleet) -> None:
    async with DbosRunner(fleet.url) as runner:  # no worker: it stays queued
        execution_id = await runner.enqueue(AGENT, "x")
        assert await runner.status(execution_id) == "queued"
        with pytest.raises(nt.NoeticError) as err:
            await runner.result(execution_id, timeout=0.3)
        assert err.value.code == "RESULT_TIMEOUT"
        with pytest.raises(nt.NoeticError) as err:
            await runner.result("never-enqueued")
        assert err.value.code == "UNKNOWN_EXECUTION"


async def test_an_agent_must_be_a_module_attr_reference(database_url: str) -> None:
    async with DbosRunner(database_url) as runner:
        with pytest.raises(nt.NoeticConfigError) as err:
            await runner.enqueue("not-a-reference", "x")
    assert err.value.code == "INVALID_STEP"


def test_the_runner_needs_a_postgres_url() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        DbosRunner("sqlite:///run.db")
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert dbos_database_url("postgres://u@h/db?claim_lease=3") == "postgresql://u@h/db"


@pytest.mark.parametrize(
    "record",
    [
        None,
        {"status": "exploded"},
        {"status": "completed", "cost": "a lot"},
        {"status": "completed", "cost": float("nan")},
        {"status": "completed", "billed_cost": True},
    ],
)
def test_a_recorded_result_a_worker_never_writes_is_corrupt(record: object) -> None:
    with pytest.raises(nt.NoeticError) as err:
        ExecutionResult.from_record("e", record)
    assert err.value.code == "CHECKPOINT_CORRUPT"


def test_a_result_round_trips_through_its_record() -> None:
    result = ExecutionResult(
        "e",
        "completed",
        output={"a": [1]},
        text="t",
        cost=0.5,
        billed_cost=0.25,
        resumed=True,
        executor_id="w1",
    )
    assert ExecutionResult.from_record("e", result.to_record()) == result


async def test_an_unreachable_database_is_a_store_failure_without_the_password() -> None:
    async with DbosRunner("postgresql://app:hunter2@127.0.0.1:1/agents") as runner:
        with pytest.raises(nt.NoeticError) as err:
            await runner.enqueue(AGENT, "x")
    assert err.value.code == "CHECKPOINT_STORE_FAILED"
    assert "127.0.0.1:1/agents" in err.value.message
    assert "hunter2" not in str(err.value)


def test_the_enqueue_command_reports_an_unreachable_database(fleet: Fleet) -> None:
    done = fleet.noetic("enqueue", "--storage", "postgresql://app@127.0.0.1:1/agents", AGENT)
    assert done.returncode == 2
    assert "CHECKPOINT_STORE_FAILED" in done.stderr and "Traceback" not in done.stderr


def test_noetic_plugins_lists_the_store_and_the_commands() -> None:
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "noetic.cli", "plugins", "--json"], capture_output=True, text=True, timeout=120
    )
    report = {p["name"]: p for p in json.loads(done.stdout)}
    entry = report["durable-dbos"]
    assert entry["distribution"] == "noetic-durable-dbos" and entry["error"] is None
    assert {"checkpoint store postgresql", "checkpoint store postgres"} <= set(entry["registered"])
    assert {"command worker", "command enqueue", "command result"} <= set(entry["registered"])
