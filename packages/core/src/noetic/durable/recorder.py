"""How the harness makes an execution durable, and how it picks one up again.

- `begin` (a new execution, when the harness has storage): claim the execution id, refuse an id
  that already has a checkpoint (`EXECUTION_EXISTS`), write the first snapshot, and attach a
  `Recorder` and an empty `StepLedger` to the `Execution`.
- `restore` (`harness.resume`): claim the id, read the snapshot and the ledger, and return a
  `Restored` the harness runs as a turn — a context with the original id, thread, resource,
  base item log, state and completion signal, whose ledger replays what was recorded (RS-14).
- `Recorder.save`: the snapshot plus a completed step's ledger rows, as one atomic write.
  Saves are serialised, so snapshots land in the order they were taken. A failing save is
  logged and never fails the step (CTX-16): the execution goes on, only less resumable.
- `clear`: remove the snapshot and every ledger shard (RS-13).

The claim is held for the whole attempt and released when the turn ends; a crashed process's
claim disappears with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from noetic.durable.items import Declarations
from noetic.durable.ledger import LedgerWindow, LedgerWrite, StepLedger, StepLedgerRetention, load_ledger
from noetic.durable.snapshot import (
    ExecutionSnapshot,
    SnapshotWriter,
    import_layers,
    is_plain_json,
    load_snapshot,
    snapshot_key,
)
from noetic.durable.store import CheckpointStore, Claim, execution_prefix
from noetic.errors import NoeticError
from noetic.execution_context import Context
from noetic.items import ItemLog

if TYPE_CHECKING:
    from noetic.runtime import Execution

__all__ = ["Recorder", "Restored", "begin", "clear", "restore"]

log = logging.getLogger("noetic.durable")


class Recorder:
    """Persists one execution's snapshot and ledger rows; holds its claim until `close`."""

    __slots__ = ("_claim", "_lock", "_store", "_writer")

    def __init__(self, store: CheckpointStore, claim: Claim, writer: SnapshotWriter):
        self._store = store
        self._claim = claim
        self._writer = writer
        self._lock = anyio.Lock()

    async def save(self, run: Execution, write: LedgerWrite | None = None) -> None:
        """Write the snapshot (and `write`'s ledger rows) atomically; log a failure."""
        async with self._lock:
            try:
                sets = {self._writer.key: await self._writer.capture(run)}
                deletes: list[str] = []
                if write is not None:
                    sets.update(write.sets)
                    deletes = write.deletes
                await self._store.write(sets, deletes)
            except Exception as exc:  # CTX-16: no save failure may fail the step
                log.warning(
                    "checkpoint of execution %s failed; the run goes on but cannot resume from here: %s",
                    self._writer.execution_id,
                    exc,
                    exc_info=True,
                )

    async def close(self) -> None:
        """Release the execution's claim (shielded: it must happen even on cancellation)."""
        with anyio.CancelScope(shield=True):
            await self._claim.release()


async def begin(
    run: Execution, store: CheckpointStore, retention: StepLedgerRetention, *, input: Any, first_item: int
) -> None:
    """Make the new execution of `run` durable (see the module docstring).

    Raises `EXECUTION_LOCKED` or `EXECUTION_EXISTS`; when the store itself fails, or the input
    is not plain JSON, it logs why and the execution runs without a checkpoint.
    """
    ctx = run.root
    assert ctx is not None
    if not is_plain_json(input):
        log.warning("execution %s is not checkpointed: its input is not plain JSON (%r)", ctx.id, input)
        return
    try:
        claim = await store.claim(ctx.id)
    except NoeticError as exc:
        if exc.code == "EXECUTION_LOCKED":
            raise
        log.warning("execution %s is not checkpointed: the checkpoint store failed: %s", ctx.id, exc)
        return
    try:
        existing = await store.get(snapshot_key(ctx.id))
    except Exception as exc:
        await claim.release()
        log.warning(
            "execution %s is not checkpointed: the checkpoint store failed: %s", ctx.id, exc, exc_info=True
        )
        return
    except BaseException:
        with anyio.CancelScope(shield=True):
            await claim.release()
        raise
    if existing is not None:
        await claim.release()
        raise NoeticError(
            "EXECUTION_EXISTS",
            f"execution {ctx.id!r} already has a checkpoint; resume({ctx.id!r}) continues it, "
            f"clear_checkpoint({ctx.id!r}) discards it so the id can start over",
            execution_id=ctx.id,
        )
    run.recorder = Recorder(store, claim, SnapshotWriter(ctx, input=input, first_item=first_item))
    run.ledger = StepLedger(ctx.id, retention=retention)
    await run.recorder.save(run)


@dataclass(frozen=True, slots=True)
class Restored:
    """An execution read back from its checkpoint, claimed for this attempt."""

    snapshot: ExecutionSnapshot
    window: LedgerWindow
    claim: Claim
    store: CheckpointStore
    declarations: Declarations

    def context(self, run: Execution) -> Context:
        """The root context of the resumed attempt: snapshot-owned identity, log and state."""
        snap = self.snapshot
        ctx = Context(
            run,
            item_log=ItemLog(snap.items),
            state=snap.state if snap.has_state else None,
            id=snap.execution_id,
            thread_id=snap.thread_id,
            resource_id=snap.resource_id,
        )
        if snap.completed:
            ctx.complete(snap.completion_value)
        return ctx

    async def attach(self, run: Execution, retention: StepLedgerRetention) -> None:
        """Give `run` (whose root is `context(run)`) its layer state, ledger and recorder."""
        ctx = run.root
        assert ctx is not None
        snap = self.snapshot
        await import_layers(run, snap.layers)
        run.ledger = StepLedger(
            ctx.id, retention=retention, recovered=self.window, declarations=self.declarations
        )
        run.recorder = Recorder(
            self.store, self.claim, SnapshotWriter(ctx, input=snap.input, first_item=snap.first_item)
        )


async def restore(store: CheckpointStore, execution_id: str, declarations: Declarations) -> Restored:
    """Claim `execution_id` and read its checkpoint (`UNKNOWN_EXECUTION` when there is none)."""
    claim = await store.claim(execution_id)
    try:
        snapshot = await load_snapshot(store, execution_id, declarations)
        if snapshot is None:
            raise NoeticError(
                "UNKNOWN_EXECUTION",
                f"there is no checkpoint for execution {execution_id!r} (it never ran with this "
                "storage, or its checkpoint was cleared)",
                execution_id=execution_id,
            )
        window = await load_ledger(store, execution_id)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await claim.release()
        raise
    return Restored(snapshot, window, claim, store, declarations)


async def clear(store: CheckpointStore, execution_id: str) -> None:
    """Remove an execution's snapshot and every ledger shard in one write (RS-13).

    Raises `EXECUTION_LOCKED` while the execution runs or resumes.
    """
    claim = await store.claim(execution_id)
    try:
        keys = await store.list_prefix(execution_prefix(execution_id))
        if keys:
            await store.write({}, keys)
    finally:
        with anyio.CancelScope(shield=True):
            await claim.release()
