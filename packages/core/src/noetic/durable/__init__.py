"""Durable execution: checkpoint stores, the step ledger and resume (rules RS-1..RS-17).

`AgentHarness(storage=...)` takes a `CheckpointStore` or a URL resolved through the
`register_checkpoint_stores` hook (`"sqlite:///run.db"`, `"memory://"`). With storage, every
execution is checkpointed as it runs; `await harness.resume(execution_id)` continues one,
replaying completed steps from the ledger instead of paying for them again, and
`await harness.clear_checkpoint(execution_id)` forgets one.
"""

from __future__ import annotations

from noetic.durable.ledger import StepLedger, StepLedgerRetention, StepLedgerStats
from noetic.durable.memory import MemoryCheckpointStore
from noetic.durable.sqlite import SqliteCheckpointStore
from noetic.durable.store import CheckpointStore, Claim

__all__ = [
    "CheckpointStore",
    "Claim",
    "MemoryCheckpointStore",
    "SqliteCheckpointStore",
    "StepLedger",
    "StepLedgerRetention",
    "StepLedgerStats",
]
