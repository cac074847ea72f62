"""The execution snapshot at `execution:{id}:snapshot` (RS-14, RS-15).

It records what a resumed attempt needs besides the step ledger: the execution's identity
(`execution_id`, `thread_id`, `resource_id`), the graph input, the item log as it stood when
the execution started (history and turn input; everything the steps appended comes back from
their ledger entries, in order, or from running them again), the root `state` when it is plain
JSON, `complete()`'s signal, the layer states (through the layer runtime's `export_state()`),
and `captured_at`. It is rewritten after every completed step, in the same atomic batch as
that step's ledger entry.

Every snapshot carries `schema_version`. A snapshot of another version raises
`NoeticConfigError("CHECKPOINT_SCHEMA_MISMATCH")`; one that cannot be read raises
`NoeticError("CHECKPOINT_CORRUPT")`. Neither is ever resumed from.
"""

from __future__ import annotations

import inspect
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from noetic.durable.items import Declarations, dump_items, load_items
from noetic.durable.store import CheckpointStore, corrupt, decode_document, encode_document, execution_prefix
from noetic.errors import NoeticConfigError, NoeticError
from noetic.items import Item

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.runtime import Execution

__all__ = [
    "SNAPSHOT_VERSION",
    "ExecutionSnapshot",
    "SnapshotWriter",
    "is_plain_json",
    "load_snapshot",
    "snapshot_key",
]

#: The snapshot layout this code writes and reads.
SNAPSHOT_VERSION = 1


def snapshot_key(execution_id: str) -> str:
    """Where an execution's snapshot lives."""
    return f"{execution_prefix(execution_id)}snapshot"


def is_plain_json(value: Any) -> bool:
    """True when `value` survives a JSON round trip unchanged (no tuples, objects, NaN, …)."""
    try:
        return bool(json.loads(encode_document(value)) == value)
    except (TypeError, ValueError):
        return False


class ExecutionSnapshot(BaseModel):
    """A snapshot as read back (items parsed; `state` only meaningful when `has_state`)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int
    execution_id: str
    thread_id: str
    resource_id: str | None = None
    input: Any = None
    first_item: int
    items: list[Item]
    has_state: bool = False
    state: Any = None
    completed: bool = False
    completion_value: Any = None
    layers: Any = None
    captured_at: str


class SnapshotWriter:
    """Captures snapshots of one execution; the parts fixed at its start are dumped once."""

    __slots__ = ("_fixed", "execution_id", "key")

    def __init__(self, ctx: Context, *, input: Any, first_item: int):
        """`ctx` is the root context, before its first step ran (its log is the base log)."""
        self.execution_id = ctx.id
        self.key = snapshot_key(ctx.id)
        self._fixed = {
            "schema_version": SNAPSHOT_VERSION,
            "execution_id": ctx.id,
            "thread_id": ctx.thread_id,
            "resource_id": ctx.resource_id,
            "input": input,
            "first_item": first_item,
            "items": dump_items(tuple(ctx.item_log.items)),
        }

    async def capture(self, run: Execution) -> str:
        """The snapshot document of `run` now (raises `TypeError`/`ValueError` if not JSON)."""
        root = run.root
        assert root is not None
        doc: dict[str, Any] = dict(self._fixed)
        doc["captured_at"] = datetime.now(UTC).isoformat()
        if is_plain_json(root.state):
            doc["has_state"], doc["state"] = True, root.state
        if root.completed:
            doc["completed"], doc["completion_value"] = True, root.completion_value
        doc["layers"] = await export_layers(run)
        return encode_document(doc)


async def export_layers(run: Execution) -> Any:
    """The layer runtime's state (`export_state()`), or None when the execution has none."""
    export = getattr(getattr(run, "layers", None), "export_state", None)
    if export is None:
        return None
    state = export()
    if inspect.isawaitable(state):
        state = await state
    return state


async def import_layers(run: Execution, data: Any) -> None:
    """Give the layer runtime back the state a snapshot recorded (`import_state(data)`)."""
    if data is None:
        return
    restore = getattr(getattr(run, "layers", None), "import_state", None)
    if restore is not None:
        result = restore(data)
        if inspect.isawaitable(result):
            await result


async def load_snapshot(
    store: CheckpointStore, execution_id: str, declarations: Declarations
) -> ExecutionSnapshot | None:
    """The execution's snapshot, or None when there is none (RS-14)."""
    key = snapshot_key(execution_id)
    text = await store.get(key)
    if text is None:
        return None
    raw = decode_document(key, text)
    if not isinstance(raw, dict) or "schema_version" not in raw:
        raise corrupt(key, "it is not a snapshot document")
    version = raw["schema_version"]
    if version != SNAPSHOT_VERSION:
        raise NoeticConfigError(
            "CHECKPOINT_SCHEMA_MISMATCH",
            f"the checkpoint of execution {execution_id!r} has snapshot version {version!r}; this "
            f"version of Noetic reads version {SNAPSHOT_VERSION}",
            hint="Resume it with the Noetic version that wrote it, or clear_checkpoint() it and start over.",
            execution_id=execution_id,
            found=version,
        )
    try:
        items = raw.get("items")
        if not isinstance(items, dict):
            raise ValueError("items missing")
        parsed = {**raw, "items": load_items(items, declarations)}
        snapshot = ExecutionSnapshot.model_validate(parsed)
    except (ValidationError, ValueError, NoeticError) as exc:
        raise corrupt(key, f"its fields do not read back ({exc})") from None
    if snapshot.execution_id != execution_id:
        raise corrupt(key, f"it belongs to execution {snapshot.execution_id!r}")
    return snapshot
