"""noetic-durable-dbos: run Noetic executions across worker processes and machines.

- `PostgresCheckpointStore` — the checkpoint store on PostgreSQL (`storage="postgresql://..."`);
- `DbosRunner` — enqueue executions onto a DBOS queue and read their status and results from
  any process; `Worker` / `noetic worker` — a process that runs them through an `AgentHarness`,
  detects dead workers and recovers their executions.

Workers run on asyncio (DBOS runs async workflows on its own asyncio loop); the store and the
runner's client calls also work on trio.
"""

from __future__ import annotations

from noetic_durable_dbos.runner import DbosRunner, ExecutionResult
from noetic_durable_dbos.store import PostgresCheckpointStore, postgres_store_from_url
from noetic_durable_dbos.worker import Worker

__all__ = ["DbosRunner", "ExecutionResult", "PostgresCheckpointStore", "Worker", "postgres_store_from_url"]
