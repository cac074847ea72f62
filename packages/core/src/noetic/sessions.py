"""The harness's sessions by thread, and the policy that evicts idle ones (SE-1..SE-4).

A session is what the harness keeps for one thread between its turns: the history (the
thread's item log), the queue, the stream and the last turn's outcome. A harness serving many
distinct threads would keep every one of them forever; `SessionTable` bounds that with an
`EvictionPolicy`:

- `max_idle_sessions`: at most this many idle sessions stay in memory; when one more goes
  idle, the least recently used idle one is evicted. `"auto"` (the default) is
  `DEFAULT_MAX_IDLE_SESSIONS` with `storage=` and unbounded without it; `None` is unbounded.
- `session_idle_timeout`: a session idle for longer than this many seconds is evicted
  (`None`, the default: never for its age). Checked whenever a turn ends — no timer runs.
- `hot_sessions`: the idle sessions kept as they are, most recently idle first
  (`DEFAULT_HOT_SESSIONS`); older idle sessions are packed into bytes until their thread is
  used again (`noetic.packed_sessions`, SE-5). `None`: never pack.

A session is idle when no turn runs or waits in its queue and nobody is subscribed to its
stream; only idle sessions are evicted (SE-1). Channels belong to executions and close when
their turn ends, and background jobs (cost reconciliation) hold their execution, not the
session, so neither keeps a session.

With `storage=`, a thread's history lives in the checkpoint store as the chain of pieces of
`noetic.durable.history` (each turn's start writes the piece its log adds, HS-1) and a small
record at `thread:{thread_id}:history` naming how far of that chain is the thread's history.
That record is written when the session is evicted — and only then is the session dropped
from memory — and, for every session whose history changed since, when the harness exits;
either writes the piece of items no turn start stored yet (the last turn's output) and the
record, never the whole history again. The thread's first turn in a harness reads the record
and its pieces back, so the model sees every earlier message (SE-2); the record stays until a
newer one replaces it. Two harnesses that continue one thread at once fork it: the record
names whichever history was written last, whole, never a mix (HS-4).
`delete_thread_history` (on the harness) removes the record and the pieces; another harness
holding the thread sees them gone before its next write and writes nothing for it (TH-2).
A harness on the same store in another process, or the next run of the program, picks the
record up the same way. A write that fails on eviction keeps the session in memory (logged),
so no history is lost; a process killed between two writes loses the turns since the last
one from the thread's history (their executions stay in the store). Without `storage=` an evicted thread's history is gone: its next turn starts
from an empty history (SE-3) — which is why `"auto"` never evicts without storage.

Without `storage=` the thread's layer state in the harness's own memory store goes with the
session (`MemoryLayerStateStore.drop_thread`); with it, that state lives in the checkpoint
store and comes back. Either way the recall outputs cached for the thread are dropped.

What eviction always drops: the last response (`get_agent_response` on an evicted thread
raises `NO_STEP_CONFIGURED` as for a thread that never ran) and the stream: an item or full
stream iterator made before the eviction and first read after it ends at once (SE-4).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeGuard
from urllib.parse import quote

from noetic.errors import NoeticConfigError, NoeticError
from noetic.items import ItemLog
from noetic.logs import logger
from noetic.numbers import as_float
from noetic.records import FrozenRecord, set_field

if TYPE_CHECKING:
    from noetic.durable.history import StoredPoint
    from noetic.durable.items import Declarations
    from noetic.durable.store import CheckpointStore
    from noetic.harness import _Session

__all__ = [
    "DEFAULT_HOT_SESSIONS",
    "DEFAULT_MAX_IDLE_SESSIONS",
    "HISTORY_VERSION",
    "EvictionPolicy",
    "SessionTable",
    "history_key",
    "set_chain",
    "stored_point",
]

log = logger("noetic.sessions")

#: Idle sessions kept in memory by default when the harness has `storage=`.
DEFAULT_MAX_IDLE_SESSIONS = 10_000
#: Idle sessions kept unpacked by default (SE-5); older idle ones are packed.
DEFAULT_HOT_SESSIONS = 1000
#: The layout of the history record this code writes (it reads version 1 too, items inline).
HISTORY_VERSION = 2
#: Evicted sessions written to the store in one atomic batch, at most.
_BATCH = 256


def history_key(thread_id: str) -> str:
    """Where the record naming an evicted thread's history lives (the id is percent-encoded,
    so no thread's key is a prefix of another's)."""
    return f"thread:{quote(thread_id, safe='')}:history"


def stored_point(session: _Session) -> StoredPoint:
    """How far of the session's log the store's history pieces hold (the empty point when
    they hold none of this log)."""
    from noetic.durable.history import EMPTY

    chain = session.chain
    if chain is not None and chain[0] is session.log and chain[1].count <= len(session.log):
        return chain[1]
    return EMPTY


def set_chain(session: _Session, item_log: ItemLog, point: StoredPoint) -> None:
    """Note that the store's pieces hold `item_log` up to `point` (the first piece this
    session knows stored becomes its anchor, TH-2)."""
    session.chain = (item_log, point)
    if session.anchor is None and point.tip is not None:
        session.anchor = point.tip


def _advance_chain(session: _Session, item_log: ItemLog, point: StoredPoint) -> None:
    """Note that the store's pieces hold `item_log` up to `point`, unless a turn's start
    stored more of it meanwhile."""
    chain = session.chain
    if chain is None or chain[0] is not item_log or chain[1].count < point.count:
        set_chain(session, item_log, point)


def _record_current(session: _Session) -> bool:
    """Whether the thread's history record names the session's whole log."""
    stored = session.stored
    return stored is not None and stored[0] is session.log and stored[1].count == len(session.log)


class EvictionPolicy(FrozenRecord):
    """When idle sessions leave memory: `max_idle` (None: no count bound) and
    `idle_timeout` in seconds (None: no age bound); and how many idle sessions stay unpacked,
    `hot` (None: all of them, SE-5)."""

    __slots__ = ("hot", "idle_timeout", "max_idle")
    max_idle: int | None
    idle_timeout: float | None
    hot: int | None

    def __init__(
        self, max_idle: int | None, idle_timeout: float | None, hot: int | None = DEFAULT_HOT_SESSIONS
    ) -> None:
        set_field(self, "max_idle", max_idle)
        set_field(self, "idle_timeout", idle_timeout)
        set_field(self, "hot", hot)

    @property
    def evicts(self) -> bool:
        """Whether this policy ever evicts."""
        return self.max_idle is not None or self.idle_timeout is not None

    @classmethod
    def of(
        cls,
        max_idle_sessions: int | Literal["auto"] | None,
        session_idle_timeout: float | None,
        hot_sessions: int | None = DEFAULT_HOT_SESSIONS,
        *,
        storage: bool,
    ) -> EvictionPolicy:
        """The policy of the harness options, checked (`SESSION_POLICY_INVALID`)."""
        if max_idle_sessions == "auto":
            max_idle: int | None = DEFAULT_MAX_IDLE_SESSIONS if storage else None
        elif max_idle_sessions is None or _is_count(max_idle_sessions):
            max_idle = max_idle_sessions
        else:
            raise _invalid("max_idle_sessions", max_idle_sessions)
        timeout = None if session_idle_timeout is None else as_float(session_idle_timeout)
        if session_idle_timeout is not None and (
            timeout is None or not math.isfinite(timeout) or timeout < 0
        ):
            raise _invalid("session_idle_timeout", session_idle_timeout)
        if hot_sessions is not None and not _is_count(hot_sessions):
            raise _invalid("hot_sessions", hot_sessions)
        return cls(max_idle, timeout, hot_sessions)


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: What each session option accepts, and how to write it, for `SESSION_POLICY_INVALID`.
_ACCEPTED = {
    "max_idle_sessions": (
        "'auto', None or a whole number >= 0",
        "Write max_idle_sessions='auto' (the default: 10,000 idle sessions with storage=, no bound "
        "without), None for no bound, or a count such as 1000 (0 evicts each session when its turn ends).",
    ),
    "session_idle_timeout": (
        "None or a finite number of seconds >= 0",
        "Write session_idle_timeout=None (the default: no age bound) or a number of seconds such as 600.0.",
    ),
    "hot_sessions": (
        "None or a whole number >= 0",
        "Write hot_sessions=1000 (the default: idle sessions past the 1,000 most recent are packed), "
        "None to never pack, or another count (0 packs each session when its turn ends).",
    ),
}


def _invalid(option: str, value: object) -> NoeticConfigError:
    """The error for `option=value`, naming both and what the option accepts."""
    accepts, hint = _ACCEPTED[option]
    return NoeticConfigError(
        "SESSION_POLICY_INVALID",
        f"{option}={value!r} is not valid: {option} must be {accepts}",
        hint=hint,
        option=option,
    )


def _is_idle(session: _Session) -> bool:
    """No turn running or queued, and nobody subscribed to the stream (SE-1)."""
    return not (session.running or session.queue or session.current is not None or session.stream.subscribed)


class SessionTable:
    """The live sessions of one harness, by thread id, evicted under `policy`.

    `make(thread_id)` builds a session; `durable` says whether the harness has `storage=`,
    whose checkpoint store `store()` resolves; `declarations()` rebuilds custom items read back; `start_background(job)` runs
    the writes of evicted histories so that leaving the harness waits for them. `dropped(thread_id)`,
    when given, is called as each evicted session leaves memory (the harness drops what else it
    keeps for the thread).
    """

    __slots__ = (
        "_declarations",
        "_dropped",
        "_durable",
        "_flushing",
        "_idle",
        "_leaving",
        "_live",
        "_make",
        "_start_background",
        "_store",
        "_warm",
        "evicted",
        "policy",
        "stopped",
    )

    def __init__(
        self,
        policy: EvictionPolicy,
        make: Callable[[str], _Session],
        durable: bool,
        store: Callable[[], CheckpointStore | None],
        declarations: Callable[[], Declarations],
        start_background: Callable[[Callable[[], Awaitable[None]]], None],
        dropped: Callable[[str], object] | None = None,
    ):
        self.policy = policy
        self._dropped = dropped
        self._make = make
        self._durable = durable
        self._store = store
        self._declarations = declarations
        self._start_background = start_background
        self._live: dict[str, _Session] = {}
        #: Thread ids of sessions that went idle, least recently first, with when they did. An
        #: OrderedDict: reading its first entry stays O(1) however many were removed before
        #: (a plain dict skips the removed slots on every `next(iter(...))`).
        self._idle: OrderedDict[str, float] = OrderedDict()
        #: Idle sessions not packed, least recently idle first (SE-5): past `policy.hot` of
        #: them, the first is packed.
        self._warm: OrderedDict[str, _Session] = OrderedDict()
        self._leaving: deque[_Session] = deque()
        self._flushing = False
        #: How many sessions this table has evicted.
        self.evicted = 0
        #: Set while the harness is not running (leaving it, or left): nothing is evicted.
        self.stopped = False

    def __len__(self) -> int:
        return len(self._live)

    def values(self) -> list[_Session]:
        """The sessions in memory now."""
        return list(self._live.values())

    def get(self, thread_id: str) -> _Session:
        """The thread's session, made (and marked to read its history back) when absent."""
        session = self._live.get(thread_id)
        if session is None:
            session = self._live[thread_id] = self._make(thread_id)
            session.restore_pending = self._durable
            if self.policy.evicts:
                self._idle[thread_id] = time.monotonic()
        return session

    def settled(self, session: _Session) -> None:
        """The session's queue has drained: it is idle now; evict and pack what the policy says."""
        thread_id = session.thread_id
        if self.stopped or self._live.get(thread_id) is not session:
            return
        if self.policy.evicts:
            self._idle[thread_id] = time.monotonic()
            self._idle.move_to_end(thread_id)
            self.sweep()
        if self.policy.hot is not None and self._live.get(thread_id) is session:
            self._warm[thread_id] = session
            self._warm.move_to_end(thread_id)
            if len(self._warm) > self.policy.hot:
                self._pack_coldest()

    def _pack_coldest(self) -> None:
        """Pack the least recently idle sessions past the hot set (SE-5). One that is not
        idle any more is skipped: it comes back here when its queue drains."""
        from noetic.packed_sessions import pack

        warm, hot = self._warm, self.policy.hot
        assert hot is not None
        while len(warm) > hot:
            thread_id, session = warm.popitem(last=False)
            if self._live.get(thread_id) is session and not session.leaving and _is_idle(session):
                pack(session)

    def sweep(self) -> None:
        """Evict the idle sessions beyond the count bound and those idle for too long."""
        policy, idle = self.policy, self._idle
        now = time.monotonic()
        horizon = -math.inf if policy.idle_timeout is None else now - policy.idle_timeout
        for _ in range(len(idle)):  # each entry is looked at once at most
            thread_id = next(iter(idle))
            if (
                not (policy.max_idle is not None and len(idle) > policy.max_idle)
                and idle[thread_id] > horizon
            ):
                return
            del idle[thread_id]
            session = self._live[thread_id]
            if session.leaving:
                continue
            if not _is_idle(session):
                if not (session.running or session.queue):  # only subscribed: look again later
                    idle[thread_id] = now
                continue  # a running session comes back here when its queue drains
            self._evict(session)

    def _evict(self, session: _Session) -> None:
        if not self._durable or session.restore_pending or _record_current(session):  # nothing new to write
            self._drop(session)
            return
        session.leaving = True
        self._leaving.append(session)
        if not self._flushing:
            self._flushing = True
            self._start_background(self._flush)

    def _drop(self, session: _Session) -> None:
        del self._live[session.thread_id]
        self._idle.pop(session.thread_id, None)
        self._warm.pop(session.thread_id, None)
        session.stream.close()  # a subscription made on it later ends instead of hanging (SE-4)
        self.evicted += 1
        if self._dropped is not None:
            self._dropped(session.thread_id)

    async def _flush(self) -> None:
        """Write the histories of the sessions leaving, a batch at a time, then drop them."""
        batch: dict[str, _Leaving] = {}
        try:
            while self._leaving:
                batch = {}
                while self._leaving and len(batch) < _BATCH:
                    session = self._leaving.popleft()
                    if not _is_idle(session):  # a turn came for it meanwhile: it stays
                        session.leaving = False
                        continue
                    try:
                        batch[session.thread_id] = _Leaving(session, *_history_rows(session))
                    except (TypeError, ValueError) as exc:
                        self._keep(session, f"its history is not JSON ({exc})")
                        continue
                    except NoeticError as exc:  # a packed session that did not read back (SE-5)
                        self._keep(session, exc.message)
                        continue
                if batch:
                    await self._write_out(batch)
                    batch = {}
        finally:
            self._flushing = False
            if self._leaving or batch:  # cancelled (the harness left): whatever was leaving stays
                for session in (*self._leaving, *(leaving.session for leaving in batch.values())):
                    session.leaving = False
                self._leaving.clear()

    async def _write_out(self, batch: dict[str, _Leaving]) -> None:
        store = self._store()
        assert store is not None  # only sessions of a harness with storage leave this way
        for thread_id in await _check_records(store, [leaving.session for leaving in batch.values()]):
            self._deleted_elsewhere(batch.pop(thread_id))
        if not batch:
            return
        try:
            await store.write({key: text for leaving in batch.values() for key, text in leaving.rows.items()})
        except Exception as exc:
            why = exc.message if isinstance(exc, NoeticError) else f"{type(exc).__name__}: {exc}"
            log.debug("writing out %d threads' histories failed", len(batch), exc_info=exc)
            for leaving in batch.values():
                self._keep(leaving.session, why[:300])
            return
        for leaving in batch.values():
            session = leaving.session
            session.leaving = False
            session.stored = (leaving.log, leaving.point)
            _advance_chain(session, leaving.log, leaving.point)
            if _is_idle(session) and leaving.unchanged():
                self._drop(session)
            else:  # a turn ran while its history was written: the session stays, the record
                # (a prefix of its history) is replaced by the next write
                self._idle[session.thread_id] = time.monotonic()
                self._idle.move_to_end(session.thread_id)

    def _deleted_elsewhere(self, leaving: _Leaving) -> None:
        """A leaving session whose stored history another harness deleted (TH-2): nothing is
        written; an idle one starts over and leaves memory, so its next turn, here or anywhere,
        has an empty history. One a turn came for meanwhile stays as it is, idle again later."""
        session = leaving.session
        session.leaving = False
        if _is_idle(session) and leaving.unchanged():
            self.forget(session.thread_id)
            self._drop(session)
        else:
            self._idle[session.thread_id] = time.monotonic()
            self._idle.move_to_end(session.thread_id)

    def _keep(self, session: _Session, why: str) -> None:
        """A session whose history could not be written stays in memory, idle again."""
        log.warning("thread %r stays in memory: its history could not be saved: %s", session.thread_id, why)
        session.leaving = False
        self._idle[session.thread_id] = time.monotonic()

    async def restore(self, session: _Session) -> None:
        """Read the thread's stored history back into its session (SE-2); the record stays
        until a newer one replaces it. A damaged record or piece raises `CHECKPOINT_CORRUPT`."""
        from noetic.durable.history import EMPTY, load_point

        store = self._store()
        if store is None:
            session.restore_pending = False
            return
        key = history_key(session.thread_id)
        keys = await store.list_prefix(key)
        point: StoredPoint | None = EMPTY
        if key in keys:
            rows = await store.get_many(keys)
            items, point, session.log_execution = _load_history(
                key, rows, session.thread_id, self._declarations()
            )
            if point is not None:
                items = await load_point(store, session.thread_id, point, self._declarations(), owner=key)
            session.log = ItemLog([*items, *session.log.items])
        if point is not None:  # a version-1 record names no pieces: the next write stores them
            session.stored = (session.log, point)
            set_chain(session, session.log, point)
        session.restore_pending = False

    def check_not_busy(self, thread_id: str) -> None:
        """Raise `THREAD_BUSY` when a turn runs or waits on the thread, or its history is
        being written out."""
        session = self._live.get(thread_id)
        if session is not None and (session.leaving or session.running or session.queue or session.current):
            raise NoeticError(
                "THREAD_BUSY",
                f"thread {thread_id!r} has a turn running or queued (or its history is being saved); "
                "wait for the turn to end (or abort it) and for the harness's background writes "
                "(await harness.wait_background()), then delete its history",
                thread_id=thread_id,
            )

    def forget(self, thread_id: str) -> None:
        """Start the thread over in memory: its session (if any) gets an empty history with
        nothing stored (a deleted thread history is not read back)."""
        from noetic.durable.history import EMPTY

        session = self._live.get(thread_id)
        if session is not None:
            session.log = ItemLog()
            session.packed = None
            session.last_response = None
            session.stored = session.chain = (session.log, EMPTY)  # as good as no record at all
            session.anchor = None
            session.restore_pending = False

    async def save_all(self) -> None:
        """Write the history of every session in memory that changed since its record was
        written or read (the harness is leaving: the next one starts from these, SE-2). A
        failed write is logged; the histories of that batch stay as they were in the store."""
        if not self._durable:
            return
        changed = [
            session
            for session in self._live.values()
            if not session.restore_pending and not _record_current(session)
        ]
        if not changed:
            return
        try:
            store = self._store()
        except NoeticError as exc:  # the store never opened (a bad URL): the turns said so already
            log.warning("%d thread histories could not be saved: %s", len(changed), exc.message)
            return
        if store is None:
            return
        for start in range(0, len(changed), _BATCH):
            batch = changed[start : start + _BATCH]
            deleted = await _check_records(store, batch)
            rows: dict[str, str] = {}
            saved: list[tuple[_Session, ItemLog, StoredPoint]] = []
            for session in batch:
                if session.thread_id in deleted:  # TH-2: not brought back
                    self.forget(session.thread_id)
                    continue
                try:
                    session_rows, point = _history_rows(session)
                except (TypeError, ValueError) as exc:
                    log.warning("thread %r: its history is not JSON, not saved: %s", session.thread_id, exc)
                    continue
                except NoeticError as exc:  # a packed session that did not read back (SE-5)
                    log.warning("thread %r: its history is not saved: %s", session.thread_id, exc.message)
                    continue
                rows.update(session_rows)
                saved.append((session, session.log, point))
            if not rows:
                continue
            try:
                await store.write(rows)
            except NoeticError as exc:
                log.warning("%d thread histories could not be saved: %s", len(saved), exc.message)
                continue
            for session, item_log, point in saved:
                session.stored = (item_log, point)
                _advance_chain(session, item_log, point)


class _Leaving:
    """A session being written out: its record's rows, the point they store and the log
    they were made from."""

    __slots__ = ("length", "log", "point", "rows", "session")

    def __init__(self, session: _Session, rows: dict[str, str], point: StoredPoint):
        self.session = session
        self.rows = rows
        self.point = point
        self.log = session.log
        self.length = len(session.log)

    def unchanged(self) -> bool:
        """Whether the session's history is still what the rows hold."""
        return self.session.log is self.log and len(self.log) == self.length


def _history_rows(session: _Session) -> tuple[dict[str, str], StoredPoint]:
    """The rows of the session's history record — with the piece of items the store's pieces
    lack — and the point it names (raises `TypeError`/`ValueError` if the history is not JSON)."""
    from noetic.durable.history import append_rows, point_json
    from noetic.durable.store import encode_document

    rows, point = append_rows(session.thread_id, session.log.items, stored_point(session))
    head = {"v": HISTORY_VERSION, "thread_id": session.thread_id, "history": point_json(point)}
    if session.log_execution is not None:  # whose log the thread's is: a resume of another moved on (TH-1)
        head["execution"] = session.log_execution
    rows[history_key(session.thread_id)] = encode_document(head)
    return rows, point


async def _check_records(store: CheckpointStore, sessions: list[_Session]) -> set[str]:
    """Look at the store before writing the sessions' history records: the thread ids whose
    stored history another harness deleted since this one read or wrote it (TH-2) — their
    history must not be written again — and a logged warning for each thread whose record
    another harness rewrote meanwhile: the thread forked (HS-4), and the record about to be
    written names this harness's branch only.

    A deleted history is told by its anchor, the oldest piece this session knew stored (pieces
    are only ever removed all at once, by `delete_thread_history`), or by the record this
    session last read or wrote having gone. A check before the write, not a guard: the store
    has no conditional write, so a deletion or a write by another harness at the same instant
    can still be missed. A store that fails here is left to the write that follows, which
    reports it.
    """
    from noetic.durable.history import piece_key, point_of

    keys = [history_key(s.thread_id) for s in sessions if s.stored is not None]
    keys += [piece_key(s.thread_id, s.anchor) for s in sessions if s.anchor is not None]
    if not keys:
        return set()
    try:
        rows = await store.get_many(keys)
    except NoeticError:
        return set()
    import json  # on first use: `import json` compiles its regexes (5 M instructions)

    deleted: set[str] = set()
    for session in sessions:
        thread_id, stored, anchor = session.thread_id, session.stored, session.anchor
        text = rows.get(history_key(thread_id))
        if (anchor is not None and piece_key(thread_id, anchor) not in rows) or (
            stored is not None and stored[1].tip is not None and text is None
        ):
            deleted.add(thread_id)
            log.warning(
                "thread %r: its stored history was deleted (delete_thread_history in another "
                "harness) since this harness read or wrote it; it is not written again, and the "
                "%d items this harness held for it are dropped (TH-2)",
                thread_id,
                len(session.log),
            )
            continue
        if stored is None or text is None:
            continue
        try:
            record = json.loads(text)
        except ValueError:  # damaged (or split, version 1): the write replaces it either way
            continue
        theirs = point_of(record.get("history")) if isinstance(record, dict) else None
        if theirs is not None and theirs != stored[1]:
            log.warning(
                "thread %r was continued by another harness since this one read its history "
                "(the store's record names %d items; this harness last read or wrote %d and now has %d): "
                "the record now names this harness's history, and the other turns stay only in "
                "their own executions (a forked thread, HS-4)",
                thread_id,
                theirs.count,
                stored[1].count,
                len(session.log),
            )
    return deleted


#: The keys of a version-2 history record that names the execution whose log the thread's is.
_NAMING_RECORD = {"v", "thread_id", "history", "execution"}


def _load_history(
    key: str, rows: dict[str, str], thread_id: str, declarations: Declarations
) -> tuple[list[Any], StoredPoint | None, str | None]:
    """A history record, checked (anything else is `CHECKPOINT_CORRUPT`): the point of the
    thread's pieces it names (version 2), or its inline items (version 1) and None; and the
    execution whose log the thread's log is (its own plus what it appended), when the record
    says (TH-1)."""
    from pydantic import ValidationError

    from noetic.durable.history import point_of
    from noetic.durable.items import load_items
    from noetic.durable.parts import join_record
    from noetic.durable.store import describe_error

    record = join_record(key, rows)
    if not (
        isinstance(record, dict)
        and set(record) in ({"v", "thread_id", "items"}, {"v", "thread_id", "history"}, _NAMING_RECORD)
    ):
        raise _damaged(key, thread_id, "it is not a history record")
    if record["v"] not in (1, HISTORY_VERSION) or isinstance(record["v"], bool):
        raise _damaged(
            key, thread_id, f"it has version {record['v']!r}, this code reads 1 or {HISTORY_VERSION}"
        )
    if record["thread_id"] != thread_id:
        raise _damaged(key, thread_id, f"it belongs to thread {record['thread_id']!r}")
    if record["v"] == HISTORY_VERSION:
        point = point_of(record.get("history"))
        if point is None:
            raise _damaged(key, thread_id, "it does not name a point of the thread's stored history")
        execution = record.get("execution")
        if "execution" in record and not (isinstance(execution, str) and execution):
            raise _damaged(key, thread_id, "the execution it follows is not an execution id")
        return [], point, execution
    if "items" not in record:
        raise _damaged(key, thread_id, "it is not a history record")
    try:
        return load_items(record["items"], declarations), None, None
    except (ValidationError, NoeticError, ValueError, TypeError) as exc:
        raise _damaged(key, thread_id, f"its items do not parse ({describe_error(exc)})") from None


def _damaged(key: str, thread_id: str, why: str) -> NoeticError:
    return NoeticError(
        "CHECKPOINT_CORRUPT",
        f"the stored history {key!r} of thread {thread_id!r} is damaged: {why}. The turn was "
        f"stopped rather than run without its history; delete_thread_history({thread_id!r}) "
        "removes the thread's stored history and starts the thread over",
        key=key,
        thread_id=thread_id,
    )
