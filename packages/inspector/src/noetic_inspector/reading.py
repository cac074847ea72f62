"""What the inspector shows, read from a checkpoint store through the durable module's loaders.

Nothing here parses keys or rows itself: `execution_ids`, `load_snapshot`, `load_ledger` and
`load_trace` (in `noetic.durable`) do, so a change of the store layout changes them, not this.
The store is opened read-only (`ReadOnlyStore`): every write the inspector could make raises.

An execution's **status** (IN-2): `completed` or `failed` when its last attempt's turn ended so;
`resumable` when it was aborted, or its process died mid-run (no outcome, nobody holds its
claim); `running` while another process holds its claim; `damaged` in the list when its records
do not read back (the reason says which and why; its page gives the error).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from noetic.durable.ledger import load_ledger
from noetic.durable.snapshot import ExecutionSnapshot, execution_ids, load_snapshot
from noetic.durable.sqlite import SqliteCheckpointStore
from noetic.durable.store import CheckpointStore, Claim
from noetic.durable.trace import StepTrace, load_trace
from noetic.errors import NoeticConfigError, NoeticError
from noetic.items import dump_item

from noetic_inspector.workflow_graph import workflow_graph

__all__ = [
    "ExecutionDetail",
    "ExecutionSummary",
    "ReadOnlyStore",
    "list_executions",
    "load_execution",
    "open_store",
]


class ReadOnlyStore:
    """A `CheckpointStore` that only reads: `set`, `delete` and `write` raise `INSPECTOR_READ_ONLY`."""

    def __init__(self, inner: CheckpointStore):
        self._inner = inner

    async def get(self, key: str) -> str | None:
        """The document at `key`, or None."""
        return await self._inner.get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The documents at `keys` that exist."""
        return await self._inner.get_many(keys)

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key starting with `prefix`, ascending."""
        return await self._inner.list_prefix(prefix)

    async def set(self, key: str, value: str) -> None:
        """Refused: the inspector never writes."""
        raise _read_only()

    async def delete(self, key: str) -> None:
        """Refused: the inspector never writes."""
        raise _read_only()

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        """Refused: the inspector never writes."""
        raise _read_only()

    async def claim(self, execution_id: str) -> Claim:
        """Probe a claim (see `is_running`); claims live beside the data, not in it."""
        return await self._inner.claim(execution_id)

    async def aclose(self) -> None:
        """Close the underlying store."""
        await self._inner.aclose()


def _read_only() -> NoeticError:
    return NoeticError("INSPECTOR_READ_ONLY", "the run inspector opens checkpoint stores read-only")


def open_store(url: str) -> ReadOnlyStore:
    """The store at `url`, resolved through the `register_checkpoint_stores` hook, read-only.

    A `sqlite:` URL must name an existing file (opening a missing one would create it), and
    the file is opened read-only: its bytes are never changed, and a file without Noetic's
    table is `NOT_A_CHECKPOINT_STORE`.
    """
    from noetic.plugins import make_plugin_manager

    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme == "sqlite":
        path = urlsplit(url).path
        path = path[1:] if path.startswith("/") else path
        if not os.path.isfile(path):
            raise NoeticConfigError(
                "INSPECTOR_STORE_MISSING",
                f"there is no SQLite checkpoint store at {path!r}",
                hint="Pass the storage URL the harness ran with, e.g. sqlite:///runs.db.",
            )
    registry = make_plugin_manager().registries.checkpoint_stores
    store: CheckpointStore = registry.resolve(scheme)(url)
    if isinstance(store, SqliteCheckpointStore):  # before its first use opens the file
        store.read_only = True  # opened `mode=ro`: never a table made, never the journal mode switched
    return ReadOnlyStore(store)


@dataclass(frozen=True, slots=True)
class Totals:
    """Spend and tokens of a set of steps (decimal strings for the money, in USD)."""

    cost: str
    billed_cost: str
    held_cost: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class ExecutionSummary:
    """One row of the execution list."""

    execution_id: str
    thread_id: str
    status: str
    reason: str | None
    steps: int
    attempt: int
    totals: Totals
    started_at: str | None
    ended_at: str | None


@dataclass(frozen=True, slots=True)
class ExecutionDetail:
    """One execution: its summary, its step trace (latest row per path, with `replayed`), the
    item log as JSON, and the graph of the workflow document it ran (`workflow_graph`) when one
    is recorded — or why it cannot be drawn (`workflow_error`)."""

    summary: ExecutionSummary
    steps: list[dict[str, Any]]
    items: list[dict[str, Any]]
    input: Any
    workflow: dict[str, Any] | None = None
    workflow_error: str | None = None


async def is_running(store: ReadOnlyStore, execution_id: str) -> bool:
    """Whether another attempt holds the execution's claim (a claim taken and at once released)."""
    try:
        claim = await store.claim(execution_id)
    except NoeticError as exc:
        if exc.code == "EXECUTION_LOCKED":
            return True
        raise
    await claim.release()
    return False


def _latest_per_path(trace: list[StepTrace]) -> list[StepTrace]:
    """The last row of each path (a step that ran again supersedes its earlier row)."""
    latest: dict[str, StepTrace] = {}
    for row in trace:
        latest.pop(row.path, None)
        latest[row.path] = row
    return sorted(latest.values(), key=lambda row: row.seq)


def _totals(rows: list[StepTrace]) -> Totals:
    """Spend of the outermost rows only: a composite's row already includes its children."""
    paths = {row.path for row in rows}
    outer = [row for row in rows if not any(_ancestors(row.path) & paths)]
    return Totals(
        cost=str(sum((Decimal(row.cost) for row in outer), Decimal(0))),
        billed_cost=str(sum((Decimal(row.billed_cost) for row in outer), Decimal(0))),
        held_cost=str(sum((Decimal(row.held_cost) for row in outer), Decimal(0))),
        input_tokens=sum(row.usage[0] for row in outer),
        output_tokens=sum(row.usage[1] for row in outer),
    )


def _started(row: StepTrace) -> datetime:
    return datetime.fromisoformat(row.completed_at) - timedelta(milliseconds=row.duration_ms)


def _in_start_order(rows: list[StepTrace]) -> list[StepTrace]:
    """Steps by when they started, each parent before its children.

    A start is derived from two clocks (a wall-clock completion minus a monotonic duration), so
    a child that started microseconds after its parent can appear to start first. A step is
    therefore placed at the earliest start of itself and everything below it, and a tie goes
    to the shallower step: that is never later than any of its descendants.
    """
    started = {row.path: _started(row) for row in rows}
    earliest = dict(started)
    for path, start in started.items():
        for ancestor in _ancestors(path) & earliest.keys():
            earliest[ancestor] = min(earliest[ancestor], start)
    return sorted(rows, key=lambda row: (earliest[row.path], row.path.count("/")))


def _ancestors(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:n]) for n in range(2, len(parts))}


async def _summary(store: ReadOnlyStore, snap: ExecutionSnapshot, rows: list[StepTrace]) -> ExecutionSummary:
    status: str
    if snap.outcome in ("completed", "failed"):
        status = snap.outcome
    elif snap.outcome is None and await is_running(store, snap.execution_id):
        status = "running"
    else:
        status = "resumable"
    return ExecutionSummary(
        execution_id=snap.execution_id,
        thread_id=snap.thread_id,
        status=status,
        reason=snap.reason,
        steps=len(rows),
        attempt=snap.attempt,
        totals=_totals(rows),
        started_at=snap.started_at,
        ended_at=snap.ended_at,
    )


def _damaged(execution_id: str, error: NoeticError) -> ExecutionSummary:
    zero = Totals(cost="0", billed_cost="0", held_cost="0", input_tokens=0, output_tokens=0)
    return ExecutionSummary(
        execution_id=execution_id,
        thread_id="",
        status="damaged",
        reason=f"{error.code}: {error.message}"[:1000],
        steps=0,
        attempt=0,
        totals=zero,
        started_at=None,
        ended_at=None,
    )


async def list_executions(store: ReadOnlyStore) -> list[ExecutionSummary]:
    """Every execution the store holds, newest start first."""
    found: list[ExecutionSummary] = []
    for execution_id in await execution_ids(store):
        try:
            snap = await load_snapshot(store, execution_id, {}, history=False)  # a summary
            if snap is None:
                continue
            rows = _latest_per_path(await load_trace(store, execution_id))
            found.append(await _summary(store, snap, rows))
        except NoeticError as exc:  # one damaged execution must not hide the others
            found.append(_damaged(execution_id, exc))
    found.sort(key=lambda s: s.started_at or "", reverse=True)
    return found


async def load_execution(store: ReadOnlyStore, execution_id: str) -> ExecutionDetail | None:
    """One execution, or None when the store has no snapshot of it."""
    snap = await load_snapshot(store, execution_id, {})
    if snap is None:
        return None
    rows = _latest_per_path(await load_trace(store, execution_id))
    window = await load_ledger(store, execution_id, {})
    items = [dump_item(item) for item in snap.items]
    for recovered in sorted(window.entries.values(), key=lambda r: r.entry.completed_at):
        if not any(_ancestors(recovered.entry.path) & window.entries.keys()):
            items.extend(dump_item(item) for item in recovered.items)
    steps = [
        {**row.model_dump(mode="json"), "replayed": row.attempt < snap.attempt, "depth": row.path.count("/")}
        for row in _in_start_order(rows)
    ]
    graph, problem = None, None
    if snap.workflow is not None:
        try:
            graph = workflow_graph(snap.workflow)  # validated again, within the loader's limits
        except NoeticError as exc:
            problem = f"{exc.code}: {exc.message}"[:1000]
    return ExecutionDetail(await _summary(store, snap, rows), steps, items, snap.input, graph, problem)
