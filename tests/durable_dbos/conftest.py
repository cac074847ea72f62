"""A real PostgreSQL server for the durable-dbos tests: installed by scripts/ensure-postgres.sh
when missing, started once per test session on a temporary data directory and a free port of
127.0.0.1, stopped at the end. Each test gets its own empty database on it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from noetic_durable_dbos.local_postgres import LocalPostgres

REPO = Path(__file__).resolve().parents[2]
# The helper modules beside this file (the agent workers run, the fleet) import by plain name,
# in the tests and in the worker processes alike.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dbos_fleet import Fleet  # noqa: E402


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """The session's server (fsync off: it is thrown away, and only workers are ever killed)."""
    subprocess.run([str(REPO / "scripts" / "ensure-postgres.sh")], check=True, stdout=subprocess.DEVNULL)
    server = LocalPostgres(durable=False, max_connections=300)
    server.start()
    yield server
    server.remove()


@pytest.fixture
def database_url(postgres: LocalPostgres) -> Iterator[str]:
    """A fresh database on the session's server, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = postgres.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres.url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fleet(database_url: str, tmp_path: Path) -> Iterator[Fleet]:
    """Worker processes on a fresh database (none started yet: tests start them); all stopped after."""
    started = Fleet(database_url, tmp_path)
    yield started
    started.stop()
