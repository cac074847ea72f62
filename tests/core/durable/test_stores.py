"""The `CheckpointStore` contract on both embedded stores, and the SQLite store's own guarantees."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.durable import CheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore
from noetic.durable.claims import _offset, claims_held
from noetic.durable.memory import memory_store_from_url
from noetic.durable.sqlite import CHECKPOINT_PAGES, INLINE_KEYS, LAYOUT_VERSION, sqlite_store_from_url

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    opened: CheckpointStore = (
        MemoryCheckpointStore()
        if request.param == "memory"
        else SqliteCheckpointStore(str(tmp_path / "s.db"))
    )
    assert isinstance(opened, CheckpointStore)
    yield opened
    await opened.aclose()


async def test_documents_round_trip_and_list_in_key_order(store: CheckpointStore) -> None:
    assert await store.get("a") is None
    await store.set("execution:1:ledger:00000002", '{"n":2}')
    await store.set("execution:1:ledger:00000001", '{"n":1}')
    await store.set("execution:10:snapshot", "{}")
    await store.set("execution:1:snapshot", '"x"')
    assert await store.get("execution:1:snapshot") == '"x"'
    assert await store.list_prefix("execution:1:") == [
        "execution:1:ledger:00000001",
        "execution:1:ledger:00000002",
        "execution:1:snapshot",
    ]
    assert await store.get_many(["execution:1:ledger:00000002", "missing"]) == {
        "execution:1:ledger:00000002": '{"n":2}'
    }
    await store.delete("execution:1:snapshot")
    await store.delete("never-there")
    assert await store.get("execution:1:snapshot") is None
    assert len(await store.list_prefix("")) == 3


async def test_a_batch_sets_and_deletes_together(store: CheckpointStore) -> None:
    await store.write({"a": "1", "b": "2"})
    await store.write({"c": "3", "a": "10"}, ["b"])
    assert await store.get_many(["a", "b", "c"]) == {"a": "10", "c": "3"}


async def test_get_many_reads_past_the_bound_parameter_limit(store: CheckpointStore) -> None:
    await store.write({f"k{i:05d}": str(i) for i in range(1200)})
    found = await store.get_many([f"k{i:05d}" for i in range(1200)])
    assert len(found) == 1200
    assert found["k01199"] == "1199"


async def test_claims_are_exclusive_until_released(store: CheckpointStore) -> None:
    claim = await store.claim("e")
    other = await store.claim("f")
    with pytest.raises(nt.NoeticError) as err:
        await store.claim("e")
    assert err.value.code == "EXECUTION_LOCKED"
    assert err.value.execution_id == "e"
    await claim.release()
    await claim.release()  # idempotent
    again = await store.claim("e")
    await again.release()
    await other.release()


# --- SQLite -----------------------------------------------------------------------------------


async def test_sqlite_uses_wal_full_sync_and_a_versioned_layout(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(str(tmp_path / "s.db"))
    await store.set("k", "{}")
    assert store._conn is not None
    assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store._conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    assert store._conn.execute("PRAGMA user_version").fetchone() == (LAYOUT_VERSION,)
    await store.aclose()


async def test_sqlite_synchronous_normal_skips_the_flush_of_each_commit(tmp_path: Path) -> None:
    store = sqlite_store_from_url(f"sqlite:///{tmp_path / 's.db'}?synchronous=normal")
    await store.set("k", "{}")
    assert store._conn is not None
    assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store._conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    await store.aclose()


async def test_sqlite_a_failed_write_rolls_back_and_leaves_no_lock_behind(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = SqliteCheckpointStore(path, busy_timeout=0.05)
    await store.set("k", '"before"')
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    with pytest.raises(nt.NoeticError) as err:
        await store.write({"k": '"during"', "j": "1"})
    assert err.value.code == "CHECKPOINT_STORE_FAILED"
    blocker.execute("ROLLBACK")
    blocker.close()
    assert await store.get_many(["k", "j"]) == {"k": '"before"'}
    await store.write({"k": '"after"'})  # the failed write stranded nothing
    assert await store.get("k") == '"after"'
    await store.aclose()


async def test_sqlite_a_row_failing_its_checksum_is_corrupt(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = SqliteCheckpointStore(path)
    await store.set("execution:e:snapshot", '{"a":1}')
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE noetic_rows SET value = '{\"a\":2}'")
    raw.close()
    with pytest.raises(nt.NoeticError) as err:
        await store.get("execution:e:snapshot")
    assert err.value.code == "CHECKPOINT_CORRUPT"
    assert "execution:e:snapshot" in err.value.message
    await store.aclose()


async def test_sqlite_a_newer_layout_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA user_version = 7")
    raw.close()
    store = SqliteCheckpointStore(path)
    with pytest.raises(nt.NoeticConfigError) as err:
        await store.get("k")
    assert err.value.code == "CHECKPOINT_SCHEMA_MISMATCH"
    await store.aclose()


async def test_sqlite_stores_on_one_file_share_claims(tmp_path: Path) -> None:
    first = SqliteCheckpointStore(str(tmp_path / "s.db"))
    second = SqliteCheckpointStore(str(tmp_path / "." / "s.db"))
    claim = await first.claim("e")
    with pytest.raises(nt.NoeticError) as err:
        await second.claim("e")
    assert err.value.code == "EXECUTION_LOCKED"
    await claim.release()
    await (await second.claim("e")).release()
    await first.aclose()
    await second.aclose()


@pytest.mark.parametrize(
    ("url", "path", "timeout"),
    [
        ("sqlite:///run.db", "run.db", 10.0),
        ("sqlite:////var/lib/agent/run.db", "/var/lib/agent/run.db", 10.0),
        ("sqlite:///:memory:", ":memory:", 10.0),
        ("sqlite:///run.db?busy_timeout=2.5", "run.db", 2.5),
        ("sqlite:///run.db?busy_timeout=3&synchronous=normal", "run.db", 3.0),
    ],
)
def test_sqlite_urls(url: str, path: str, timeout: float) -> None:
    store = sqlite_store_from_url(url)
    assert (store.path, store.busy_timeout) == (path, timeout)
    assert store.synchronous == ("normal" if "synchronous" in url else "full")


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite://host/run.db",
        "sqlite:///run.db?mode=ro",
        "sqlite:///r.db?busy_timeout=0",
        "sqlite:///r.db?synchronous=off",
    ],
)
def test_bad_sqlite_urls(url: str) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        sqlite_store_from_url(url)
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"


def test_memory_urls() -> None:
    assert isinstance(memory_store_from_url("memory://"), MemoryCheckpointStore)
    with pytest.raises(nt.NoeticConfigError):
        memory_store_from_url("memory://somewhere")


async def test_harness_storage_urls_resolve_through_the_registry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda x: x), storage=url) as h:
        resp = await h.run("hi")
        store: Any = h._checkpoint_store()
        assert isinstance(store, SqliteCheckpointStore)
    assert store._conn is None  # the harness closed the store it opened
    async with nt.AgentHarness("t", agent_graph=nt.run_code("a", lambda x: x), storage=url) as h:
        assert (await h.resume(resp.execution_id)).output == "hi"


async def test_sqlite_stores_opening_one_new_file_at_once_both_get_wal(tmp_path: Path) -> None:
    for attempt in range(20):  # the race is narrow: open many pairs of stores on new files
        path = str(tmp_path / f"new-{attempt}.db")
        stores = [SqliteCheckpointStore(path) for _ in range(4)]
        async with anyio.create_task_group() as tg:
            for i, store in enumerate(stores):
                tg.start_soon(store.list_prefix, f"{i}")
        for store in stores:
            assert store._conn is not None
            assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            await store.aclose()


class _Hops:
    """Counts the calls handed to a worker thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = anyio.to_thread.run_sync

        async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return await real(fn, *args, **kwargs)

        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)


async def test_sqlite_normal_writes_a_small_batch_without_a_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    normal = sqlite_store_from_url(f"sqlite:///{tmp_path / 'n.db'}?synchronous=normal")
    await normal.set("open", "{}")  # the connection is opened in a worker thread
    hops = _Hops(monkeypatch)
    await normal.write({"a": '"1"', "b": '"2"'}, ["open"])
    assert hops.count == 0  # committed on the caller's thread: no flush to wait for
    await normal.write({"big": '"' + "x" * 70_000 + '"'})
    assert hops.count == 1  # a large batch still goes to a worker thread
    assert await normal.get_many(["a", "b", "open"]) == {"a": '"1"', "b": '"2"'}
    await normal.aclose()


async def test_sqlite_full_commits_a_lone_execution_on_the_callers_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = SqliteCheckpointStore(str(tmp_path / "f.db"))
    await full.set("open", "{}")
    hops = _Hops(monkeypatch)
    first = await full.claim("first")
    await full.write({"a": '"1"'})
    assert hops.count == 0  # the claim's file lock and the commit, its flush waited for here
    second = await full.claim("second")
    await full.write({"b": '"2"'})
    assert hops.count == 1  # two executions: the flush waits in a worker thread, the loop serves the other
    await second.release()
    await first.release()
    hops.count = 0
    await full.write({"c": '"3"'})
    assert hops.count == 0
    # What was committed on the caller's thread is in the file for any other connection.
    other = sqlite3.connect(tmp_path / "f.db")
    assert sorted(other.execute("SELECT key FROM noetic_rows")) == [("a",), ("b",), ("c",), ("open",)]
    other.close()
    await full.aclose()


@pytest.mark.parametrize("inline", ["no", 0, None])
def test_sqlite_inline_must_be_a_bool(tmp_path: Path, inline: Any) -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        SqliteCheckpointStore(str(tmp_path / "i.db"), inline=inline)
    assert err.value.code == "UNKNOWN_CHECKPOINT_STORE"
    assert "inline" in str(err.value)


async def test_claims_held_counts_the_claims_of_every_table_in_the_process(tmp_path: Path) -> None:
    sqlite = SqliteCheckpointStore(str(tmp_path / "c.db"))
    memory = MemoryCheckpointStore()
    before = claims_held()
    first = await sqlite.claim("a")
    second = await memory.claim("b")
    assert claims_held() == before + 2
    with pytest.raises(nt.NoeticError):
        await memory.claim("b")  # a refused claim is not counted
    assert claims_held() == before + 2
    await second.release()
    await second.release()  # idempotent: counted down once
    await first.release()
    assert claims_held() == before
    await sqlite.aclose()


async def test_a_lone_durable_turn_waits_for_its_flushes_without_thread_hops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = nt.sequence("g", [nt.run_code(f"s{i}", lambda x: x) for i in range(20)])
    async with nt.AgentHarness("t", agent_graph=graph, storage=f"sqlite:///{tmp_path / 'h.db'}") as h:
        await h.run("warm", execution_id="warm")  # opens the database
        hops = _Hops(monkeypatch)
        await h.run("alone", execution_id="alone")
        alone = hops.count
        store: Any = h._checkpoint_store()
        other = await store.claim("another-execution")  # as if another turn were running
        hops.count = 0
        await h.run("together", execution_id="together")
        together = hops.count
        await other.release()
    assert alone < 10  # the claim's file lock and the start record, not one per step
    assert together >= 20  # each step's flush waited in a worker thread
    async with nt.AgentHarness("t", agent_graph=graph, storage=f"sqlite:///{tmp_path / 'h.db'}") as h:
        assert (await h.resume("alone")).output == "alone"  # every step was committed


@pytest.mark.parametrize("synchronous", ["full", "normal"])
async def test_sqlite_inline_false_sends_every_write_to_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: str
) -> None:
    store = SqliteCheckpointStore(str(tmp_path / "t.db"), synchronous=synchronous, inline=False)
    await store.set("open", "{}")
    hops = _Hops(monkeypatch)
    await store.write({"a": '"1"'})
    await store.write({"b": '"2"'}, ["a"])
    assert hops.count == 2
    assert await store.get_many(["a", "b"]) == {"b": '"2"'}
    await store.aclose()


@pytest.mark.parametrize("synchronous", ["full", "normal"])
async def test_sqlite_write_waits_for_another_writer_without_blocking_the_loop(
    tmp_path: Path, synchronous: str
) -> None:
    path = tmp_path / "s.db"
    store = sqlite_store_from_url(f"sqlite:///{path}?synchronous={synchronous}")
    await store.set("k", '"before"')
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # another process's writer holds the write lock
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as writes:
                writes.start_soon(store.write, {"k": '"during"'})
                await anyio.sleep(0.1)
                seen = ticks
                assert seen >= 3  # the event loop kept running while the write waited
                blocker.execute("COMMIT")
        tg.cancel_scope.cancel()
    blocker.close()
    assert await store.get("k") == '"during"'
    await store.aclose()


async def test_sqlite_checkpoints_the_wal_itself(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = sqlite_store_from_url(f"sqlite:///{path}?synchronous=normal")
    for i in range(1500):  # far past the checkpoint interval, all small inline writes
        await store.write({f"k{i:05d}": '"' + "x" * 500 + '"'})
    wal = anyio.Path(f"{path}-wal")
    assert store._conn is not None
    assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    # Without a checkpoint the WAL would hold every commit's pages (about 1500 × 3 × 4 KiB).
    assert (await wal.stat()).st_size < 6 * 1024 * 1024
    frames = store._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert frames[1] < 1500 * 2  # the log was restarted since the first writes
    assert len(await store.list_prefix("k")) == 1500
    await store.aclose()


async def test_sqlite_wal_stops_growing_once_checkpointed(tmp_path: Path) -> None:
    """Step-sized commits overwrite the WAL in place soon after a store opens a file: once a
    checkpoint has restarted the WAL, hardly a commit makes the file longer, so a full
    commit's flush seldom waits for the file system to record a new size."""
    path = tmp_path / "s.db"
    store = SqliteCheckpointStore(str(path))  # synchronous=full, the default
    wal = anyio.Path(f"{path}-wal")
    sizes: list[int] = []
    # Three checkpoint intervals of such writes (each counts as three pages): the WAL grows in
    # the first, and the third must mostly overwrite it in place (a deeper tree makes the last
    # commits of an interval write a few more frames than the first interval's did).
    writes = CHECKPOINT_PAGES
    for i in range(writes):  # one step's two rows per write, each small enough to commit inline
        entry, trace = f"exec/e/ledger/{i:08d}", f"exec/e/trace/{i:08d}"
        await store.write({entry: '"' + "x" * 500 + '"', trace: '"' + "t" * 100 + '"'})
        sizes.append((await wal.stat()).st_size)
    last = range(writes * 2 // 3, writes)
    grown = [i for i in last if sizes[i] > sizes[i - 1]]
    assert len(grown) <= len(last) // 4, grown  # with a growing WAL each of these writes would grow it
    assert len(await store.list_prefix("exec/e/")) == 2 * writes
    await store.aclose()


async def test_sqlite_lists_a_short_prefix_on_the_callers_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteCheckpointStore(str(tmp_path / "l.db"))
    await store.write({f"short:{i:04d}": "{}" for i in range(3)})
    long = {f"long:{i:04d}": "{}" for i in range(INLINE_KEYS + 5)}
    await store.write(long)
    hops = _Hops(monkeypatch)
    assert await store.list_prefix("short:") == [f"short:{i:04d}" for i in range(3)]
    assert hops.count == 0  # read on the caller's thread: nothing to wait for
    assert await store.list_prefix("long:") == sorted(long)  # every key, not the inline read's first ones
    assert hops.count == 1  # too many keys for the caller's thread: read again in a worker thread
    assert len(await store.list_prefix("")) == INLINE_KEYS + 8
    await store.aclose()
    threaded = SqliteCheckpointStore(str(tmp_path / "l.db"), inline=False)
    hops.count = 0
    assert await threaded.list_prefix("short:") == [f"short:{i:04d}" for i in range(3)]
    assert hops.count == 1  # inline=False: every read in a worker thread
    await threaded.aclose()


async def test_sqlite_claims_lock_the_sidecar_byte_without_a_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteCheckpointStore(str(tmp_path / "c.db"))
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]), os.SEEK_SET)\n"
        "except OSError:\n"
        "    print('held')\n"
        "else:\n"
        "    print('free')\n"
    )

    def other_process_sees() -> str:
        args = [sys.executable, "-c", probe, str(tmp_path / "c.db-claims"), str(_offset("e"))]
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()

    hops = _Hops(monkeypatch)
    claim = await store.claim("e")
    assert hops.count == 0  # a lock that never waits: taken on the caller's thread
    assert other_process_sees() == "held"
    await claim.release()
    assert hops.count == 0
    assert other_process_sees() == "free"
    await store.aclose()
