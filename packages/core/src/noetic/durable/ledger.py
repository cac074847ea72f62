"""The step ledger: what a resumed execution replays instead of running again (RS-1..RS-12).

When a step completes, the interpreter records an entry under the step's path key (RS-2,
RS-3): the step id and kind, its output as JSON, and what the step added to its context — the
items it appended (final custom items among them), its spend and tokens, and its
`last_step_meta`. When a resumed execution reaches the same path with the same step id and
kind, `replay` gives the recorded output back without running the step (RS-4): it emits
`step_replayed` instead of `step_started` / `step_completed`, puts the items back in the log
quietly (IL-7; final custom items are streamed once under `emit_items_on_replay`, RS-9), adds
the recorded spend to `cost` and nothing to `billed_cost` (RS-8), and never touches the layer
lifecycle (RS-7). Because each entry carries its own spend, the cost of a resumed execution
adds up exactly as a clean run's did, whichever steps replay and whichever run again.

Only completed steps are recorded (RS-1). An entry is dropped — so its step simply runs again
— when its output is not plain JSON (a value that would not come back equal to itself), or
when the stored entry would exceed `max_entry_bytes`. At a path whose recorded step id or
kind differs from the step now there, the entry and everything recorded beneath it are
discarded and the step runs fresh (RS-5). Entries live one per key,
`execution:{id}:ledger:{seq:08d}`, with sequence numbers reserved synchronously so concurrent
paths never collide (RS-10, RS-11); past `max_entries` the oldest is evicted (RS-12).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from noetic.custom_items import CustomItem
from noetic.durable.items import Declarations, dump_items, load_items
from noetic.durable.store import CheckpointStore, decode_document, encode_document, execution_prefix
from noetic.errors import NoeticConfigError, NoeticError
from noetic.usage import RoundUsage, StepMeta

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.items import Item
    from noetic.steps.base import Step

__all__ = [
    "LedgerWindow",
    "LedgerWrite",
    "StepLedger",
    "StepLedgerRetention",
    "StepLedgerStats",
    "ledger_prefix",
    "load_ledger",
]

log = logging.getLogger("noetic.durable")

#: Version of the entry documents this code writes and reads.
ENTRY_VERSION = 1
_ZERO = Decimal(0)


def ledger_prefix(execution_id: str) -> str:
    """The key prefix of an execution's ledger shards."""
    return f"{execution_prefix(execution_id)}ledger:"


# --- retention ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepLedgerRetention:
    """Bounds on one execution's ledger (RS-12); `math.inf` disables a bound.

    `max_entry_bytes`: the largest stored entry (its JSON: output, items, meta), default 128 KiB;
    a larger one is not recorded and its step re-runs on resume. `max_entries`: how many
    entries one execution keeps, default 1000; recording past it evicts the oldest, so resume
    replays the newest part of the run and re-runs the rest. Invalid values raise
    `STEP_LEDGER_RETENTION_INVALID` here, at construction.
    """

    max_entry_bytes: float = 128 * 1024
    max_entries: float = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            whole = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if not (whole or value == math.inf):
                raise NoeticConfigError(
                    "STEP_LEDGER_RETENTION_INVALID",
                    f"step_ledger_retention.{f.name} must be a whole number >= 1 or math.inf, got {value!r}",
                    hint="Leave it out for the default, give a positive whole number, or math.inf for no cap.",
                )

    @classmethod
    def of(cls, value: StepLedgerRetention | Mapping[str, Any] | None) -> StepLedgerRetention:
        """Retention from the harness option (None gives the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {f.name for f in fields(cls)}
            if not unknown:
                return cls(**value)
        raise NoeticConfigError(
            "STEP_LEDGER_RETENTION_INVALID",
            f"step_ledger_retention must be a StepLedgerRetention or a dict with max_entry_bytes "
            f"and/or max_entries, got {value!r}",
            hint="Write step_ledger_retention={'max_entries': 5000} or StepLedgerRetention(...).",
        )


@dataclass(slots=True)
class StepLedgerStats:
    """What retention did in this attempt: entries written, not written, and evicted (RS-12)."""

    recorded: int = 0
    dropped_oversize: int = 0
    dropped_unserialisable: int = 0
    evicted: int = 0


# --- entries --------------------------------------------------------------------------------


class LedgerEntry(BaseModel):
    """One completed step as stored (`usage` is [input, output, cached] tokens)."""

    model_config = ConfigDict(frozen=True)

    v: Literal[1]
    path: str
    step_id: str
    kind: str
    output: Any = None
    completed_at: str
    cost: Decimal
    usage: tuple[int, int, int | None]
    meta: dict[str, Any] | None = None
    items: dict[str, Any]

    @field_validator("cost", mode="before")
    @classmethod
    def _exact(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("cost is stored as a decimal string")
        return value


@dataclass(frozen=True, slots=True)
class LedgerWindow:
    """An execution's ledger as found in storage: entries by path, and the sequence bounds."""

    entries: dict[str, LedgerEntry]
    next_seq: int
    oldest_seq: int


@dataclass(frozen=True, slots=True)
class LedgerWrite:
    """The rows one recorded step adds and the evicted rows it removes (one atomic batch)."""

    sets: dict[str, str]
    deletes: list[str]


class _Mark:
    """A context's counters when a step started, to measure what the step added."""

    __slots__ = ("cached", "cost", "input", "items", "meta", "output")

    def __init__(self, ctx: Context):
        self.cost = ctx._cost
        self.input = ctx._in
        self.output = ctx._out
        self.cached = ctx._cached
        self.meta = ctx.last_step_meta
        self.items = len(ctx.item_log)


# --- the ledger -----------------------------------------------------------------------------


class StepLedger:
    """One execution's ledger: recovered entries to replay, and the sequence for new ones.

    Shared by every context of the execution: path keys are unique across the step tree.
    """

    __slots__ = ("_declarations", "_entries", "_next", "_oldest", "_prefix", "retention", "stats")

    def __init__(
        self,
        execution_id: str,
        *,
        retention: StepLedgerRetention,
        recovered: LedgerWindow | None = None,
        declarations: Declarations | None = None,
    ):
        self._prefix = ledger_prefix(execution_id)
        self.retention = retention
        self.stats = StepLedgerStats()
        self._entries: dict[str, LedgerEntry] = dict(recovered.entries) if recovered else {}
        self._next = recovered.next_seq if recovered else 0
        self._oldest = recovered.oldest_seq if recovered else 0
        self._declarations: Declarations = declarations or {}

    # --- replay (RS-4, RS-5, RS-7, RS-8, RS-9) ---------------------------------------------

    def replay(self, path: str, step: Step, ctx: Context) -> tuple[bool, Any]:
        """`(True, output)` when `path` holds this step's recorded result, else `(False, None)`."""
        if not self._entries:
            return False, None
        entry = self._entries.get(path)
        if entry is None:
            return False, None
        if entry.step_id != step.id or entry.kind != step.kind:
            self._discard(path)
            log.warning(
                "step ledger: %s was recorded for %s %r but the graph now has %s %r there; "
                "discarding it and everything recorded beneath it",
                path,
                entry.kind,
                entry.step_id,
                step.kind,
                step.id,
            )
            return False, None
        try:
            output = step.replay_output(entry.output)
            items = load_items(entry.items, self._declarations)
            meta = StepMeta.model_validate(entry.meta) if entry.meta is not None else None
        except (NoeticError, ValueError) as exc:
            self._discard(path)
            log.warning(
                "step ledger: the entry at %s no longer fits its step (%s); running it again", path, exc
            )
            return False, None
        self._restore(entry, step, path, items, meta, ctx)
        return True, output

    def _restore(
        self,
        entry: LedgerEntry,
        step: Step,
        path: str,
        items: list[Item],
        meta: StepMeta | None,
        ctx: Context,
    ) -> None:
        run = ctx._exec
        run.emit("step_replayed", {"step_id": step.id, "kind": step.kind, "path": path})
        tokens_in, tokens_out, cached = entry.usage
        ctx._record_round(
            RoundUsage(input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=cached),
            entry.cost,
            _ZERO,
        )
        if meta is not None:
            ctx.last_step_meta = (
                meta if meta.billed_cost is None else meta.model_copy(update={"billed_cost": 0.0})
            )
        stream = run.harness.emit_items_on_replay
        for item in items:
            if ctx.item_log.append_quietly(item) and stream and isinstance(item, CustomItem):
                run.emit("item_appended", {"item": item, "execution_id": ctx.id})

    def _discard(self, path: str) -> None:
        below = path + "/"
        for key in [k for k in self._entries if k == path or k.startswith(below)]:
            del self._entries[key]

    # --- recording (RS-1, RS-10..RS-12) ----------------------------------------------------

    def mark(self, ctx: Context) -> _Mark:
        """Note `ctx`'s counters before a step runs (passed back to `record`)."""
        return _Mark(ctx)

    def record(self, path: str, step: Step, output: Any, ctx: Context, mark: _Mark) -> LedgerWrite | None:
        """The rows recording a completed step, or None when the entry cannot be kept."""
        row = self._row(path, step, output, ctx, mark)
        if row is None:
            return None
        if len(row) > self.retention.max_entry_bytes:  # ASCII JSON: characters are bytes
            self._dropped("dropped_oversize", path, f"its entry exceeds max_entry_bytes ({len(row)} bytes)")
            return None
        seq = self._next  # reserved before any await: concurrent paths never share a key (RS-11)
        self._next = seq + 1
        deletes: list[str] = []
        while self._next - self._oldest > self.retention.max_entries:
            deletes.append(f"{self._prefix}{self._oldest:08d}")
            self._oldest += 1
            self.stats.evicted += 1
        self.stats.recorded += 1
        return LedgerWrite({f"{self._prefix}{seq:08d}": row}, deletes)

    def _row(self, path: str, step: Step, output: Any, ctx: Context, mark: _Mark) -> str | None:
        try:
            data = step.record_output(output)
            output_text = encode_document(data)
            if json.loads(output_text) != data:
                raise ValueError("it does not survive a JSON round trip unchanged")
            meta = ctx.last_step_meta
            head = {
                "v": ENTRY_VERSION,
                "path": path,
                "step_id": step.id,
                "kind": step.kind,
                "completed_at": datetime.now(UTC).isoformat(),
                "cost": str(ctx._cost - mark.cost),
                "usage": [ctx._in - mark.input, ctx._out - mark.output, _delta(ctx._cached, mark.cached)],
                "meta": None
                if meta is mark.meta or meta is None
                else meta.model_dump(mode="json", exclude_none=True),
                "items": dump_items(ctx.item_log.items[mark.items :]),
            }
            head_text = encode_document(head)
        except (TypeError, ValueError) as exc:
            self._dropped("dropped_unserialisable", path, f"its output or items are not plain JSON ({exc})")
            return None
        return f'{head_text[:-1]},"output":{output_text}}}'  # the output is encoded once, spliced in

    def _dropped(self, counter: str, path: str, why: str) -> None:
        count = getattr(self.stats, counter) + 1
        setattr(self.stats, counter, count)
        if count == 1:
            log.warning(
                "step ledger: not recording %s: %s. It will run again on resume; "
                "further drops of this kind are not logged",
                path,
                why,
            )


def _delta(after: int | None, before: int | None) -> int | None:
    if after is None:
        return None
    return after - (before or 0)


async def load_ledger(store: CheckpointStore, execution_id: str) -> LedgerWindow:
    """Read an execution's ledger: list the shards, read them in one batch, and index them by
    path in sequence order so a later entry at a path wins (RS-10).

    A row that is not JSON raises `CHECKPOINT_CORRUPT`; a JSON row that is not an entry this
    version understands is skipped with a warning (its step runs again).
    """
    prefix = ledger_prefix(execution_id)
    shards: list[tuple[int, str]] = []
    for key in await store.list_prefix(prefix):
        suffix = key[len(prefix) :]
        if suffix.isdigit():
            shards.append((int(suffix), key))
    shards.sort()
    rows = await store.get_many([key for _, key in shards])
    entries: dict[str, LedgerEntry] = {}
    for _, key in shards:
        text = rows.get(key)
        if text is None:
            continue
        raw = decode_document(key, text)
        try:
            entry = LedgerEntry.model_validate(raw)
        except (ValidationError, InvalidOperation) as exc:
            log.warning("step ledger: skipping unreadable entry %s (%s); its step will run again", key, exc)
            continue
        entries[entry.path] = entry
    return LedgerWindow(
        entries,
        next_seq=shards[-1][0] + 1 if shards else 0,
        oldest_seq=shards[0][0] if shards else 0,
    )
