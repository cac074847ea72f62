"""What a resumed attempt needs besides the step ledger: the start record and the snapshot (RS-14, RS-15).

Two records, so that no step ever writes the history again:

- the **start record** at `execution:{id}:start`, written once when the execution begins:
  its identity (`execution_id`, `thread_id`, `resource_id`), the graph input (when it is
  plain JSON; otherwise `input_stored: false` and no input — a resume must be given it again),
  `first_item`,
  `started_at`, the JSON workflow document when the agent graph is one (`workflow`, for the
  inspector, IN-1) and the item log as it stood at the start (history and turn input) — not
  copied: the record names a point of the thread's stored history (`history`: item count and
  the digest of its last piece, `noetic.durable.history`), and the start writes, in the same
  atomic batch, only the piece of items past the thread's last stored point (HS-1). Everything
  the steps append comes back from their ledger entries, in order, or from running them again.
  A start record of version 2 (written before, the items inline) is still read (HS-3).
- the **snapshot** at `execution:{id}:snapshot`: what changes as the execution runs — the
  root `state` when it is plain JSON, `complete()`'s signal, the layer states (through the
  layer runtime's `export_state()`), `captured_at`, which `attempt` wrote it (1, then one
  more per resume) and, once that attempt's turn ended, its `outcome` (`completed`, `failed`
  or `aborted`), the error's message as `reason` (at most `MAX_REASON` characters) and
  `ended_at` (IN-1). It is rewritten in the same atomic
  batch as a completed step's ledger entry, when it changed (the recorder compares).

Both carry a version (the start record `START_VERSION`, the snapshot `SNAPSHOT_VERSION`). Another version raises `NoeticConfigError("CHECKPOINT_SCHEMA_MISMATCH")`;
a record that does not read back as exactly what this code writes — bad JSON, nesting deeper
than `MAX_DEPTH`, a field of the wrong shape, an item that does not parse, layer states that
are not `export_state()` data — raises `NoeticError("CHECKPOINT_CORRUPT")` naming the
execution and the record. Neither is ever resumed from.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import unquote

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    PositiveInt,
    StrictBool,
    StringConstraints,
    ValidationError,
)

from noetic.durable.history import EMPTY, StoredPoint, append_rows, load_point, point_json, point_of
from noetic.durable.items import Declarations, ItemsRecord, load_items
from noetic.durable.parts import join_record, split_record
from noetic.durable.store import (
    MAX_DEPTH,
    CheckpointStore,
    corrupt,
    decode_document,
    describe_error,
    encode_document,
    execution_prefix,
    is_plain_json,
)
from noetic.errors import NoeticConfigError, NoeticError
from noetic.items import Item

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.runtime import Execution

__all__ = [
    "MAX_REASON",
    "SNAPSHOT_VERSION",
    "START_VERSION",
    "ExecutionSnapshot",
    "Outcome",
    "SnapshotWriter",
    "import_layers",
    "input_is_storable",
    "is_plain_json",
    "check_keys",
    "execution_ids",
    "load_snapshot",
    "snapshot_key",
    "start_key",
    "start_rows",
    "workflow_document",
]

#: The layout of the snapshot this code writes and reads.
SNAPSHOT_VERSION = 2
#: The layout of the start record this code writes (it also reads version 2, history inline).
START_VERSION = 3
#: How an attempt's turn ended, as the snapshot records it.
Outcome = Literal["completed", "failed", "aborted"]
#: The longest failure reason a snapshot keeps (characters).
MAX_REASON = 1000


def snapshot_key(execution_id: str) -> str:
    """Where an execution's snapshot lives."""
    return f"{execution_prefix(execution_id)}snapshot"


def start_key(execution_id: str) -> str:
    """Where an execution's start record lives."""
    return f"{execution_prefix(execution_id)}start"


async def execution_ids(store: CheckpointStore) -> list[str]:
    """The ids of every execution `store` holds any record of, in key order — a snapshot, or
    only other records (damage: `load_snapshot` then raises `CHECKPOINT_CORRUPT`, so a list
    shows the execution as damaged instead of leaving it out).

    A key whose id part is not text (bytes that are not UTF-8) names no execution anything can
    read or resume, and is left out rather than failing the list; a key whose damage is past
    the id is found under its execution (`check_keys`)."""
    head = "execution:"
    found: dict[str, None] = {}
    for key in await store.list_prefix(head):
        encoded, colon, _ = key[len(head) :].partition(":")
        if not colon:
            continue
        execution_id = unquote(encoded)
        try:
            if execution_prefix(execution_id) == f"{head}{encoded}:":
                found[execution_id] = None
        except NoeticError:  # INVALID_ID
            continue
    return list(found)


#: What follows `execution:{id}:` in a key this version writes: the snapshot, the start
#: record, ledger entries and trace rows (by sequence number), and the parts of the last three.
_KNOWN_KEY = re.compile(r"(?:snapshot|(?:start|(?:ledger|trace):[0-9]{8,})(?::part:[0-9]{6})?)")


def check_keys(execution_id: str, keys: list[str]) -> None:
    """Raise `CHECKPOINT_CORRUPT` naming the first of `keys` (all under the execution's
    prefix) that is not of a form this version writes — a key word with a damaged byte
    (`ledger` with a byte that is not UTF-8 is no ledger key) would otherwise go unread, and
    what it held (a completed step) would silently run again."""
    skip = len(execution_prefix(execution_id))
    for key in keys:
        if _KNOWN_KEY.fullmatch(key, skip) is None:
            try:
                key.encode()
                why = "it is not a key this version writes under an execution"
            except UnicodeEncodeError:  # a store gives bytes that are not UTF-8 back as surrogates
                why = "its key is not UTF-8, so it is not a key this version writes under an execution"
            raise corrupt(key, why, execution_id=execution_id)


# --- the stored shapes ----------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StartRecord(_Strict):
    """The start record as stored: version 3 names a point of the thread's stored history
    (`history`), version 2 holds the items inline (`items`)."""

    v: Literal[2, 3]
    execution_id: str
    thread_id: str
    resource_id: str | None = None
    input: Any = None
    #: False when the input was not plain JSON and so not stored (`input` is then None).
    input_stored: StrictBool = True
    first_item: NonNegativeInt
    started_at: str | None = None
    workflow: dict[str, Any] | None = None
    items: ItemsRecord | None = None
    history: dict[str, Any] | None = None


class _SavedLayer(BaseModel):
    """One layer's entry in `export_state()` data."""

    model_config = ConfigDict(frozen=True, extra="allow")

    state: Any = None
    disabled: StrictBool = False


class SavedLayers(BaseModel):
    """The shape `LayerRuntime.export_state()` produces (further fields are the runtime's)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    layers: dict[str, _SavedLayer] = {}


class SnapshotRecord(_Strict):
    """The snapshot as stored."""

    schema_version: Literal[2]
    execution_id: str
    captured_at: str
    has_state: StrictBool = False
    state: Any = None
    completed: StrictBool = False
    completion_value: Any = None
    layers: SavedLayers | None = None
    attempt: PositiveInt = 1
    outcome: Outcome | None = None
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON)] | None = None
    ended_at: str | None = None


@dataclass(frozen=True, slots=True)
class ExecutionSnapshot:
    """An execution as read back from its start record and snapshot (items parsed; `state`
    only meaningful when `has_state`; `layers` is the raw `export_state()` data)."""

    execution_id: str
    thread_id: str
    resource_id: str | None
    input: Any
    first_item: int
    items: list[Item]
    has_state: bool
    state: Any
    completed: bool
    completion_value: Any
    layers: Any
    captured_at: str
    started_at: str | None = None
    workflow: dict[str, Any] | None = None
    attempt: int = 1
    outcome: Outcome | None = None
    reason: str | None = None
    ended_at: str | None = None
    #: The point of the thread's stored history `items` are (None for a version-2 start record).
    history: StoredPoint | None = None
    #: False when the execution's input was not plain JSON, so not stored (`input` is None).
    input_stored: bool = True


# --- writing ----------------------------------------------------------------------------------


def workflow_document(graph: Any) -> dict[str, Any] | None:
    """The JSON workflow document an agent graph was hydrated from (`nt.workflow`), or None."""
    if getattr(graph, "kind", None) != "workflow":
        return None
    document = getattr(graph, "document", None)
    dump = getattr(document, "model_dump", None)
    if dump is None:
        return None
    data: dict[str, Any] = dump(mode="json", by_alias=True, exclude_none=True)
    return data


def start_rows(
    ctx: Context, *, input: Any, first_item: int, workflow: Any = None, stored: StoredPoint = EMPTY
) -> tuple[dict[str, str], StoredPoint]:
    """The rows of the start record of the execution of root context `ctx`, before its first
    step ran (its log is the base log, whose first `stored.count` items the thread's stored
    history already holds; `workflow` is its `workflow_document`), and the stored point they
    make; raises `TypeError`/`ValueError` if the log is not JSON. An `input` that is not plain
    JSON is left out (`input_stored: false`)."""
    items = ctx.item_log.items
    rows, point = append_rows(ctx.thread_id, items, stored if stored.count <= len(items) else EMPTY)
    record: dict[str, Any] = {
        "v": START_VERSION,
        "execution_id": ctx.id,
        "thread_id": ctx.thread_id,
        "resource_id": ctx.resource_id,
        "input": input,
        "first_item": first_item,
        "started_at": datetime.now(UTC).isoformat(),
    }
    if not input_is_storable(input):
        record["input"], record["input_stored"] = None, False
    if workflow is not None:
        record["workflow"] = workflow
    record["history"] = point_json(point)
    rows.update(split_record(start_key(ctx.id), encode_document(record)))
    return rows, point


def input_is_storable(input: Any) -> bool:
    """Whether a start record can hold `input` (plain JSON, one level down in the record)."""
    return is_plain_json(input, max_depth=MAX_DEPTH - 1)


class SnapshotWriter:
    """Captures one execution's snapshot."""

    __slots__ = ("_bare", "attempt", "execution_id", "key", "outcome", "reason")

    def __init__(self, execution_id: str, attempt: int = 1):
        self.execution_id = execution_id
        self.key = snapshot_key(execution_id)
        self.attempt = attempt
        #: Set when the attempt's turn has ended (the last capture records it).
        self.outcome: Outcome | None = None
        self.reason: str | None = None
        #: The body of a capture with nothing in it (see `capture`), once made.
        self._bare: str | None = None

    async def capture(self, run: Execution) -> str:
        """The body of the snapshot of `run` now: the document without its `captured_at`, to
        tell whether anything changed (raises `TypeError`/`ValueError` if the layer states are
        not JSON). `document(body)` is what is stored.

        Most steps of an agent without state or layer state change nothing the snapshot
        holds: such a capture ("bare": no state, no layer state, not completed, no outcome)
        is encoded once and its text given back after, instead of being built and encoded
        again to learn it is unchanged.
        """
        root = run.root
        assert root is not None
        state = root.state
        layers = await export_layers(run)
        bare = state is None and layers == {} and not root.completed and self.outcome is None
        if bare and self._bare is not None:
            return self._bare
        doc: dict[str, Any] = {"schema_version": SNAPSHOT_VERSION, "execution_id": self.execution_id}
        if state is None or is_plain_json(state, max_depth=MAX_DEPTH - 1):  # one level down
            doc["has_state"], doc["state"] = True, state
        if root.completed:
            doc["completed"], doc["completion_value"] = True, root.completion_value
        doc["layers"] = layers
        doc["attempt"] = self.attempt
        if self.outcome is not None:
            doc["outcome"], doc["ended_at"] = self.outcome, datetime.now(UTC).isoformat()
            if self.reason is not None:
                doc["reason"] = self.reason[:MAX_REASON]
        body = encode_document(doc)
        if bare:
            self._bare = body
        return body

    def document(self, body: str) -> str:
        """The stored snapshot: `body` (from `capture`) stamped with the time now."""
        stamp = encode_document(datetime.now(UTC).isoformat())
        return f'{body[:-1]},"captured_at":{stamp}}}'


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


# --- reading ----------------------------------------------------------------------------------


async def load_snapshot(
    store: CheckpointStore, execution_id: str, declarations: Declarations, *, history: bool = True
) -> ExecutionSnapshot | None:
    """The execution read back from its start record and snapshot, or None when the store has
    no record of it at all (RS-14); see the module docstring for what raises — and a key
    under the execution of no form this version writes (`check_keys`), or records without a
    snapshot, are `CHECKPOINT_CORRUPT` too.

    `history=False` leaves a stored history unread (its `items` are then empty): a summary of
    many executions of one thread would otherwise read the thread's history once for each."""
    skey, begin = snapshot_key(execution_id), start_key(execution_id)
    every = await store.list_prefix(execution_prefix(execution_id))
    if not every:
        return None
    check_keys(execution_id, every)
    keys = [skey, *(key for key in every if key.startswith(begin))]
    rows = await store.get_many(keys)
    if skey not in rows:
        raise corrupt(
            skey,
            f"it is missing while {len(every)} other records of the execution remain",
            execution_id=execution_id,
        )
    raw = decode_document(skey, rows[skey], execution_id=execution_id)
    _check_version(skey, raw, "schema_version", execution_id)
    try:
        snap = SnapshotRecord.model_validate(raw)
    except ValidationError as exc:
        raise corrupt(
            skey, f"it is not a snapshot ({describe_error(exc)})", execution_id=execution_id
        ) from None
    if begin not in rows:
        raise corrupt(begin, "the start record is missing", execution_id=execution_id)
    raw_start = join_record(begin, rows, execution_id=execution_id)
    _check_version(begin, raw_start, "v", execution_id, accepted=(2, START_VERSION))
    try:
        start = StartRecord.model_validate(raw_start)
        point = point_of(start.history)
        inline = start.v == 2 and start.items is not None and start.history is None
        if not inline and (start.v == 2 or start.items is not None or point is None):
            raise ValueError("its item log is neither inline nor a stored-history point")
        items = load_items(start.items, declarations) if start.items is not None else []
    except (ValidationError, NoeticError, ValueError, TypeError) as exc:
        raise corrupt(
            begin, f"it is not a start record ({describe_error(exc)})", execution_id=execution_id
        ) from None
    for record, key in ((snap, skey), (start, begin)):
        if record.execution_id != execution_id:
            raise corrupt(key, f"it belongs to execution {record.execution_id!r}", execution_id=execution_id)
    if point is not None and history:  # HS-2: the thread's stored history up to the point, checked
        items = await load_point(
            store, start.thread_id, point, declarations, owner=begin, execution_id=execution_id
        )
    known = point.count if point is not None and not history else len(items)
    if start.first_item > known:
        raise corrupt(begin, "first_item points past its item log", execution_id=execution_id)
    return ExecutionSnapshot(
        execution_id=execution_id,
        thread_id=start.thread_id,
        resource_id=start.resource_id,
        input=start.input,
        input_stored=start.input_stored,
        first_item=start.first_item,
        items=items,
        has_state=snap.has_state,
        state=snap.state,
        completed=snap.completed,
        completion_value=snap.completion_value,
        layers=raw["layers"] if snap.layers is not None else None,
        captured_at=snap.captured_at,
        started_at=start.started_at,
        workflow=start.workflow,
        attempt=snap.attempt,
        outcome=snap.outcome,
        reason=snap.reason,
        ended_at=snap.ended_at,
        history=point,
    )


def _check_version(
    key: str, raw: Any, field: str, execution_id: str, accepted: tuple[int, ...] = (SNAPSHOT_VERSION,)
) -> None:
    if not isinstance(raw, dict) or field not in raw:
        raise corrupt(key, "it is not a record this code writes", execution_id=execution_id)
    version = raw[field]
    if isinstance(version, bool) or version not in accepted:
        record = "start record" if field == "v" else "snapshot"
        raise NoeticConfigError(
            "CHECKPOINT_SCHEMA_MISMATCH",
            f"the checkpoint of execution {execution_id!r} has {record} version {version!r}; this "
            f"version of Noetic reads version {' or '.join(map(str, accepted))}",
            hint="Resume it with the Noetic version that wrote it, or clear_checkpoint() it and start over.",
            execution_id=execution_id,
            found=version,
        )
