"""Another program's SQLite file is refused before anything in it is switched or written.

A file with tables but no `noetic_rows` is not a checkpoint store, whatever its
`PRAGMA user_version` says: `NOT_A_CHECKPOINT_STORE`, and its journal mode, tables and
user_version stay as they were (no switch to WAL, no `noetic_rows` added).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import noetic as nt
import pytest
from noetic.durable import SqliteCheckpointStore

pytestmark = pytest.mark.anyio


def foreign_file(path: Path, user_version: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()


def shape(path: Path) -> tuple[str, list[str], int]:
    conn = sqlite3.connect(path)
    try:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        names = [name for (name,) in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    finally:
        conn.close()
    return str(mode), names, int(version)


async def refusal(path: Path, read_only: bool) -> nt.NoeticError:
    """The error a store opened on `path` raises at its first call (and it is closed)."""
    store = SqliteCheckpointStore(str(path), read_only=read_only)
    try:
        with pytest.raises(nt.NoeticError) as refused:
            await store.list_prefix("")
    finally:
        await store.aclose()
    return refused.value


@pytest.mark.parametrize("user_version", [0, 1, 2, 7])
@pytest.mark.parametrize("read_only", [False, True], ids=["store", "read-only"])
async def test_another_programs_file_is_refused_and_left_as_it_was(
    tmp_path: Path, user_version: int, read_only: bool
) -> None:
    path = tmp_path / "app.db"
    foreign_file(path, user_version)
    before = shape(path)
    refused = await refusal(path, read_only)
    assert refused.code == "NOT_A_CHECKPOINT_STORE"
    assert str(path) in str(refused)
    assert shape(path) == before == ("delete", ["users"], user_version)


#: `noetic_rows` tables with a layout's columns but no unique key (duplicate keys can be in them).
NOT_UNIQUE = {
    1: "CREATE TABLE noetic_rows (key TEXT, value TEXT, crc INTEGER)",
    2: "CREATE TABLE noetic_rows (id INTEGER, key TEXT, value TEXT, crc INTEGER)",
}


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("read_only", [False, True], ids=["store", "read-only"])
async def test_a_table_whose_key_is_not_unique_is_corrupt(
    tmp_path: Path, version: int, read_only: bool
) -> None:
    path = tmp_path / "runs.db"
    conn = sqlite3.connect(path)
    conn.execute(NOT_UNIQUE[version])
    conn.execute("INSERT INTO noetic_rows (key, value, crc) VALUES ('k', '1', 1), ('k', '2', 2)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    before = shape(path)
    refused = await refusal(path, read_only)
    assert refused.code == "CHECKPOINT_CORRUPT"
    assert str(path) in str(refused) and "unique" in str(refused)
    assert shape(path) == before
