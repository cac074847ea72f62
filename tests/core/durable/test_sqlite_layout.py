"""The SQLite store's table layout: a file of layout 1 (what the previous release wrote) opens,
is migrated to layout 2 in one transaction, and keeps every row, its order and its damage
checks; a migration killed mid-way loses nothing; a newer layout is refused.

The layout-1 files here are made with layout 1's own statement (`LAYOUT_1`), the one the
previous release ran, so they are the files a user upgrading has.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import noetic as nt
import pytest
from noetic.durable import SqliteCheckpointStore
from noetic.durable.sqlite import LAYOUT_VERSION
from noetic.durable.store import row_checksum
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio

#: The table of layout 1, as the previous release created it.
LAYOUT_1 = (
    "CREATE TABLE IF NOT EXISTS noetic_rows ("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL, crc INTEGER NOT NULL) WITHOUT ROWID"
)


def layout_1_file(path: Path, rows: list[tuple[str, str]]) -> None:
    """A WAL-mode database of layout 1 holding `rows` (with their checksums)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(LAYOUT_1)
    conn.execute("PRAGMA user_version = 1")
    conn.executemany(
        "INSERT INTO noetic_rows (key, value, crc) VALUES (?, ?, ?)",
        [(key, value, row_checksum(value)) for key, value in rows],
    )
    conn.execute("COMMIT")
    conn.close()


def downgrade_to_layout_1(path: Path) -> None:
    """Rewrite a store's file (written by this code) as layout 1, rows and bytes unchanged."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE noetic_rows RENAME TO current")
    conn.execute(LAYOUT_1)
    conn.execute("INSERT INTO noetic_rows (key, value, crc) SELECT key, value, crc FROM current")
    conn.execute("DROP TABLE current")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("COMMIT")
    conn.close()


def layout(path: Path) -> tuple[int, bool, int]:
    """`(user_version, rows ordered by key in the table itself, row count)`, read raw."""
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'noetic_rows'").fetchone()
        (count,) = conn.execute("SELECT count(*) FROM noetic_rows").fetchone()
    finally:
        conn.close()
    return int(version), "WITHOUT ROWID" in sql, int(count)


def rows_of(count: int, size: int = 300) -> list[tuple[str, str]]:
    """`count` rows of about `size` characters whose keys sort in another order than they were written."""
    return [
        (f"execution:e:ledger:{(i * 7919) % count:08d}", f'{{"n":{i},"pad":"{"x" * size}"}}')
        for i in range(count)
    ]


async def test_a_new_file_gets_layout_2_a_rowid_table_with_a_unique_key(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = SqliteCheckpointStore(str(path))
    await store.write({"b": "1", "a": "2"})
    await store.write({"a": "3"})  # an upsert through the unique index
    await store.aclose()
    assert LAYOUT_VERSION == 2
    assert layout(path) == (2, False, 2)
    conn = sqlite3.connect(path)
    # New rows take the next rowid: written order, not key order, in the table itself.
    assert conn.execute("SELECT key, value FROM noetic_rows ORDER BY id").fetchall() == [
        ("b", "1"),
        ("a", "3"),
    ]
    conn.close()


async def test_a_layout_1_file_is_migrated_with_every_row_its_order_and_its_checks(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    rows = rows_of(50)
    layout_1_file(path, [*rows, ("execution:e:snapshot", '{"a":1}'), ("thread:t:history", "[]")])
    conn = sqlite3.connect(path, isolation_level=None)  # a damaged key and a damaged value, as in v1
    conn.execute("INSERT INTO noetic_rows VALUES (CAST(x'657865637574696f6e3a653aff' AS TEXT), '1', 0)")
    conn.execute("UPDATE noetic_rows SET value = '{\"a\":2}' WHERE key = 'execution:e:snapshot'")
    conn.close()

    store = SqliteCheckpointStore(str(path))
    keys = await store.list_prefix("execution:e:")
    assert layout(path) == (2, False, 53)
    ledger = sorted(key for key, _ in rows)
    assert keys == [*ledger, "execution:e:snapshot", "execution:e:\udcff"]  # byte order, as in layout 1
    assert await store.get_many(ledger) == dict(rows)
    for key in ("execution:e:snapshot", "execution:e:\udcff"):
        with pytest.raises(nt.NoeticError) as err:
            await store.get(key)
        assert err.value.code == "CHECKPOINT_CORRUPT"
    await store.write({ledger[0]: '"new"', "execution:e:z": "1"}, ["execution:e:\udcff"])
    assert await store.get(ledger[0]) == '"new"'
    assert (await store.list_prefix("execution:e:"))[-2:] == ["execution:e:snapshot", "execution:e:z"]
    await store.aclose()


def wal_size(path: Path) -> int:
    """The size of the database's -wal file (0 when there is none)."""
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_a_migration_leaves_no_wal_the_size_of_the_copy(tmp_path: Path) -> None:
    """The migration's copy is checkpointed into the file and the WAL truncated when it commits,
    not left in a -wal beside the database for as long as the store stays open."""
    path = tmp_path / "v1.db"
    layout_1_file(path, rows_of(2000, size=2000))
    store = SqliteCheckpointStore(str(path))
    try:
        for i in range(5):
            await store.write({f"n{i}": '"1"'})
        assert layout(path)[0] == 2
        assert wal_size(path) < path.stat().st_size // 20
    finally:
        await store.aclose()


async def test_an_execution_recorded_in_a_layout_1_file_resumes(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    crash = {"fail": True}

    def flaky(_: object, __: nt.Context) -> str:
        if crash["fail"]:
            raise RuntimeError("crash")
        return "done"

    graph = nt.sequence("g", [nt.call_model("a"), nt.run_code("crash", flaky), nt.call_model("b")])
    model = ScriptedModel([text_reply("A", cost=0.01), text_reply("B", cost=0.02)])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=f"sqlite:///{path}") as h:
        with pytest.raises(nt.NoeticError):
            await h.run("hi", execution_id="e1", thread_id="t1")
    downgrade_to_layout_1(path)
    assert layout(path)[:2] == (1, True)
    crash["fail"] = False
    async with nt.AgentHarness("t", agent_graph=graph, model=model, storage=f"sqlite:///{path}") as h:
        resp = await h.resume("e1")
    assert len(model.calls) == 2  # `a` replayed from the migrated ledger
    assert resp.output == "B"
    assert resp.billed_cost == pytest.approx(0.02)
    assert layout(path)[:2] == (2, False)


async def test_two_stores_opening_one_layout_1_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    rows = rows_of(300)
    layout_1_file(path, rows)
    stores = [SqliteCheckpointStore(str(path)) for _ in range(2)]
    found: list[list[str]] = []

    async def read(store: SqliteCheckpointStore) -> None:
        found.append(await store.list_prefix(""))

    async with anyio.create_task_group() as tg:
        for store in stores:
            tg.start_soon(read, store)
    for store in stores:
        await store.aclose()
    assert found == [sorted(key for key, _ in rows)] * 2
    assert layout(path) == (2, False, 300)


@pytest.mark.parametrize("version", [3, 7])
async def test_a_newer_layout_is_refused_and_left_as_it_is(tmp_path: Path, version: int) -> None:
    path = tmp_path / "v3.db"
    layout_1_file(path, [("k", "1")])
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    store = SqliteCheckpointStore(str(path))
    with pytest.raises(nt.NoeticConfigError) as err:
        await store.get("k")
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
    assert f"layout {version}" in err.value.message
    await store.aclose()
    assert layout(path) == (version, True, 1)


#: A child that opens a layout-1 file and is stopped inside its migration (see `_stalls`): it
#: prints `migrating` and sleeps until it is killed.
CHILD = textwrap.dedent(
    """
    import sqlite3, sys, time
    import anyio
    from noetic.durable import SqliteCheckpointStore

    path, where = sys.argv[1], sys.argv[2]
    connect = sqlite3.connect

    def stall(*_):
        print("migrating", flush=True)
        time.sleep(120)
        return 0

    class Stalling(sqlite3.Connection):
        def execute(self, sql, *args):
            if where == "before-commit" and sql.startswith("DROP TABLE"):
                stall()
            if where == "mid-copy" and sql.startswith("INSERT INTO noetic_rows"):
                calls = iter(range(10**9))
                self.set_progress_handler(lambda: next(calls) == 40 and stall(), 1000)
            return super().execute(sql, *args)

    sqlite3.connect = lambda *a, **k: connect(*a, factory=Stalling, **k)

    async def main():
        store = SqliteCheckpointStore(path)
        await store.list_prefix("")

    anyio.run(main)
    """
)


def kill_mid_migration(path: Path, script: Path, where: str) -> None:
    """Run `CHILD` on `path` until it stalls at `where` in its migration, then SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, str(script), str(path), where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == "migrating\n", child.stderr.read() if child.stderr else ""
        assert Path(f"{path}-wal").stat().st_size > 0  # the migration had written into the WAL
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("where", ["mid-copy", "before-commit"])
async def test_a_migration_killed_mid_way_loses_no_row(tmp_path: Path, where: str) -> None:
    path = tmp_path / "v1.db"
    rows = rows_of(4000, 1000)  # ~4 MB, past SQLite's 2 MB page cache: the copy spills into the WAL
    layout_1_file(path, rows)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    with anyio.fail_after(120):
        await anyio.to_thread.run_sync(kill_mid_migration, path, script, where)
    assert layout(path) == (1, True, 4000)  # nothing of the migration committed
    store = SqliteCheckpointStore(str(path))
    keys = await store.list_prefix("")
    assert keys == sorted(key for key, _ in rows)
    assert await store.get_many(keys) == dict(rows)
    await store.aclose()
    assert layout(path) == (2, False, 4000)
