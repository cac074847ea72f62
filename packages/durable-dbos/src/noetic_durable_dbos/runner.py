"""`DbosRunner`: enqueue Noetic executions onto a DBOS queue; read their status and result
from any process.

An execution is one DBOS workflow whose workflow id **is** the Noetic execution id, so
enqueueing the same id twice attaches to the one workflow instead of starting a second. The
runner talks only to Postgres (through `dbos.DBOSClient`); worker processes (`noetic worker`,
see `noetic_durable_dbos.worker`) dequeue and run the executions. Every DBOS record is JSON
(DBOS's portable serializer), never pickle.

The client calls are synchronous DBOS calls run in worker threads, so the runner works on
asyncio and trio.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from noetic.errors import NoeticConfigError, NoeticError

from noetic_durable_dbos.store import display_url, postgres_store_from_url

__all__ = [
    "DEFAULT_QUEUE",
    "WORKFLOW_NAME",
    "DbosRunner",
    "ExecutionResult",
    "dbos_database_url",
]

T = TypeVar("T")

#: The DBOS application every Noetic worker and runner belongs to.
APPLICATION = "noetic"
#: The queue executions go to unless told otherwise.
DEFAULT_QUEUE = "noetic"
#: The registered name of the DBOS workflow that runs one execution.
WORKFLOW_NAME = "noetic_execution"
#: DBOS workflow statuses and what they mean for an execution.
_STATUSES = {
    "ENQUEUED": "queued",
    "DELAYED": "queued",
    "PENDING": "running",
    "SUCCESS": "finished",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed",
}


def dbos_database_url(storage: str) -> str:
    """The DBOS system database URL for a `postgresql://` storage URL (the same database,
    without the checkpoint store's own options)."""
    if not storage.startswith(("postgresql://", "postgres://")):
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            "DBOS workers and runners need a postgresql:// storage URL",
            hint="Write for example --storage postgresql://user@db-host:5432/agents.",
        )
    url = postgres_store_from_url(storage).url
    return "postgresql://" + url.split("://", 1)[1]


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    """The outcome of one execution run by a worker.

    `cost` is the whole execution's spend (steps replayed after a recovery included);
    `billed_cost` is what the attempt that finished paid. `resumed` says whether that attempt
    resumed from the step ledger; `executor_id` names the worker that finished it.
    """

    execution_id: str
    status: str
    output: Any = None
    text: str = ""
    cost: float = 0.0
    billed_cost: float = 0.0
    resumed: bool = False
    executor_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    @classmethod
    def from_record(cls, execution_id: str, record: Any) -> ExecutionResult:
        """Rebuild a result from the JSON a worker recorded (checked: it came from a database)."""
        if not isinstance(record, Mapping) or record.get("status") not in ("completed", "failed"):
            raise NoeticError(
                "CHECKPOINT_CORRUPT",
                f"the recorded result of execution {execution_id!r} is not one a worker writes",
                execution_id=execution_id,
            )

        def number(name: str) -> float:
            value = record.get(name, 0.0)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise NoeticError(
                    "CHECKPOINT_CORRUPT",
                    f"the recorded result of execution {execution_id!r} has a bad {name}: {value!r}",
                    execution_id=execution_id,
                )
            return float(value)

        def text(name: str) -> str | None:
            value = record.get(name)
            return value if isinstance(value, str) else None

        return cls(
            execution_id=execution_id,
            status=str(record["status"]),
            output=record.get("output"),
            text=text("text") or "",
            cost=number("cost"),
            billed_cost=number("billed_cost"),
            resumed=record.get("resumed") is True,
            executor_id=text("executor_id"),
            error_code=text("error_code"),
            error_message=text("error_message"),
        )

    def to_record(self) -> dict[str, Any]:
        """The JSON a worker records as the workflow's output."""
        return {
            "status": self.status,
            "output": self.output,
            "text": self.text,
            "cost": self.cost,
            "billed_cost": self.billed_cost,
            "resumed": self.resumed,
            "executor_id": self.executor_id,
            "error_code": self.error_code,
            "error_message": self.error_message,
        }


class DbosRunner:
    """Enqueue executions for `noetic worker` processes and read what became of them.

    `storage` is the `postgresql://` URL the workers use; `queue` the DBOS queue they serve.
    The DBOS tables are created on first use when no worker has created them yet.
    """

    def __init__(self, storage: str, *, queue: str = DEFAULT_QUEUE):
        self.system_database_url = dbos_database_url(storage)
        self.where = display_url(self.system_database_url)
        self.queue = queue
        self._client: Any = None
        self._lock = anyio.Lock()

    async def _dbos(self) -> Any:
        async with self._lock:
            if self._client is None:
                self._client = await self._call(self._connect)
            return self._client

    async def _call(self, fn: Callable[[], T]) -> T:
        """Run a blocking DBOS call in a worker thread; a database failure is `CHECKPOINT_STORE_FAILED`."""
        try:
            return await anyio.to_thread.run_sync(fn)
        except NoeticError:
            raise
        except Exception as exc:  # DBOS raises SQLAlchemy errors and its own alike
            raise NoeticError(
                "CHECKPOINT_STORE_FAILED",
                f"the DBOS system database {self.where} failed: {type(exc).__name__}: {exc}",
                where=self.where,
            ) from exc

    def _connect(self) -> Any:
        from dbos import DBOS, DBOSClient
        from dbos._serialization import DBOSPortableJSON

        DBOS.migrate(self.system_database_url)  # idempotent; workers do the same on launch
        return DBOSClient(
            system_database_url=self.system_database_url,
            serializer=DBOSPortableJSON,
            application_name=APPLICATION,
            system_database_pool_size=4,
            retry_connection_errors=False,  # bounded waits are ours (`result(timeout=)`), not a hang
        )

    async def enqueue(self, agent: str, input: Any, *, execution_id: str | None = None) -> str:
        """Put one execution of `agent` (a `module:attr` the workers serve) on the queue.

        Returns the execution id (a new one unless given). Enqueueing an id that is already
        queued, running or finished attaches to that execution: it never runs twice.
        """
        if not isinstance(agent, str) or ":" not in agent:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"the agent must be a 'module:attr' reference the workers can import, got {agent!r}",
                hint="Pass for example agent='my_agents:support'.",
            )
        execution_id = execution_id or f"exec_{uuid.uuid4().hex}"
        client = await self._dbos()
        options = {"queue_name": self.queue, "workflow_name": WORKFLOW_NAME, "workflow_id": execution_id}
        await self._call(lambda: client.enqueue(options, agent, execution_id, input))
        return execution_id

    async def status(self, execution_id: str) -> str:
        """`queued`, `running`, `finished`, `failed`, `cancelled`, or `unknown` (no such execution)."""
        client = await self._dbos()
        found = await self._call(lambda: client.list_workflows(workflow_ids=[execution_id]))
        if not found:
            return "unknown"
        status = _STATUSES.get(found[0].status, "running")
        if status == "finished":
            recorded = ExecutionResult.from_record(execution_id, found[0].output)
            return "failed" if recorded.status == "failed" else "finished"
        return status

    async def result(
        self, execution_id: str, *, timeout: float | None = None, poll: float = 0.2
    ) -> ExecutionResult:
        """Wait for an execution to finish and return its result.

        A failed execution raises its `NoeticError`; an unknown id raises `UNKNOWN_EXECUTION`;
        `timeout` (seconds) raises `RESULT_TIMEOUT` while it is still queued or running.
        """
        client = await self._dbos()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                found = await self._call(lambda: client.list_workflows(workflow_ids=[execution_id]))
            except NoeticError:  # the database is restarting or unreachable: keep waiting
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                await anyio.sleep(poll)
                continue
            if not found:
                raise NoeticError(
                    "UNKNOWN_EXECUTION",
                    f"no execution {execution_id!r} was ever enqueued on this database",
                    execution_id=execution_id,
                )
            workflow = found[0]
            if workflow.status == "SUCCESS":
                outcome = ExecutionResult.from_record(execution_id, workflow.output)
                if outcome.status == "failed":
                    raise NoeticError(
                        outcome.error_code or "EXECUTION_FAILED",
                        outcome.error_message or f"execution {execution_id!r} failed",
                        execution_id=execution_id,
                    )
                return outcome
            if _STATUSES.get(workflow.status) in ("failed", "cancelled"):
                raise NoeticError(
                    "EXECUTION_FAILED",
                    f"execution {execution_id!r} ended as {workflow.status} in DBOS: {workflow.error}",
                    execution_id=execution_id,
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise NoeticError(
                    "RESULT_TIMEOUT",
                    f"execution {execution_id!r} is still {_STATUSES.get(workflow.status, 'running')} "
                    f"after {timeout} s",
                    execution_id=execution_id,
                )
            await anyio.sleep(poll)

    async def aclose(self) -> None:
        """Close the connections to the system database."""
        async with self._lock:
            client, self._client = self._client, None
        if client is not None:
            await anyio.to_thread.run_sync(client.destroy)

    async def __aenter__(self) -> DbosRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
