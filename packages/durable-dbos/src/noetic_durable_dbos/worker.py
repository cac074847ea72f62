"""`Worker`: a process that runs queued Noetic executions through an `AgentHarness`.

What each layer records, so nothing is recorded or paid twice:

- **DBOS** (its `dbos` schema) records the *workflow* of an execution — workflow id = execution
  id, its input, which executor holds it, its status, and its output once it finished — and
  the *queue* it waits on. Its one step, `noetic_attempt`, is one attempt at the execution.
- **The Noetic step ledger** (the checkpoint store's rows) records every completed *step* of
  the execution: its output, its spend, the items it added.

When a worker dies, `Liveness` notices its heartbeat stop and a live worker asks DBOS to
recover that executor's workflows; DBOS puts them back on their queue and some worker runs
the attempt again. The new attempt finds the execution's checkpoint and `resume`s it: the
steps in the ledger replay without a model call and without billing (their spend is restored
into `cost`); only steps that had not completed run. A finished attempt is DBOS's recorded
step output, so a worker that dies after finishing never causes another run.

DBOS runs async workflows on its own asyncio event loop, so workers need asyncio.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from noetic.durable.snapshot import is_plain_json, snapshot_key
from noetic.durable.store import CheckpointStore
from noetic.errors import NoeticConfigError, NoeticError
from noetic.harness import AgentHarness
from noetic.registry import import_target
from noetic.steps.base import Step

from noetic_durable_dbos.liveness import Liveness
from noetic_durable_dbos.runner import (
    APPLICATION,
    DEFAULT_QUEUE,
    WORKFLOW_NAME,
    ExecutionResult,
    dbos_database_url,
)
from noetic_durable_dbos.store import PostgresCheckpointStore, postgres_store_from_url

__all__ = ["Worker", "load_agent"]

log = logging.getLogger("noetic_durable_dbos.worker")

#: Recorded in every workflow: workers only recover and dequeue their own version's workflows.
APPLICATION_VERSION = "noetic-durable-dbos-1"

#: A harness factory: called with the worker's shared checkpoint store for every attempt.
HarnessFactory = Callable[[CheckpointStore], AgentHarness]


def load_agent(reference: str, *, model: str | None = None) -> HarnessFactory:
    """The harness factory for a `module:attr` reference.

    The attribute is either a step (the agent graph; the harness is named after the attribute
    and uses `model`), or a callable taking the checkpoint store and returning an
    `AgentHarness` built with `storage=` that store.
    """
    target = import_target(reference)
    if isinstance(target, Step):
        name = reference.rpartition(":")[2].rpartition(".")[2] or "agent"
        return lambda store: AgentHarness(name, agent_graph=target, storage=store, model=model)
    if callable(target):
        return _checked_factory(reference, target)
    raise NoeticConfigError(
        "INVALID_STEP",
        f"{reference!r} is a {type(target).__name__}, not a step or a harness factory",
        hint="Point at a step (nt.sequence(...), nt.loop(...)) or at def make(storage) -> AgentHarness.",
    )


def _checked_factory(reference: str, factory: Callable[..., Any]) -> HarnessFactory:
    def build(store: CheckpointStore) -> AgentHarness:
        harness = factory(store)
        if not isinstance(harness, AgentHarness) or harness.storage is not store:
            raise NoeticConfigError(
                "INVALID_STEP",
                f"{reference!r} must return an AgentHarness built with storage= the store it was given",
                hint="Write def make(storage): return nt.AgentHarness('name', agent_graph=..., storage=storage).",
            )
        return harness

    return build


class Worker:
    """Serves one DBOS queue: dequeues executions, runs them, recovers dead workers' executions.

    `agents` are the `module:attr` references this worker runs (every worker of a queue should
    serve the same ones). `concurrency` caps the executions running at once on this worker
    (DBOS's per-executor limit), `global_concurrency` across all workers of the queue.
    `heartbeat` and `dead_after` (seconds) drive dead-worker detection; `lock_wait` bounds
    how long a recovered attempt waits for a dead attempt's claim to lapse.
    """

    def __init__(
        self,
        storage: str,
        agents: Sequence[str],
        *,
        queue: str = DEFAULT_QUEUE,
        concurrency: int = 4,
        global_concurrency: int | None = None,
        executor_id: str | None = None,
        heartbeat: float = 2.0,
        dead_after: float = 10.0,
        poll_interval: float = 0.5,
        lock_wait: float | None = None,
        model: str | None = None,
    ):
        if not agents:
            raise NoeticConfigError(
                "INVALID_STEP", "a worker needs at least one agent to run", hint="Pass module:attr."
            )
        self.storage = storage
        self.system_database_url = dbos_database_url(storage)
        self.queue = queue
        self.concurrency = concurrency
        self.global_concurrency = global_concurrency
        self.executor_id = executor_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.heartbeat = heartbeat
        self.dead_after = dead_after
        self.poll_interval = poll_interval
        self.store: PostgresCheckpointStore = postgres_store_from_url(storage)
        self.lock_wait = lock_wait if lock_wait is not None else 2 * self.store.claim_lease + 5
        self.agents: Mapping[str, HarnessFactory] = {ref: load_agent(ref, model=model) for ref in agents}

    # --- one attempt ------------------------------------------------------------------------

    async def run_attempt(self, agent: str, execution_id: str, input: Any) -> dict[str, Any]:
        """Run or resume one execution; the JSON record DBOS keeps as the attempt's output."""
        factory = self.agents.get(agent)
        if factory is None:
            return self._failed(execution_id, "UNKNOWN_AGENT", f"this worker does not serve {agent!r}")
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                resumed = await self.store.get(snapshot_key(execution_id)) is not None
                async with factory(self.store) as harness:
                    if resumed:
                        response = await harness.resume(execution_id)
                    else:
                        response = await harness.run(input, execution_id=execution_id)
            except NoeticError as exc:
                # Another attempt holds the execution (a dead worker's claim not yet lapsed) or
                # created it between our look and our start: wait, then look again.
                if exc.code in ("EXECUTION_LOCKED", "EXECUTION_EXISTS") and time.monotonic() < deadline:
                    await anyio.sleep(0.25)
                    continue
                return self._failed(execution_id, exc.code, exc.message)
            output = response.output if is_plain_json(response.output) else response.text
            return ExecutionResult(
                execution_id=execution_id,
                status="completed",
                output=output,
                text=response.text,
                cost=response.cost,
                billed_cost=response.billed_cost,
                resumed=resumed,
                executor_id=self.executor_id,
            ).to_record()

    def _failed(self, execution_id: str, code: str, message: str) -> dict[str, Any]:
        log.warning("execution %s failed: %s: %s", execution_id, code, message)
        return ExecutionResult(
            execution_id=execution_id,
            status="failed",
            executor_id=self.executor_id,
            error_code=code,
            error_message=message,
        ).to_record()

    # --- the process ------------------------------------------------------------------------

    def serve(self, stop: threading.Event) -> None:
        """Run until `stop` is set: heartbeat, sweep for dead workers, let DBOS run executions."""
        from dbos import DBOS
        from dbos._serialization import DBOSPortableJSON

        _bind(self)
        liveness = Liveness(
            self.system_database_url,
            self.executor_id,
            queue=self.queue,
            heartbeat=self.heartbeat,
            dead_after=self.dead_after,
        )
        while not liveness.beat():  # the database is not up yet: wait for it
            if stop.wait(self.heartbeat):
                return
        DBOS(
            config={
                "name": APPLICATION,
                "system_database_url": self.system_database_url,
                "executor_id": self.executor_id,
                "application_version": APPLICATION_VERSION,
                "serializer": DBOSPortableJSON,
                "sys_db_pool_size": max(4, self.concurrency + 2),
                "log_level": os.environ.get("NOETIC_DBOS_LOG_LEVEL", "WARNING"),
            }
        )
        try:
            DBOS.launch()
            DBOS.register_queue(
                self.queue,
                worker_concurrency=self.concurrency,
                global_concurrency=self.global_concurrency,
                polling_interval_sec=self.poll_interval,
                on_conflict="always_update",
            )
            log.info("worker %s serves queue %r: %s", self.executor_id, self.queue, ", ".join(self.agents))
            while not stop.wait(self.heartbeat):
                if liveness.beat():
                    liveness.sweep(_recover)
        finally:
            DBOS.destroy(workflow_completion_timeout_sec=int(self.lock_wait))
            liveness.leave()
            anyio.run(self.store.aclose)


def _recover(executor_ids: Sequence[str]) -> None:
    """Ask DBOS to put the dead executors' pending workflows back on their queues.

    DBOS 3 exposes this only as `_recover_pending_workflows` (what its admin server's
    recovery endpoint calls); the version range in pyproject.toml pins the API we rely on.
    """
    from dbos import DBOS

    DBOS._recover_pending_workflows(list(executor_ids))


# --- the DBOS workflow ---------------------------------------------------------------------------
# DBOS registers workflows by decorating functions, once per process and before launch. DBOS is
# one instance per process, so one worker is served per process: `_bind` records it.


class _Process:
    """The worker this process serves, and whether the workflow is registered with DBOS."""

    worker: Worker | None = None
    registered = False


def _bind(worker: Worker) -> None:
    _Process.worker = worker
    if _Process.registered:
        return
    from dbos import DBOS

    @DBOS.step(name="noetic_attempt")
    async def attempt(agent: str, execution_id: str, input: Any) -> dict[str, Any]:
        assert _Process.worker is not None
        return await _Process.worker.run_attempt(agent, execution_id, input)

    @DBOS.workflow(name=WORKFLOW_NAME)
    async def execution(agent: str, execution_id: str, input: Any) -> dict[str, Any]:
        return await attempt(agent, execution_id, input)

    _Process.registered = True
