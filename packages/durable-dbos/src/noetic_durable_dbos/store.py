"""`PostgresCheckpointStore`: the checkpoint store contract on PostgreSQL.

Tables (created on first use, under an advisory lock so concurrent workers do not race):

- `noetic_checkpoint_rows (key, value, crc)`: one JSON document per key, stored as `TEXT`
  (never `JSONB`, which would rewrite the document) with its CRC-32. The key column uses the
  `"C"` collation, so keys list in code-point order whatever the database's locale; a prefix
  listing is a range scan on the primary key, never a `LIKE` (whose `%` and `_` are wildcards).
- `noetic_execution_claims (execution_id, holder, expires_at)`: a claim is a row with a lease.
  A held claim's lease is renewed by a background thread every third of `claim_lease`; when
  its process dies the renewals stop and, once the lease has run out, any worker can claim
  the execution. Leases are measured on the server's clock, so machines' clocks never matter.
- `noetic_checkpoint_layout (version)`: the table layout this code reads and writes.

A batch is one transaction. Every statement is idempotent (upserts, deletes, a claim that
recognises its own holder), so an operation that loses its connection — the server restarted,
the network dropped — is retried on a fresh connection with backoff for up to `retry_for`
seconds before it fails with `CHECKPOINT_STORE_FAILED`. Connections come from a small
`psycopg_pool` pool and are used from worker threads, so the store runs on asyncio and trio.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import psycopg
from noetic.durable.store import execution_locked, row_checksum, verified_row
from noetic.errors import NoeticConfigError, NoeticError
from noetic.ids import checked_id
from psycopg import conninfo
from psycopg_pool import ConnectionPool

__all__ = [
    "LAYOUT_VERSION",
    "PostgresCheckpointStore",
    "PostgresClaim",
    "display_url",
    "postgres_store_from_url",
]

log = logging.getLogger("noetic_durable_dbos.store")

T = TypeVar("T")

#: The table layout this code reads and writes.
LAYOUT_VERSION = 1
#: A constant advisory-lock key serialising table creation across processes.
_LAYOUT_LOCK = 0x4E6F6574  # "Noet"
_TABLES = (
    "CREATE TABLE IF NOT EXISTS noetic_checkpoint_layout (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS noetic_checkpoint_rows ("
    ' key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL, crc BIGINT NOT NULL)',
    "CREATE TABLE IF NOT EXISTS noetic_execution_claims ("
    " execution_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
)
_UPSERT = (
    "INSERT INTO noetic_checkpoint_rows (key, value, crc)"
    " SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[])"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value, crc = excluded.crc"
)
_CLAIM = (
    "INSERT INTO noetic_execution_claims (execution_id, holder, expires_at)"
    " VALUES (%s, %s, now() + make_interval(secs => %s))"
    " ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"
    " WHERE noetic_execution_claims.expires_at < now()"
    " OR noetic_execution_claims.holder = excluded.holder"
    " RETURNING holder"
)
_RENEW = (
    "UPDATE noetic_execution_claims SET expires_at = now() + make_interval(secs => %s)"
    " WHERE holder = ANY(%s) RETURNING holder"
)
#: The largest code point: a prefix ending in it has no upper bound to scan to.
_MAX_CHAR = chr(0x10FFFF)


class PostgresClaim:
    """A claim row held by this store; `release` deletes it once."""

    __slots__ = ("_released", "_store", "execution_id", "holder")

    def __init__(self, store: PostgresCheckpointStore, execution_id: str, holder: str):
        self._store = store
        self.execution_id = execution_id
        self.holder = holder
        self._released = False

    async def release(self) -> None:
        """Give the execution up (idempotent)."""
        if not self._released:
            self._released = True
            await self._store._release(self)


class PostgresCheckpointStore:
    """A `CheckpointStore` in a PostgreSQL database (see the module docstring).

    `url` is a libpq connection URL (`postgresql://user@host:5432/db`); `claim_lease` is how
    long (seconds) a claim outlives its last renewal; `retry_for` bounds the retries of an
    operation whose connection failed; `pool_size` caps the connections this store opens.
    """

    def __init__(
        self, url: str, *, claim_lease: float = 30.0, retry_for: float = 60.0, pool_size: int = 4
    ) -> None:
        self.url = url
        self.claim_lease = claim_lease
        self.retry_for = retry_for
        self.where = display_url(url)
        self._pool = ConnectionPool(
            url, min_size=1, max_size=pool_size, open=False, kwargs={"connect_timeout": 10}, name="noetic"
        )
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False
        self._prepared = False
        self._held: dict[str, PostgresClaim] = {}
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    # --- connections (worker threads only) ---------------------------------------------------

    def _open(self) -> None:
        with self._lock:
            if self._closed:
                raise NoeticError(
                    "CHECKPOINT_STORE_FAILED", f"the Postgres checkpoint store {self.where} is closed"
                )
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True

    def _run(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run `fn` in a transaction, retrying on a lost connection until `retry_for` runs out."""
        self._open()
        deadline = time.monotonic() + self.retry_for
        delay = 0.05
        while True:
            try:
                with self._pool.connection(timeout=max(1.0, deadline - time.monotonic())) as conn:
                    if not self._prepared:
                        self._prepare(conn)
                    with conn.transaction():
                        return fn(conn)
            except psycopg.OperationalError as exc:  # the server is gone or restarting: retry
                if time.monotonic() + delay > deadline or self._closed:
                    raise self._failure(exc) from exc
                log.info("Postgres checkpoint store %s: %s; retrying", self.where, exc)
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except psycopg.Error as exc:
                raise self._failure(exc) from exc

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LAYOUT_LOCK,))
            for statement in _TABLES:
                conn.execute(statement)
            row = conn.execute("SELECT max(version) FROM noetic_checkpoint_layout").fetchone()
            version = row[0] if row else None
            if version is None:
                conn.execute("INSERT INTO noetic_checkpoint_layout (version) VALUES (%s)", (LAYOUT_VERSION,))
            elif version != LAYOUT_VERSION:
                raise NoeticConfigError(
                    "CHECKPOINT_SCHEMA_MISMATCH",
                    f"the Postgres checkpoint store {self.where} has table layout {version}; this "
                    f"version of noetic-durable-dbos reads layout {LAYOUT_VERSION}",
                    hint="Upgrade noetic-durable-dbos, or point storage= at another database.",
                )
        self._prepared = True

    def _failure(self, exc: psycopg.Error) -> NoeticError:
        return NoeticError(
            "CHECKPOINT_STORE_FAILED",
            f"the Postgres checkpoint store {self.where} failed: {type(exc).__name__}: {exc}",
            where=self.where,
        )

    async def _call(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        return await anyio.to_thread.run_sync(self._run, fn)

    # --- the contract -------------------------------------------------------------------------

    async def get(self, key: str) -> str | None:
        """The document at `key`, or None."""
        return (await self.get_many([key])).get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The documents at `keys` that exist; a row failing its checksum is `CHECKPOINT_CORRUPT`."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}

        def read(conn: psycopg.Connection[Any]) -> dict[str, str]:
            rows = conn.execute(
                "SELECT key, value, crc FROM noetic_checkpoint_rows WHERE key = ANY(%s)", (wanted,)
            ).fetchall()
            found: dict[str, str] = {}
            for key, value, crc in rows:
                found[key] = verified_row(key, value, crc)
            return found

        return await self._call(read)

    async def set(self, key: str, value: str) -> None:
        """Write one document."""
        await self.write({key: value})

    async def delete(self, key: str) -> None:
        """Remove one document."""
        await self.write({}, [key])

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key starting with `prefix`, ascending (a range scan on the primary key)."""

        def scan(conn: psycopg.Connection[Any]) -> list[str]:
            if not prefix:
                rows = conn.execute("SELECT key FROM noetic_checkpoint_rows ORDER BY key")
            elif prefix.endswith(_MAX_CHAR):
                rows = conn.execute(
                    "SELECT key FROM noetic_checkpoint_rows WHERE starts_with(key, %s) ORDER BY key",
                    (prefix,),
                )
            else:
                upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
                rows = conn.execute(
                    "SELECT key FROM noetic_checkpoint_rows WHERE key >= %s AND key < %s ORDER BY key",
                    (prefix, upper),
                )
            return [key for (key,) in rows]

        return await self._call(scan)

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        """Apply `sets` and `deletes` in one transaction."""
        keys = list(sets)
        values = [sets[key] for key in keys]
        crcs = [row_checksum(value) for value in values]
        gone = list(deletes)

        def transact(conn: psycopg.Connection[Any]) -> None:
            if keys:
                conn.execute(_UPSERT, (keys, values, crcs))
            if gone:
                conn.execute("DELETE FROM noetic_checkpoint_rows WHERE key = ANY(%s)", (gone,))

        await self._call(transact)

    async def claim(self, execution_id: str) -> PostgresClaim:
        """Claim an execution across every process using this database, or raise `EXECUTION_LOCKED`
        (`INVALID_ID` for an id that is not text, as every store names it)."""
        checked_id("execution_id", execution_id)
        holder = uuid.uuid4().hex

        def take(conn: psycopg.Connection[Any]) -> bool:
            return conn.execute(_CLAIM, (execution_id, holder, self.claim_lease)).fetchone() is not None

        if not await self._call(take):
            raise execution_locked(execution_id)
        claim = PostgresClaim(self, execution_id, holder)
        with self._lock:
            self._held[holder] = claim
            self._start_renewer()
        return claim

    async def _release(self, claim: PostgresClaim) -> None:
        with self._lock:
            self._held.pop(claim.holder, None)

        def drop(conn: psycopg.Connection[Any]) -> None:
            conn.execute(
                "DELETE FROM noetic_execution_claims WHERE execution_id = %s AND holder = %s",
                (claim.execution_id, claim.holder),
            )

        with anyio.CancelScope(shield=True):
            try:
                await self._call(drop)
            except NoeticError as exc:  # the lease runs out on its own
                log.warning("could not release the claim on %s: %s", claim.execution_id, exc)

    # --- lease renewal --------------------------------------------------------------------------

    def _start_renewer(self) -> None:
        """Start the renewal thread (the caller holds `_lock`)."""
        if self._renewer is None or not self._renewer.is_alive():
            self._renewer = threading.Thread(target=self._renew_forever, name="noetic-claims", daemon=True)
            self._renewer.start()

    def _renew_forever(self) -> None:
        while not self._stop.wait(self.claim_lease / 3):
            with self._lock:
                holders = list(self._held)
            if not holders:
                continue
            try:
                renewed = self._run(self._renewal(holders))
            except NoeticError as exc:
                log.warning("claim renewal on %s failed; retrying: %s", self.where, exc)
                continue
            with self._lock:
                lost = [self._held[h].execution_id for h in holders if h not in renewed and h in self._held]
            for execution_id in lost:
                log.error("the claim on execution %s lapsed and was taken elsewhere", execution_id)

    def _renewal(self, holders: list[str]) -> Callable[[psycopg.Connection[Any]], frozenset[str]]:
        def renew(conn: psycopg.Connection[Any]) -> frozenset[str]:
            return frozenset(row[0] for row in conn.execute(_RENEW, (self.claim_lease, holders)))

        return renew

    async def aclose(self) -> None:
        """Stop renewing claims and close the connections."""

        def close() -> None:
            with self._lock:
                self._closed = True
                renewer, self._renewer = self._renewer, None
            self._stop.set()
            if renewer is not None:
                renewer.join()
            self._pool.close()

        await anyio.to_thread.run_sync(close)

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({self.where!r})"


def display_url(url: str) -> str:
    """`host:port/dbname` of a connection URL, without its user or password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


#: Options of a storage URL that are this store's, not libpq's.
_OPTIONS = {"claim_lease", "retry_for", "pool_size"}


def postgres_store_from_url(url: str) -> PostgresCheckpointStore:
    """The `postgresql://` (and `postgres://`) factory.

    libpq options pass through (`?sslmode=require`); `claim_lease`, `retry_for` (seconds) and
    `pool_size` set the store's own: `postgresql://app@db/agents?claim_lease=15`.
    """
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    own = {key: value for key, value in pairs if key in _OPTIONS}
    libpq_url = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in pairs if k not in _OPTIONS])))
    hint = "Write for example postgresql://user@127.0.0.1:5432/agents?claim_lease=30."
    try:
        conninfo.conninfo_to_dict(libpq_url)
    except psycopg.ProgrammingError as exc:
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage URL for {display_url(url)} is not a valid PostgreSQL connection URL: {exc}",
            hint=hint,
        ) from None
    settings: dict[str, Any] = {}
    for key, raw in own.items():
        try:
            number = float(raw) if key != "pool_size" else int(raw)
        except ValueError:
            number = 0
        if not number > 0:
            raise NoeticConfigError(
                "UNKNOWN_CHECKPOINT_STORE",
                f"storage URL for {display_url(url)}: {key} must be a positive number, got {raw!r}",
                hint=hint,
            )
        settings[key] = number
    return PostgresCheckpointStore(libpq_url, **settings)
