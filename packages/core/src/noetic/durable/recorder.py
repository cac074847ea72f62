"""How the harness makes an execution durable, and how it picks one up again.

- `begin` (a new execution, when the harness has storage): claim the execution id, refuse an id
  that already has a checkpoint (`EXECUTION_EXISTS`), write the start record — with the piece
  of the thread's history not stored yet (HS-1) — and the first snapshot in one batch, and
  attach a `Recorder` and an empty `StepLedger` to the `Execution`.
- `restore` (`harness.resume`): claim the id, read and check the start record, the snapshot
  and the whole ledger — any damage is `CHECKPOINT_CORRUPT` here, before the turn starts —
  and return a `Restored` the harness runs as a turn: a context with the original id,
  thread, resource, base item log, state and completion signal, whose ledger replays what
  was recorded (RS-14).
- `Recorder.save`: a completed step's ledger rows, the rows they supersede and the snapshot
  when it changed, as one atomic write — never the history again. `durability=` says when
  that write is committed (`durability_of`). A failing save is logged (one line) and never
  fails the step (CTX-16): the execution goes on, only less resumable. When the turn's
  closing write fails, `close` returns why, and the turn's response carries it.
- `clear`: remove every record of the execution (RS-13); the thread's history pieces it named
  stay, for the thread and its other executions (HS-4).

The claim is held for the whole attempt and released when the turn ends; a crashed process's
claim disappears with it.
"""

from __future__ import annotations

import logging
import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from noetic.durable.history import EMPTY, StoredPoint
from noetic.durable.items import Declarations
from noetic.durable.ledger import LedgerWindow, LedgerWrite, StepLedger, StepLedgerRetention, load_ledger
from noetic.durable.snapshot import (
    ExecutionSnapshot,
    Outcome,
    SnapshotWriter,
    import_layers,
    input_is_storable,
    load_snapshot,
    snapshot_key,
    start_rows,
    workflow_document,
)
from noetic.durable.store import CheckpointStore, Claim, corrupt, describe_error, execution_prefix
from noetic.errors import NoeticConfigError, NoeticError
from noetic.execution_context import Context
from noetic.items import ItemLog

if TYPE_CHECKING:
    from noetic.runtime import Execution

__all__ = [
    "DURABILITY_MODES",
    "Durability",
    "Recorder",
    "Restored",
    "begin",
    "clear",
    "durability_of",
    "restore",
]

log = logging.getLogger("noetic.durable")


#: When a completed step is committed (see `Durability`).
DURABILITY_MODES = ("step", "turn")
Durability = Literal["step", "turn"]


def durability_of(value: Any) -> Durability:
    """The harness's `durability=` option, checked at construction (`DURABILITY_INVALID`).

    - `"step"` (the default): each completed step is committed before the next one starts.
      With the SQLite store's default `synchronous=full` that commit is flushed to disk, so it
      survives a killed process and a power loss; with `?synchronous=normal` it survives a
      killed process, not a power loss or an OS crash.
    - `"turn"`: the steps of a turn are committed together when the turn ends (completed,
      failed or aborted) and at every `ctx.checkpoint()`. A turn that fails resumes as with
      `"step"`; a process killed mid-turn loses that turn's steps, which run (and are paid)
      again on resume from the turn's start.
    """
    if value in DURABILITY_MODES:
        return cast("Durability", value)
    raise NoeticConfigError(
        "DURABILITY_INVALID",
        f"durability must be one of {', '.join(map(repr, DURABILITY_MODES))}, got {value!r}",
        hint="Leave it out (or write durability='step') to commit every step; 'turn' commits at turn end.",
    )


class Recorder:
    """Persists one execution's records; holds its claim until `close`.

    Saves are serialised under a lock, so batches land in the order they were made. Under
    `durability="turn"` the batches of completed steps are merged in memory and written by
    the next flush (`ctx.checkpoint()` or the end of the turn).
    """

    __slots__ = (
        "_claim",
        "_deletes",
        "_lock",
        "_mode",
        "_saved_body",
        "_sets",
        "_staged_body",
        "_store",
        "_writer",
        "failure",
    )

    def __init__(
        self,
        store: CheckpointStore,
        claim: Claim,
        writer: SnapshotWriter,
        *,
        mode: Durability,
        start: dict[str, str] | None = None,
    ):
        self._store = store
        self._claim = claim
        self._writer = writer
        self._mode = mode
        self._lock = anyio.Lock(fast_acquire=True)  # an uncontended save does not yield
        #: Rows not yet written (the start record, then whatever `"turn"` holds back).
        self._sets: dict[str, str] = dict(start or {})
        self._deletes: dict[str, None] = {}
        #: The snapshot in storage and the one staged to replace it (without `captured_at`).
        self._saved_body: str | None = None
        self._staged_body: str | None = None
        #: Why the latest save failed (None once one succeeds): what `close` reports.
        self.failure: NoeticError | None = None

    async def save(self, run: Execution, write: LedgerWrite | None = None, *, flush: bool = True) -> None:
        """Stage the snapshot (when it changed) and `write`'s rows; write everything staged as
        one atomic batch unless this is a step's save under `"turn"` (`flush=False`).
        A failure is logged, never raised (CTX-16)."""
        async with self._lock:
            try:
                if write is not None:  # staged first: a failing capture leaves it for the next save
                    self._stage(write.sets, write.deletes)
                body = await self._writer.capture(run)
                if body != (self._saved_body if self._staged_body is None else self._staged_body):
                    self._staged_body = body
                    self._stage({self._writer.key: self._writer.document(body)}, ())
                if flush or self._mode == "step":
                    await self._flush()
                self.failure = None
            except Exception as exc:  # noqa: BLE001 - CTX-16: no save failure may fail the step
                self.failure = self._failed(exc)

    def _failed(self, exc: Exception) -> NoeticError:
        """Log a failed save in one line (its traceback at DEBUG only) and say why as an error."""
        execution_id = self._writer.execution_id
        why = describe_error(exc)
        log.warning(
            "checkpoint of execution %s failed; the run goes on but cannot resume from here: %s",
            execution_id,
            why,
        )
        log.debug("checkpoint of execution %s failed", execution_id, exc_info=exc)
        if isinstance(exc, NoeticError):
            return exc
        return NoeticError(
            "CHECKPOINT_STORE_FAILED",
            f"the checkpoint of execution {execution_id!r} could not be written: {why}",
            execution_id=execution_id,
        )

    @property
    def pending(self) -> bool:
        """Whether rows are staged that no write has committed yet."""
        return bool(self._sets or self._deletes)

    def _stage(self, sets: Mapping[str, str], deletes: Iterable[str]) -> None:
        for key in deletes:
            self._sets.pop(key, None)
            self._deletes[key] = None
        for key, value in sets.items():
            self._deletes.pop(key, None)
            self._sets[key] = value

    async def _flush(self) -> None:
        if not self._sets and not self._deletes:
            return
        await self._store.write(self._sets, list(self._deletes))
        self._sets, self._deletes = {}, {}
        if self._staged_body is not None:
            self._saved_body, self._staged_body = self._staged_body, None

    async def close(
        self, run: Execution, outcome: Outcome | None = None, reason: str | None = None
    ) -> NoeticError | None:
        """Write what is still staged (the turn's steps under `"turn"`, or rows a failed write
        left) with the snapshot recording the turn's `outcome` and failure `reason`, then
        release the claim (shielded: it must happen even on cancellation).

        Returns why that closing write failed, or None: the turn ran to its end, but its
        checkpoint does not say so, and a resume would run its unrecorded steps again — the
        harness puts this on the turn's response (`checkpoint_error`) and logs it as an error.
        """
        with anyio.CancelScope(shield=True):
            try:
                self._writer.outcome, self._writer.reason = outcome, reason
                if outcome is not None or self._mode == "turn" or self._sets or self._deletes:
                    await self.save(run)
                    if self.failure is not None:
                        log.error(
                            "execution %s ended (%s) but its closing checkpoint was not written; "
                            "resuming it would run its unrecorded steps again: %s",
                            self._writer.execution_id,
                            outcome,
                            self.failure.message,
                        )
            finally:
                await self._claim.release()
        return self.failure


#: How much of an input a log line shows: a few levels and items of it, never all of it (the
#: full repr of a 200,000-element input is a megabyte, and of a 5,000-deep one a RecursionError).
class _InputRepr(reprlib.Repr):
    """`reprlib.Repr` that also shows an int too long for Python to write in decimal."""

    def repr_int(self, x: int, level: int) -> str:
        """`repr(x)`, or its length in bits when it has too many digits to be converted."""
        try:
            return super().repr_int(x, level)
        except ValueError:  # more digits than sys.get_int_max_str_digits()
            return f"<int of {x.bit_length()} bits>"


_INPUT_REPR = _InputRepr()  # keyword arguments to Repr() need Python 3.12
_INPUT_REPR.maxlevel = 3
_INPUT_REPR.maxstring = _INPUT_REPR.maxother = 80
_SHOWN_LENGTH = 300


def _shown(value: Any) -> str:
    """A short repr of `value` for a log line (at most `_SHOWN_LENGTH` characters)."""
    text = _INPUT_REPR.repr(value)
    return text if len(text) <= _SHOWN_LENGTH else text[: _SHOWN_LENGTH - 3] + "..."


async def begin(
    run: Execution,
    store: CheckpointStore,
    retention: StepLedgerRetention,
    *,
    input: Any,
    first_item: int,
    durability: Durability = "step",
    stored: StoredPoint = EMPTY,
) -> StoredPoint | None:
    """Make the new execution of `run` durable (see the module docstring); the thread's
    stored history holds the first `stored.count` items of its log already.

    Returns the stored point of the log once the start record is written (None when it is
    not). Raises `EXECUTION_LOCKED`, `EXECUTION_EXISTS`, or `CHECKPOINT_CORRUPT` for a damaged
    store file or execution; when the store otherwise fails, it logs why and the execution runs
    without a checkpoint. An input that is not plain JSON is not
    stored (the start record says so): the steps are recorded all the same, and `resume`
    must be given the input again.
    """
    ctx = run.root
    assert ctx is not None
    if not input_is_storable(input):
        log.warning(
            "execution %s: input not stored (resume needs input=): %s",
            ctx.id,
            _shown(input),
        )
    try:
        claim = await store.claim(ctx.id)
    except NoeticError as exc:
        if exc.code in ("EXECUTION_LOCKED", "CHECKPOINT_CORRUPT"):
            raise
        log.warning("execution %s is not checkpointed: the checkpoint store failed: %s", ctx.id, exc)
        return None
    try:
        existing = await store.list_prefix(execution_prefix(ctx.id))
    except Exception as exc:
        await claim.release()
        if isinstance(exc, NoeticError) and exc.code == "CHECKPOINT_CORRUPT":
            raise  # a damaged file fails every call: the turn must not run as if checkpointed
        log.warning(
            "execution %s is not checkpointed: the checkpoint store failed: %s", ctx.id, exc, exc_info=True
        )
        return None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await claim.release()
        raise
    if existing and snapshot_key(ctx.id) not in existing:
        await claim.release()  # what is left of a damaged execution is never overwritten
        raise NoeticError(
            "CHECKPOINT_CORRUPT",
            f"execution {ctx.id!r} has checkpoint records but no snapshot (it is damaged), so it "
            f"was not started over them; clear_checkpoint({ctx.id!r}) removes what is left, then "
            "the id can start again",
            execution_id=ctx.id,
            key=existing[0],
        )
    if existing:
        await claim.release()
        raise NoeticError(
            "EXECUTION_EXISTS",
            f"execution {ctx.id!r} already has a checkpoint; resume({ctx.id!r}) continues it, "
            f"clear_checkpoint({ctx.id!r}) discards it so the id can start over",
            execution_id=ctx.id,
        )
    try:
        workflow = workflow_document(run.harness.agent_graph)
        start, point = start_rows(ctx, input=input, first_item=first_item, workflow=workflow, stored=stored)
    except (TypeError, ValueError) as exc:
        await claim.release()
        log.warning("execution %s is not checkpointed: its history is not plain JSON (%s)", ctx.id, exc)
        return None
    run.recorder = Recorder(store, claim, SnapshotWriter(ctx.id), mode=durability, start=start)
    run.ledger = StepLedger(ctx.id, retention=retention)
    await run.recorder.save(run)
    failure = run.recorder.failure
    if failure is not None and failure.code == "CHECKPOINT_CORRUPT":  # the file is damaged
        run.recorder, run.ledger = None, None
        await claim.release()
        raise failure
    return None if run.recorder.pending else point


@dataclass(frozen=True, slots=True)
class Restored:
    """An execution read back from its checkpoint, claimed for this attempt."""

    snapshot: ExecutionSnapshot
    window: LedgerWindow
    claim: Claim
    store: CheckpointStore

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

    async def attach(
        self, run: Execution, retention: StepLedgerRetention, durability: Durability = "step"
    ) -> None:
        """Give `run` (whose root is `context(run)`) its layer state, ledger and recorder."""
        ctx = run.root
        assert ctx is not None
        snap = self.snapshot
        attempt = snap.attempt + 1
        run.ledger = StepLedger(ctx.id, retention=retention, recovered=self.window, attempt=attempt)
        run.recorder = Recorder(self.store, self.claim, SnapshotWriter(ctx.id, attempt), mode=durability)
        try:
            await import_layers(run, snap.layers)
        except Exception as exc:  # noqa: BLE001 - a layer rejecting forged state must not escape raw
            raise corrupt(
                snapshot_key(ctx.id),
                f"its layer states do not restore ({describe_error(exc)})",
                execution_id=ctx.id,
            ) from None


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
        window = await load_ledger(store, execution_id, declarations)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await claim.release()
        raise
    return Restored(snapshot, window, claim, store)


async def clear(store: CheckpointStore, execution_id: str) -> None:
    """Remove an execution's start record, snapshot and every ledger shard in one write
    (RS-13); the thread's history pieces stay (HS-4).

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
