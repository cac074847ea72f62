"""`SqliteCheckpointStore`: the embedded default, on the standard library's `sqlite3`.

Settings follow what keeps SQLite stores from losing or locking data: WAL journaling with
`synchronous=FULL` by default (a commit is flushed to disk: it survives a crash of the process
and of the machine; `synchronous="normal"`, or `?synchronous=normal` in the URL, skips the
flush — a commit then survives a killed process but not a power loss or an OS crash), a busy
timeout, `BEGIN IMMEDIATE` for every write (the write lock is taken up front, so two writers
queue instead of failing mid-transaction), and a rollback on any error. Each store has one
connection, used by one thread at a time under a lock, from `anyio.to_thread` so the event
loop never blocks on disk.

One exception, because the hop to a worker thread and back costs about as much as the
commit itself on a fast disk (two thread wake-ups, ~50–100 µs): a small write (a step's entry,
up to `INLINE_BYTES`) runs on the caller's thread when nothing can make it wait — the
connection is open and its lock free, and the write lock is taken with no busy wait (another
writer holding it sends the write to a worker thread, where it queues as usual). With
`synchronous="normal"` such a commit only appends to the WAL in the operating system's cache.
With `synchronous="full"` it waits for its flush on the event loop's thread, so it does so
only while at most one execution is claimed in the whole process (`claims_held`): then no
other execution's work can be held up behind the disk; with two or more, every commit goes to
a worker thread and the loop serves the others meanwhile. `inline=False` sends every write to
a worker thread (for a program whose other tasks on the loop must never wait for the disk).
A listing (`list_prefix`, which a turn makes twice as it starts: the thread's stored history
and the new execution's records) is read on the caller's thread too, under the same
conditions — the connection open, its lock free, no busy wait — when it finds at most
`INLINE_KEYS` keys: an index range read flushes nothing, and a WAL reader takes no lock a
writer holds; a longer listing is read again in a worker thread (`inline=False`: always).
The guarantee of each mode is the same either way: the commit has returned, flushed
under full, before `write` does. The connection's automatic WAL checkpoint, the one part of a
commit that copies pages and can take long, is switched off; the store checkpoints the WAL
itself, in a worker thread, after about `CHECKPOINT_PAGES` pages were written since the last
checkpoint — under a third of SQLite's own default, so that the WAL soon stops growing and
each later commit overwrites frames of a file whose size no longer changes.

Each row stores the JSON text and its CRC-32; a row whose text no longer matches its checksum,
a key or text that is not UTF-8, a database file SQLite reports as damaged, or one shorter than
its header says (`noetic.durable.sqlite_header`, checked when the store opens it) raises
`CHECKPOINT_CORRUPT`. A damaged key still lists (`list_prefix`), as a string holding the bytes
that are not UTF-8 as lone surrogates (Python's `surrogateescape`): reading it raises
`CHECKPOINT_CORRUPT` naming it, and deleting it (`clear_checkpoint`) removes the row. The
table layout is versioned through `PRAGMA user_version` (`LAYOUT_VERSION`); a file of the
previous layout is migrated in one transaction when the store opens it. Claims lock a byte of the sidecar file
`{path}-claims` (see `noetic.durable.claims`).
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlsplit

import anyio

from noetic.durable.claims import ClaimTable, FileClaimTable, HeldClaim, claims_held
from noetic.durable.sqlite_header import truncation
from noetic.durable.store import corrupt, corrupt_file, row_checksum, verified_row
from noetic.errors import NoeticConfigError, NoeticError
from noetic.ids import is_text

__all__ = ["SqliteCheckpointStore", "sqlite_store_from_url"]

T = TypeVar("T")

#: The table layout this code reads and writes (`PRAGMA user_version`); see `_SCHEMA`.
LAYOUT_VERSION = 2
#: Keys per `IN (...)` query, under SQLite's bound-parameter limit.
_CHUNK = 500
#: Layout 2: the rows in a rowid table, found by key through its unique index. A new row takes
#: the next rowid, so it is appended at the table's right edge, where a full leaf splits by
#: starting a new one (two or three pages written); only the index, whose entries are small,
#: takes inserts in the middle. Layout 1 kept the rows themselves ordered by key
#: (`WITHOUT ROWID`): a step's two rows landed mid-tree and a full leaf was rebalanced with its
#: siblings, about one more WAL page per commit (bench/ANALYSIS.md, durable steps).
_SCHEMA = (
    "CREATE TABLE noetic_rows ("
    "id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, value TEXT NOT NULL, crc INTEGER NOT NULL)"
)
#: Layout 1 to layout 2, in the one transaction `_prepare` runs: the old table is renamed, the
#: new one made under the old name, the rows copied in key order and the old table dropped. A
#: process killed before the commit leaves layout 1 as it was (the WAL's uncommitted frames
#: are ignored); the copy keeps a damaged key's bytes as they are, so it still lists.
_MIGRATE_FROM_1 = (
    "ALTER TABLE noetic_rows RENAME TO noetic_rows_v1",
    _SCHEMA,
    "INSERT INTO noetic_rows (key, value, crc) SELECT key, value, crc FROM noetic_rows_v1 ORDER BY key",
    "DROP TABLE noetic_rows_v1",
)
#: The `synchronous` settings offered: flush every commit, or leave flushing to checkpoints.
SYNCHRONOUS = ("full", "normal")
#: The longest busy timeout, in seconds: SQLite takes it in milliseconds, as a 32-bit int.
MAX_BUSY_TIMEOUT = (2**31 - 1) // 1000
#: Primary result codes SQLite uses for a damaged file.
_CORRUPTION = {11: "SQLITE_CORRUPT", 26: "SQLITE_NOTADB"}
#: SQLite's primary result code for a lock another connection holds.
_BUSY = 5
#: The largest write (characters of its rows) run on the caller's thread (see the module docstring).
INLINE_BYTES = 64 * 1024
#: The most keys a listing returns from a read on the caller's thread (see the module docstring).
INLINE_KEYS = 256
#: How many WAL pages are written between two checkpoints, counted as the pages a write's rows
#: fill plus the few of the table's tree each commit rewrites. A checkpoint lets the next commit
#: restart the WAL from its start, and the file keeps its length, so the WAL stops growing once
#: it is as long as what is written between two checkpoints. Each commit after that overwrites
#: frames in place, and its flush no longer waits for the file system to record a new file size
#: (a growing file's `fdatasync` does): on the disk measured in bench/ANALYSIS.md (durable
#: steps) a bare commit that overwrites cost 0.5–0.7× one that grows the file. SQLite's own
#: default, 1,000 pages, keeps a new store's commits growing the file for its first ~300 steps
#: and lets its WAL reach ~6 MiB; at 300 they overwrite after ~100 and the WAL stays near
#: 2 MiB. Each checkpoint copies the pages changed since the last one and flushes twice (~0.6 ms
#: on that disk when quiet), so a shorter interval costs more on average; by the mean step the
#: measurements there disagree from hour to hour (1,000 lighter than 100 on a quiet disk, 100
#: to 500 lighter than 1,000 or level with it on a busy one): 300 makes a third of 100's
#: checkpoints and keeps the WAL short.
CHECKPOINT_PAGES = 300
_PAGE = 4096
_PAGES_PER_COMMIT = 3
_UPSERT = (
    "INSERT INTO noetic_rows (key, value, crc) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, crc = excluded.crc"
)


class SqliteCheckpointStore:
    """A `CheckpointStore` in one SQLite file (`":memory:"` for a private in-memory database)."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout: float = 10.0,
        synchronous: str = "full",
        inline: bool = True,
        read_only: bool = False,
    ):
        if synchronous not in SYNCHRONOUS:
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"synchronous must be 'full' or 'normal', got {synchronous!r}",
                hint="'full' (the default) survives a power loss; 'normal' survives a killed process only.",
            )
        number = isinstance(busy_timeout, int | float) and not isinstance(busy_timeout, bool)
        if not (number and 0 < busy_timeout <= MAX_BUSY_TIMEOUT):
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"busy_timeout must be a number of seconds > 0 and at most {MAX_BUSY_TIMEOUT}, "
                f"got {busy_timeout!r}",
                hint="Pass a finite number, e.g. busy_timeout=10 (the default); not negative, nan or inf.",
            )
        if not isinstance(inline, bool):
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"inline must be True or False, got {inline!r}",
                hint="Leave it out (True) to commit a lone execution's small writes on the caller's "
                "thread; inline=False sends every write to a worker thread.",
            )
        if not path:
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                "a SQLite checkpoint store needs a file path",
                hint="Write storage='sqlite:///run.db' (relative) or 'sqlite:////abs/path/run.db'.",
            )
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        #: Whether a small write may run on the caller's thread (see the module docstring).
        self.inline = inline
        #: Open the file read-only (the inspector): nothing is created, migrated or switched,
        #: and a file without the store's table is refused (`NOT_A_CHECKPOINT_STORE`).
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        #: WAL pages written since it was last checkpointed (an estimate, see `CHECKPOINT_PAGES`).
        self._unchecked = 0
        self._claims = ClaimTable() if path == ":memory:" else FileClaimTable.for_path(f"{path}-claims")

    # --- the connection (always used under `_lock`, inside a worker thread) -----------------

    def _connection(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            cut_short = None if self.path == ":memory:" else truncation(self.path)
            if cut_short is not None:
                raise corrupt_file(self.path, cut_short)
            if self.read_only:
                return self._open_read_only()
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                self._check_known_shape(conn)  # before anything is switched or written
                self._use_wal(conn)
                conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
                conn.execute("PRAGMA wal_autocheckpoint = 0")  # the store checkpoints (`_checkpoint`)
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """A connection that can only read (`mode=ro`): the file's bytes, journal mode and
        layout stay as they are; its table must be there, of a layout this code reads."""
        uri = f"file:{quote(self.path)}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            if not _columns(conn):  # whatever its user_version: another program's or an empty file
                raise self._not_a_store()
            self._check_shape(conn, self._layout(conn))
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _not_a_store(self) -> NoeticConfigError:
        return NoeticConfigError(
            "NOT_A_CHECKPOINT_STORE",
            f"{self.path!r} is a SQLite file without Noetic's table noetic_rows: it is not "
            "a checkpoint store (it was left unchanged)",
            hint="Pass the storage URL the harness ran with, e.g. sqlite:///runs.db, or a new file.",
        )

    def _check_shape(self, conn: sqlite3.Connection, version: int) -> None:
        """Refuse a `noetic_rows` table whose columns are not those of layout `version`, or
        whose key is not unique (`CHECKPOINT_CORRUPT` naming the file): a table of the same name made by something
        else, or a garbled schema, would otherwise fail every write and read nothing."""
        found = _columns(conn)
        expected = _LAYOUT_COLUMNS.get(version, ()) if version else ()
        if found != expected:
            shown = ", ".join(f"{name} {kind}" for name, kind in found) or "none"
            raise corrupt_file(
                self.path,
                f"its noetic_rows table has the columns ({shown}), not those of layout {version or 2}",
            )
        if found and not _key_is_unique(conn):
            raise corrupt_file(
                self.path,
                f"its noetic_rows table does not keep its keys unique (layout {version} makes key "
                f"{'its primary key' if version == 1 else 'a UNIQUE column'})",
            )

    def _check_known_shape(self, conn: sqlite3.Connection) -> None:
        """Refuse another program's database (tables, but no `noetic_rows`:
        `NOT_A_CHECKPOINT_STORE`) and a `noetic_rows` table of no layout's columns. Read
        outside a transaction, so another opener may be creating the table meanwhile: which
        layout it is, is checked again by `_prepare`, under the write lock."""
        names = {str(name) for (name,) in conn.execute(_NAMED_OBJECTS)}  # one read: one snapshot
        if names and "noetic_rows" not in names:
            raise self._not_a_store()
        found = _columns(conn)
        if found and (found not in _LAYOUT_COLUMNS.values() or not _key_is_unique(conn)):
            self._check_shape(conn, self._layout(conn))

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Put a new database in WAL mode (an existing one already is: the mode is persistent).

        Switching takes a lock without waiting on the busy handler, so two connections opening
        one new file at once can see `database is locked`; the switch is retried, re-reading the
        mode (the other connection may have switched it), until the busy timeout runs out.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() == "wal":
                return
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)  # in a worker thread: the event loop is not held

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Check the file's table layout: create it in a new file, migrate layout 1 (one
        transaction, `_MIGRATE_FROM_1`, then the WAL checkpointed and truncated), refuse a newer one (`CHECKPOINT_SCHEMA_MISMATCH`)."""
        if self._layout(conn) == LAYOUT_VERSION:
            self._check_shape(conn, LAYOUT_VERSION)
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._layout(conn)  # again under the write lock: another process may have moved it
            self._check_shape(conn, version)  # a new file has no table yet
            if version == 1:
                for statement in _MIGRATE_FROM_1:
                    conn.execute(statement)
            elif version == 0:
                conn.execute(_SCHEMA)
            if version != LAYOUT_VERSION:
                conn.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if version == 1:
            # The whole copy is in the WAL, which only a checkpoint empties (the store's page
            # count does not see it): write it into the file now and cut the WAL back to 0 bytes.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _layout(self, conn: sqlite3.Connection) -> int:
        """The file's table layout (0 for a new file); a newer one than this code reads is refused."""
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > LAYOUT_VERSION:
            raise NoeticConfigError(
                "CHECKPOINT_SCHEMA_MISMATCH",
                f"checkpoint database {self.path!r} has table layout {version}; this version of "
                f"Noetic reads layout {LAYOUT_VERSION}",
                hint="Upgrade noetic-core, or point storage= at a new database file.",
            )
        return int(version)

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    conn = self._connection()
                    # At rest the connection does not wait for locks (`_write_inline`); here it does.
                    conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                    try:
                        return fn(conn)
                    finally:
                        conn.execute("PRAGMA busy_timeout = 0")
                except sqlite3.Error as exc:
                    raise self._failure(exc) from exc
                except UnicodeDecodeError as exc:
                    raise self._undecodable(exc) from None

        return await anyio.to_thread.run_sync(locked)

    def _undecodable(self, exc: UnicodeDecodeError) -> NoeticError:
        """A message or value SQLite returned that is not UTF-8: the file's text is damaged
        (`sqlite3` decodes an error message, which may quote the damaged schema, itself)."""
        return corrupt_file(
            self.path, f"SQLite returned text that is not UTF-8 ({exc.reason} at byte {exc.start})"
        )

    def _failure(self, exc: sqlite3.Error) -> NoeticError:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in _CORRUPTION:
            return corrupt_file(self.path, f"SQLite reports {_CORRUPTION[code]} ({exc})")
        return NoeticError(
            "CHECKPOINT_STORE_FAILED",
            f"the SQLite checkpoint store {self.path!r} failed: {exc}",
            path=self.path,
        )

    # --- the contract -----------------------------------------------------------------------

    async def get(self, key: str) -> str | None:
        """The document at `key`, or None."""
        found = await self.get_many([key])
        return found.get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The documents at `keys` that exist; a row failing its checksum is `CHECKPOINT_CORRUPT`."""
        wanted = list(dict.fromkeys(keys))
        for key in wanted:
            if not is_text(key):
                raise corrupt(key, "its key is not UTF-8 text")

        def read(conn: sqlite3.Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, value, crc FROM noetic_rows WHERE key IN ({marks})"
                for key, value, crc in _rows(conn, query, chunk):
                    found[key] = verified_row(key, value, crc)  # text not UTF-8 fails it too
            return found

        return await self._call(read)

    async def set(self, key: str, value: str) -> None:
        """Write one document."""
        await self.write({key: value})

    async def delete(self, key: str) -> None:
        """Remove one document."""
        await self.write({}, [key])

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key starting with `prefix`, ascending (a range scan on the key's index).

        A listing of at most `INLINE_KEYS` keys is read on the caller's thread when nothing can
        make it wait (see the module docstring); a longer one is read again in a worker thread.
        """
        params: tuple[str, ...] = ()
        if not prefix:
            query = "SELECT key FROM noetic_rows ORDER BY key"
        else:
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            query = "SELECT key FROM noetic_rows WHERE key >= ? AND key < ? ORDER BY key"
            params = (prefix, upper)
        found = self._read_inline(f"{query} LIMIT {INLINE_KEYS + 1}", params)
        if found is None or len(found) > INLINE_KEYS:

            def scan(conn: sqlite3.Connection) -> list[Any]:
                return _rows(conn, query, params)

            found = await self._call(scan)
        return [key for (key,) in found]

    def _read_inline(self, query: str, params: Sequence[str]) -> list[Any] | None:
        """The rows of a read run on this thread (`_inline`); None when it must go to a worker
        thread instead."""
        if not self.inline:
            return None
        return self._inline(lambda conn: _rows(conn, query, params))

    def _inline(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """`work` run on this thread when nothing can make it wait (see the module docstring):
        None, without running it, when the connection is closed or in use, or when SQLite
        reports a lock held elsewhere (the connection at rest has no busy wait, `_call`)."""
        conn = self._conn
        if conn is None or not self._lock.acquire(blocking=False):
            return None
        try:
            return work(conn)
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == _BUSY and not conn.in_transaction:
                return None
            raise self._failure(exc) from exc
        except UnicodeDecodeError as exc:
            raise self._undecodable(exc) from None
        finally:
            self._lock.release()

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        """Apply `sets` and `deletes` in one `BEGIN IMMEDIATE` transaction (rolled back on error).

        A damaged key `list_prefix` gave can be deleted; no key that is not UTF-8 can be set."""
        for key in sets:
            if not is_text(key):
                raise NoeticError(
                    "CHECKPOINT_STORE_FAILED",
                    f"the SQLite checkpoint store {self.path!r} cannot store the key {key!r}: "
                    "it holds a lone surrogate, which is not UTF-8 text",
                    path=self.path,
                    key=key,
                )
        rows = [(key, value, row_checksum(value)) for key, value in sets.items()]
        gone = [(_key_param(key),) for key in deletes]
        size = sum(len(value) for value in sets.values()) + 64 * len(gone)
        if self._write_inline(rows, gone, size):
            return

        def transact(conn: sqlite3.Connection) -> None:
            _transact(conn, rows, gone)
            self._unchecked += _pages(size)
            if self._unchecked >= CHECKPOINT_PAGES:
                self._checkpoint(conn)

        await self._call(transact)

    def _write_inline(
        self, rows: list[tuple[str, str, int]], gone: list[tuple[str | bytes]], size: int
    ) -> bool:
        """Run the write on this thread when nothing can make it wait (see the module
        docstring); False when it must go to a worker thread instead."""
        pages = _pages(size)
        if not self.inline or size > INLINE_BYTES or self._unchecked + pages >= CHECKPOINT_PAGES:
            return False
        if self.synchronous == "full" and claims_held() > 1:
            return False  # its flush would hold up the other executions' work on this loop

        def transact(conn: sqlite3.Connection) -> bool:
            _transact(conn, rows, gone)
            return True

        if self._inline(transact) is None:
            return False
        self._unchecked += pages
        return True

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL into the database file (in a worker thread, under the lock)."""
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._unchecked = 0

    async def claim(self, execution_id: str) -> HeldClaim:
        """Claim an execution across processes sharing this file, or raise `EXECUTION_LOCKED`."""
        return await self._claims.claim(execution_id)

    async def aclose(self) -> None:
        """Close the connection (WAL content is checkpointed into the database file)."""

        def close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(close)

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({self.path!r})"


#: The columns (name, declared type) of `noetic_rows` in each layout this code reads.
_LAYOUT_COLUMNS = {
    1: (("key", "TEXT"), ("value", "TEXT"), ("crc", "INTEGER")),
    2: (("id", "INTEGER"), ("key", "TEXT"), ("value", "TEXT"), ("crc", "INTEGER")),
}


def _key_is_unique(conn: sqlite3.Connection) -> bool:
    """Whether a unique, whole-table index of `noetic_rows` is on `key` alone: layout 1's
    primary key or layout 2's UNIQUE column (every write upserts through it)."""
    for _, name, unique, _, partial in conn.execute("PRAGMA index_list(noetic_rows)").fetchall():
        if unique and not partial:
            columns = [row[2] for row in conn.execute("SELECT * FROM pragma_index_info(?)", (name,))]
            if columns == ["key"]:
                return True
    return False


#: The file's tables, indexes, views and triggers, but SQLite's own.
_NAMED_OBJECTS = "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!'"


def _columns(conn: sqlite3.Connection) -> tuple[tuple[str, str], ...]:
    """`noetic_rows`' columns as (name, declared type), in order; () when there is no table."""
    return tuple((str(row[1]), str(row[2]).upper()) for row in conn.execute("PRAGMA table_info(noetic_rows)"))


def _key_param(key: str) -> str | bytes:
    """A key as bound to a statement: a damaged key as the raw bytes it was read from."""
    return key.encode(errors="surrogateescape") if not is_text(key) else key


def _rows(conn: sqlite3.Connection, query: str, params: Sequence[str]) -> list[Any]:
    """The rows of `query`; text that is not UTF-8 comes back with its bytes as lone surrogates.

    `sqlite3` decodes text in C and fails the whole query on one damaged value (an
    `OperationalError` without an SQLite error code). Only then is the query read again through
    a decoding text factory, so a healthy read pays nothing for it.
    """
    try:
        return conn.execute(query, params).fetchall()
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) is not None:
            raise
    conn.text_factory = _surrogate_text
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.text_factory = str


def _surrogate_text(raw: bytes) -> str:
    return raw.decode(errors="surrogateescape")


def _pages(size: int) -> int:
    """About how many WAL pages a commit of `size` characters of rows writes."""
    return size // _PAGE + _PAGES_PER_COMMIT


def _transact(
    conn: sqlite3.Connection, rows: list[tuple[str, str, int]], gone: list[tuple[str | bytes]]
) -> None:
    """Upsert `rows` and delete `gone` in one `BEGIN IMMEDIATE` transaction, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if rows:
            conn.executemany(_UPSERT, rows)
        if gone:  # most steps delete nothing: skip the statement
            # The cast leaves a key as it is and reads a damaged key's raw bytes (`_key_param`),
            # bound as a blob, as the text its row holds; the key's index still finds the row.
            conn.executemany("DELETE FROM noetic_rows WHERE key = CAST(? AS TEXT)", gone)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def sqlite_store_from_url(url: str) -> SqliteCheckpointStore:
    """The `sqlite://` factory: `sqlite:///relative.db`, `sqlite:////abs/path.db`,
    `sqlite:///:memory:`; `?busy_timeout=seconds` sets the busy timeout and
    `?synchronous=normal` trades the flush of every commit for speed (see the module docstring).

    Each option has a value and is never given twice with different values; anything else is `UNKNOWN_CHECKPOINT_STORE`
    naming the option and what it accepts.
    """
    parts = urlsplit(url)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if parts.netloc or not path:
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage URL {url!r} does not name a SQLite file",
            hint="Write sqlite:///run.db for a path relative to the working directory, or "
            "sqlite:////var/lib/agent/run.db for an absolute one.",
        )
    options = _url_options(url, parts.query)
    timeout = _busy_timeout(url, options["busy_timeout"]) if "busy_timeout" in options else 10.0
    synchronous = options.get("synchronous", "full").lower()
    if synchronous not in SYNCHRONOUS:
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage URL {url!r}: synchronous={options['synchronous']!r} is not 'full' or 'normal'",
            hint=_OPTION_HINTS["synchronous"],
        )
    return SqliteCheckpointStore(path, busy_timeout=timeout, synchronous=synchronous)


#: What each URL option accepts, said in the error for a wrong value.
_OPTION_HINTS = {
    "busy_timeout": "busy_timeout is how many seconds to wait for another writer: a decimal number "
    f"> 0 and at most {MAX_BUSY_TIMEOUT} (not negative, nan or inf), e.g. sqlite:///run.db?busy_timeout=10.",
    "synchronous": "synchronous is full (the default: each commit is flushed to disk) or normal "
    "(no flush: a commit survives a killed process, not a power loss), e.g. sqlite:///run.db?synchronous=normal.",
}
#: A plain decimal number of seconds: no sign, exponent, underscore or `nan`/`inf`.
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _url_options(url: str, query: str) -> dict[str, str]:
    """The URL's options by name, each given once with a value (or the error naming it)."""
    options: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in _OPTION_HINTS:
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"storage URL {url!r} has an unknown option {name!r}",
                hint="The options are ?busy_timeout=<seconds> and ?synchronous=full|normal.",
            )
        if not value:
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"storage URL {url!r}: the option {name!r} has no value",
                hint=_OPTION_HINTS[name],
            )
        if name in options and options[name].lower() != value.lower():
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"storage URL {url!r} gives {name!r} twice, as {options[name]!r} and {value!r}",
                hint=f"Give each option once. {_OPTION_HINTS[name]}",
            )
        options[name] = value
    return options


def _busy_timeout(url: str, text: str) -> float:
    """`?busy_timeout=` as seconds: a plain decimal number > 0 that SQLite can take."""
    seconds = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not 0 < seconds <= MAX_BUSY_TIMEOUT:
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage URL {url!r}: busy_timeout={text!r} is not a number of seconds > 0 "
            f"and at most {MAX_BUSY_TIMEOUT}",
            hint=_OPTION_HINTS["busy_timeout"],
        )
    return seconds
