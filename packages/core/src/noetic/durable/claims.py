"""Execution claims: at most one attempt runs an execution at a time.

Inside one process a `ClaimTable` is a set of claimed keys. Across processes
`FileClaimTable` adds a POSIX byte-range lock on a sidecar file (one byte per execution, at
an offset hashed from its id). The kernel drops such locks when their process dies, so a
crashed run never blocks its own resume, and no lease timeout is needed. POSIX locks belong
to the process, not the file descriptor, so the in-process set is what keeps two harnesses of
one process apart; the sidecar is opened once per process and closed only when its last
claim is released (closing any descriptor of a file drops all of the process's locks on it).
`claims_held()` counts the claims of the whole process, across every table.

The sidecar's lock is taken and dropped on the caller's thread: `lockf` with `LOCK_NB` never
waits for another process (a held byte fails at once: `EXECUTION_LOCKED`), and opening or
closing the sidecar waits for no flush, so each is a few µs of system call, where handing it
to a worker thread and back cost ~70 µs twice a turn (bench/ANALYSIS.md, durable steps).
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import ClassVar

from noetic.durable.store import execution_locked
from noetic.errors import NoeticError
from noetic.ids import checked_id

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: claims are process-local there
    fcntl = None  # type: ignore[assignment]

__all__ = ["ClaimTable", "FileClaimTable", "HeldClaim", "claims_held"]

#: Claims held by this process across every `ClaimTable` (guarded by `_held_lock`).
_held_count = 0
_held_lock = threading.Lock()


def claims_held() -> int:
    """How many executions this process has claimed right now, through any claim table."""
    return _held_count


def _count(change: int) -> None:
    global _held_count
    with _held_lock:
        _held_count += change


class HeldClaim:
    """A claim returned by a claim table; `release` frees it once."""

    __slots__ = ("_key", "_released", "_table")

    def __init__(self, table: ClaimTable, key: str):
        self._table = table
        self._key = key
        self._released = False

    async def release(self) -> None:
        """Give the execution up (idempotent)."""
        if not self._released:
            self._released = True
            await self._table.release(self._key)


class ClaimTable:
    """Claims of one process, keyed by execution id."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._lock = threading.Lock()

    async def claim(self, execution_id: str) -> HeldClaim:
        """Claim `execution_id`, or raise `EXECUTION_LOCKED`."""
        with self._lock:
            if execution_id in self._held:
                raise execution_locked(execution_id)
            self._held.add(execution_id)
        _count(1)
        return HeldClaim(self, execution_id)

    async def release(self, execution_id: str) -> None:
        """Free a claim taken by `claim`."""
        with self._lock:
            if execution_id in self._held:
                self._held.discard(execution_id)
                _count(-1)


class FileClaimTable(ClaimTable):
    """Claims shared by every process using the sidecar file `path` (see the module docstring)."""

    #: One table per sidecar path and process, so the sidecar is never opened twice.
    _tables: ClassVar[dict[str, FileClaimTable]] = {}
    _tables_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def for_path(cls, path: str) -> FileClaimTable:
        """The process's table for the sidecar at `path`."""
        key = os.path.realpath(path)
        with cls._tables_lock:
            table = cls._tables.get(key)
            if table is None:
                table = cls._tables[key] = cls(key)
            return table

    def __init__(self, path: str):
        super().__init__()
        self._path = path
        self._fd: int | None = None

    async def claim(self, execution_id: str) -> HeldClaim:
        """Claim `execution_id` in this process and then across processes."""
        held = await super().claim(execution_id)
        if fcntl is None:
            return held
        try:
            self._lock_byte(execution_id)  # never waits (see the module docstring)
        except BaseException:
            await super().release(execution_id)
            raise
        return held

    async def release(self, execution_id: str) -> None:
        """Drop the OS lock (and the sidecar when no claim is left), then the in-process claim."""
        if fcntl is not None:
            self._unlock_byte(execution_id)
        await super().release(execution_id)

    def _lock_byte(self, execution_id: str) -> None:
        with self._lock:
            if self._fd is None:
                try:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError as exc:
                    raise NoeticError(
                        "CHECKPOINT_STORE_FAILED",
                        f"cannot open the claims file {self._path!r}: {exc}",
                        path=self._path,
                    ) from exc
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(execution_id), os.SEEK_SET)
            except OSError:
                self._close_if_unused(extra=execution_id)
                raise execution_locked(execution_id) from None

    def _unlock_byte(self, execution_id: str) -> None:
        with self._lock:
            if self._fd is None:
                return
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, _offset(execution_id), os.SEEK_SET)
            self._close_if_unused(extra=execution_id)

    def _close_if_unused(self, *, extra: str) -> None:
        """Close the sidecar when `extra` is the only claim left (the caller holds `_lock`)."""
        if self._fd is not None and self._held <= {extra}:
            os.close(self._fd)
            self._fd = None


def _offset(execution_id: str) -> int:
    """A stable byte offset for an execution id (62 bits: collisions are negligible)."""
    digest = hashlib.blake2b(checked_id("execution_id", execution_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2
