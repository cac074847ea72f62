"""The step ledger: what a resumed execution replays instead of running again (RS-1..RS-12, RS-19, RS-20).

When a step completes, the interpreter records an entry under the step's path key (RS-2,
RS-3): the step id and kind, the hash of what it saw (`input_hash`, RS-19), its output as
JSON, and what the step added to its context — the items it appended (final custom items
among them), its spend and tokens, and its `last_step_meta`. When a resumed execution reaches
the same path with the same step id, kind and input hash, `replay` gives the recorded output
back without running the step (RS-4): it emits `step_replayed` instead of `step_started` /
`step_completed`, puts the items back in the log quietly (IL-7; final custom items are
streamed once under `emit_items_on_replay`, RS-9), adds the recorded spend to `cost` and
nothing to `billed_cost` (RS-8), and never touches the layer lifecycle (RS-7). Because each
entry carries its own spend, the cost of a resumed execution adds up exactly as a clean run's
did, whichever steps replay and whichever run again.

Only completed steps are recorded (RS-1), and only when their output is plain JSON (a value
that would not come back equal to itself is not recorded, so its step runs again). At a path
whose recorded step id, kind or input hash differs from the step now there, the entry and
everything recorded beneath it are discarded and the step runs fresh (RS-5, RS-19).

Entries live one per key, `execution:{id}:ledger:{seq:08d}` (split into parts past 128 KiB,
`noetic.durable.parts`), with sequence numbers reserved synchronously so concurrent paths
never collide (RS-10, RS-11). Retention (RS-20) never drops what a resume needs: an entry is
deleted only once nothing can replay it — when a later entry at the same path supersedes it,
or when the composite step above it is recorded (a completed composite replays whole, RS-6,
so its children's entries are never read again). Those deletes ride in the same atomic write
as the entry that made them unnecessary. `max_entries` and `max_entry_bytes` are opt-in caps
that do drop entries, trading re-runs for storage (RS-12).
"""

from __future__ import annotations

import logging
import math
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from noetic.custom_items import CustomItem
from noetic.durable.items import Declarations, ItemsRecord, items_json, load_items
from noetic.durable.parts import is_part_key, join_record, split_record
from noetic.durable.store import (
    MAX_DEPTH,
    CheckpointStore,
    corrupt,
    describe_error,
    encode_document,
    execution_prefix,
    is_plain_json,
)
from noetic.durable.trace import trace_prefix, trace_row
from noetic.errors import NoeticConfigError, NoeticError
from noetic.usage import LastLayerUsage, RoundUsage, StepMeta

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.items import Item
    from noetic.steps.base import Step

__all__ = [
    "ENTRY_VERSION",
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
ENTRY_VERSION = 2
_ZERO = Decimal(0)
#: No one step costs this much (USD): a larger recorded cost is a forged or damaged row, which
#: would otherwise overflow `ctx.cost` to infinity and switch cost ceilings off.
MAX_STEP_COST = Decimal(10) ** 9
#: No one step uses this many tokens: a larger recorded count is a forged or damaged row (an
#: int of thousands of digits would otherwise be summed into the turn's usage).
MAX_STEP_TOKENS = 2**63
#: A token count as a ledger row may hold it.
_Tokens = Annotated[int, Field(ge=0, lt=MAX_STEP_TOKENS)]


def ledger_prefix(execution_id: str) -> str:
    """The key prefix of an execution's ledger shards."""
    return f"{execution_prefix(execution_id)}ledger:"


# --- retention ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepLedgerRetention:
    """Opt-in caps on one execution's ledger (RS-12); `math.inf`, the default, is no cap.

    By default nothing a resume needs is ever dropped (RS-20). `max_entry_bytes`: the largest
    entry kept (its JSON: output, items, meta); a larger one is not recorded and its step
    re-runs on resume. `max_entries`: how many live entries one execution keeps; recording
    past it evicts the oldest, so resume replays the newest part of the run and re-runs the
    rest. Invalid values raise `STEP_LEDGER_RETENTION_INVALID` here, at construction.
    """

    max_entry_bytes: float = math.inf
    max_entries: float = math.inf

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            whole = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if not (whole or value == math.inf):
                raise NoeticConfigError(
                    "STEP_LEDGER_RETENTION_INVALID",
                    f"step_ledger_retention.{f.name} must be a whole number >= 1 or math.inf, got {value!r}",
                    hint="Leave it out for no cap, give a positive whole number, or math.inf for no cap.",
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
    """What the ledger did in this attempt: entries written, not written, evicted by a cap,
    and deleted because nothing can replay them any more (`compacted`)."""

    recorded: int = 0
    dropped_oversize: int = 0
    dropped_unserialisable: int = 0
    evicted: int = 0
    compacted: int = 0


# --- entries --------------------------------------------------------------------------------


class LedgerEntry(BaseModel):
    """One completed step as stored (`usage` is [input, output, cached] tokens)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[2]
    path: str
    step_id: str
    kind: str
    input_hash: str
    output: Any = None
    completed_at: str
    cost: Decimal
    usage: tuple[_Tokens, _Tokens, _Tokens | None]
    meta: dict[str, Any] | None = None
    items: ItemsRecord

    @field_validator("cost", mode="before")
    @classmethod
    def _exact(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("cost is stored as a decimal string")
        try:
            amount = Decimal(value)
        except InvalidOperation:
            raise ValueError("cost is not a decimal number") from None
        if not amount.is_finite() or not _ZERO <= amount < MAX_STEP_COST:
            raise ValueError(f"cost is not an amount from 0 up to {MAX_STEP_COST} USD")
        return amount


@dataclass(frozen=True, slots=True)
class Recovered:
    """An entry read back from storage, its items and meta already parsed."""

    entry: LedgerEntry
    items: list[Item]
    meta: StepMeta | None


@dataclass(slots=True)
class LedgerWindow:
    """An execution's ledger as found in storage.

    `entries`: what can replay, by path. `rows`: the stored keys of every live entry by path,
    oldest first. `stale`: keys no resume can use (superseded entries), deleted by the next
    write. `next_seq`: the first free sequence number.
    """

    entries: dict[str, Recovered] = field(default_factory=dict)
    rows: dict[str, list[str]] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    next_seq: int = 0


@dataclass(frozen=True, slots=True)
class LedgerWrite:
    """The rows one recorded step adds and the rows it makes unnecessary (one atomic batch)."""

    sets: dict[str, str]
    deletes: list[str]


class _Mark:
    """A context's counters when a step started, to measure what the step added."""

    __slots__ = (
        "billed",
        "cached",
        "cost",
        "held",
        "input",
        "input_hash",
        "items",
        "layer_usage",
        "meta",
        "output",
        "started",
    )

    def __init__(self, ctx: Context, input_hash: str):
        self.started = time.monotonic()
        self.layer_usage = ctx._layer_usage
        self.billed = ctx._billed
        self.held = ctx._held
        self.cost = ctx._cost
        self.input = ctx._in
        self.output = ctx._out
        self.cached = ctx._cached
        self.meta = ctx.last_step_meta
        self.items = len(ctx.item_log)
        self.input_hash = input_hash


class _Paths:
    """Paths kept sorted, so a path's subtree (`p` and every `p/...`) is one range."""

    __slots__ = ("_sorted",)

    def __init__(self, paths: list[str]):
        self._sorted = sorted(paths)

    def add(self, path: str) -> None:
        at = bisect_left(self._sorted, path)
        if at == len(self._sorted) or self._sorted[at] != path:
            self._sorted.insert(at, path)

    def remove(self, path: str) -> None:
        at = bisect_left(self._sorted, path)
        if at < len(self._sorted) and self._sorted[at] == path:
            del self._sorted[at]

    def take_below(self, path: str, *, inclusive: bool) -> list[str]:
        """Remove and return the paths under `path` (and `path` itself when `inclusive`).

        The strings starting with `path + "/"` are exactly those from `path + "/"` up to
        `path + "0"` (`0` follows `/`).
        """
        start = bisect_left(self._sorted, path + "/")
        end = bisect_left(self._sorted, path + "0", start)
        taken = self._sorted[start:end]
        del self._sorted[start:end]
        if inclusive:
            at = bisect_left(self._sorted, path)
            if at < len(self._sorted) and self._sorted[at] == path:
                del self._sorted[at]
                taken.append(path)
        return taken


# --- the ledger -----------------------------------------------------------------------------


class StepLedger:
    """One execution's ledger: recovered entries to replay, live rows, and the next sequence.

    Shared by every context of the execution: path keys are unique across the step tree.
    """

    __slots__ = (
        "_entries",
        "_next",
        "_paths",
        "_prefix",
        "_rows",
        "_stale",
        "_trace_prefix",
        "attempt",
        "execution_id",
        "retention",
        "stats",
    )

    def __init__(
        self,
        execution_id: str,
        *,
        retention: StepLedgerRetention,
        recovered: LedgerWindow | None = None,
        attempt: int = 1,
    ):
        window = recovered or LedgerWindow()
        self.execution_id = execution_id
        #: Which attempt at the execution this is (1, then one more per resume), for the trace.
        self.attempt = attempt
        self._prefix = ledger_prefix(execution_id)
        self._trace_prefix = trace_prefix(execution_id)  # worked out once: it percent-encodes the id
        self.retention = retention
        self.stats = StepLedgerStats()
        self._entries: dict[str, Recovered] = dict(window.entries)
        self._rows: dict[str, list[str]] = dict(window.rows)
        self._paths = _Paths(list(window.rows))
        self._stale: list[str] = list(window.stale)
        self._next = window.next_seq

    # --- replay (RS-4, RS-5, RS-7, RS-8, RS-9, RS-19) --------------------------------------

    def replay(self, path: str, step: Step, input_hash: str, ctx: Context) -> tuple[bool, Any]:
        """`(True, output)` when `path` holds this step's result for this input, else `(False, None)`."""
        if not self._entries:
            return False, None
        found = self._entries.get(path)
        if found is None:
            return False, None
        entry = found.entry
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
        if entry.input_hash != input_hash:
            self._discard(path)
            log.info(
                "step ledger: %s was recorded for another input (a step before it ran again); "
                "running it and everything after it again",
                path,
            )
            return False, None
        try:
            output = step.replay_output(entry.output)
        except (NoeticError, ValueError) as exc:
            self._discard(path)
            log.warning(
                "step ledger: the entry at %s no longer fits its step (%s); running it again", path, exc
            )
            return False, None
        self._restore(found, step, path, ctx)
        return True, output

    def _restore(self, found: Recovered, step: Step, path: str, ctx: Context) -> None:
        entry = found.entry
        run = ctx._exec
        run.emit("step_replayed", {"step_id": step.id, "kind": step.kind, "path": path})
        tokens_in, tokens_out, cached = entry.usage
        ctx._record_round(
            RoundUsage(input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=cached),
            entry.cost,
            _ZERO,
        )
        meta = found.meta
        if meta is not None:
            ctx.last_step_meta = (
                meta if meta.billed_cost is None else meta.model_copy(update={"billed_cost": 0.0})
            )
        stream = run.harness.emit_items_on_replay
        for item in found.items:
            if ctx.item_log.append_quietly(item) and stream and isinstance(item, CustomItem):
                run.emit("item_appended", {"item": item, "execution_id": ctx.id})

    def _discard(self, path: str) -> None:
        """Forget the entries at and beneath `path`; their rows go with the next write."""
        for gone in self._paths.take_below(path, inclusive=True):
            self._entries.pop(gone, None)
            self._stale.extend(self._rows.pop(gone, ()))

    # --- recording (RS-1, RS-10..RS-12, RS-20) ---------------------------------------------

    def mark(self, ctx: Context, input_hash: str) -> _Mark:
        """Note `ctx`'s counters and the step's input hash before it runs (passed to `record`)."""
        return _Mark(ctx, input_hash)

    def record(self, path: str, step: Step, output: Any, ctx: Context, mark: _Mark) -> LedgerWrite | None:
        """The rows recording a completed step and the rows it supersedes, or None when the
        entry cannot be kept."""
        made = self._row(path, step, output, ctx, mark)
        if made is None:
            return None
        row, head = made
        if len(row) > self.retention.max_entry_bytes:  # ASCII JSON: characters are bytes
            self._dropped("dropped_oversize", path, f"its entry exceeds max_entry_bytes ({len(row)} bytes)")
            return None
        seq = self._next  # reserved before any await: concurrent paths never share a key (RS-11)
        self._next = seq + 1
        sets = split_record(f"{self._prefix}{seq:08d}", row)
        deletes, self._stale = self._stale, []
        deletes.extend(self._rows.pop(path, ()))  # superseded (RS-10)
        for below in self._paths.take_below(path, inclusive=False):  # a composite replays whole
            self._entries.pop(below, None)
            deletes.extend(self._rows.pop(below, ()))
            self.stats.compacted += 1
        self._rows[path] = list(sets)
        self._paths.add(path)
        while len(self._rows) > self.retention.max_entries:
            oldest = next(iter(self._rows))
            deletes.extend(self._rows.pop(oldest))
            self._paths.remove(oldest)  # a recovered entry still replays in this attempt
            self.stats.evicted += 1
        self.stats.recorded += 1
        traced = self._trace(seq, step, ctx, mark, head)  # not among the rows: never compacted
        if traced is not None:
            sets[traced[0]] = traced[1]
        return LedgerWrite(sets, deletes)

    def _row(
        self, path: str, step: Step, output: Any, ctx: Context, mark: _Mark
    ) -> tuple[str, dict[str, Any]] | None:
        """`(text, head)` of the step's entry (`head`: its fields but items and output, which
        the trace row repeats), or None when it is not plain JSON."""
        try:
            data = step.record_output(output)
            # Only what JSON gives back as the very same types (an Enum member would come back
            # a str); a string, a whole number, a bool or None needs no walk.
            if type(data) not in _EXACT and not is_plain_json(data, max_depth=MAX_DEPTH - 1):
                raise ValueError("it does not survive a JSON round trip as the same types")
            output_text = encode_document(data, max_depth=MAX_DEPTH - 1)  # one level down in the entry
            meta = ctx.last_step_meta
            stamp = datetime.now(UTC).isoformat()
            head = {
                "v": ENTRY_VERSION,
                "path": path,
                "step_id": step.id,
                "kind": step.kind,
                "input_hash": mark.input_hash,
                "completed_at": stamp,
                "cost": str(ctx._cost - mark.cost),
                "usage": [ctx._in - mark.input, ctx._out - mark.output, _delta(ctx._cached, mark.cached)],
                "meta": None
                if meta is mark.meta or meta is None
                else meta.model_dump(mode="json", exclude_none=True),
            }
            head_text = encode_document(head)
            items_text = items_json(ctx.item_log.items[mark.items :])
        except (TypeError, ValueError) as exc:
            self._dropped("dropped_unserialisable", path, f"its output or items are not plain JSON ({exc})")
            return None
        # The items' texts are cached per item and the output is encoded once: both spliced in.
        return f'{head_text[:-1]},"items":{items_text},"output":{output_text}}}', head

    def _trace(
        self, seq: int, step: Step, ctx: Context, mark: _Mark, head: dict[str, Any]
    ) -> tuple[str, str] | None:
        """The step's trace row (IN-1), or None when its layer usage is not JSON."""
        meta = ctx.last_step_meta
        own = meta is not None and meta is not mark.meta and meta.step_id == step.id
        # Only a usage the call already measured (a call with layers): measuring one that was
        # left lazy walks the whole request, which would make every step cost O(history).
        measured = ctx._layer_usage
        usage = (
            measured
            if own and measured is not mark.layer_usage and isinstance(measured, LastLayerUsage)
            else None
        )
        try:
            return trace_row(
                self._trace_prefix,
                {
                    "seq": seq,
                    "attempt": self.attempt,
                    "path": head["path"],
                    "step_id": head["step_id"],
                    "kind": head["kind"],
                    "completed_at": head["completed_at"],
                    "duration_ms": round((time.monotonic() - mark.started) * 1000, 3),
                    "cost": head["cost"],
                    "billed_cost": str(ctx._billed - mark.billed),
                    "held_cost": str(ctx._held - mark.held),
                    "usage": head["usage"],
                    "layer_usage": None
                    if usage is None
                    else usage.model_dump(mode="json", exclude=_NO_ITEMS),
                },
            )
        except (TypeError, ValueError):
            return None

    def _dropped(self, counter: str, path: str, why: str) -> None:
        setattr(self.stats, counter, getattr(self.stats, counter) + 1)
        if _first_warning(self.execution_id, counter):
            log.warning(
                "step ledger: not recording %s: %s. It will run again on resume; "
                "further drops of this kind in execution %s are not logged",
                path,
                why,
                self.execution_id,
            )


#: The (execution id, kind of drop) pairs this process has warned about. Each attempt has a
#: ledger of its own, so without this a resume repeats its first attempt's warning for the step
#: that again is not recorded. Bounded: past the cap the oldest pairs are forgotten.
_WARNED: OrderedDict[tuple[str, str], None] = OrderedDict()
_WARNED_CAP = 1024


def _first_warning(execution_id: str, counter: str) -> bool:
    """Whether this is the first drop of kind `counter` this process sees in `execution_id`."""
    key = (execution_id, counter)
    if key in _WARNED:
        return False
    _WARNED[key] = None
    if len(_WARNED) > _WARNED_CAP:
        _WARNED.popitem(last=False)
    return True


#: Output types whose JSON text always reads back as the same value.
_EXACT = (str, int, bool, type(None))


#: The layer usage in a trace row leaves out the items each layer contributed (the log has them).
_NO_ITEMS: Any = {"layers": {"__all__": {"items"}}}


def _delta(after: int | None, before: int | None) -> int | None:
    if after is None:
        return None
    return after - (before or 0)


async def load_ledger(
    store: CheckpointStore, execution_id: str, declarations: Declarations | None = None
) -> LedgerWindow:
    """Read an execution's ledger: list the shards, read them (and their parts) in one batch,
    and index them by path in sequence order so a later entry at a path wins (RS-10).

    Every row is checked in full here, before anything runs: a row that is not an entry this
    version wrote — bad JSON, too deep, a wrong shape, an item that does not parse, a cost
    that is not a finite amount — raises `CHECKPOINT_CORRUPT` naming the execution and the
    row; an entry of another version raises `CHECKPOINT_SCHEMA_MISMATCH`.
    """
    prefix = ledger_prefix(execution_id)
    keys = await store.list_prefix(prefix)
    records: list[tuple[int, str]] = []
    parts: dict[str, list[str]] = {}
    for key in keys:
        suffix = key[len(prefix) :]
        if suffix.isdigit():
            records.append((int(suffix), key))
        elif is_part_key(suffix):
            parts.setdefault(key.partition(":part:")[0], []).append(key)
        else:
            raise corrupt(key, "it is not a ledger entry key", execution_id=execution_id)
    records.sort()
    rows = await store.get_many(keys)
    window = LedgerWindow(next_seq=records[-1][0] + 1 if records else 0)
    for _, key in records:
        if key not in rows:
            continue  # deleted between the listing and the read
        raw = join_record(key, rows, execution_id=execution_id)
        found = _recover(key, raw, execution_id, declarations or {})
        path = found.entry.path
        window.stale.extend(window.rows.pop(path, ()))
        window.rows[path] = [key, *parts.get(key, ())]
        window.entries[path] = found
    return window


def _recover(key: str, raw: Any, execution_id: str, declarations: Declarations) -> Recovered:
    """A stored entry checked in full (see `load_ledger`)."""
    if isinstance(raw, dict) and isinstance(raw.get("v"), int) and raw["v"] != ENTRY_VERSION:
        raise NoeticConfigError(
            "CHECKPOINT_SCHEMA_MISMATCH",
            f"the ledger entry {key!r} of execution {execution_id!r} has version {raw['v']!r}; this "
            f"version of Noetic reads version {ENTRY_VERSION}",
            hint="Resume it with the Noetic version that wrote it, or clear_checkpoint() it and start over.",
            execution_id=execution_id,
            found=raw["v"],
        )
    try:
        entry = LedgerEntry.model_validate(raw)
        items = load_items(entry.items, declarations)
        meta = StepMeta.model_validate(entry.meta) if entry.meta is not None else None
        if meta is not None:
            _check_meta(meta)
    except (ValidationError, NoeticError, ValueError, TypeError) as exc:
        raise corrupt(
            key, f"it is not a ledger entry ({describe_error(exc)})", execution_id=execution_id
        ) from None
    return Recovered(entry, items, meta)


def _check_meta(meta: StepMeta) -> None:
    """Refuse what this code never writes in a step's meta (RS-21): a token count that is
    negative or not below `MAX_STEP_TOKENS`, a negative cost (a non-finite one never parses)."""
    usage = meta.usage
    if usage is not None:
        counts = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
        )
        if any(count is not None and not 0 <= count < MAX_STEP_TOKENS for count in counts):
            raise ValueError(f"meta.usage: a token count is not from 0 up to {MAX_STEP_TOKENS}")
    for cost in (meta.cost, meta.billed_cost):
        if cost is not None and cost < 0:
            raise ValueError("meta: a cost is negative")
