"""Which workers are alive: a heartbeat row per worker in Postgres, and the sweep that finds
the dead ones.

Self-hosted DBOS (no Conductor) recovers a dead executor's workflows only when a live process
asks for them by executor id. Each worker therefore keeps a row in `noetic_workers`
(`executor_id`, `heartbeat_at`, host and pid for people reading it), refreshed every
`heartbeat` seconds on the server's clock. A row older than `dead_after` seconds belongs to a
dead worker. `sweep` locks such rows (`FOR UPDATE SKIP LOCKED`, so two live workers never
recover the same dead one), hands their executor ids to the caller's recovery function, and
deletes them in the same transaction: if the sweeping worker dies mid-way, the rows come back
and another worker sweeps them.

A worker that could not reach Postgres for a while (the server restarted, the network split)
must not declare the others dead the moment it is back: their heartbeats are just as stale as
its own. It sweeps only after `dead_after` seconds of unbroken heartbeats of its own, by which
time every live worker has written one too.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

__all__ = ["Liveness"]

log = logging.getLogger("noetic_durable_dbos.liveness")

_TABLE = (
    "CREATE TABLE IF NOT EXISTS noetic_workers ("
    " executor_id TEXT PRIMARY KEY, queue TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,"
    " started_at TIMESTAMPTZ NOT NULL DEFAULT now(), heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now())"
)
_BEAT = (
    "INSERT INTO noetic_workers (executor_id, queue, host, pid) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (executor_id) DO UPDATE SET heartbeat_at = now()"
)
_DEAD = (
    "SELECT executor_id FROM noetic_workers"
    " WHERE heartbeat_at < now() - make_interval(secs => %s) AND executor_id <> %s"
    " FOR UPDATE SKIP LOCKED"
)


class Liveness:
    """One worker's heartbeat and its view of the others (see the module docstring)."""

    def __init__(self, url: str, executor_id: str, *, queue: str, heartbeat: float, dead_after: float):
        self.url = url
        self.executor_id = executor_id
        self.queue = queue
        self.heartbeat = heartbeat
        self.dead_after = dead_after
        self._conn: psycopg.Connection[Any] | None = None
        #: When the current run of unbroken heartbeats began (monotonic), or None after a failure.
        self._healthy_since: float | None = None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            self._conn.execute(_TABLE)
        return self._conn

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def beat(self) -> bool:
        """Write this worker's heartbeat; False (and logged) when Postgres cannot be reached."""
        try:
            self._connection().execute(
                _BEAT, (self.executor_id, self.queue, socket.gethostname(), os.getpid())
            )
        except psycopg.Error as exc:
            if self._healthy_since is not None:
                log.warning("worker %s cannot write its heartbeat: %s", self.executor_id, exc)
            self._healthy_since = None
            self._drop_connection()
            return False
        if self._healthy_since is None:
            self._healthy_since = time.monotonic()
        return True

    def sweep(self, recover: Callable[[Sequence[str]], object]) -> list[str]:
        """Recover the workflows of dead workers through `recover(executor_ids)`; returns the ids.

        Does nothing until this worker has beaten without a break for `dead_after` seconds.
        """
        if self._healthy_since is None or time.monotonic() - self._healthy_since < self.dead_after:
            return []
        try:
            conn = self._connection()
            with conn.transaction():
                dead = [row[0] for row in conn.execute(_DEAD, (self.dead_after, self.executor_id))]
                if dead:
                    log.warning(
                        "worker %s recovers the executions of dead workers %s", self.executor_id, dead
                    )
                    recover(dead)
                    conn.execute("DELETE FROM noetic_workers WHERE executor_id = ANY(%s)", (dead,))
        except psycopg.Error as exc:
            log.warning("worker %s could not sweep for dead workers: %s", self.executor_id, exc)
            self._healthy_since = None
            self._drop_connection()
            return []
        return dead

    def leave(self) -> None:
        """Mark this worker as gone: the next sweep recovers anything it left running."""
        try:
            self._connection().execute(
                "UPDATE noetic_workers SET heartbeat_at = '-infinity' WHERE executor_id = %s",
                (self.executor_id,),
            )
        except psycopg.Error as exc:
            log.warning("worker %s could not mark itself gone: %s", self.executor_id, exc)
        finally:
            self._drop_connection()
